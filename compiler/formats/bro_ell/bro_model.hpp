// Cost-model constants of the BRO formats (bro_ell, bro_coo, bro_hyb), with where they come
// from: measured on the H100 where the comment says so, assumptions otherwise.
#pragma once

namespace spmvc::formats::bro::model {

/// Fraction of bandwidth-bound speed kept after the decode work, by where the widths live
/// (0 global, 1 constant, 2 baked). H100 sweep of bro_ell with plain fp64 values, where every
/// variant is bandwidth-bound (scripts/bro-ell-sweep, bench/results/2026-11-23-h100-bro-sweep):
/// on seven matrices at their best T, widths in global memory ran at 80-91% of read bandwidth on
/// own bytes and baked widths at 92-99%, about 0.9 of the baked speed. Constant memory is
/// assumed between the two (not measured).
inline constexpr double kDecodeEfficiency[3] = {0.87, 0.90, 0.97};

/// Nonzeros one lane can walk before the lost memory parallelism shows. The slices are stored
/// column-major, so a warp's loads at each step are coalesced whatever the row length, and only
/// the x gather waits on a decoded index: far more tolerant than csr's row walk (heuristics.hpp,
/// 6-7). Same sweep, value-coded: one lane per row was fastest on the 27-point stencil (26.6
/// nonzeros per lane; T=2, 4, 8 were 6%, 33% and 83% slower) and EX5 ran as fast at 45 per lane
/// as at 22; bcsstk16 lost 17% at 59 per lane against 30.
inline constexpr double kEllNonzerosPerLane = 48.0;

/// Padded entries per second the kernels decode at most when the widths are read from memory
/// (tables 0 and 1): the width load and the branch on it cost each step more than its bytes.
/// Same sweep, value-coded (fewer bytes per entry, so the decode shows): 27-point stencil at
/// T=1, 54M entries in 112 us (fp64) and 105 us (fp32); EX5 at T=1..4, 16-17M in 32-35 us; the
/// baked kernels ran the same matrices 1.5-2.7x faster. About 5e11; the baked decode did not
/// reach a floor of its own there (EX5 fp32: 1.3e12 nonzeros per second, bandwidth-bound).
inline constexpr double kWidthTableEntriesPerSecond = 5.0e11;

/// The x gather: a matrix whose rows read at most kLocalSectorsPerNonzero distinct 32-byte x
/// sectors per nonzero (Profile::x_sectors; neighbouring columns, so most gathers hit L1) runs
/// at the bandwidth-bound estimate, one at kScatteredSectorsPerNonzero or more at
/// kScatteredGatherEfficiency of it (linear between). On the H100 bro_ell's measured over
/// calibrated predicted time was 0.72-0.77 on banded, elasticity and landmark (0.29-0.43
/// sectors per nonzero) and 0.87-1.15 on the 20 matrices from 0.5 to 0.97, but for those whose
/// rows' neighbours scatter too (suite v10, 2026-11-23); the calibration's factor then carries
/// the scattered matrices' cost alone.
inline constexpr double kLocalSectorsPerNonzero = 0.45;
inline constexpr double kScatteredSectorsPerNonzero = 0.5;
inline constexpr double kScatteredGatherEfficiency = 0.75;

/// Baked kernels load the pattern's whole length of symbols per lane whatever the slice's own
/// length; the surplus is the next slices' symbols, mostly L2 hits. Charged at this fraction of
/// a DRAM byte (an assumption: about the H100's DRAM to L2 bandwidth ratio). It matters where
/// rows are ragged: MIT8_facebook100 x16M with 32 lanes per row, a 16-symbol pattern against
/// about 1 own symbol per slice, measured 76 us against 25 predicted without it.
inline constexpr double kOverreadBytesFactor = 1.0 / 3.0;

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
