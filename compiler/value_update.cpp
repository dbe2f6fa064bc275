#include "spmvc/compiler/value_update.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/arrays.hpp"
#include "formats/format.hpp"
#include "formats/values/values.hpp"
#include "spmvc/error.hpp"
#include "spmvc/profile.hpp"
#include "spmvc/value_rounding.hpp"

namespace spmvc::compiler {

namespace {

// An fp32 trace carries 23 bits of the index per pass (its values 1..2^23, all exact in fp32).
constexpr int kF32TraceBits = 23;
constexpr std::int64_t kF32TraceMask = (std::int64_t{1} << kF32TraceBits) - 1;

double whole_index(std::int64_t k) { return static_cast<double>(k + 1); }
double low_index(std::int64_t k) { return static_cast<double>((k & kF32TraceMask) + 1); }
double high_index(std::int64_t k) { return static_cast<double>((k >> kF32TraceBits) + 1); }

// `a`'s pattern with value(k) at nonzero k, moved through the build's ordering.
CsrMatrix trace_matrix(const CsrMatrix& a, const RowColumnMap* map, double (*value)(std::int64_t)) {
  CsrMatrix t;
  t.nrows = a.nrows;
  t.ncols = a.ncols;
  t.row_ptr = a.row_ptr;
  t.col_idx = a.col_idx;
  t.values.resize(a.col_idx.size());  // a's own values are not read: a may be a pattern only
  for (std::size_t k = 0; k < t.values.size(); ++k)
    t.values[k] = value(static_cast<std::int64_t>(k));
  if (!map) return t;
  // Packed again as the build packed it (its read columns first, its rows with entries first).
  return packed_like(permute(t, ordering_of(*map, "trace")), *map);
}

// The value arrays of `e` (plain coding: f64 or f32, not scratch) and the number each slot holds.
std::vector<std::pair<std::string, std::vector<double>>> value_slots(const Encoded& e) {
  std::vector<std::pair<std::string, std::vector<double>>> out;
  for (const EncodedArray& arr : e.arrays) {
    if (arr.scratch || (arr.type != ElemType::f64 && arr.type != ElemType::f32)) continue;
    std::vector<double> slots(static_cast<std::size_t>(arr.count()));
    if (arr.type == ElemType::f64) {
      std::copy_n(formats::typed<double>(arr), slots.size(), slots.begin());
    } else {
      std::copy_n(formats::typed<float>(arr), slots.size(), slots.begin());
    }
    out.emplace_back(arr.name, std::move(slots));
  }
  return out;
}

std::string elem_tag(ElemType t) {
  switch (t) {
    case ElemType::i32:
      return "i32";
    case ElemType::i64:
      return "i64";
    case ElemType::f64:
      return "f64";
    case ElemType::f32:
      return "f32";
    case ElemType::u8:
      return "u8";
    case ElemType::u16:
      return "u16";
    default:
      throw InternalError(fmt::format("value gather: no kernel for {}", to_string(t)));
  }
}

// The (in, out) pairs update_values gathers: plain values of either precision, fp64 values into
// fp32 storage, and table codes.
constexpr std::pair<ElemType, ElemType> kGatherPairs[] = {
    {ElemType::f64, ElemType::f64}, {ElemType::f32, ElemType::f32}, {ElemType::f64, ElemType::f32},
    {ElemType::u8, ElemType::u8},   {ElemType::u16, ElemType::u16},
};

// The (in, out) pairs of the rounding gathers (mixed precision): fp64 into fp32 storage, fp32
// into bf16 words.
constexpr std::pair<ElemType, ElemType> kRoundPairs[] = {
    {ElemType::f64, ElemType::f32},
    {ElemType::f32, ElemType::u16},
};

// The position of (c, r) in `a` (a's columns sorted within rows), or -1.
std::int64_t mirror_of(const CsrMatrix& a, std::int64_t r, std::int64_t c) {
  const auto first = a.col_idx.begin() + a.row_ptr[static_cast<std::size_t>(c)];
  const auto last = a.col_idx.begin() + a.row_ptr[static_cast<std::size_t>(c) + 1];
  const auto at = std::lower_bound(first, last, static_cast<std::int32_t>(r));
  return at != last && *at == r ? at - a.col_idx.begin() : -1;
}

// A symmetric-half plan's encoder keeps each entry below the diagonal and checks the one above
// against it: the trace's entries above the diagonal carry their mirrors' numbers, so the
// stored slots name the entries below (the ones a gather reads).
void mirror_upper(CsrMatrix& t) {
  for (std::int64_t r = 0; r < t.nrows; ++r) {
    for (std::int64_t k = t.row_ptr[static_cast<std::size_t>(r)];
         k < t.row_ptr[static_cast<std::size_t>(r) + 1]; ++k) {
      const std::int64_t c = t.col_idx[static_cast<std::size_t>(k)];
      if (c <= r) continue;
      const std::int64_t m = mirror_of(t, r, c);
      if (m < 0) throw InternalError("value trace: a symmetric plan's entry has no mirror");
      t.values[static_cast<std::size_t>(k)] = t.values[static_cast<std::size_t>(m)];
    }
  }
}

}  // namespace

bool stores_symmetric_half(const Plan& plan) {
  if (const auto* d = std::get_if<DiaParams>(&plan.params)) return d->symmetric;
  if (const auto* b = std::get_if<BcsrParams>(&plan.params)) return b->symmetric;
  return false;
}

std::optional<std::string> symmetry_problem(const CsrMatrix& a, std::span<const double> values) {
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    for (std::int64_t k = a.row_ptr[static_cast<std::size_t>(r)];
         k < a.row_ptr[static_cast<std::size_t>(r) + 1]; ++k) {
      const std::int64_t c = a.col_idx[static_cast<std::size_t>(k)];
      if (c <= r) continue;
      const std::int64_t m = c < a.nrows ? mirror_of(a, r, c) : -1;
      if (m < 0 || values[static_cast<std::size_t>(m)] != values[static_cast<std::size_t>(k)])
        return fmt::format(
            "the plan stores half of a symmetric matrix and the new values are not symmetric: "
            "a({}, {}) = {:.17g} against a({}, {}) = {}",
            r, c, values[static_cast<std::size_t>(k)], c, r,
            m < 0 ? std::string("no entry")
                  : fmt::format("{:.17g}", values[static_cast<std::size_t>(m)]));
    }
  }
  return std::nullopt;
}

