#include "formats/csr/csr_format.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/arrays.hpp"
#include "formats/csr/csr_model.hpp"
#include "formats/model_shortcuts.hpp"
#include "formats/values/values.hpp"
#include "heuristics.hpp"
#include "spmvc/error.hpp"

namespace spmvc::formats {

namespace {

constexpr int kThreadsPerRowChoices[] = {1, 2, 4, 8, 16, 32};

const CsrParams& params_of(const FormatParams& params) {
  const auto* p = std::get_if<CsrParams>(&params);
  if (p == nullptr) throw InternalError("csr format given another format's parameters");
  return *p;
}

template <typename Offset, typename Value>
void multiply(const Encoded& e, int coding, std::span<const double> x, std::span<double> y,
              double alpha, double beta) {
  const Offset* row_ptr = typed<Offset>(e.array("row_ptr"));
  const EncodedArray& col_arr = e.array("col_idx");
  const std::int32_t* col = typed<std::int32_t>(col_arr);
  const std::vector<Value> values = stored_values<Value>(e, "values", coding, col_arr.count());
  const Value* val = values.data();
  for (std::int64_t r = 0; r < e.nrows; ++r) {
    double sum = 0;
    for (std::int64_t j = row_ptr[r]; j < static_cast<std::int64_t>(row_ptr[r + 1]); ++j) {
      sum += static_cast<double>(val[j]) * x[static_cast<std::size_t>(col[j])];
    }
    const double prior = beta != 0.0 ? beta * y[static_cast<std::size_t>(r)] : 0.0;
    y[static_cast<std::size_t>(r)] = alpha * sum + prior;
  }
}

}  // namespace

std::int64_t CsrFormat::padded_nnz(std::int64_t nnz) {
  return (nnz + kPadElements - 1) / kPadElements * kPadElements;
}

double CsrFormat::lane_efficiency(const Profile& profile, int threads_per_row) {
  // Each row occupies T lanes for ceil(len/T) steps (at least one step, to write y). Bins above
  // 32 are ranges: their midpoint stands for every row in them.
  double useful = 0, issued = 0;
  for (const HistogramBin& bin : profile.row_histogram) {
    const double len = 0.5 * static_cast<double>(bin.lo + bin.hi);
    const double steps = std::max(1.0, std::ceil(len / threads_per_row));
    useful += len * static_cast<double>(bin.count);
    issued += steps * threads_per_row * static_cast<double>(bin.count);
  }
  return issued > 0 ? useful / issued : 1.0;
}

namespace {

double warp_imbalance_afresh(const Profile& profile, int threads_per_row) {
  // E[max of g rows] = sum over bins of steps * (F(bin)^g - F(bin-)^g), bins in increasing
  // order; bins above 32 are ranges and their midpoint stands for every row in them.
  const int rows_per_warp = std::max(1, 32 / std::max(1, threads_per_row));
  double rows = 0, steps_sum = 0;
  for (const HistogramBin& bin : profile.row_histogram) {
    const double len = 0.5 * static_cast<double>(bin.lo + bin.hi);
    rows += static_cast<double>(bin.count);
    steps_sum += std::max(1.0, std::ceil(len / threads_per_row)) * static_cast<double>(bin.count);
  }
  if (rows <= 0 || rows_per_warp == 1) return 1.0;
  // F(bin-)^n is the previous bin's F^n (the same double: below / rows again).
  double below = 0, longest = 0, f0_pow = std::pow(0.0, rows_per_warp);
  for (const HistogramBin& bin : profile.row_histogram) {
    const double len = 0.5 * static_cast<double>(bin.lo + bin.hi);
    const double steps = std::max(1.0, std::ceil(len / threads_per_row));
    const double f1_pow = std::pow((below + static_cast<double>(bin.count)) / rows, rows_per_warp);
    longest += steps * (f1_pow - f0_pow);
    f0_pow = f1_pow;
    below += static_cast<double>(bin.count);
  }
  return std::max(1.0, longest / (steps_sum / rows));
}

}  // namespace

double CsrFormat::warp_imbalance(const Profile& profile, int threads_per_row) {
  // Asked for every csr candidate and its twins over a few thread counts (a power per histogram
  // bin each time): kept for the planning, by T.
  thread_local PlanningMemo<int, double> kept;
  return kept.get(profile, threads_per_row,
                  [&] { return warp_imbalance_afresh(profile, threads_per_row); });
}

double CsrFormat::nonzeros_per_lane(Precision precision) {
  return precision == Precision::f64 ? heuristics::kCsrNonzerosPerLaneF64
                                     : heuristics::kCsrNonzerosPerLaneF32;
}

CsrParams CsrFormat::choose(const Profile& profile, Precision precision) {
  CsrParams p;
  p.block_size = heuristics::kCsrBlockSize;
  p.offsets64 = needs_offsets64(profile.nnz);
  p.threads_per_row = 32;
  for (int t : kThreadsPerRowChoices) {
    if (t >= heuristics::kCsrMinThreadsPerRow &&
        profile.row_mean / t <= nonzeros_per_lane(precision)) {
      p.threads_per_row = t;
      break;
    }
  }
  p.vector_width = vector_width_for(profile, p.threads_per_row);
  p.unroll = unroll_for(p.vector_width);
  return p;
}

int CsrFormat::vector_width_for(const Profile& profile, int threads_per_row) {
  // The length of the row an average nonzero sits in, E[len^2]/E[len]: equal to the mean on
  // regular matrices, far above it on power-law ones, whose long rows set the kernel's time
  // (and there take vector loads even when the mean row is short).
  const double mean = std::max(profile.row_mean, 1e-9);
  const double weighted = (profile.row_stddev * profile.row_stddev + mean * mean) / mean;
  const double per_lane = weighted / threads_per_row;
  for (int v : {4, 2}) {
    if (v <= heuristics::kCsrVectorSlack * per_lane) return v;
  }
  return 1;
}

int CsrFormat::unroll_for(int) {
  // Vector loads are the better way to keep loads in flight: with the vector kernel a second
  // step of loads (u=2) lost or won only within noise on the H100
  // (bench/results/2026-11-22-h100-csr-unroll-sweep).
  return 1;
}

Cost CsrFormat::cost(const Profile& profile, const FormatParams& params,
                     Precision precision) const {
  const CsrParams& p = params_of(params);
  const double vb = value_bytes(precision);
  const double ob = p.offsets64 ? 8.0 : 4.0;
  Cost c;
  c.matrix_bytes =
      static_cast<double>(profile.nrows + 1) * ob +
      static_cast<double>(padded_nnz(profile.nnz)) * (4.0 + value_code_bytes(p.values, precision)) +
      value_table_bytes(p.values, profile, precision);
  c.x_bytes = static_cast<double>(profile.ncols) * vb;
  c.y_bytes = static_cast<double>(profile.nrows) * vb;
  // Lanes idle at the end of rows, and lanes that must each walk many nonzeros serially (less
  // memory parallelism to cover the dependent col -> x load): the model's two penalties.
  const double per_lane = profile.row_mean / p.threads_per_row;
  const double latency = std::min(1.0, nonzeros_per_lane(precision) / std::max(per_lane, 1e-9));
  c.lane_efficiency = lane_efficiency(profile, p.threads_per_row) * latency *
                      value_coding_efficiency(p.values, profile, precision);
  // Per lane, the longest row is row_max / T dependent gathers; vector loads shorten the load
  // side only, so T sets the floor and V barely moves it.
  const double longest_steps = std::ceil(static_cast<double>(profile.row_max) / p.threads_per_row);
  c.serial_seconds = longest_steps * heuristics::kCsrStepSeconds;
  // A warp runs 32/T rows side by side and waits for its longest.
  c.warp_imbalance = warp_imbalance(profile, p.threads_per_row);
  return c;
}

std::optional<std::string> CsrFormat::cannot_implement(const Profile& profile,
                                                       const FormatParams& params,
                                                       Precision precision) const {
  const CsrParams& p = params_of(params);
  const bool pow2 = p.threads_per_row >= 1 && p.threads_per_row <= 32 &&
                    (p.threads_per_row & (p.threads_per_row - 1)) == 0;
  if (!pow2)
    return fmt::format("threads per row {} is not a power of two in 1..32", p.threads_per_row);
  if (p.block_size < 32 || p.block_size > 1024 || p.block_size % 32 != 0)
    return fmt::format("block size {} is not a multiple of 32 in 32..1024", p.block_size);
  if (p.unroll < 1 || p.unroll > 8) return fmt::format("unroll {} is outside 1..8", p.unroll);
  if (p.vector_width != 1 && p.vector_width != 2 && p.vector_width != 4)
    return fmt::format("vector width {} is not 1, 2 or 4", p.vector_width);
  if (p.vector_width > 1 && !p.aligned) return "vector loads need the aligned start";
  if (auto why = value_coding_problem(profile, p.values, precision)) return why;
  if (!p.offsets64 && needs_offsets64(profile.nnz))
    return fmt::format("{} nonzeros need 64-bit row offsets", profile.nnz);
  const double blocks =
      std::ceil(static_cast<double>(profile.nrows) * p.threads_per_row / p.block_size);
  if (blocks > std::numeric_limits<std::int32_t>::max())
    return fmt::format("{} rows need more than 2^31-1 blocks at T={}", profile.nrows,
                       p.threads_per_row);
  return std::nullopt;
}

std::vector<Candidate> CsrFormat::propose(const Profile& profile, Precision precision) const {
  const CsrParams chosen = choose(profile, precision);
  std::vector<Candidate> out;
  for (int t : kThreadsPerRowChoices) {
    CsrParams p = chosen;
    p.threads_per_row = t;
    p.vector_width = vector_width_for(profile, t);
    p.unroll = unroll_for(p.vector_width);
    Candidate c = candidate(profile, p, precision);
    if (c.applicable) {
      const Cost cost_t = this->cost(profile, p, precision);
      c.predicted_bytes = cost_t.total();
      c.reason =
          fmt::format("{:.0f}% of lanes busy, {:.1f} nonzeros per lane, model efficiency {:.0f}%",
                      100.0 * lane_efficiency(profile, t), profile.row_mean / t,
                      100.0 * cost_t.lane_efficiency);
    }
    out.push_back(std::move(c));
  }
  add_value_coded(out, profile, precision);
  return out;
}

Encoded CsrFormat::encode(const CsrMatrix& a, const FormatParams& params,
                          Precision precision) const {
  const CsrParams& p = params_of(params);
  Encoded e = encoded_for(a, precision);
  e.arrays.push_back(row_offsets_array(a, p.offsets64, name()));
  // Zero padding so a lane's aligned vector load past the last nonzero stays in the array.
  const std::size_t padded = static_cast<std::size_t>(padded_nnz(a.nnz()));
  e.arrays.push_back(make_array<std::int32_t>("col_idx", ElemType::i32, a.col_idx, padded));
  // Coded values go straight from a.values to codes, without a plain array in between.
  append_values(e.arrays, "values", precision, a.values, padded, p.values, a);
  return e;
}

void CsrFormat::reference_spmv(const Encoded& e, const FormatParams& params,
                               std::span<const double> x, std::span<double> y, double alpha,
                               double beta) const {
  const CsrParams& p = params_of(params);
  if (static_cast<std::int64_t>(x.size()) != e.ncols ||
      static_cast<std::int64_t>(y.size()) != e.nrows)
    throw InputError("reference_spmv", 0, "x or y has the wrong length");
  with_offset_and_value(p.offsets64, e.precision, [&]<typename Offset, typename Value>() {
    multiply<Offset, Value>(e, p.values, x, y, alpha, beta);
  });
}

std::string CsrFormat::kernel_name(const CsrParams& p, Precision precision) {
  return fmt::format("spmv_csr_t{}_v{}_b{}_u{}{}{}{}_{}", p.threads_per_row, p.vector_width,
                     p.block_size, p.unroll, p.aligned ? "" : "_unaligned",
                     p.offsets64 ? "_o64" : "", value_coding_tag(p.values),
                     codegen::precision_tag(precision));
}

KernelSource CsrFormat::generate(const Encoded& e, const FormatParams& params,
                                 const std::string& banner) const {
  const CsrParams& p = params_of(params);
  KernelSource k = kernel_source(kernel_name(p, e.precision), {"spmvc/csr.cuh"}, banner);
  k.block = p.block_size;
  k.grid = (e.nrows * p.threads_per_row + p.block_size - 1) / p.block_size;
  if (k.grid == 0) k.grid = 1;
  const ValueArgs vals = value_args(p.values, "values");
  k.params = {{KernelParam::Kind::rows, "nrows"},
              {KernelParam::Kind::array, "row_ptr"},
              {KernelParam::Kind::array, "col_idx"}};
  k.params.insert(k.params.end(), vals.params.begin(), vals.params.end());
  k.params.insert(k.params.end(), {{KernelParam::Kind::x, "x"},
                                   {KernelParam::Kind::y, "y"},
                                   {KernelParam::Kind::alpha, "alpha"},
                                   {KernelParam::Kind::beta, "beta"}});

  const std::string value = codegen::value_type(e.precision);
  const std::string acc = codegen::accumulate_type(e.precision);
  const std::string offset = p.offsets64 ? "long long" : "int";
  k.source += "#include \"spmvc/csr.cuh\"\n\n";
  k.source += codegen::constants_block({
      {fmt::format("constexpr int kThreadsPerRow = {};", p.threads_per_row),
       "T: lanes that share one row"},
      {fmt::format("constexpr int kVector = {};", p.vector_width),
       "V: nonzeros per lane per vector load"},
      {fmt::format("constexpr int kBlockSize = {};", p.block_size), "threads per block"},
      {fmt::format("constexpr int kUnroll = {};", p.unroll),
       "(col, value) loads per lane before its x gathers"},
      {fmt::format("constexpr bool kAligned = {};", p.aligned ? "true" : "false"),
       "start each row at its T-aligned offset"},
      {fmt::format("using Offset = {};", offset), "row_ptr element"},
      {fmt::format("using Value = {};", value), "stored values, x and y"},
      {fmt::format("using Acc = {};", acc), "accumulation"},
  });
  k.source += fmt::format(
      R"(
static_assert(sizeof(Offset) == {OB}, "row_ptr was encoded with {OB}-byte offsets");
static_assert(sizeof(Value) == {VB}, "values were encoded with {VB}-byte elements");
static_assert(sizeof(int) == 4, "col_idx was encoded with 4-byte indices");
static_assert(spmvc::csr::kCsrPadElements == {PAD}, "col_idx and values were padded to {PAD}");

{SIG}  spmvc::csr::spmv<kThreadsPerRow, kVector, kBlockSize, kUnroll, kAligned, Offset, Value, Acc>(
      nrows, row_ptr, col_idx, {VP}, x, y, alpha, beta);
}}
)",
      fmt::arg("SIG", codegen::entry_signature(k.kernel_name, k.params, e, "kBlockSize")),
      fmt::arg("VP", vals.pass), fmt::arg("OB", p.offsets64 ? 8 : 4),
      fmt::arg("VB", e.precision == Precision::f64 ? 8 : 4), fmt::arg("PAD", kPadElements));
  return k;
}

}  // namespace spmvc::formats
