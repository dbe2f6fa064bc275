#include "formats/csr_warp/csr_warp_format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/arrays.hpp"
#include "formats/values/values.hpp"
#include "heuristics.hpp"
#include "spmvc/error.hpp"

namespace spmvc::formats {

namespace {

// The chunk the planner proposes: on the H200, chunks of 512 nonzeros measured 2-3.5% faster
// than 256 on Kronecker scale 21 and 22 under dbg in both precisions (gather probe, two rows a
// lane and the skip; bench/results/2026-11-29-h200-csr-warp/warp-variants.txt).
constexpr int kProposedChunk = 512;

const CsrWarpParams& params_of(const FormatParams& params) {
  const auto* p = std::get_if<CsrWarpParams>(&params);
  if (p == nullptr) throw InternalError("csr_warp format given another format's parameters");
  return *p;
}

// Why a warp cannot take chunks of `chunk` nonzeros: whole rounds of kRound steps of 32, at
// most 4096 (the template's int offsets within a chunk stay small).
std::optional<std::string> chunk_problem(int chunk) {
  constexpr int kStep = 32 * CsrWarpFormat::kRound;
  if (chunk < kStep || chunk > 4096 || chunk % kStep != 0)
    return fmt::format("chunk {} is not a multiple of {} in {}..4096", chunk, kStep, kStep);
  return std::nullopt;
}

std::int64_t padded(std::int64_t n) {
  const std::int64_t w = CsrWarpFormat::kWarpsPerBlock;
  return std::max<std::int64_t>(w, (n + w - 1) / w * w);
}

// Walks the chunks as the kernels do: a chunk of at most one row sums its nonzeros (a long row's
// piece into partial[], its last piece or a one-row chunk into y), a chunk of more rows sums each
// row; then each long row adds its pieces. A partition that skipped or repeated a row, or
// whose chunks and rows disagree, is an encoding error.
template <typename Offset, typename Value>
void multiply(const Encoded& e, const CsrWarpParams& p, std::span<const double> x,
              std::span<double> y, double alpha, double beta) {
  const EncodedArray& row_arr = e.array("chunk_row");
  const std::int32_t* chunk_row = typed<std::int32_t>(row_arr);
  const Offset* chunk_nz = typed<Offset>(e.array("chunk_nz"));
  const Offset* row_ptr = typed<Offset>(e.array("row_ptr"));
  const EncodedArray& col_arr = e.array("col_idx");
  const std::int32_t* col = typed<std::int32_t>(col_arr);
  const std::vector<Value> values = stored_values<Value>(e, "values", p.values, col_arr.count());
  const std::int64_t nchunks = row_arr.count() - 1;
  if (e.array("chunk_nz").count() != nchunks + 1 || nchunks % CsrWarpFormat::kWarpsPerBlock != 0)
    throw InternalError("csr_warp: chunk arrays of unequal or unpadded length");
  auto sum_of = [&](std::int64_t begin, std::int64_t end) {
    double sum = 0;
    for (std::int64_t k = begin; k < end; ++k)
      sum += static_cast<double>(values[static_cast<std::size_t>(k)]) *
             x[static_cast<std::size_t>(col[k])];
    return sum;
  };
  std::vector<double> partial(static_cast<std::size_t>(nchunks), 0.0);
  std::vector<char> written(static_cast<std::size_t>(e.nrows), 0);
  auto write = [&](std::int64_t r, double sum) {
    if (r < 0 || r >= e.nrows || written[static_cast<std::size_t>(r)])
      throw InternalError(fmt::format("csr_warp: row {} written wrongly", r));
    written[static_cast<std::size_t>(r)] = 1;
    const double prior = beta != 0.0 ? beta * y[static_cast<std::size_t>(r)] : 0.0;
    y[static_cast<std::size_t>(r)] = alpha * sum + prior;
  };
  for (std::int64_t w = 0; w < nchunks; ++w) {
    const std::int64_t r0 = chunk_row[w], r1 = chunk_row[w + 1];
    const std::int64_t s = chunk_nz[w], t = chunk_nz[w + 1];
    if (r0 < 0 || r1 < r0 || r1 > e.nrows || s < 0 || t < s || t > e.nnz || t - s > p.chunk ||
        r1 - r0 > CsrWarpFormat::kChunkRows)
      throw InternalError(fmt::format("csr_warp: chunk {} is out of shape", w));
    if (r1 - r0 <= 1) {
      // One row: its nonzeros end with the chunk's (a piece starts inside the row).
      if (r1 == r0 + 1 && (t != row_ptr[r0 + 1] || s < row_ptr[r0]))
        throw InternalError(fmt::format("csr_warp: chunk {} does not hold row {}", w, r0));
      if (r1 == r0) {
        partial[static_cast<std::size_t>(w)] = sum_of(s, t);
      } else {
        write(r0, sum_of(s, t));
      }
      continue;
    }
    if (s != row_ptr[r0] || t != row_ptr[r1])
      throw InternalError(fmt::format("csr_warp: chunk {} and its rows disagree", w));
    for (std::int64_t r = r0; r < r1; ++r) write(r, sum_of(row_ptr[r], row_ptr[r + 1]));
  }
  const EncodedArray& long_arr = e.array("long_rows");
  const std::int32_t* long_rows = typed<std::int32_t>(long_arr);
  for (std::int64_t j = 0; j + 2 < long_arr.count(); j += 3) {
    const std::int64_t row = long_rows[j], first = long_rows[j + 1], pieces = long_rows[j + 2];
    if (pieces < 2) continue;
    if (row < 0 || row >= e.nrows || first < 0 || first + pieces > nchunks)
      throw InternalError(fmt::format("csr_warp: long row entry {} is out of range", j / 3));
    double sum = 0;
    for (std::int64_t w = first; w < first + pieces - 1; ++w) {
      if (chunk_row[w] != row || chunk_row[w + 1] != row)
        throw InternalError(fmt::format("csr_warp: chunk {} is not a piece of row {}", w, row));
      sum += partial[static_cast<std::size_t>(w)];
    }
    y[static_cast<std::size_t>(row)] += alpha * sum;
  }
  if (std::find(written.begin(), written.end(), 0) != written.end())
    throw InternalError("csr_warp: the chunks miss a row");
}

// A group's chunks from row `first` to `end`, each passed to emit(row, nonzero start) and each
// long row to long_row(row, pieces) before its pieces.
template <typename Emit, typename Long>
void cut_group(const CsrMatrix& a, int chunk, std::int64_t first, std::int64_t end, Emit&& emit,
               Long&& long_row) {
  const auto& rp = a.row_ptr;
  std::int64_t r = first;
  while (r < end) {
    const std::int64_t len = rp[static_cast<std::size_t>(r) + 1] - rp[static_cast<std::size_t>(r)];
    if (len > chunk) {
      const std::int64_t pieces = (len + chunk - 1) / chunk;
      long_row(r, pieces);
      for (std::int64_t q = 0; q < pieces; ++q)
        emit(r, rp[static_cast<std::size_t>(r)] + q * chunk);
      ++r;
      continue;
    }
    const std::int64_t start = r;
    emit(r, rp[static_cast<std::size_t>(r)]);
    const std::int64_t bound = rp[static_cast<std::size_t>(start)] + chunk;
    ++r;
    while (r < end && r - start < CsrWarpFormat::kChunkRows &&
           rp[static_cast<std::size_t>(r) + 1] <= bound)
      ++r;
  }
}

}  // namespace

CsrWarpFormat::Partition CsrWarpFormat::partition(const CsrMatrix& a, int chunk) {
  // Count each group's chunks and long rows, then fill: groups are cut independently.
  const std::int64_t ngroups = (a.nrows + kGroupRows - 1) / kGroupRows;
  std::vector<std::int64_t> chunks_at(static_cast<std::size_t>(ngroups) + 1, 0);
  std::vector<std::int64_t> longs_at(static_cast<std::size_t>(ngroups) + 1, 0);
  parallel_for(ngroups, 16, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t g = lo; g < hi; ++g) {
      std::int64_t chunks = 0, longs = 0;
      cut_group(
          a, chunk, g * kGroupRows, std::min(a.nrows, (g + 1) * kGroupRows),
          [&](std::int64_t, std::int64_t) { ++chunks; },
          [&](std::int64_t, std::int64_t) { ++longs; });
      chunks_at[static_cast<std::size_t>(g) + 1] = chunks;
      longs_at[static_cast<std::size_t>(g) + 1] = longs;
    }
  });
  for (std::size_t g = 1; g < chunks_at.size(); ++g) {
    chunks_at[g] += chunks_at[g - 1];
    longs_at[g] += longs_at[g - 1];
  }
  const std::int64_t nchunks = chunks_at.back(), nlong = longs_at.back();
  if (padded(nchunks) >= std::numeric_limits<std::int32_t>::max())
    throw InputError("csr_warp", 0, fmt::format("{} chunks exceed 32-bit chunk numbers", nchunks));
  Partition out;
  out.row.assign(static_cast<std::size_t>(padded(nchunks)) + 1, a.nrows);
  out.nz.assign(out.row.size(), a.nnz());
  out.long_rows.assign(static_cast<std::size_t>(3 * padded(nlong)), 0);
  out.long_count = nlong;
  parallel_for(ngroups, 16, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t g = lo; g < hi; ++g) {
      auto at = static_cast<std::size_t>(chunks_at[static_cast<std::size_t>(g)]);
      auto long_at = static_cast<std::size_t>(longs_at[static_cast<std::size_t>(g)]);
      cut_group(
          a, chunk, g * kGroupRows, std::min(a.nrows, (g + 1) * kGroupRows),
          [&](std::int64_t r, std::int64_t k) {
            out.row[at] = r;
            out.nz[at++] = k;
          },
          [&](std::int64_t r, std::int64_t pieces) {
            out.long_rows[3 * long_at] = static_cast<std::int32_t>(r);
            out.long_rows[3 * long_at + 1] = static_cast<std::int32_t>(at);
            out.long_rows[3 * long_at + 2] = static_cast<std::int32_t>(pieces);
            ++long_at;
          });
    }
  });
  return out;
}

