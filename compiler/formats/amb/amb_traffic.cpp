#include "formats/amb/amb_traffic.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "formats/model_shortcuts.hpp"
#include "heuristics.hpp"

namespace spmvc::formats {

namespace {

/// L2 capacity the x term assumes one segment's slice of x may occupy: half of the H100's 50 MB
/// (heuristics::kL2CacheBytes, which the general traffic model, compiler/traffic.cpp, shares). A
/// slice of at most 2^16 columns (512 KiB in fp64) always fits, so on Hopper level 1 buys x
/// locality only through fewer concurrent slices; the term matters for the paper's K20X-sized
/// caches.
constexpr double kAmbL2CacheBytes = heuristics::kL2CacheBytes;

/// L2 traffic of the atomicAdds to y, in units of the sectors they update: the read and the
/// write of the read-modify-write (the slides count atomics as memory access). Atomics of a warp
/// to one 32-byte sector are one update: a sector of adjacent rows costs as much as their values,
/// and a row alone in its sector costs the whole sector. Counting an atomic at a value's size
/// put AMB level with csr_stream on short mixed rows (where the length sort leaves no two rows
/// of a chunk adjacent), where the H100 suite measured it well behind.
constexpr double kAmbAtomicValueFactor = 2.0;
constexpr double kSectorBytes = 32.0;

/// Longest synthetic row the blocking estimate lays out; longer rows are scaled from it.
constexpr std::int64_t kSimulatedRow = 512;

// The gap generator of the synthetic rows: a fixed seed, so every row of every block width
// meets the same gaps in the same order. Bucket k (deltas of k bits, k >= 2) is drawn with
// its share of the histogram's deltas above one (`far` of them), uniform over
// [2^(k-1), 2^k - 1].
class GapDraws {
 public:
  GapDraws(const Profile& profile, double far) : profile_(profile), far_(far) {}
  std::int64_t next() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    double u = static_cast<double>(state_ >> 11) * 0x1.0p-53 * far_;
    for (int k = 2; k <= 32; ++k) {
      const double w = static_cast<double>(profile_.delta_bits[k]);
      if (u < w || k == 32) {
        const double lo = std::ldexp(1.0, k - 1);
        const double frac = w > 0 ? u / w : 0;
        return static_cast<std::int64_t>(lo + std::floor(frac * lo));
      }
      u -= w;
    }
    return 2;
  }

