#include "traffic.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <variant>

#include <fmt/format.h>

#include "heuristics.hpp"

namespace spmvc::compiler {

namespace {

/// The unit in which L2 fetches from and writes back to DRAM: a 32-byte sector (CUDA C++ Best
/// Practices Guide, "Coalesced Access to Global Memory"); Profile::x_sectors counts in it too.
constexpr double kSectorBytes = 32;

/// DRAM accesses of one evicted y line an atomic update brings back: read, then written back.
/// The same two the AMB slides count per atomic (amb_traffic.cpp's kAmbAtomicValueFactor), here
/// per line that left L2 rather than per update (updates to a resident line stay in L2).
constexpr double kRefetchAccesses = 2;

// Share of the rows longer than `width`: the rows hyb and bro_hyb spill to their COO part. Bins
// above 32 are ranges; the rows of the bin holding `width` are taken as spread evenly over it.
double spilled_row_share(const Profile& profile, std::int64_t width) {
  if (profile.nrows <= 0) return 0;
  double spilled = 0;
  for (const HistogramBin& bin : profile.row_histogram) {
    if (bin.hi <= width) continue;
    const double span = static_cast<double>(bin.hi - bin.lo + 1);
    const double above = static_cast<double>(bin.hi - std::max(bin.lo - 1, width));
    spilled += static_cast<double>(bin.count) * std::min(1.0, above / span);
  }
  return std::min(1.0, spilled / static_cast<double>(profile.nrows));
}

// Fraction of reused lines a cache of `capacity` bytes misses when `working` bytes pass through
// it between two uses of a line: AMB's capacity ratio (amb_traffic.cpp), 0 while the working set
// fits.
double miss_share(double working, double capacity) {
  return working > 0 ? std::max(0.0, 1 - capacity / working) : 0;
}

}  // namespace

TrafficTraits traffic_traits(const Profile& profile, const FormatParams& params) {
  TrafficTraits t;
  std::visit(
      [&](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, HybParams> || std::is_same_v<P, BroHybParams>) {
          t.y_update = YUpdate::atomic;
          t.atomic_row_share = spilled_row_share(profile, p.width);
        } else if constexpr (std::is_same_v<P, BroCooParams>) {
          t.y_update = YUpdate::atomic;
          t.atomic_row_share = 1;
        } else if constexpr (std::is_same_v<P, AmbParams>) {
          t.x_modelled = true;
          if (!p.deterministic) {
            t.y_update = YUpdate::atomic;
            t.atomic_row_share = 1;
          }
        }
      },
      params);
  return t;
}

std::string TrafficBytes::describe() const {
  return fmt::format(
      "matrix {:.3f} MB, x {:.3f} MB, y {:.3f} MB, y atomic {:.3f} MB; total {:.3f} MB",
      matrix / 1e6, x / 1e6, y / 1e6, y_atomic / 1e6, total() / 1e6);
}

// x: the rows read x sector by sector; a sector used again is an L2 hit while fewer than
// heuristics::kL2CacheBytes pass through the cache between its uses. With the gathers spread
// over the rows that can reach a column, that working set is
//   window * (x + stream / reuse)
// where reuse = gathered sectors / sectors of x (uses of one sector per multiply), stream the
// matrix and y bytes of the whole multiply, and window the share of the rows one column is used
// across: (2 w + 1) / nrows for a square matrix whose rows start w columns left of the diagonal on
// average (Profile::profile / rows; the pattern taken as symmetric about the diagonal), all rows
// otherwise. The misses re-read their share of the gathered sectors:
//   x = x_once + miss * (gathered - x_once),  miss = max(0, 1 - L2 / working set).
// Gathered sectors are Profile::x_sectors (fp64 sectors; for fp32 an upper bound, as in AMB's
// estimate). A banded or replicated matrix gets a narrow window and reads x once even when x is
// larger than L2; a scattered one larger than L2 approaches one sector per row and gather.
double x_traffic_bytes(const Profile& profile, Precision precision, double stream_bytes) {
  const double once = static_cast<double>(profile.ncols) * value_bytes(precision);
  const double gathered = static_cast<double>(profile.x_sectors) * kSectorBytes;
  if (once <= 0 || gathered <= once) return once;
  const double reuse = gathered / once;
  const double rows = static_cast<double>(profile.nrows);
  double window = 1;
  if (profile.nrows == profile.ncols && rows > 0) {
    const double nonempty = std::max(1.0, static_cast<double>(profile.nrows - profile.empty_rows));
    const double left = static_cast<double>(profile.profile) / nonempty;
    window = std::min(1.0, (2 * left + 1) / rows);
  }
  const double working = window * (once + stream_bytes / reuse);
  return once + miss_share(working, heuristics::kL2CacheBytes) * (gathered - once);
}

// y, atomic formats: the first pass writes y (the scaling pass, or the ELL part's stores); the
// atomics come after the matrix (or the part of it before the row) has streamed through L2, so a
// line is still resident only while that stream fits: miss = max(0, 1 - L2 / (matrix + x)), the
// whole pass taken as the distance (an upper bound for the COO-only kernels, whose row r is
// updated a share r / nrows into the pass). With a share s of the rows updated, spread over y, a
// sector of 32 / value-bytes rows holds one with probability 1 - (1 - s)^(32 / value bytes).
TrafficBytes traffic_bytes(const formats::Cost& cost, const Profile& profile, Precision precision,
                           const TrafficTraits& traits) {
  TrafficBytes t;
  t.matrix = cost.matrix_bytes;
  t.y = cost.y_bytes;
  t.x = traits.x_modelled
            ? cost.x_bytes
            : std::max(cost.x_bytes,
                       x_traffic_bytes(profile, precision, cost.matrix_bytes + cost.y_bytes));
  if (traits.y_update == YUpdate::atomic && traits.atomic_row_share > 0) {
    const double vb = value_bytes(precision);
    const double sectors = std::ceil(static_cast<double>(profile.nrows) * vb / kSectorBytes);
    const double touched =
        1 - std::pow(1 - std::min(1.0, traits.atomic_row_share), kSectorBytes / vb);
    const double miss = miss_share(t.matrix + t.x, heuristics::kL2CacheBytes);
    t.y_atomic = kRefetchAccesses * kSectorBytes * sectors * touched * miss;
  }
  return t;
}

}  // namespace spmvc::compiler
