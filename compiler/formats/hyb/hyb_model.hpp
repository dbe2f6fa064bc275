// hyb's model constants as data, with where they came from (the ELL part's padding limits are
// in formats/ell/ell_model.hpp).
#pragma once

namespace spmvc::heuristics {

/// hyb: the COO part's bytes over the read bandwidth they reach, against the ELL part's. Each warp
/// reads 32 consecutive entries (rows, columns, values: fully coalesced), and the segmented
/// scan's shuffles and the one atomic per row run overlap the loads: the part streams at the
/// read bandwidth. Fitted on suite v13 (H100 and H200, `pass1.json`, every timed hyb against the
/// mean error of the other formats timed on the same matrix, bench/results/README.md): the
/// spread of hyb's relative log error (with the COO count of hyb_format.cpp's split) fell from
/// 0.18 / 0.16 at the former estimate of 0.7 (five shuffle rounds per 32 entries charged as
/// issue) to 0.13 / 0.12 at 1.0, and no lower than 0.12 at 1.1-1.2; 1 is taken, the bound. At 0.7
/// the model put hyb at up to 1.4x its time on the power-law graphs (class G), where nearly every
/// nonzero is in the COO part.
inline constexpr double kCooLaneEfficiency = 1.0;

}  // namespace spmvc::heuristics