CsrWarpFormat::Estimate CsrWarpFormat::estimate(const Profile& profile, int chunk) {
  // Bins above 32 are ranges: their midpoint stands for every row in them.
  Estimate est;
  double short_rows = 0, short_nnz = 0;
  for (const HistogramBin& bin : profile.row_histogram) {
    const auto count = static_cast<double>(bin.count);
    const double len = 0.5 * static_cast<double>(bin.lo + bin.hi);
    if (bin.lo > chunk) {
      est.long_rows += count;
      const double n = std::ceil(len / chunk);
      est.pieces += count * n;
      est.steps += count * (len / 32 + 0.5 * n);  // each piece ends on a part-filled step
    } else {
      short_rows += count;
      short_nnz += std::min<double>(len, chunk) * count;
    }
  }
  // Greedy cutting leaves a chunk on average about a row's worth short of full; a chunk also
  // ends at kChunkRows rows, and each group on a partial chunk.
  const double mean = short_rows > 0 ? short_nnz / short_rows : 0;
  const double fill = std::max(0.5, 1.0 - mean / chunk);
  const double groups = std::ceil(static_cast<double>(profile.nrows) / kGroupRows);
  const double short_chunks =
      short_rows > 0 ? std::max(short_nnz / (chunk * fill), short_rows / kChunkRows) + 0.5 * groups
                     : 0;
  est.chunks = std::max(1.0, short_chunks + est.pieces);
  est.steps += short_nnz / 32 + 0.5 * short_chunks;
  return est;
}

