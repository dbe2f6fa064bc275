// hyb's model constants as data, with where they came from (the ELL part's padding limits are
// in formats/ell/ell_model.hpp).
#pragma once

namespace spmvc::heuristics {

/// hyb: useful fraction of a COO warp's issue: each 32 entries cost five shuffle rounds of the
/// segmented scan, a row compare per round and one atomic per row run beside the loads. An
/// estimate pending the H100 sweep (Bell & Garland measured their COO kernel well below ELL per
/// byte).
inline constexpr double kCooLaneEfficiency = 0.7;

}  // namespace spmvc::heuristics