std::vector<ValueGather> value_gathers(const CsrMatrix& a, const RowColumnMap* map,
                                       const Plan& plan) {
  const formats::FormatUnit& unit = formats::find_format(plan.format);
  FormatParams params = plan.params;
  if (formats::value_coding_of(params) != formats::kValuesPlain)
    params = formats::with_value_coding(params, formats::kValuesPlain);
  const bool f64 = plan.precision == Precision::f64;
  const bool half = stores_symmetric_half(plan);
  auto trace = [&](double (*value)(std::int64_t)) {
    CsrMatrix t = trace_matrix(a, map, value);
    if (half) mirror_upper(t);
    return unit.encode(t, params, plan.precision);
  };
  const Encoded low = trace(f64 ? whole_index : low_index);
  std::vector<std::pair<std::string, std::vector<double>>> high;
  if (!f64 && a.nnz() > kF32TraceMask) high = value_slots(trace(high_index));
  std::vector<ValueGather> out;
  auto slots = value_slots(low);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    ValueGather g;
    g.array = slots[i].first;
    const std::vector<double>& lo = slots[i].second;
    g.source.resize(lo.size());
    bool identity = static_cast<std::int64_t>(lo.size()) == a.nnz();
    for (std::size_t s = 0; s < lo.size(); ++s) {
      std::int64_t k = static_cast<std::int64_t>(lo[s]) - 1;
      if (k >= 0 && !high.empty()) {
        const auto hi = static_cast<std::int64_t>(high[i].second[s]) - 1;
        if (hi < 0) throw InternalError("value trace: the two fp32 passes disagree on padding");
        k |= hi << kF32TraceBits;
      }
      if (k >= a.nnz())
        throw InternalError(
            fmt::format("value trace: {} slot {} names nonzero {} of {}", g.array, s, k, a.nnz()));
      g.source[s] = k;
      identity = identity && k == static_cast<std::int64_t>(s);
    }
    g.identity = identity;
    out.push_back(std::move(g));
  }
  return out;
}

