// Cost-model constants every BRO format (bro_ell, bro_coo, bro_hyb) shares, with where they come
// from: measured on the H100 where the comment says so, assumptions otherwise.
#pragma once

namespace spmvc::formats::bro::model {

/// Fraction of bandwidth-bound speed kept after the decode work, by where the widths live
/// (0 global, 1 constant, 2 baked): widths read from global memory keep about 0.9 of the baked
/// speed in the H100 sweep of bro_ell with plain fp64 values, where every variant is
/// bandwidth-bound (bench/results/2026-11-23-h100-bro-sweep). Constant memory is assumed between
/// the two (not measured).
inline constexpr double kDecodeEfficiency[3] = {0.87, 0.90, 0.97};

/// A dependent step of BRO (decode, gather, accumulate) against csr's (heuristics::
/// kCsrStepSeconds): the decode adds a few integer instructions per step.
inline constexpr double kStepFactor = 1.25;

}  // namespace spmvc::formats::bro::model
