// Cost-model constants of the BRO formats (bro_ell, bro_coo, bro_hyb), with where they come
// from. None is fitted to H100 measurements yet: they are assumptions to refit from sweeps.
#pragma once

namespace spmvc::formats::bro::model {

/// Fraction of bandwidth-bound speed kept after the decode work, by where the widths live
/// (0 global, 1 constant, 2 baked). The paper (section 4.2.1, Fig. 3) needed 9-23% index
/// savings before BRO-ELL beat ELLPACK on Fermi/Kepler, i.e. the decode cost roughly that much
/// time; an H100 has about 3x a K20's instruction rate per byte of bandwidth, so a third of it
/// is charged here. The baked schedule drops the width loads and the uniform branch.
inline constexpr double kDecodeEfficiency[3] = {0.90, 0.92, 0.97};

/// Dependent-chain tolerance: csr's nonzeros per lane (heuristics.hpp) scaled by these when the
/// next symbol is prefetched, and by (1 + kUnrollGain*log2(unroll)) when indices are decoded
/// ahead of their gathers. Assumed, by analogy with csr's unroll/vector sweeps.
inline constexpr double kPrefetchGain = 1.25;
inline constexpr double kUnrollGain = 0.25;

/// A dependent step of BRO (decode, gather, accumulate) against csr's (heuristics::
/// kCsrStepSeconds): the decode adds a few integer instructions per step.
inline constexpr double kStepFactor = 1.25;

/// bro_coo: atomics in L2 per y element updated, in bytes of DRAM-equivalent traffic: a RED
/// moves a value's worth of data to L2 (counted like a y write).
inline constexpr double kAtomicBytesFactor = 1.0;

/// bro_coo: entries a lane keeps in flight (the interval loop is unrolled 4 deep), so a lane's
/// E = I/32 entries are about E/4 dependent steps.
inline constexpr double kCooEntriesPerStep = 4.0;

}  // namespace spmvc::formats::bro::model