 private:
  const Profile& profile_;
  double far_;
  std::uint64_t state_ = 0x9E3779B97F4A7C15ull;
};

// Blocks that greedy blocking of width b makes of a row of `len` nonzeros, laid out from the
// Profile's delta histogram: the row's adjacent-column pairs (deltas of one) are gathered into
// runs of equal length, as stencils and FEM matrices have them (the number of runs is the row's
// share of deltas above one, plus one), and the gaps between runs are drawn, with a fixed seed,
// from the histogram's deltas above one (bucket k uniform over [2^(k-1), 2^k - 1]).
double row_blocks_simulated(const Profile& profile, std::int64_t len, int b) {
  if (len <= 0) return 0;
  if (b == 1) return static_cast<double>(len);
  double total = 0, far = 0;
  for (int k = 1; k <= 32; ++k) total += static_cast<double>(profile.delta_bits[k]);
  for (int k = 2; k <= 32; ++k) far += static_cast<double>(profile.delta_bits[k]);
  if (total <= 0) return 1;
  const std::int64_t n = std::min(len, kSimulatedRow);
  const double far_share = far / total;
  const auto runs =
      std::clamp<std::int64_t>(std::llround(1 + static_cast<double>(n - 1) * far_share), 1, n);
  GapDraws draws(profile, far);  // fixed seed: the estimate is deterministic
  std::int64_t blocks = 0, block_end = -1, col = 0;
  for (std::int64_t r = 0; r < runs; ++r) {
    const std::int64_t run_len = n / runs + (r < n % runs ? 1 : 0);
    if (r > 0) col += draws.next() - 1;  // the gap replaces the run's unit step
    for (std::int64_t i = 0; i < run_len; ++i, ++col) {
      if (col > block_end) {
        ++blocks;
        block_end = col + b - 1;
      }
    }
  }
  return static_cast<double>(blocks) * static_cast<double>(len) / static_cast<double>(n);
}

// The same count, a run at a time: `gaps` are the generator's first draws (at least runs - 1
// of them), shared by every row and block width. Within a run of consecutive columns the greedy
// blocks start at the first column past the last block and every b columns after it.
double row_blocks(const Profile& profile, std::int64_t len, int b,
                  const std::vector<std::int64_t>& gaps) {
  if (len <= 0) return 0;
  if (b == 1) return static_cast<double>(len);
  double total = 0, far = 0;
  for (int k = 1; k <= 32; ++k) total += static_cast<double>(profile.delta_bits[k]);
  for (int k = 2; k <= 32; ++k) far += static_cast<double>(profile.delta_bits[k]);
  if (total <= 0) return 1;
  const std::int64_t n = std::min(len, kSimulatedRow);
  const double far_share = far / total;
  const auto runs =
      std::clamp<std::int64_t>(std::llround(1 + static_cast<double>(n - 1) * far_share), 1, n);
  std::int64_t blocks = 0, block_end = -1, col = 0;
  for (std::int64_t r = 0; r < runs; ++r) {
    const std::int64_t run_len = n / runs + (r < n % runs ? 1 : 0);
    if (r > 0) col += gaps[static_cast<std::size_t>(r - 1)] - 1;
    const std::int64_t last = col + run_len - 1;
    if (last > block_end) {
      const std::int64_t start = std::max(col, block_end + 1);
      const std::int64_t opened = (last - start) / b + 1;
      blocks += opened;
      block_end = start + opened * b - 1;
    }
    col = last + 1;
  }
  return static_cast<double>(blocks) * static_cast<double>(len) / static_cast<double>(n);
}

// E[max of C rows] / E[row] over the non-empty rows of the histogram (bins above 32 stand for
// their midpoint): the padding of an unsorted chunk.
double unsorted_padding(const Profile& profile, int c_rows) {
  std::vector<std::pair<double, double>> bins;  // (length, probability)
  double rows = 0, mean = 0;
  for (const HistogramBin& bin : profile.row_histogram) {
    if (bin.hi == 0) continue;
    const double len = 0.5 * static_cast<double>(bin.lo + bin.hi);
    bins.emplace_back(len, static_cast<double>(bin.count));
    rows += static_cast<double>(bin.count);
    mean += len * static_cast<double>(bin.count);
  }
  if (rows == 0 || mean == 0) return 1.0;
  mean /= rows;
  // E[max] = sum over bins of len * (F(len)^C - F(len-)^C); bins are in increasing order.
  // F(len-)^C is the previous bin's F^C (the same double: below / rows again).
  double below = 0, emax = 0, f0_pow = std::pow(0.0, c_rows);
  for (const auto& [len, count] : bins) {
    const double f1_pow = std::pow((below + count) / rows, c_rows);
    emax += len * (f1_pow - f0_pow);
    f0_pow = f1_pow;
    below += count;
  }
  return std::max(1.0, emax / mean);
}

}  // namespace

std::string TrafficEstimate::describe() const {
  return fmt::format(
      "values {:.0f} B, columns {:.0f} B, chunk metadata {:.0f} B, row map {:.0f} B, x {:.0f} B, "
      "y init {:.0f} B, y updates {:.0f} B, scratch {:.0f} B; total {:.0f} B; {:.0f}% lanes busy, "
      "{:.2f} steps per lane (longest {:.0f}), {} launches",
      values, columns, chunk_meta, row_map, x, y_init, y_updates, scratch, total(),
      100 * busy_lanes, steps_per_lane, max_steps, launches);
}

