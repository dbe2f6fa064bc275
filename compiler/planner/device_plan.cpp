// Planning for a CSR matrix already in device memory (compile(DeviceCsr)): only plans that run on
// the caller's arrays as they are, or on arrays the GPU build makes from them (csr_stream's row
// blocks and 16-bit columns, 8- and 16-bit value codes, fp32 values, the ell, sell and hyb
// encodings of runtime/device_build_ell.cpp, the whole encodings of bro_ell, bro_coo and bro_hyb of
// runtime/device_build_bro.cpp, and bcsr's and bellpack's of runtime/device_build_block.cpp).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <variant>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/csr_stream/csr_stream_format.hpp"
#include "formats/format.hpp"
#include "formats/model_shortcuts.hpp"
#include "formats/values/values.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_bro.hpp"
#include "spmvc/compiler/device_ell.hpp"
#include "spmvc/error.hpp"

namespace spmvc::compiler {

namespace {

// The formats the GPU builds from device arrays.
constexpr std::string_view kDeviceFormats[] = {"csr",  "csr_stream", "ell",     "sell",
                                               "hyb",  "bro_ell",    "bro_coo", "bro_hyb",
                                               "bcsr", "bellpack",   "dia"};
constexpr std::string_view kDeviceFormatList =
    "csr, csr_stream, ell, sell, hyb, bro_ell, bro_coo, bro_hyb, bcsr, bellpack and dia";

bool built_on_device(std::string_view format) {
  return std::find(std::begin(kDeviceFormats), std::end(kDeviceFormats), format) !=
         std::end(kDeviceFormats);
}

// Why `params` cannot run on the caller's arrays as they are (nullopt when they can).
std::optional<std::string> device_csr_refusal(const FormatParams& params, const DeviceCsr& a,
                                              const Profile& profile, Precision precision) {
  auto misaligned = [](const void* p, std::size_t bytes) {
    return reinterpret_cast<std::uintptr_t>(p) % bytes != 0;
  };
  // Every value coding these formats have is built on the GPU (the rounded ones of mixed
  // precision are refused with the option: device_options_refusal).
  if (const auto* p = std::get_if<CsrParams>(&params)) {
    if (p->offsets64) return "64-bit row offsets: DeviceCsr has 32-bit ones";
    const auto v = static_cast<std::size_t>(p->vector_width);
    if (v > 1 && a.nnz % p->vector_width != 0)
      return fmt::format("{}-wide loads would read past the {} nonzeros (not a multiple of {})", v,
                         a.nnz, v);
    // Coded values are spmvc's own array; plain ones are the caller's.
    const bool own_values = p->values != formats::kValuesPlain;
    if (v > 1 && (misaligned(a.col_idx, 4 * v) ||
                  (!own_values &&
                   misaligned(a.values, static_cast<std::size_t>(value_bytes(precision)) * v))))
      return fmt::format("{}-wide loads need col_idx and values aligned to {} elements", v, v);
  } else if (const auto* q = std::get_if<CsrStreamParams>(&params)) {
    if (q->offsets64) return "64-bit row offsets: DeviceCsr has 32-bit ones";
    if (q->sorted)
      return "sorted tiles (srt): the GPU builds csr_stream in CSR order; compile(CsrMatrix) "
             "builds sorted tiles on the host";
  } else if (const auto* h = std::get_if<HybParams>(&params); h != nullptr && h->narrow_rows) {
    return "16-bit COO rows (r16): the GPU builds hyb with 32-bit rows; compile(CsrMatrix) "
           "builds 16-bit rows on the host";
  } else if (std::holds_alternative<EllParams>(params) ||
             std::holds_alternative<HybParams>(params)) {
    // Built from any CSR.
  } else if (const auto* c = std::get_if<SellParams>(&params)) {
    if (c->sigma > codegen::kDeviceSortWindow)
      return fmt::format("sorting windows of {} rows: the GPU sorts windows of at most {}",
                         c->sigma, codegen::kDeviceSortWindow);
  } else if (std::holds_alternative<BroEllParams>(params) ||
             std::holds_alternative<BroHybParams>(params)) {
    if (!has_bro_columns(profile))
      return "the columns are not strictly increasing within every row (BRO-ELL delta-codes "
             "sorted columns)";
  } else if (std::holds_alternative<DiaParams>(params)) {
    // The diagonal pass (runtime/device_build_ell.cpp) counted the diagonals, and checked the
    // symmetry a symmetric half needs, on these arrays: the Profile says whether it holds.
  } else if (std::holds_alternative<BroCooParams>(params)) {
    // Rows are delta-coded, columns kept: any column order encodes.
  } else if (const auto* b = std::get_if<BcsrParams>(&params); b != nullptr && b->symmetric) {
    return "S=1 (symmetric half): the GPU builds bcsr with every block stored; "
           "compile(CsrMatrix) builds the symmetric half on the host";
  } else if (std::holds_alternative<BcsrParams>(params) ||
             std::holds_alternative<BellpackParams>(params)) {
    // The GPU's block inspection keeps its shapes only when every row's columns strictly
    // increase, which its encoders need (a block's rank is found by binary searches).
    if (profile.block_shapes.empty())
      return "the columns are not strictly increasing within every row (the GPU builds blocks "
             "from sorted columns)";
  } else {
    return fmt::format("{} needs its own encoding of the matrix", format_of(params));
  }
  return std::nullopt;
}

}  // namespace

std::optional<OptionRefusal> device_options_refusal(const Options& options) {
  if (options.planner != PlannerMode::model)
    return OptionRefusal{"planner",
                         "measure mode remembers decisions by the matrix's contents, which are in "
                         "device memory here: use the model planner, or compile(CsrMatrix)"};
  if ((!options.reorder.empty() && options.reorder != "none") || options.ordering)
    return OptionRefusal{"reorder",
                         "a matrix in device memory is multiplied in its own order: reordering "
                         "needs compile(CsrMatrix)"};
  if (options.full_inspection)
    return OptionRefusal{"full_inspection",
                         "from device arrays only row lengths are inspected (on the GPU): a full "
                         "Profile needs compile(CsrMatrix)"};
  if (options.mixed_precision != MixedPrecision::off)
    return OptionRefusal{"mixed_precision",
                         "mixed precision rounds the values into an encoding of their own, which "
                         "the device-array build does not make (it reads the caller's values): "
                         "use compile(CsrMatrix)"};
  if (options.format != "auto" && !built_on_device(options.format))
    return OptionRefusal{"format", fmt::format("{} needs an encoding the GPU does not build yet; "
                                               "from device arrays only {} run",
                                               options.format, kDeviceFormatList)};
  if (options.params && !built_on_device(format_of(*options.params)))
    return OptionRefusal{"params", fmt::format("{} parameters: from device arrays only {} run",
                                               format_of(*options.params), kDeviceFormatList)};
  return std::nullopt;
}

void check_device_options(const Options& options) {
  if (const std::optional<OptionRefusal> refusal = device_options_refusal(options))
    throw InputError(refusal->field, 0, refusal->why);
}

namespace {

// Whether `format` is planned on the column pass's Profile fields (DevicePlanning::finish).
bool column_format(std::string_view format) { return format.starts_with("bro_"); }

}  // namespace

DevicePlanning::DevicePlanning(const DeviceCsr& a, const Options& options,
                               const BuildTarget& target, bool uploads_csr)
    : a_(a),
      options_(options),
      po_(plan_options(options, target)),
      proposed_(std::size(kDeviceFormats)) {
  po_.build_path = BuildPath::device;
  po_.uploads_csr = uploads_csr;
  cusparse_ = po_.cusparse;
  po_.cusparse = "never";  // cuSPARSE is weighed after the generated candidates are ranked
}

void DevicePlanning::propose_row_formats(const Profile& profile) {
  if (rows_done_) throw InternalError("DevicePlanning::propose_row_formats called twice");
  propose(profile, false);
  rows_done_ = true;
}

void DevicePlanning::propose(const Profile& profile, bool column_formats) {
  const formats::PlanningScope planning(profile);  // one for every format's make_plan below
  PlanOptions po = po_;
  const bool forced = options_.csr || options_.params;
  for (std::size_t i = 0; i < std::size(kDeviceFormats); ++i) {
    const std::string format(kDeviceFormats[i]);
    if (column_format(format) != column_formats) continue;
    const bool wanted =
        forced ? (options_.csr ? format == "csr" : format_of(*options_.params) == format)
               : options_.format == "auto" || options_.format == format;
    if (!wanted) continue;
    po.format = format;
    // Each format's candidates as make_plan weighs them, without its pick: the ranking in
    // finish() is over all of them. Where none of a format's candidates can implement the matrix
    // (ell past its padding limit on power-law rows) they are listed, rejected with their
    // reasons, unless the caller asked for that format: then pick_candidate refuses it, naming
    // each reason.
    std::vector<Candidate> proposed = plan_candidates(profile, po).candidates;
    const bool none_applies = std::none_of(proposed.begin(), proposed.end(),
                                           [](const Candidate& c) { return c.applicable; });
    if (none_applies && (forced || options_.format != "auto"))
      (void)pick_candidate(std::move(proposed), options_.precision, po.multiplies);  // throws
    proposed_[i] = std::move(proposed);
  }
}

Plan plan_device_csr(const DeviceCsr& a, const Profile& profile, const Options& options,
                     const BuildTarget& target, bool uploads_csr) {
  DevicePlanning planning(a, options, target, uploads_csr);
  planning.propose_row_formats(profile);
  return planning.finish(profile);
}

Plan DevicePlanning::finish(const Profile& profile) {
  if (proposed_.empty()) throw InternalError("DevicePlanning::finish called twice");
  if (!rows_done_) propose_row_formats(profile);
  propose(profile, true);
  const DeviceCsr& a = a_;
  const Options& options = options_;
  const formats::PlanningScope planning(profile);
  PlanOptions po = po_;
  const bool forced = options.csr || options.params;
  std::vector<Candidate> all;
  for (std::vector<Candidate>& proposed : proposed_)
    for (Candidate& c : proposed) all.push_back(std::move(c));
  proposed_.clear();
  std::vector<Candidate> twins;
  for (Candidate& c : all) {
    if (!c.applicable) continue;
    const std::optional<std::string> why =
        device_csr_refusal(c.params, a, profile, options.precision);
    if (!why) continue;
    if (forced) throw InputError("params", 0, "from device arrays: " + *why);
    const auto* p = std::get_if<CsrParams>(&c.params);
    if (p != nullptr && p->vector_width > 1) {
      CsrParams single = *p;
      single.vector_width = 1;
      if (!device_csr_refusal(single, a, profile, options.precision)) {
        const Prediction pr = predict(profile, single, po);
        Candidate twin{"csr",
                       single,
                       describe(single),
                       true,
                       c.reason + "; single loads (device arrays)",
                       pr.bytes(po.cost_model),
                       pr.seconds(po.cost_model)};
        twin.build_seconds = pr.build.total();
        twins.push_back(std::move(twin));
      }
    }
    c.applicable = false;
    c.representable = false;
    c.reason = "from device arrays: " + *why;
  }
  for (Candidate& t : twins) {
    const bool seen = std::any_of(all.begin(), all.end(), [&](const Candidate& c) {
      return c.applicable && c.format == t.format && c.label == t.label;
    });
    if (!seen) all.push_back(std::move(t));
  }
  Plan plan = pick_candidate(std::move(all), options.precision, po.multiplies);
  // cuSPARSE multiplies the caller's CSR arrays themselves: no build beyond its preprocessing.
  po.cusparse = cusparse_;
  po.format = "auto";
  if (!forced && options.format == "auto" && offer_cusparse(plan, profile, po)) {
    plan.why += " (device arrays: cuSPARSE runs on the caller's CSR)";
    return plan;
  }
  plan.why =
      forced ? "parameters forced by the caller (device arrays)"
             : fmt::format(
                   "lowest predicted {} of the {} candidates built on the GPU from "
                   "device arrays ({})",
                   po.multiplies ? fmt::format("one-time cost + {} x multiply time", *po.multiplies)
                                 : std::string("time"),
                   kDeviceFormatList, plan.candidates.front().reason);
  return plan;
}

KernelSource generate_device_csr(const Plan& plan, const Profile& profile, const DeviceCsr& a,
                                 std::int64_t row_blocks) {
  const std::string banner = codegen::banner(plan, profile);
  if (const auto* params = std::get_if<CsrStreamParams>(&plan.params))
    return formats::CsrStreamFormat::generate_kernel(*params, plan.precision, row_blocks, banner);
  // csr's kernel needs only the sizes of the encoded matrix and its arrays' element types (its
  // entry point is declared from them): the caller's 32-bit offsets and columns, and the values
  // as the plan codes them. The arrays stay empty: their contents are on the device.
  const auto& params = std::get<CsrParams>(plan.params);
  Encoded sizes;
  sizes.format = "csr";
  sizes.precision = plan.precision;
  sizes.nrows = a.nrows;
  sizes.ncols = a.ncols;
  sizes.nnz = a.nnz;
  sizes.arrays.push_back({"row_ptr", ElemType::i32, {}});
  sizes.arrays.push_back({"col_idx", ElemType::i32, {}});
  sizes.arrays.push_back({"values", formats::value_code_type(params.values, plan.precision), {}});
  sizes.arrays.push_back({"values_table", formats::value_elem_type(plan.precision), {}});
  return codegen::generate(plan, sizes, profile);
}

}  // namespace spmvc::compiler
