#include "formats/bro_coo/bro_coo_format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/arrays.hpp"
#include "formats/bro_coo/bro_coo_model.hpp"
#include "formats/values/values.hpp"
#include "heuristics.hpp"
#include "spmvc/error.hpp"

namespace spmvc::formats {

namespace {

const BroCooParams& params_of(const FormatParams& params) {
  const auto* p = std::get_if<BroCooParams>(&params);
  if (p == nullptr) throw InternalError("bro_coo format given another format's parameters");
  return *p;
}

}  // namespace

std::string BroCooFormat::kernel_name(const BroCooParams& p, Precision precision) {
  return fmt::format("spmv_bro_coo_i{}_s{}_b{}{}_{}", p.interval, p.symbol_bits, p.block_size,
                     value_coding_tag(p.values), codegen::precision_tag(precision));
}

Cost BroCooFormat::cost(const Profile& profile, const FormatParams& params,
                        Precision precision) const {
  const BroCooParams& p = params_of(params);
  const bro::CooEstimate est =
      bro::estimate_coo(profile, 0, p.interval, p.symbol_bits, precision, p.values);
  const double vb = value_bytes(precision);
  Cost c;
  c.matrix_bytes = est.matrix_bytes;
  c.x_bytes = static_cast<double>(profile.ncols) * vb;
  // The scaling pass reads and writes y; every run of a row in a lane adds to it in L2.
  c.y_bytes = 2.0 * static_cast<double>(profile.nrows) * vb +
              est.atomics * vb * bro::model::kAtomicBytesFactor;
  const double efficiency =
      bro::model::kDecodeEfficiency[0] *
      (est.entries > 0 ? est.entries / (std::ceil(est.entries / p.interval) * p.interval) : 1.0);
  // The scaling pass's launch: charged as lost efficiency, so the time grows by one launch and
  // the bytes stay the bytes moved.
  c.lane_efficiency = bro::with_extra_launch(
      c.total(), efficiency * value_coding_efficiency(p.values, profile, precision));
  c.serial_seconds = std::ceil(p.interval / 32.0 / bro::model::kCooEntriesPerStep) *
                     heuristics::kCsrStepSeconds * bro::model::kStepFactor;
  return c;
}

std::optional<std::string> BroCooFormat::cannot_implement(const Profile& profile,
                                                          const FormatParams& params,
                                                          Precision precision) const {
  const BroCooParams& p = params_of(params);
  std::string why = bro::check_coo_shape(p.interval, p.symbol_bits, p.block_size);
  if (!why.empty()) return why;
  if (profile.nrows > std::numeric_limits<std::int32_t>::max())
    return fmt::format("{} rows do not fit 32-bit row indices", profile.nrows);
  const double slots = std::ceil(static_cast<double>(profile.nnz) / p.interval) * p.interval;
  if (slots / 32.0 > static_cast<double>(std::numeric_limits<std::int32_t>::max()) * 32.0)
    return fmt::format("{} entries need too many warps", profile.nnz);
  return value_coding_problem(profile, p.values, precision);
}

std::vector<Candidate> BroCooFormat::propose(const Profile& profile, Precision precision) const {
  // The paper's intervals are a warp's worth of COO entries; one interval of 32 lanes x 32
  // entries keeps each lane's row stream a symbol or two long, and 64-bit symbols halve the
  // symbol loads of wider row gaps.
  std::vector<Candidate> out;
  for (const BroCooParams& p :
       {BroCooParams{1024, 32, 256}, BroCooParams{1024, 64, 256}, BroCooParams{256, 32, 256}}) {
    Candidate c = candidate(profile, p, precision);
    if (c.applicable) {
      const bro::CooEstimate est =
          bro::estimate_coo(profile, 0, p.interval, p.symbol_bits, precision);
      c.reason = fmt::format("row-length independent: ~{:.0f} atomic row updates", est.atomics);
    }
    out.push_back(std::move(c));
  }
  add_value_coded(out, profile, precision);
  return out;
}

Encoded BroCooFormat::encode(const CsrMatrix& a, const FormatParams& params,
                             Precision precision) const {
  const BroCooParams& p = params_of(params);
  Encoded e = encoded_for(a, precision);
  bro::encode_coo(a, 0, p.interval, p.symbol_bits, precision, "", e.arrays, p.values);
  return e;
}

void BroCooFormat::reference_spmv(const Encoded& e, const FormatParams& params,
                                  std::span<const double> x, std::span<double> y, double alpha,
                                  double beta) const {
  const BroCooParams& p = params_of(params);
  if (static_cast<std::int64_t>(x.size()) != e.ncols ||
      static_cast<std::int64_t>(y.size()) != e.nrows)
    throw InputError("reference_spmv", 0, "x or y has the wrong length");
  std::vector<double> acc(y.size(), 0.0);
  bro::accumulate_coo(e, "", p.interval, x, acc, p.values);
  for (std::size_t i = 0; i < y.size(); ++i)
    y[i] = alpha * acc[i] + (beta != 0.0 ? beta * y[i] : 0.0);
}

namespace bro {

CooKernelText coo_kernel_text(const Encoded& e, const std::string& prefix, int interval,
                              int block_size, const std::string& entry_name, int values) {
  using K = KernelParam::Kind;
  CooKernelText k;
  const std::int64_t count = typed<std::int64_t>(e.array(prefix + "count"))[0];
  const std::int64_t intervals = (count + interval - 1) / interval;
  k.constants = {{fmt::format("constexpr int kInterval = {};", interval),
                  "I: entries per interval (one warp, I/32 per lane)"}};
  k.launch.entry = entry_name;
  k.launch.block = block_size;
  k.launch.grid = std::max<std::int64_t>(1, (intervals * 32 + block_size - 1) / block_size);
  k.launch.params = {{K::array, prefix + "count"},   {K::array, prefix + "row_base"},
                     {K::array, prefix + "widths"},  {K::array, prefix + "sym_ptr"},
                     {K::array, prefix + "symbols"}, {K::array, prefix + "col_idx"}};
  const ValueArgs vals = value_args(values, "values", prefix + "values");
  k.launch.params.insert(k.launch.params.end(), vals.params.begin(), vals.params.end());
  k.launch.params.insert(k.launch.params.end(), {{K::x, "x"}, {K::y, "y"}, {K::alpha, "alpha"}});
  // The signature names the arrays without the part's prefix.
  k.entry = fmt::format(R"(
{SIG}  spmvc::bro::spmv_coo<kInterval, kSymbolBits, kBlockSize>(count, row_base, widths, sym_ptr,
                                                           symbols, col_idx, {VP}, x, y, alpha);
}}
)",
                        fmt::arg("SIG", codegen::entry_signature(entry_name, k.launch.params, e,
                                                                 "kBlockSize", prefix)),
                        fmt::arg("VP", vals.pass));
  return k;
}

}  // namespace bro