Cost CsrWarpFormat::cost(const Profile& profile, const FormatParams& params,
                         Precision precision) const {
  const CsrWarpParams& p = params_of(params);
  const double vb = value_bytes(precision);
  const double ob = p.offsets64 ? 8.0 : 4.0;
  const double nnz = static_cast<double>(profile.nnz);
  const Estimate est = estimate(profile, p.chunk);
  Cost c;
  // The CSR arrays, each chunk's bounds, and the long rows' entries and their pieces' sums
  // (written by the main launch, read by the fixup).
  const double acc_bytes = precision == Precision::f32 ? 4.0 : 8.0;
  c.matrix_bytes = static_cast<double>(profile.nrows + 1) * ob + (est.chunks + 1) * (4 + ob) +
                   nnz * (4.0 + value_code_bytes(p.values, precision)) +
                   value_table_bytes(p.values, profile, precision) + est.long_rows * 12.0 +
                   (est.pieces - est.long_rows) * 2 * acc_bytes;
  c.x_bytes = static_cast<double>(profile.ncols) * vb;
  c.y_bytes = static_cast<double>(profile.nrows) * vb;
  // Loads have idle lanes only in each chunk's last step.
  const double busy = est.steps > 0 ? std::min(1.0, nnz / (32.0 * est.steps)) : 1.0;
  c.lane_efficiency = busy * value_coding_efficiency(p.values, profile, precision);
  // A warp walks at most one chunk: its steps are the longest chain.
  c.serial_seconds =
      std::ceil(static_cast<double>(std::min<std::int64_t>(profile.row_max, p.chunk)) / 32.0) *
      heuristics::kCsrStepSeconds;
  // Every nonzero's gather of x, as csr_stream's (the calibration prices a sector).
  c.gathered_sectors = gathered_x_sectors(profile);
  return c;
}

