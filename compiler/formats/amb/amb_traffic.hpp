// AMB's memory-traffic model (Nagasaka, Nukada, Matsuoka: "Adaptive Multi-level Blocking
// Optimization for Sparse Matrix Vector Multiplication on GPU", the "Estimation of Total Memory
// Access in SpMV" slides): the bytes one multiply moves, predicted from the layout's counts
// (elements with zero fill, chunks, row-segment pairs, x sectors per segment) and the parameters,
// without running the kernel. The planner's cost() and AMB's propose() use it; other formats may
// call amb_traffic() to compare a candidate's traffic against AMB's.
//
// Two sources for the counts:
//   amb_layout_stats(matrix, params)   exact: the encoder's own layout, counted
//   amb_layout_estimate(profile, params) from the inspector's Profile alone (what the planner
//                                        has); the approximations are listed at its definition
#pragma once

#include <cstdint>
#include <string>

#include "spmvc/matrix.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"

namespace spmvc::formats {

/// Counts of an AMB layout: the inputs of the traffic model.
struct AmbLayoutStats {
  std::int64_t nrows = 0, ncols = 0, nnz = 0;
  std::int64_t segments = 0;   ///< column segments that hold at least one chunk
  std::int64_t chunks = 0;     ///< chunks stored, padding chunks up to whole thread blocks included
  std::int64_t elements = 0;   ///< block slots stored (sum of chunk width * C): zero fill included
  std::int64_t blocks = 0;     ///< blocks holding at least one nonzero
  std::int64_t pairs = 0;      ///< (row, segment) pairs with a block: atomics or partial sums
  std::int64_t max_width = 0;  ///< blocks in the longest chunk row: the longest dependent chain
  /// Sum over segments of the distinct 32-byte sectors of x the segment reads (fp64: 4 columns a
  /// sector; fp32: 8): x traffic when a segment's slice of x stays in cache while it runs.
  double x_segment_sectors64 = 0, x_segment_sectors32 = 0;
  /// Sum over (row, segment) pairs of the distinct sectors that row reads in that segment: x
  /// traffic when nothing is reused across rows.
  double x_row_sectors64 = 0, x_row_sectors32 = 0;
  /// Sum over chunks of the distinct 32-byte sectors (fp64: 4 values a sector; fp32: 8) its rows'
  /// results go to: y rows updated by atomics, or the deterministic variant's partial-sum slots
  /// (row-major). Rows the stable sort by length leaves adjacent share sectors; rows it brings
  /// together from far apart in a window each touch their own.
  double y_sectors64 = 0, y_sectors32 = 0;
  bool estimated = false;  ///< from a Profile (amb_layout_estimate) rather than counted
};

/// Predicted bytes of one multiply, by kind. matrix() + x + y_* is what Cost reports.
struct TrafficEstimate {
  double values = 0;      ///< elements * b * value bytes (zero fill included)
  double columns = 0;     ///< elements * 2: 16-bit block column offsets
  double chunk_meta = 0;  ///< chunks * (4 length/segment word + 4 start)
  double row_map = 0;     ///< permutation (2 per chunk row + 2 offset per chunk) or slots
  double x = 0;           ///< x gathers, per segment (see AmbLayoutStats)
  double y_init = 0;      ///< beta pass over y (non-deterministic), or final y write
  double y_updates = 0;   ///< atomics: 2 * 32 bytes (read and write in L2) per y sector updated
  double scratch = 0;     ///< deterministic: partial sums written (a sector each sector touched)
                          ///< and read, reduction offsets
  double matrix() const { return values + columns + chunk_meta + row_map; }
  double y() const { return y_init + y_updates + scratch; }
  double total() const { return matrix() + x + y(); }
  /// Fraction of a kernel's lanes with a row to work on (padding rows idle).
  double busy_lanes = 1;
  /// Mean blocks per (row, segment): the dependent steps of an average lane.
  double steps_per_lane = 0;
  /// Blocks in the longest chunk row.
  double max_steps = 0;
  /// Kernel launches one multiply needs (2: beta pass + atomics, or partials + reduction).
  int launches = 2;
  /// One line per term, for reports.
  std::string describe() const;
};

/// The encoder's layout for `a`, counted (builds the layout; O(nnz) time and memory).
AmbLayoutStats amb_layout_stats(const CsrMatrix& a, const AmbParams& params);
/// The same counts predicted from the Profile alone.
AmbLayoutStats amb_layout_estimate(const Profile& profile, const AmbParams& params);
/// The estimate's column blocks over all rows for block width `column_block` (it depends on
/// nothing else in the parameters): what amb_layout_estimate lays out first, for callers that
/// score many parameter sets of one profile.
/// The synthetic rows are laid out a run of adjacent columns at a time, and the answers for
/// b = 1..10 are kept per histogram (the planner asks for them from choose(), propose() and
/// every cost()).
double amb_estimated_blocks(const Profile& profile, int column_block);
/// The same count laid out a column at a time, as the estimate was first written: the
/// reference the tests hold amb_estimated_blocks to.
double amb_estimated_blocks_simulated(const Profile& profile, int column_block);
/// E[longest of C rows] / E[row] over the non-empty rows of the row-length histogram: the zero
/// fill of an unsorted chunk of `c_rows` rows, before sorting removes most of it.
double amb_unsorted_padding(const Profile& profile, int c_rows);
/// amb_layout_estimate given amb_estimated_blocks(profile, params.column_block).
AmbLayoutStats amb_layout_estimate(const Profile& profile, const AmbParams& params,
                                   double estimated_blocks);
/// amb_layout_estimate given the blocks and amb_unsorted_padding(profile, params.slice_height)
/// (for callers that score many parameter sets of one profile).
AmbLayoutStats amb_layout_estimate(const Profile& profile, const AmbParams& params,
                                   double estimated_blocks, double unsorted_chunk_padding);

/// Bytes one multiply moves for layout counts `stats`, parameters `params` (its deterministic
/// flag picks the y scheme) and `precision`. The L2 capacity behind the x term is
/// kAmbL2CacheBytes (amb_traffic.cpp).
TrafficEstimate amb_traffic(const AmbLayoutStats& stats, const AmbParams& params,
                            Precision precision);
/// amb_traffic(amb_layout_estimate(profile, params), params, precision).
TrafficEstimate amb_traffic(const Profile& profile, const AmbParams& params, Precision precision);
/// amb_traffic(amb_layout_stats(a, params), params, precision).
TrafficEstimate amb_traffic(const CsrMatrix& a, const AmbParams& params, Precision precision);

}  // namespace spmvc::formats
