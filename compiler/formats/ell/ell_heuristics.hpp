// Thresholds of the ELL family (ell, sell, hyb) as data, each with where it came from. None has
// an H100 sweep behind it yet; those borrowed from csr say so, and the rest are limits of sense.
#pragma once

#include <cstdint>

namespace spmvc::heuristics {

/// ell, hyb: the padded ELL array may hold at most this many slots per nonzero (plus
/// kEllPadSlack): beyond it the padding costs more bytes than the indices save, and on power-law
/// matrices (one row of 10^5 in a million rows) ELL would need terabytes. The brief's bound.
inline constexpr double kEllMaxPadRatio = 3.0;
/// ell, hyb: slots always allowed, so small matrices (whose time is the launch) are never refused
/// for padding; 2^16 slots are 768 KiB in fp64.
inline constexpr std::int64_t kEllPadSlack = std::int64_t{1} << 16;
/// ell, sell, hyb: the encoded arrays may take at most this many bytes: half of an H100's 80 GB,
/// leaving room for x, y and the caller's own data.
inline constexpr double kEllMaxEncodedBytes = 40e9;

/// sell: the sorting windows proposed besides sigma = 1. The cost model sees the padding a
/// window removes but not the x locality a wide permutation loses, so proposals stop at 32
/// slices of 32 rows (AMB allows up to 2^15; Kreutzer et al. found a few hundred to a few
/// thousand rows enough to remove most padding).
inline constexpr int kSellProposedSigma = 1024;

/// sell: cost of a y sector written out of order through the row permutation, relative to a
/// DRAM byte. The sectors of one sigma-window are rewritten within a short time and y fits in
/// the H100's 50 MB L2 on most matrices, so L2 merges them and the extra cost is L2
/// transactions: about a quarter, from the H100's L2-to-DRAM bandwidth ratio (~3-4x). An
/// estimate pending the H100 sweep.
inline constexpr double kSellScatteredSectorCost = 0.25;

/// hyb: useful fraction of a COO warp's issue: each 32 entries cost five shuffle rounds of the
/// segmented scan, a row compare per round and one atomic per row run beside the loads. An
/// estimate pending the H100 sweep (Bell & Garland measured their COO kernel well below ELL per
/// byte).
inline constexpr double kCooLaneEfficiency = 0.7;

}  // namespace spmvc::heuristics
