// Operator::update_values: new values for the same pattern. The plan's value arrays are
// rewritten on the GPU by a gather from the caller's CSR order into the encoding's order
// (compiler/value_update.hpp traces it once, at the first update), through the kernels of
// templates/value_gather.cuh; the device pointers the launches were bound to stay the same. New
// values the plan's value coding cannot store re-plan the operator.
#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "operations.hpp"
#include "operator_impl.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/value_update.hpp"
#include "spmvc/params/values.hpp"

namespace spmvc {

using runtime::Clock;
using runtime::seconds_since;

struct Operator::Impl::ValueGathers {
  struct Array {
    std::string name;
    std::int64_t slots = 0;
    /// Sources on the device (i64 when the matrix has 2^31 nonzeros or more); empty for an
    /// identity gather.
    runtime::DeviceBuffer source;
    ElemType index = ElemType::i32;
  };
  std::vector<Array> arrays;
  /// New values (or table codes) in CSR order, uploaded from the host.
  runtime::DeviceBuffer staging;
  /// The kernels' fault flag (one 64-bit word).
  runtime::DeviceBuffer flags{8};
  runtime::CachedKernel unit;
  int ordinal = 0;
};

namespace {

ElemType value_type_of(Precision p) { return p == Precision::f64 ? ElemType::f64 : ElemType::f32; }

// A coding that stores the values rounded (mixed precision).
bool rounded_coding(int coding) {
  return coding == formats::kValuesF32Rounded || coding == formats::kValuesBf16;
}

std::int64_t nnz_of(const Operator::Impl& im) {
  return im.host_matrix ? im.host_matrix->nnz() : im.device_matrix->nnz;
}

// The device buffer of the operator's own array `name`.
void* own_array(Operator::Impl& im, const std::string& name) {
  for (auto& [n, buffer] : im.arrays) {
    if (n == name) return buffer.get();
  }
  throw InternalError("update_values: the operator has no array " + name);
}

Operator::Impl::ValueGathers& gathers_of(Operator::Impl& im) {
  if (im.gathers) return *im.gathers;
  auto g = std::make_shared<Operator::Impl::ValueGathers>();
  const bool wide = im.host_matrix->nnz() > std::numeric_limits<std::int32_t>::max();
  for (compiler::ValueGather& vg :
       compiler::value_gathers(*im.host_matrix, im.map.get(), im.plan)) {
    auto& a = g->arrays.emplace_back();
    a.name = vg.array;
    a.slots = static_cast<std::int64_t>(vg.source.size());
    a.index = wide ? ElemType::i64 : ElemType::i32;
    if (vg.identity) continue;
    a.source = runtime::DeviceBuffer(std::max<std::size_t>(vg.source.size() * (wide ? 8 : 4), 1));
    if (wide) {
      a.source.upload(vg.source.data(), vg.source.size() * 8);
    } else {
      const std::vector<std::int32_t> narrow(vg.source.begin(), vg.source.end());
      a.source.upload(narrow.data(), narrow.size() * 4);
    }
  }
  g->staging = runtime::DeviceBuffer(
      std::max<std::size_t>(static_cast<std::size_t>(im.host_matrix->nnz()) * 8, 1));
  const runtime::DeviceInfo device = runtime::probe_device(im.options.device);
  g->ordinal = device.ordinal;
  g->unit = runtime::cache_for(runtime::cache_dir_of(im.options))
                .get(compiler::value_gather_source(), device.arch());
  im.gathers = std::move(g);
  return *im.gathers;
}

const runtime::LoadedKernel& kernel(const Operator::Impl::ValueGathers& g,
                                    const std::string& entry) {
  return *runtime::shared_kernel(g.unit, entry, g.ordinal);
}

std::int64_t grid_for(std::int64_t n) { return std::max<std::int64_t>(1, (n + 255) / 256); }

// Clears the fault flag, runs `launch`, waits, and says whether a kernel raised the flag.
template <typename Launch>
bool flagged(Operator::Impl::ValueGathers& g, Launch&& launch) {
  g.flags.fill_bytes(0, 0, 8);
  launch();
  runtime::synchronize();
  unsigned long long flag = 0;
  g.flags.download(&flag, sizeof flag);
  return flag != 0;
}

// Gathers `in` (CSR order, elements of `in_type`) into every value array of the plan; true when
// a value did not survive the conversion to the array's type (for a rounded coding, mixed
// precision: when a finite value rounded to an infinity).
bool gather_all(Operator::Impl& im, Operator::Impl::ValueGathers& g, const void* in,
                ElemType in_type, ElemType out_type) {
  const bool rounded = rounded_coding(compiler::value_coding(im.plan));
  return flagged(g, [&] {
    for (auto& a : g.arrays) {
      const void* source = a.source.bytes() > 0 ? a.source.get() : nullptr;
      long long slots = a.slots;
      void* out = own_array(im, a.name);
      void* flags = g.flags.get();
      void* args[] = {&source, &slots, &in, &out, &flags};
      const std::string entry = rounded ? compiler::value_round_entry(a.index, in_type, out_type)
                                        : compiler::value_gather_entry(a.index, in_type, out_type);
      kernel(g, entry).launch(grid_for(slots), 256, 0, args, nullptr);
      runtime::check_last_launch(entry);
    }
  });
}

// The element type of the arrays `coding` stores at `precision`.
ElemType stored_type(int coding, Precision precision) {
  if (coding == formats::kValuesF32 || coding == formats::kValuesF32Rounded) return ElemType::f32;
  if (coding == formats::kValuesBf16) return ElemType::u16;
  if (coding == formats::kValuesTable8) return ElemType::u8;
  if (coding == formats::kValuesTable16) return ElemType::u16;
  return value_type_of(precision);
}

// Writes `values` (CSR order, on the host) into the plan's arrays; the reason when they do not
// fit the plan's value coding (nothing written then).
std::optional<std::string> rewrite_from_host(Operator::Impl& im, std::span<const double> values) {
  if (compiler::stores_symmetric_half(im.plan))
    if (auto why = compiler::symmetry_problem(*im.host_matrix, values)) return why;
  const int coding = compiler::value_coding(im.plan);
  const Precision precision = im.plan.precision;
  const bool table = coding == formats::kValuesTable8 || coding == formats::kValuesTable16;
  std::optional<compiler::TableCodes> tc;
  if (table) {
    // One pass over the values checks and codes them.
    try {
      tc = compiler::table_codes(coding, values, precision);
    } catch (const InputError& e) {
      return e.detail();
    }
  } else if (auto why = compiler::value_update_problem(coding, values, precision)) {
    return why;
  }
  if (coding == formats::kValuesUnit) return std::nullopt;  // no array: every value is 1
  Operator::Impl::ValueGathers& g = gathers_of(im);
  runtime::synchronize();  // earlier multiplies read the old values
  bool fault = false;
  if (table) {
    g.staging.upload(tc->codes.bytes.data(), tc->codes.bytes.size());
    for (auto& a : g.arrays) {
      // Room for the coding's whole table was allocated at compile (operator.cpp).
      void* table_buffer = own_array(im, a.name + "_table");
      for (auto& [n, buffer] : im.arrays) {
        if (buffer.get() == table_buffer)
          buffer.upload(tc->table.bytes.data(), tc->table.bytes.size());
      }
    }
    fault = gather_all(im, g, g.staging.get(), tc->codes.type, tc->codes.type);
  } else {
    // The values in the plan's type (fp32 ones each rounded once more to a bf16 word by a bf16
    // plan's gather).
    runtime::upload_values(g.staging, values, precision);
    fault = gather_all(im, g, g.staging.get(), value_type_of(precision),
                       stored_type(coding, precision));
  }
  if (fault) throw InternalError("update_values: a value checked on the host failed on the GPU");
  return std::nullopt;
}

// `n` values of the plan's type at `device_values`, as fp64 on the host.
std::vector<double> download_values(const void* device_values, std::int64_t n,
                                    Precision precision) {
  std::vector<double> out(static_cast<std::size_t>(n));
  if (precision == Precision::f64) {
    runtime::copy_to_host(out.data(), device_values, out.size() * 8);
  } else {
    std::vector<float> narrow(out.size());
    runtime::copy_to_host(narrow.data(), device_values, narrow.size() * 4);
    std::copy(narrow.begin(), narrow.end(), out.begin());
  }
  return out;
}

// Plans and builds again from the host copy of the matrix (its values already the new ones).
std::pair<Operator, ValueUpdate> replan(const Operator::Impl& im, const std::string& why) {
  std::string note;
  Options options = compiler::replan_options(im.options, &note);
  if (options.plan_order) {
    // The caller's vectors are in the operator's order: the new plan keeps it.
    options.ordering.reset();
    options.reorder = "none";
    if (im.plan_ordered) {
      options.ordering = ordering_of(*im.map, im.plan.reorder.substr(0, im.plan.reorder.find(' ')));
      options.renumber_columns = !im.map->cols.empty();
    }
  }
  const std::shared_ptr<CsrMatrix> keep = im.host_matrix;
  Operator fresh = compile(*keep, options);
  ValueUpdate u;
  u.replanned = true;
  u.why = fmt::format("{}: planned again, now {} [{}]{}", why, fresh.plan().format,
                      describe(fresh.plan().params), note.empty() ? "" : " (" + note + ")");
  return {std::move(fresh), std::move(u)};
}

}  // namespace

namespace {

// New values go to the specialised tier's arrays: a tiered operator still on its generic tier
// (whose CSR copy holds the old values) waits for the specialised kernel and switches first.
void leave_generic_tier(Operator::Impl& im) {
  if (im.tiers) im.tiers->switch_now();
}

// Why a build on the GPU from new values is another plan than `was`; nothing when it is the same.
std::optional<std::string> plan_change(const Plan& was, const Plan& now) {
  const std::string before = describe(was.params), after = describe(now.params);
  if (was.format == now.format && before == after && was.engine == now.engine) return std::nullopt;
  return fmt::format("built again on the GPU from the new values: {} [{}], was {} [{}]", now.format,
                     after, was.format, before);
}

// compile(CsrMatrix)'s GPU build (`impl`), built again from the new values now in its own
// upload. The same plan gives arrays of the same names and sizes: they are copied into the
// operator's, so every device pointer stays and a graph captured from apply() stays valid.
// Another plan replaces the operator (ValueUpdate::replanned).
ValueUpdate rebuild_in_place(std::unique_ptr<Operator::Impl>& impl, Clock::time_point t0) {
  Operator::Impl& im = *impl;
  std::unique_ptr<Operator::Impl> fresh =
      Operator::Impl::unwrap(compile(*im.device_matrix, im.options));
  fresh->settled();  // a tiered build plans and encodes on its thread
  Operator::Impl& f = *fresh;
  ValueUpdate u;
  if (std::optional<std::string> why = plan_change(im.plan, f.plan)) {
    u.replanned = true;
    u.why = std::move(*why);
    f.resident = im.resident;  // `fresh` reads it in place
    impl = std::move(fresh);
    u.seconds = seconds_since(t0);
    return u;
  }
  if (im.arrays.size() != f.arrays.size() || im.borrowed != f.borrowed)
    throw InternalError("update_values: the same plan built other arrays from new values");
  for (std::size_t i = 0; i < im.arrays.size(); ++i) {  // all checked before any is written
    const auto& [name, buffer] = im.arrays[i];
    const auto& [fresh_name, fresh_buffer] = f.arrays[i];
    if (name != fresh_name || buffer.bytes() != fresh_buffer.bytes())
      throw InternalError(fmt::format(
          "update_values: the same plan built array {} ({} bytes) from new values, not {} ({})",
          fresh_name, fresh_buffer.bytes(), name, buffer.bytes()));
  }
  for (std::size_t i = 0; i < im.arrays.size(); ++i)
    im.arrays[i].second.copy_from(f.arrays[i].second.get(), im.arrays[i].second.bytes());
  im.profile = f.profile;
  im.plan = f.plan;
  runtime::values_changed(im, im.resident->values.get(), /*on_device=*/true);
  u.seconds = seconds_since(t0);
  return u;
}

}  // namespace

ValueUpdate Operator::update_values(std::span<const double> values) {
  const auto t0 = Clock::now();
  leave_generic_tier(*impl_);
  Impl& im = *impl_;
  const std::int64_t nnz = nnz_of(im);
  if (static_cast<std::int64_t>(values.size()) != nnz)
    throw InputError(
        "update_values", 0,
        fmt::format("{} values given; the matrix has {} nonzeros", values.size(), nnz));
  if (im.resident) {
    // compile(CsrMatrix) on the GPU: the new values go into its own upload, in place.
    runtime::synchronize();  // earlier multiplies read the old arrays
    runtime::upload_values(im.resident->values, values, im.plan.precision);
    return rebuild_in_place(impl_, t0);
  }
  if (im.device_matrix) {
    // Built from device arrays: upload into memory the operator keeps, and build again from it.
    auto owned = std::make_shared<runtime::DeviceBuffer>(std::max<std::size_t>(
        values.size() * static_cast<std::size_t>(value_bytes(im.plan.precision)), 1));
    runtime::upload_values(*owned, values, im.plan.precision);
    ValueUpdate u = update_values(static_cast<const void*>(owned->get()));
    impl_->owned_values = std::move(owned);
    u.seconds = seconds_since(t0);
    return u;
  }
  ValueUpdate u;
  if (auto why = rewrite_from_host(im, values)) {
    im.host_matrix->values.assign(values.begin(), values.end());
    auto [fresh, update] = replan(im, *why);
    u = std::move(update);
    impl_ = std::move(fresh.impl_);
  } else {
    runtime::values_changed(im, values.data(), /*on_device=*/false);
  }
  u.seconds = seconds_since(t0);
  return u;
}

ValueUpdate Operator::update_values(const void* device_values) {
  const auto t0 = Clock::now();
  leave_generic_tier(*impl_);
  Impl& im = *impl_;
  const std::int64_t nnz = nnz_of(im);
  if (nnz > 0 && !runtime::is_device_pointer(device_values))
    throw InputError("update_values", 0, "values is not a device (or managed) pointer");
  ValueUpdate u;
  if (im.device_matrix) {
    runtime::synchronize();  // earlier multiplies read the old arrays
    if (im.resident) {
      // compile(CsrMatrix) on the GPU: the new values go into its own upload, in place.
      im.resident->values.copy_from(
          device_values,
          static_cast<std::size_t>(nnz) * static_cast<std::size_t>(value_bytes(im.plan.precision)));
      return rebuild_in_place(impl_, t0);
    }
    DeviceCsr d = *im.device_matrix;
    d.values = device_values;
    Operator fresh = compile(d, im.options);
    if (std::optional<std::string> why = plan_change(im.plan, fresh.plan())) {
      u.replanned = true;
      u.why = std::move(*why);
    }
    fresh.impl_->owned_values = im.owned_values;  // kept until the caller's update replaces it
    impl_ = std::move(fresh.impl_);
    u.seconds = seconds_since(t0);
    return u;
  }
  const int coding = compiler::value_coding(im.plan);
  const Precision precision = im.plan.precision;
  const ElemType in_type = value_type_of(precision);
  std::optional<std::string> why;
  if (coding == formats::kValuesTable8 || coding == formats::kValuesTable16 ||
      compiler::stores_symmetric_half(im.plan)) {
    // The table is built on the host from the values; a symmetric half's values are checked for
    // symmetry there.
    return update_values(download_values(device_values, nnz, precision));
  }
  Operator::Impl::ValueGathers& g = gathers_of(im);
  runtime::synchronize();  // earlier multiplies read the old values
  if (coding == formats::kValuesUnit) {
    const bool other = flagged(g, [&] {
      long long n = nnz;
      const void* in = device_values;
      void* flags = g.flags.get();
      void* args[] = {&n, &in, &flags};
      const std::string entry = compiler::check_ones_entry(in_type);
      kernel(g, entry).launch(grid_for(n), 256, 0, args, nullptr);
      runtime::check_last_launch(entry);
    });
    if (other) why = "the plan stores no values (all were 1) and a new value is not 1";
  } else if (gather_all(im, g, device_values, in_type, stored_type(coding, precision))) {
    why = rounded_coding(coding)
              ? "the plan stores the values rounded (mixed precision) and a new value is beyond "
                "the range of their type"
              : "the plan stores the values as fp32 and a new value is not exact in fp32";
  }
  if (why) {
    im.host_matrix->values = download_values(device_values, nnz, precision);
    auto [fresh, update] = replan(im, *why);
    u = std::move(update);
    impl_ = std::move(fresh.impl_);
  } else {
    runtime::values_changed(im, device_values, /*on_device=*/true);
  }
  u.seconds = seconds_since(t0);
  return u;
}

}  // namespace spmvc