Options replan_options(Options options, std::string* note) {
  note->clear();
  auto plain = [&](FormatParams& p) {
    if (formats::value_coding_of(p) == formats::kValuesPlain) return;
    *note = fmt::format("the forced parameters [{}] now store plain values", describe(p));
    p = formats::with_value_coding(p, formats::kValuesPlain);
  };
  if (options.params) {
    plain(*options.params);
    // A symmetric half is planned again only for values that are not symmetric: every
    // diagonal, or every block, stored instead.
    if (auto* d = std::get_if<DiaParams>(&*options.params); d != nullptr && d->symmetric) {
      *note = fmt::format("the forced parameters [{}] now store every diagonal",
                          describe(*options.params));
      d->symmetric = false;
    }
    if (auto* b = std::get_if<BcsrParams>(&*options.params); b != nullptr && b->symmetric) {
      *note = fmt::format("the forced parameters [{}] now store every block",
                          describe(*options.params));
      b->symmetric = false;
    }
  }
  if (options.csr && options.csr->values != formats::kValuesPlain) {
    FormatParams p = *options.csr;
    plain(p);
    options.csr = std::get<CsrParams>(p);
  }
  return options;
}

EncodedArray gather_values(const ValueGather& g, std::span<const double> values,
                           Precision precision) {
  std::vector<double> plain(g.source.size());
  for (std::size_t s = 0; s < plain.size(); ++s)
    plain[s] = g.source[s] < 0 ? 0.0 : values[static_cast<std::size_t>(g.source[s])];
  return formats::value_array(g.array, precision, plain, plain.size());
}

std::optional<std::string> value_update_problem(int coding, std::span<const double> values,
                                                Precision precision) {
  switch (coding) {
    case formats::kValuesPlain:
      return std::nullopt;
    case formats::kValuesUnit: {
      const auto it = std::find_if(values.begin(), values.end(), [](double v) { return v != 1; });
      if (it == values.end()) return std::nullopt;
      return fmt::format("the plan stores no values (all were 1) and nonzero {} is now {}",
                         it - values.begin(), *it);
    }
    case formats::kValuesF32: {
      const auto it =
          std::find_if(values.begin(), values.end(), [](double v) { return !exact_in_fp32(v); });
      if (it == values.end()) return std::nullopt;
      return fmt::format(
          "the plan stores the values as fp32 and nonzero {} is now {:.17g}, which fp32 cannot "
          "hold exactly",
          it - values.begin(), *it);
    }
    case formats::kValuesF32Rounded:
    case formats::kValuesBf16: {
      // Rounded storage takes any value its type's range holds.
      const bool bf16 = coding == formats::kValuesBf16;
      for (std::size_t k = 0; k < values.size(); ++k) {
        const RoundedValue r = bf16 ? round_to_bf16(values[k]) : round_to_f32(values[k]);
        if (r.overflow)
          return fmt::format(
              "the plan stores the values rounded to {} and nonzero {} is now {:.17g}, beyond "
              "its range",
              bf16 ? "bf16" : "fp32", k, values[k]);
      }
      return std::nullopt;
    }
    case formats::kValuesTable8:
    case formats::kValuesTable16: {
      const std::int64_t capacity = formats::value_table_capacity(coding);
      std::unordered_map<std::uint64_t, char> seen;
      for (const double v : values) {
        const std::uint64_t bits =
            precision == Precision::f64
                ? std::bit_cast<std::uint64_t>(v)
                : std::uint64_t{std::bit_cast<std::uint32_t>(static_cast<float>(v))};
        seen.emplace(bits, 0);
        if (static_cast<std::int64_t>(seen.size()) > capacity)
          return fmt::format(
              "the plan's {}-bit value table holds {} distinct values and the new "
              "values have more",
              coding == formats::kValuesTable8 ? 8 : 16, capacity);
      }
      return std::nullopt;
    }
    default:
      throw InternalError(fmt::format("value update: unknown coding {}", coding));
  }
}

