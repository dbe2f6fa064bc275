// sell's model constants as data, each with where it came from (the padding limits it shares
// with ell are in formats/ell/ell_model.hpp).
#pragma once

namespace spmvc::heuristics {

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

}  // namespace spmvc::heuristics