// The counts from the Profile. Approximations:
//  - blocks: greedy blocking of a synthetic row per row-length bin (row_blocks: adjacent columns
//    in equal runs, gaps drawn from the histogram; the right-edge shift is ignored);
//  - pairs: a non-empty row touches one segment plus one for each delta that crosses a segment
//    boundary (probability min(1, d/W), d the delta bucket's mean), capped by its blocks and the
//    segment count;
//  - zero fill of the chunks: an unsorted chunk pads to E[max of C rows]; sorting within windows
//    of sigma rows removes all but C/sigma of that excess; half a chunk is wasted per (segment,
//    window) group;
//  - x: every column is read in one segment (segment sectors = ncols / sector), and rows without
//    reuse read Profile::x_sectors sectors (fp64 sectors for fp32 as well, an upper bound);
//  - y sectors (y rows or partial slots): the sort by length is stable, so a chunk's rows of
//    length l are the window's rows of that length in order, 1/p_l rows apart (p_l: their share
//    of the non-empty rows; a bin above 32 counts as one length): an update touches
//    min(1, 1 / (p_l * values per sector)) sectors, i.e. y sectors = pairs * sum over lengths of
//    min(p_l, 1 / values per sector).
namespace {

// The blocks over every row-length bin, a bin's rows standing at its midpoint: per_row(len) of
// a row of len nonzeros. Rows of kSimulatedRow or more nonzeros share one layout, scaled by
// their length: it is laid out once (the histogram of a power-law matrix has dozens of such
// bins).
template <typename PerRow>
double blocks_over_bins(const Profile& profile, PerRow&& per_row_blocks) {
  double blocks = 0, long_row_blocks = -1;
  for (const HistogramBin& bin : profile.row_histogram) {
    if (bin.hi == 0) continue;
    const auto len =
        static_cast<std::int64_t>(std::llround(0.5 * static_cast<double>(bin.lo + bin.hi)));
    double per_row = 0;
    if (len >= kSimulatedRow) {
      if (long_row_blocks < 0) long_row_blocks = per_row_blocks(kSimulatedRow);
      per_row = long_row_blocks * static_cast<double>(len) / static_cast<double>(kSimulatedRow);
    } else {
      per_row = per_row_blocks(len);
    }
    blocks += static_cast<double>(bin.count) * per_row;
  }
  return blocks;
}

std::vector<std::int64_t> gap_draws(const Profile& profile) {
  double far = 0;
  for (int k = 2; k <= 32; ++k) far += static_cast<double>(profile.delta_bits[k]);
  GapDraws draws(profile, far);
  std::vector<std::int64_t> gaps(kSimulatedRow - 1);
  for (std::int64_t& g : gaps) g = draws.next();
  return gaps;
}

constexpr int kMaxColumnBlock = 10;  // AmbParams::column_block's range is 1..10
using BlockTable = std::array<double, kMaxColumnBlock + 1>;

// amb_estimated_blocks for b = 1..10 at once, kept per (delta histogram, row histogram): the
// planner asks for the same profile's blocks from choose(), propose() and every cost().
BlockTable block_table(const Profile& profile) {
  using Key = std::pair<std::array<std::int64_t, 33>, std::vector<std::int64_t>>;
  Key key{profile.delta_bits, {}};
  key.second.reserve(profile.row_histogram.size() * 3);
  for (const HistogramBin& bin : profile.row_histogram) {
    key.second.push_back(bin.lo);
    key.second.push_back(bin.hi);
    key.second.push_back(bin.count);
  }
  static std::mutex mutex;
  static std::map<Key, BlockTable> known;
  {
    std::lock_guard lock(mutex);
    if (auto it = known.find(key); it != known.end()) return it->second;
  }
  const std::vector<std::int64_t> gaps = gap_draws(profile);
  BlockTable table{};
  for (int b = 1; b <= kMaxColumnBlock; ++b)
    table[static_cast<std::size_t>(b)] = blocks_over_bins(
        profile, [&](std::int64_t len) { return row_blocks(profile, len, b, gaps); });
  std::lock_guard lock(mutex);
  if (known.size() > 64) known.clear();
  known.emplace(std::move(key), table);
  return table;
}

}  // namespace