TableCodes table_codes(int coding, std::span<const double> values, Precision precision) {
  if (coding != formats::kValuesTable8 && coding != formats::kValuesTable16)
    throw InternalError(fmt::format("table_codes: coding {} is no table", coding));
  const std::int64_t capacity = formats::value_table_capacity(coding);
  const bool f64 = precision == Precision::f64;
  const bool wide = coding == formats::kValuesTable16;
  TableCodes out;
  out.codes = EncodedArray{"values", wide ? ElemType::u16 : ElemType::u8, {}};
  out.codes.bytes.resize(values.size() * (wide ? 2 : 1));
  std::unordered_map<std::uint64_t, std::int64_t> index;
  std::vector<double> table64;
  std::vector<float> table32;
  for (std::size_t k = 0; k < values.size(); ++k) {
    const double v = values[k];
    const std::uint64_t bits =
        f64 ? std::bit_cast<std::uint64_t>(v)
            : std::uint64_t{std::bit_cast<std::uint32_t>(static_cast<float>(v))};
    auto [it, added] = index.emplace(bits, static_cast<std::int64_t>(index.size()));
    if (added && static_cast<std::int64_t>(index.size()) > capacity) {
      // The same words as value_update_problem: one pass does the check and the coding.
      throw InputError("values", 0,
                       fmt::format("the plan's {}-bit value table holds {} distinct values and "
                                   "the new values have more",
                                   wide ? 16 : 8, capacity));
    }
    if (added) {
      if (f64) {
        table64.push_back(v);
      } else {
        table32.push_back(static_cast<float>(v));
      }
    }
    if (wide) {
      formats::typed_mut<std::uint16_t>(out.codes)[k] = static_cast<std::uint16_t>(it->second);
    } else {
      formats::typed_mut<std::uint8_t>(out.codes)[k] = static_cast<std::uint8_t>(it->second);
    }
  }
  if (table64.empty() && table32.empty()) {
    table64.push_back(0.0);
    table32.push_back(0.0f);
  }
  out.table = f64 ? formats::make_array<double>("values_table", ElemType::f64, table64)
                  : formats::make_array<float>("values_table", ElemType::f32, table32);
  return out;
}

std::string value_gather_entry(ElemType index, ElemType in, ElemType out) {
  return fmt::format("spmvc_gather_{}_{}_{}", elem_tag(index), elem_tag(in), elem_tag(out));
}

std::string value_round_entry(ElemType index, ElemType in, ElemType out) {
  return fmt::format("spmvc_round_{}_{}_{}", elem_tag(index), elem_tag(in), elem_tag(out));
}

std::string check_ones_entry(ElemType in) {
  return fmt::format("spmvc_check_ones_{}", elem_tag(in));
}

KernelSource value_gather_source() {
  KernelSource k;
  k.kernel_name = check_ones_entry(ElemType::f64);
  k.file_name = "spmvc_value_gather.cu";
  k.headers = codegen::template_headers({"spmvc/value_gather.cuh"});
  k.options = codegen::base_options();
  k.block = 256;
  k.source =
      "// Generated by spmvc: new values for the same pattern (Operator::update_values).\n"
      "#include \"spmvc/value_gather.cuh\"\n\n"
      "namespace vg = spmvc::value_gather;\n"
      "static_assert(vg::kBlock == 256, \"the runtime launches 256 threads a block\");\n";
  for (const ElemType index : {ElemType::i32, ElemType::i64}) {
    for (const auto& [in, out] : kGatherPairs) {
      k.source += fmt::format(
          "\nextern \"C\" __global__ void __launch_bounds__(vg::kBlock)\n"
          "{}(const {}* __restrict__ source, long long slots, const {}* __restrict__ in,\n"
          "    {}* __restrict__ out, unsigned long long* __restrict__ flags) {{\n"
          "  vg::gather(source, slots, in, out, flags);\n"
          "}}\n",
          value_gather_entry(index, in, out), codegen::c_type(index), codegen::c_type(in),
          codegen::c_type(out));
    }
  }
  // Mixed precision: fp64 rounded to fp32, fp32 rounded to bf16 words.
  for (const ElemType index : {ElemType::i32, ElemType::i64}) {
    for (const auto& [in, out] : kRoundPairs) {
      k.source += fmt::format(
          "\nextern \"C\" __global__ void __launch_bounds__(vg::kBlock)\n"
          "{}(const {}* __restrict__ source, long long slots, const {}* __restrict__ in,\n"
          "    {}* __restrict__ out, unsigned long long* __restrict__ flags) {{\n"
          "  vg::gather_rounded(source, slots, in, out, flags);\n"
          "}}\n",
          value_round_entry(index, in, out), codegen::c_type(index), codegen::c_type(in),
          codegen::c_type(out));
    }
  }
  for (const ElemType in : {ElemType::f64, ElemType::f32}) {
    k.source += fmt::format(
        "\nextern \"C\" __global__ void __launch_bounds__(vg::kBlock)\n"
        "{}(long long n, const {}* __restrict__ in, unsigned long long* __restrict__ flags) {{\n"
        "  vg::check_ones(n, in, flags);\n"
        "}}\n",
        check_ones_entry(in), codegen::c_type(in));
  }
  return k;
}

}  // namespace spmvc::compiler
