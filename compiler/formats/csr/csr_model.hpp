// csr's model constants as data, each with where it came from (the shared ones, such as the
// seconds per dependent step, are in compiler/heuristics.hpp).
#pragma once

namespace spmvc::heuristics {

/// csr: nonzeros of a row one lane can walk before the model charges it for lost memory
/// parallelism (fewer lanes per row, each walking more, hides the col -> x latency worse).
/// T (threads per row) is the smallest power of two with mean_row_length / T <= this.
/// From the H100 csr sweeps (bench/results/2026-11-22-h100-csr-*), where the fastest T put
/// 4.8-6.5 nonzeros on each lane (Baskaran's half-warp per row lost badly on short rows); fp32
/// moves fewer bytes per nonzero and tolerated more per lane.
inline constexpr double kCsrNonzerosPerLaneF64 = 6.0;
inline constexpr double kCsrNonzerosPerLaneF32 = 7.0;

/// csr: lanes per row never go below this. 1 keeps the scalar (one row per thread) kernel.
inline constexpr int kCsrMinThreadsPerRow = 1;

/// csr: the vector width V is the largest of 4, 2, 1 with V <= this * (mean_row_length / T).
/// Same sweeps: 16-byte loads won wherever a lane had enough nonzeros to fill them; a lane with
/// fewer nonzeros than V wastes most of each load.
inline constexpr double kCsrVectorSlack = 1.25;

/// csr: threads per block. 256 gives 8 warps per block and full occupancy at <= 32 registers.
inline constexpr int kCsrBlockSize = 256;

}  // namespace spmvc::heuristics