KernelSource BroCooFormat::generate(const Encoded& e, const FormatParams& params,
                                    const std::string& banner) const {
  using K = KernelParam::Kind;
  const BroCooParams& p = params_of(params);
  KernelSource k = kernel_source(kernel_name(p, e.precision), {"spmvc/bro_coo.cuh"}, banner);
  bro::CooKernelText coo =
      bro::coo_kernel_text(e, "", p.interval, p.block_size, k.kernel_name, p.values);
  k.block = coo.launch.block;
  k.grid = coo.launch.grid;
  k.params = coo.launch.params;
  KernelLaunch scale;
  scale.entry = k.kernel_name + "_scale_y";
  scale.block = p.block_size;
  scale.grid = std::max<std::int64_t>(1, (e.nrows + p.block_size - 1) / p.block_size);
  scale.params = {{K::rows, "nrows"}, {K::y, "y"}, {K::beta, "beta"}};
  k.pre_launches.push_back(scale);

  std::vector<std::pair<std::string, std::string>> constants = coo.constants;
  constants.push_back({fmt::format("constexpr int kSymbolBits = {};", p.symbol_bits),
                       "bits per symbol of the multiplexed row streams"});
  constants.push_back(
      {fmt::format("constexpr int kBlockSize = {};", p.block_size), "threads per block"});
  constants.push_back({fmt::format("using Value = {};", codegen::value_type(e.precision)),
                       "stored values, x and y"});
  constants.push_back(
      {fmt::format("using Acc = {};", codegen::accumulate_type(e.precision)), "accumulation"});
  k.source += "#include \"spmvc/bro_coo.cuh\"\n\n";
  k.source += codegen::constants_block(constants);
  k.source += fmt::format(
      "\nstatic_assert(sizeof(Value) == {VB}, \"values were encoded with {VB}-byte elements\");\n"
      "static_assert(sizeof(spmvc::bro::SymbolWord<kSymbolBits>::type) == {SB}, \"symbols were "
      "encoded as {S}-bit words\");\n",
      fmt::arg("VB", value_bytes(e.precision)), fmt::arg("SB", p.symbol_bits / 8),
      fmt::arg("S", p.symbol_bits));
  k.source += fmt::format(
      R"(
// Pass 1: y = beta*y, so the interval kernel only has to add.
{SIG}  spmvc::bro::scale_y<kBlockSize>(nrows, y, beta);
}}
)",
      fmt::arg("SIG", codegen::entry_signature(scale.entry, scale.params, e, "kBlockSize")));
  k.source += "\n// Pass 2: y += alpha*A*x.";
  k.source += coo.entry;
  return k;
}

}  // namespace spmvc::formats
