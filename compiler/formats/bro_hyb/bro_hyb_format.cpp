#include "formats/bro_hyb/bro_hyb_format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/arrays.hpp"
#include "formats/bro_coo/bro_coo_format.hpp"
#include "formats/bro_coo/bro_coo_model.hpp"
#include "formats/bro_ell/bro_ell_format.hpp"
#include "formats/bro_ell/bro_ell_model.hpp"
#include "formats/values/values.hpp"
#include "heuristics.hpp"
#include "spmvc/error.hpp"

namespace spmvc::formats {

namespace {

constexpr std::int64_t kWholeRow = std::numeric_limits<std::int64_t>::max();

const BroHybParams& params_of(const FormatParams& params) {
  const auto* p = std::get_if<BroHybParams>(&params);
  if (p == nullptr) throw InternalError("bro_hyb format given another format's parameters");
  return *p;
}

const char* tables_tag(int tables) { return tables == 1 ? "_const" : tables == 2 ? "_baked" : ""; }

}  // namespace

std::string BroHybFormat::kernel_name(const BroHybParams& p, Precision precision) {
  return fmt::format("spmv_bro_hyb_k{}_h{}_s{}_t{}_b{}_u{}{}{}_i{}{}", p.width, p.slice_height,
                     p.symbol_bits, p.threads_per_row, p.block_size, p.unroll,
                     p.prefetch ? "_pf" : "", tables_tag(p.tables), p.interval,
                     value_coding_tag(p.values) + "_" + codegen::precision_tag(precision));
}

Cost BroHybFormat::cost(const Profile& profile, const FormatParams& params,
                        Precision precision) const {
  const BroHybParams& p = params_of(params);
  const bro::EllShape shape = bro::shape_of(p);
  const bro::EllEstimate ell = bro::estimate_ell(profile, p.width, shape);
  const bro::CooEstimate coo =
      bro::estimate_coo(profile, p.width, p.interval, p.symbol_bits, precision, p.values);
  const double vb = value_bytes(precision);
  const double tables = p.tables == 0 ? 0.0 : ell.table_bytes;
  const double ell_bytes = ell.index_bytes - tables +
                           ell.overread_bytes * bro::model::kOverreadBytesFactor +
                           ell.padded_entries * value_code_bytes(p.values, precision) +
                           value_table_bytes(p.values, profile, precision);
  const double coo_bytes = coo.matrix_bytes + coo.atomics * vb * bro::model::kAtomicBytesFactor;
  Cost c;
  c.matrix_bytes = ell_bytes + coo_bytes;
  c.x_bytes = static_cast<double>(profile.ncols) * vb;
  c.y_bytes = static_cast<double>(profile.nrows) * vb;
  // Each pass runs at its own efficiency (the time-weighted mean), and the COO pass is one
  // more launch, even when it has nothing to do.
  const double ell_eff =
      std::max(1e-3, ell.lane_efficiency * BroEllFormat::decode_efficiency(profile, shape));
  const double coo_eff = bro::model::kDecodeEfficiency[0];
  const double x_y = c.x_bytes + c.y_bytes;
  const double efficiency =
      (ell_bytes + coo_bytes + x_y) / ((ell_bytes + x_y) / ell_eff + coo_bytes / coo_eff);
  c.lane_efficiency = bro::with_extra_launch(
      c.total(), efficiency * value_coding_efficiency(p.values, profile, precision));
  const double coo_steps =
      coo.entries > 0 ? std::ceil(p.interval / 32.0 / bro::model::kCooEntriesPerStep) : 0.0;
  c.serial_seconds = std::max(
      std::max(ell.max_columns, coo_steps) * heuristics::kCsrStepSeconds * bro::model::kStepFactor,
      BroEllFormat::decode_seconds(shape, ell.padded_entries));
  return c;
}

std::optional<std::string> BroHybFormat::cannot_implement(const Profile& profile,
                                                          const FormatParams& params,
                                                          Precision precision) const {
  const BroHybParams& p = params_of(params);
  if (p.width < 0) return fmt::format("ELL width {} is negative", p.width);
  std::string why =
      bro::check_ell_shape(profile, p.width, bro::shape_of(p), p.block_size, p.unroll, p.prefetch);
  if (why.empty()) why = bro::check_coo_shape(p.interval, p.symbol_bits, p.block_size);
  if (!why.empty()) return why;
  if (profile.nrows > std::numeric_limits<std::int32_t>::max())
    return fmt::format("{} rows do not fit 32-bit row indices", profile.nrows);
  return value_coding_problem(profile, p.values, precision);
}

std::vector<Candidate> BroHybFormat::propose(const Profile& profile, Precision precision) const {
  const int k = static_cast<int>(
      std::min<std::int64_t>(hyb_split_width(profile), std::numeric_limits<int>::max()));
  // The paper's split with the paper's kernels (h = 256, T = 1, 32-bit symbols), then warp
  // slices with prefetch, 64-bit symbols, and baked widths (bro_ell's fastest decode).
  struct Variant {
    BroHybParams p;
    const char* why;
  };
  const std::vector<Variant> variants = {
      {BroHybParams{k, 256, 32, 1, 256, 1, false, 0, 1024}, "the paper's kernels"},
      {BroHybParams{k, 32, 32, 1, 256, 2, true, 0, 1024}, "warp slices, prefetch"},
      {BroHybParams{k, 32, 64, 1, 256, 2, true, 0, 1024}, "warp slices, 64-bit symbols"},
      {BroHybParams{k, 32, 32, 1, 256, 1, false, 2, 1024}, "warp slices, one width pattern, baked"},
  };
  std::vector<Candidate> out;
  for (const Variant& v : variants) {
    Candidate c = candidate(profile, v.p, precision);
    if (c.applicable) {
      const bro::CooEstimate coo =
          bro::estimate_coo(profile, k, v.p.interval, v.p.symbol_bits, precision);
      const double share =
          profile.nnz > 0 ? 1.0 - coo.entries / static_cast<double>(profile.nnz) : 1.0;
      c.reason = fmt::format("{}: hyb split K={}, {:.0f}% of nonzeros in BRO-ELL", v.why, k,
                             100.0 * share);
    }
    out.push_back(std::move(c));
  }
  add_value_coded(out, profile, precision);
  return out;
}

Encoded BroHybFormat::encode(const CsrMatrix& a, const FormatParams& params,
                             Precision precision) const {
  const BroHybParams& p = params_of(params);
  Encoded e = encoded_for(a, precision);
  bro::encode_ell(a, p.width, bro::shape_of(p), precision, "ell_", e.arrays);
  bro::encode_coo(a, p.width, p.interval, p.symbol_bits, precision, "coo_", e.arrays, p.values);
  return e;
}

void BroHybFormat::reference_spmv(const Encoded& e, const FormatParams& params,
                                  std::span<const double> x, std::span<double> y, double alpha,
                                  double beta) const {
  const BroHybParams& p = params_of(params);
  if (static_cast<std::int64_t>(x.size()) != e.ncols ||
      static_cast<std::int64_t>(y.size()) != e.nrows)
    throw InputError("reference_spmv", 0, "x or y has the wrong length");
  std::vector<double> acc(y.size(), 0.0);
  bro::accumulate_ell(e, "ell_", bro::shape_of(p), x, acc);
  bro::accumulate_coo(e, "coo_", p.interval, x, acc, p.values);
  for (std::size_t i = 0; i < y.size(); ++i)
    y[i] = alpha * acc[i] + (beta != 0.0 ? beta * y[i] : 0.0);
}

KernelSource BroHybFormat::generate(const Encoded& e, const FormatParams& params,
                                    const std::string& banner) const {
  const BroHybParams& p = params_of(params);
  KernelSource k = kernel_source(kernel_name(p, e.precision),
                                 {"spmvc/bro_ell.cuh", "spmvc/bro_coo.cuh"}, banner);
  k.block = p.block_size;
  bro::EllKernelText ell = bro::ell_kernel_text(e, "ell_", bro::shape_of(p), p.block_size, p.unroll,
                                                p.prefetch, k.kernel_name);
  bro::CooKernelText coo =
      bro::coo_kernel_text(e, "coo_", p.interval, p.block_size, k.kernel_name + "_coo", p.values);
  k.grid = ell.grid;
  k.params = ell.params;
  k.post_launches.push_back(coo.launch);

  std::vector<std::pair<std::string, std::string>> constants = ell.constants;
  for (const auto& c : coo.constants) constants.push_back(c);
  constants.push_back({fmt::format("using Value = {};", codegen::value_type(e.precision)),
                       "stored values, x and y"});
  constants.push_back(
      {fmt::format("using Acc = {};", codegen::accumulate_type(e.precision)), "accumulation"});
  k.source += "#include \"spmvc/bro_coo.cuh\"\n#include \"spmvc/bro_ell.cuh\"\n\n";
  k.source += codegen::constants_block(constants);
  k.source += ell.definitions;
  k.source += "\n";
  k.source += fmt::format(
      "static_assert(sizeof(Value) == {}, \"values were encoded with {}-byte elements\");\n",
      value_bytes(e.precision), value_bytes(e.precision));
  k.source += ell.asserts;
  k.source += "\n// Launch 1, the BRO-ELL part: y = alpha*A_ell*x + beta*y for every row.";
  k.source += ell.entry;
  k.source += "\n// Launch 2, the BRO-COO part: y += alpha*A_coo*x.";
  k.source += coo.entry;
  return k;
}

}  // namespace spmvc::formats