std::optional<std::string> CsrWarpFormat::cannot_implement(const Profile& profile,
                                                           const FormatParams& params,
                                                           Precision precision) const {
  const CsrWarpParams& p = params_of(params);
  if (auto why = chunk_problem(p.chunk)) return why;
  if (auto why = value_coding_problem(profile, p.values, precision)) return why;
  if (!p.offsets64 && needs_offsets64(profile.nnz))
    return fmt::format("{} nonzeros need 64-bit row offsets", profile.nnz);
  if (profile.nrows >= std::numeric_limits<std::int32_t>::max())
    return fmt::format("{} rows exceed the 32-bit chunk rows", profile.nrows);
  if (estimate(profile, p.chunk).chunks >= std::numeric_limits<std::int32_t>::max() / 2)
    return "the chunks would exceed 32-bit chunk numbers";
  return std::nullopt;
}

std::vector<Candidate> CsrWarpFormat::propose(const Profile& profile, Precision precision) const {
  std::vector<Candidate> out;
  CsrWarpParams p;
  p.chunk = kProposedChunk;
  p.offsets64 = needs_offsets64(profile.nnz);
  Candidate c = candidate(profile, p, precision);
  if (c.applicable) {
    const Cost cost_p = this->cost(profile, p, precision);
    const Estimate est = estimate(profile, p.chunk);
    c.predicted_bytes = cost_p.total();
    c.reason = fmt::format(
        "about {:.0f} warp chunks of <= {} nonzeros ({:.0f} long rows cut in pieces), model "
        "efficiency {:.0f}%",
        est.chunks, p.chunk, est.long_rows, 100.0 * cost_p.lane_efficiency);
  }
  out.push_back(std::move(c));
  add_value_coded(out, profile, precision);
  return out;
}

Encoded CsrWarpFormat::encode(const CsrMatrix& a, const FormatParams& params,
                              Precision precision) const {
  const CsrWarpParams& p = params_of(params);
  if (auto why = chunk_problem(p.chunk)) throw InputError("csr_warp", 0, *why);
  Encoded e = encoded_for(a, precision);
  const Partition part = partition(a, p.chunk);
  e.arrays.push_back(make_array<std::int32_t>("chunk_row", ElemType::i32, part.row));
  e.arrays.push_back(p.offsets64 ? make_array<std::int64_t>("chunk_nz", ElemType::i64, part.nz)
                                 : make_array<std::int32_t>("chunk_nz", ElemType::i32, part.nz));
  e.arrays.push_back(row_offsets_array(a, p.offsets64, name()));
  const std::size_t nnz = static_cast<std::size_t>(a.nnz());
  e.arrays.push_back(make_array<std::int32_t>("col_idx", ElemType::i32, a.col_idx, nnz));
  e.arrays.push_back(value_array("values", precision, a.values, nnz));
  code_values(e.arrays, "values", p.values, a);
  e.arrays.push_back(make_array<std::int32_t>("long_rows", ElemType::i32, part.long_rows));
  const std::size_t nchunks = part.row.size() - 1;
  EncodedArray partial = precision == Precision::f32
                             ? zero_array<float>("partial", ElemType::f32, nchunks)
                             : zero_array<double>("partial", ElemType::f64, nchunks);
  partial.scratch = true;
  e.arrays.push_back(std::move(partial));
  return e;
}

void CsrWarpFormat::reference_spmv(const Encoded& e, const FormatParams& params,
                                   std::span<const double> x, std::span<double> y, double alpha,
                                   double beta) const {
  const CsrWarpParams& p = params_of(params);
  if (static_cast<std::int64_t>(x.size()) != e.ncols ||
      static_cast<std::int64_t>(y.size()) != e.nrows)
    throw InputError("reference_spmv", 0, "x or y has the wrong length");
  with_offset_and_value(p.offsets64, e.precision, [&]<typename Offset, typename Value>() {
    multiply<Offset, Value>(e, p, x, y, alpha, beta);
  });
}

std::string CsrWarpFormat::kernel_name(const CsrWarpParams& p, Precision precision) {
  return fmt::format("spmv_csr_warp_c{}{}{}_{}", p.chunk, p.offsets64 ? "_o64" : "",
                     value_coding_tag(p.values), codegen::precision_tag(precision));
}