double amb_estimated_blocks(const Profile& profile, int column_block) {
  if (!model_shortcuts()) return amb_estimated_blocks_simulated(profile, column_block);
  const int b = std::max(1, column_block);
  if (b <= kMaxColumnBlock) return block_table(profile)[static_cast<std::size_t>(b)];
  const std::vector<std::int64_t> gaps = gap_draws(profile);
  return blocks_over_bins(profile,
                          [&](std::int64_t len) { return row_blocks(profile, len, b, gaps); });
}

double amb_estimated_blocks_simulated(const Profile& profile, int column_block) {
  const int b = std::max(1, column_block);
  return blocks_over_bins(profile,
                          [&](std::int64_t len) { return row_blocks_simulated(profile, len, b); });
}

double amb_unsorted_padding(const Profile& profile, int c_rows) {
  return unsorted_padding(profile, std::max(1, c_rows));
}

AmbLayoutStats amb_layout_estimate(const Profile& profile, const AmbParams& params) {
  return amb_layout_estimate(profile, params, amb_estimated_blocks(profile, params.column_block));
}

AmbLayoutStats amb_layout_estimate(const Profile& profile, const AmbParams& params,
                                   double estimated_blocks) {
  return amb_layout_estimate(profile, params, estimated_blocks,
                             amb_unsorted_padding(profile, params.slice_height));
}

AmbLayoutStats amb_layout_estimate(const Profile& profile, const AmbParams& params,
                                   double estimated_blocks, double unsorted_chunk_padding) {
  AmbLayoutStats s;
  s.estimated = true;
  s.nrows = profile.nrows;
  s.ncols = profile.ncols;
  s.nnz = profile.nnz;
  const int c_rows = std::max(1, params.slice_height);
  const double nonempty = static_cast<double>(profile.nrows - profile.empty_rows);
  const double width = std::ldexp(1.0, params.segment_bits);
  const double nseg = profile.ncols > 0 ? std::ceil(static_cast<double>(profile.ncols) / width) : 0;

  double blocks = estimated_blocks;
  blocks = std::min(blocks, static_cast<double>(profile.nnz));

  // A delta d crosses into a new segment with probability min(1, d/W) (the row placed at a random
  // offset); a jump over several segments still adds one touched segment.
  double crossings = 0;
  for (int k = 1; k <= 32; ++k)
    crossings += static_cast<double>(profile.delta_bits[k]) *
                 std::min(1.0, 0.75 * std::ldexp(1.0, k) / width);
  const double blocks_per_row = nonempty > 0 ? blocks / nonempty : 0;
  const double segs_per_row =
      nonempty > 0 ? std::max(1.0, std::min({nseg, blocks_per_row, 1 + crossings / nonempty})) : 0;
  const double pairs = nonempty * segs_per_row;

  const double sigma = std::max(params.sigma, c_rows);
  const double windows = std::ceil(static_cast<double>(profile.nrows) / sigma);
  const double groups = std::min(pairs, windows * nseg);
  const double padding = 1 + (unsorted_chunk_padding - 1) * (c_rows / sigma);
  const double per_block = static_cast<double>(std::max(1, params.block_size / c_rows));
  const double chunks =
      std::max(1.0, std::ceil((pairs / c_rows + 0.5 * groups) / per_block)) * per_block;
  const double mean_width = pairs > 0 ? blocks / pairs : 0;
  const double elements = pairs > 0 ? (pairs + 0.5 * groups * c_rows) * mean_width * padding : 0;

  s.segments = static_cast<std::int64_t>(std::min(nseg, pairs));
  s.blocks = static_cast<std::int64_t>(std::llround(blocks));
  s.pairs = static_cast<std::int64_t>(std::llround(pairs));
  s.chunks = static_cast<std::int64_t>(chunks);
  s.elements = static_cast<std::int64_t>(std::llround(elements));
  const double nnz_per_block = blocks > 0 ? static_cast<double>(profile.nnz) / blocks : 1;
  s.max_width = static_cast<std::int64_t>(std::ceil(
      std::min(static_cast<double>(profile.row_max), width) / std::max(1.0, nnz_per_block)));
  s.x_segment_sectors64 = std::ceil(static_cast<double>(profile.ncols) / 4);
  s.x_segment_sectors32 = std::ceil(static_cast<double>(profile.ncols) / 8);
  s.x_row_sectors64 = static_cast<double>(profile.x_sectors);
  s.x_row_sectors32 = static_cast<double>(profile.x_sectors);
  if (nonempty > 0) {
    double share64 = 0, share32 = 0;
    for (const HistogramBin& bin : profile.row_histogram) {
      if (bin.hi == 0) continue;
      const double p_len = static_cast<double>(bin.count) / nonempty;
      share64 += std::min(p_len, 8.0 / kSectorBytes);
      share32 += std::min(p_len, 4.0 / kSectorBytes);
    }
    s.y_sectors64 = pairs * share64;
    s.y_sectors32 = pairs * share32;
  }
  return s;
}

