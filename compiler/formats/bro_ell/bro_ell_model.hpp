// bro_ell's cost-model constants (also those of bro_hyb's ELL part), with where they come from:
// measured on the H100 where the comment says so, assumptions otherwise.
#pragma once

#include "formats/bro/bro_model.hpp"

namespace spmvc::formats::bro::model {

/// Nonzeros one lane can walk before the lost memory parallelism shows. The slices are stored
/// column-major, so a warp's loads at each step are coalesced whatever the row length, and only
/// the x gather waits on a decoded index: far more tolerant than csr's row walk
/// (formats/csr/csr_model.hpp, 6-7). Set from the value-coded runs of the bro_ell sweep
/// (bench/results/2026-11-23-h100-bro-sweep), between the lane loads that ran at full speed and
/// the first that lost.
inline constexpr double kEllNonzerosPerLane = 48.0;

/// Padded entries per second the kernels decode at most when the widths are read from memory
/// (tables 0 and 1): the width load and the branch on it cost each step more than its bytes.
/// Measured in the value-coded runs of the bro_ell sweep, where few bytes per entry let the
/// decode show; the baked decode reached no floor of its own there (it stayed bandwidth-bound).
inline constexpr double kWidthTableEntriesPerSecond = 5.0e11;

/// The x gather: a matrix whose rows read at most kLocalSectorsPerNonzero distinct 32-byte x
/// sectors per nonzero (Profile::x_sectors; neighbouring columns, so most gathers hit L1) runs
/// at the bandwidth-bound estimate, one at kScatteredSectorsPerNonzero or more at
/// kScatteredGatherEfficiency of it (linear between). On the H100 (suite v10) bro_ell ran
/// faster than the calibrated prediction where rows share x sectors and about as predicted
/// where they scatter, so the calibration's factor carries the scattered matrices' cost alone.
inline constexpr double kLocalSectorsPerNonzero = 0.45;
inline constexpr double kScatteredSectorsPerNonzero = 0.5;
inline constexpr double kScatteredGatherEfficiency = 0.75;

/// Baked kernels load the pattern's whole length of symbols per lane whatever the slice's own
/// length; the surplus is the next slices' symbols, mostly L2 hits. Charged at this fraction of
/// a DRAM byte (an assumption: about the H100's DRAM to L2 bandwidth ratio). It matters where
/// rows are ragged: a long pattern against a few own symbols per slice, which the model
/// under-predicted threefold without this charge.
inline constexpr double kOverreadBytesFactor = 1.0 / 3.0;

}  // namespace spmvc::formats::bro::model