std::string CsrWarpFormat::fixup_name(const CsrWarpParams& p, Precision precision) {
  return fmt::format("spmv_csr_warp_fixup_c{}{}{}_{}", p.chunk, p.offsets64 ? "_o64" : "",
                     value_coding_tag(p.values), codegen::precision_tag(precision));
}

KernelSource CsrWarpFormat::generate(const Encoded& e, const FormatParams& params,
                                     const std::string& banner) const {
  const CsrWarpParams& p = params_of(params);
  using K = KernelParam::Kind;
  const codegen::XArgs xs = codegen::x_args(codegen::splits_x(e));
  KernelSource k =
      kernel_source(kernel_name(p, e.precision) + xs.name_suffix, {"spmvc/csr_warp.cuh"}, banner);
  k.block = kBlockSize;
  k.grid = (e.array("chunk_row").count() - 1) / kWarpsPerBlock;
  const ValueArgs vals = value_args(p.values, "values");
  k.params = {{K::array, "chunk_row"},
              {K::array, "chunk_nz"},
              {K::array, "row_ptr"},
              {K::array, "col_idx"}};
  k.params.insert(k.params.end(), vals.params.begin(), vals.params.end());
  k.params.insert(k.params.end(), xs.params.begin(), xs.params.end());
  k.params.insert(k.params.end(),
                  {{K::y, "y"}, {K::array, "partial"}, {K::alpha, "alpha"}, {K::beta, "beta"}});
  // The long rows' pieces are added by a second launch, where there are any.
  const EncodedArray& long_arr = e.array("long_rows");
  const std::int32_t* long_rows = typed<std::int32_t>(long_arr);
  const bool any_long = long_arr.count() >= 3 && long_rows[2] >= 2;
  KernelLaunch fixup{
      fixup_name(p, e.precision),
      {{K::array, "long_rows"}, {K::array, "partial"}, {K::y, "y"}, {K::alpha, "alpha"}},
      long_arr.count() / 3 / kWarpsPerBlock,
      kBlockSize,
      0};

  // With a table of values, the skip's waiting sum and flag spill registers in fp64 (4 bytes,
  // ptxas for sm_90): those units scan every step.
  const bool skip = p.values != kValuesTable8 && p.values != kValuesTable16;
  const std::string value = codegen::value_type(e.precision);
  const std::string acc = codegen::accumulate_type(e.precision);
  k.source += "#include \"spmvc/csr_warp.cuh\"\n\n";
  k.source += codegen::constants_block({
      {fmt::format("constexpr int kBlockSize = {};", kBlockSize), "threads per block"},
      {fmt::format("constexpr int kChunk = {};", p.chunk), "nonzeros a warp takes at most"},
      {fmt::format("constexpr int kRound = {};", kRound), "steps of 32 loaded before gathering"},
      {fmt::format("constexpr int kRowsPerLane = {};", kRowsPerLane), "rows a lane owns"},
      {fmt::format("constexpr bool kSkip = {};", skip ? "true" : "false"),
       "a step where no row starts or ends skips the scan"},
      {fmt::format("using Offset = {};", p.offsets64 ? "long long" : "int"),
       "row_ptr and chunk_nz element"},
      {fmt::format("using Value = {};", value), "stored values, x and y"},
      {fmt::format("using Acc = {};", acc), "accumulation and partial[]"},
  });
  k.source += fmt::format(
      R"(
static_assert(sizeof(Offset) == {OB}, "row_ptr was encoded with {OB}-byte offsets");
static_assert(sizeof(Value) == {VB}, "values were encoded with {VB}-byte elements");

{SIG}  spmvc::csr_warp::spmv<kChunk, kRound, kRowsPerLane, kSkip, kBlockSize, Offset, Value, Acc>(
      chunk_row, chunk_nz, row_ptr, col_idx, {VP}, {X}, y, partial, alpha, beta);
}}

{FSIG}  spmvc::csr_warp::fixup<kBlockSize, Value, Acc>(long_rows, partial, y, alpha);
}}
)",
      fmt::arg("VP", vals.pass), fmt::arg("X", xs.pass), fmt::arg("OB", p.offsets64 ? 8 : 4),
      fmt::arg("VB", e.precision == Precision::f64 ? 8 : 4),
      fmt::arg("SIG", codegen::entry_signature(k.kernel_name, k.params, e, "kBlockSize")),
      fmt::arg("FSIG", codegen::entry_signature(fixup.entry, fixup.params, e, "kBlockSize")));
  if (any_long) k.post_launches.push_back(std::move(fixup));
  return k;
}

}  // namespace spmvc::formats