TrafficEstimate amb_traffic(const AmbLayoutStats& s, const AmbParams& params, Precision precision) {
  TrafficEstimate t;
  const double v = value_bytes(precision);
  const double acc = precision == Precision::f32 ? 4 : 8;
  const double c_rows = params.slice_height;
  const double elements = static_cast<double>(s.elements);
  const double chunks = static_cast<double>(s.chunks);
  const double pairs = static_cast<double>(s.pairs);
  const double nrows = static_cast<double>(s.nrows);
  t.values = elements * params.column_block * v;
  t.columns = elements * 2;
  t.chunk_meta = chunks * (4 + 4);
  t.row_map = params.deterministic ? chunks * c_rows * 4 : chunks * (c_rows * 2 + 2);

  // x: each segment's slice read once while it stays in L2; the share of the slice that does not
  // fit is read again by every row that gathers it.
  const bool f64 = precision == Precision::f64;
  const double seg_sectors = f64 ? s.x_segment_sectors64 : s.x_segment_sectors32;
  const double row_sectors = f64 ? s.x_row_sectors64 : s.x_row_sectors32;
  const double slice_bytes =
      std::min(std::ldexp(1.0, params.segment_bits), static_cast<double>(s.ncols)) * v;
  const double miss = slice_bytes > 0 ? std::max(0.0, 1 - kAmbL2CacheBytes / slice_bytes) : 0;
  t.x = 32 * (seg_sectors + miss * std::max(0.0, row_sectors - seg_sectors));

  if (params.deterministic) {
    t.y_init = nrows * v;  // the reduction's write of y
    // Partials written a sector each sector touched, read back in order; red_ptr.
    t.scratch =
        (f64 ? s.y_sectors64 : s.y_sectors32) * kSectorBytes + pairs * acc + (nrows + 1) * 4;
  } else {
    t.y_init = nrows * v;  // beta pass (y = beta*y or 0)
    // One atomicAdd per (row, segment), a warp's to one sector merged.
    t.y_updates = (f64 ? s.y_sectors64 : s.y_sectors32) * kSectorBytes * kAmbAtomicValueFactor;
  }
  t.busy_lanes = chunks > 0 ? std::min(1.0, pairs / (chunks * c_rows)) : 1;
  t.steps_per_lane = pairs > 0 ? static_cast<double>(s.blocks) / pairs : 0;
  t.max_steps = static_cast<double>(s.max_width);
  t.launches = 2;
  return t;
}

TrafficEstimate amb_traffic(const Profile& profile, const AmbParams& params, Precision precision) {
  return amb_traffic(amb_layout_estimate(profile, params), params, precision);
}

}  // namespace spmvc::formats
