// Planner heuristics as data: every threshold the compiler decides by, with where it came from.
// Change a number here only with the measurement that justifies it (bench/results/).
#pragma once

namespace spmvc::heuristics {

/// Read bandwidth assumed when no device calibration is available: H100 SXM measured ~3.06 TB/s
/// (../shared/docs/BENCHMARKING.md). Only ratios between candidates depend on it.
inline constexpr double kDefaultReadBandwidth = 3.06e12;

/// Fixed cost of one kernel launch plus the tail of the last wave, in seconds: the floor under
/// any predicted time (launch-bound regime of small matrices).
inline constexpr double kLaunchSeconds = 4.0e-6;

/// L2 capacity that data reused within one multiply (x between gathers; y between its first
/// write and its atomic updates) can count on: half of the H100's 50 MB, as its L2 is two
/// partitions and a line read by SMs on both sides can be held twice. AMB's assumption
/// (formats/amb/amb_traffic.cpp); the traffic model (traffic.cpp) uses it for every format.
inline constexpr double kL2CacheBytes = 25.0 * 1024 * 1024;

/// csr: nonzeros of a row one lane can walk before the model charges it for lost memory
/// parallelism (fewer lanes per row, each walking more, hides the col -> x latency worse).
/// T (threads per row) is the smallest power of two with mean_row_length / T <= this.
/// H100 sweeps of 2026-11-22 (bench/results/2026-11-22-h100-csr-*): the fastest T put 4.8
/// (G3_circuit: T=1), 5.1 (elasticity 3x3: T=16) and 6.5 (27-point: T=4) nonzeros on each lane;
/// Baskaran's half-warp per row lost 2-5x on those short rows. fp32 moves fewer bytes per
/// nonzero and tolerated more per lane: wave x8 ran fastest at 6.8 (T=2: 0.97x of cuSPARSE
/// against 0.92x at T=4), while in fp64 T=4 (3.4 per lane) was best there.
inline constexpr double kCsrNonzerosPerLaneF64 = 6.0;
inline constexpr double kCsrNonzerosPerLaneF32 = 7.0;

/// csr: lanes per row never go below this. 1 keeps the scalar (one row per thread) kernel.
inline constexpr int kCsrMinThreadsPerRow = 1;

/// csr: the vector width V is the largest of 4, 2, 1 with V <= this * (mean_row_length / T).
/// Same sweeps: 16-byte loads (V=4 in fp32) won on 27-point fp32 (0.97x vs 0.85x at V=1),
/// elasticity fp32 (1.00x vs 0.84x) and fp64 (1.07x vs 1.05x); a lane with fewer nonzeros than
/// V wastes most of each load.
inline constexpr double kCsrVectorSlack = 1.25;

/// csr: seconds per dependent step (load col, gather x, accumulate) of one lane, with the loads
/// of neighbouring warps overlapping. Charges rows much longer than the mean: the longest row's
/// steps are a floor under the kernel's time. Fitted to the R-MAT scale-20 sweep (max row
/// tens of thousands): T=4 took 1.57 ms, T=32 0.32 ms.
inline constexpr double kCsrStepSeconds = 0.2e-6;

/// csr_stream: the fixed start of each row block (its bounds, then its rows' bounds, before any
/// nonzero loads), charged as this many bytes of reading. H100 sweeps, fp32, x16M
/// (scripts/param-sweep, 2026-11-23): halving the tile from 1024 to 512 nonzeros (twice the blocks)
/// cost email-Enron 1.0 us over 16k more blocks and ct2010 4.3 us over 17k, about 190 and 770 bytes
/// a block at 3 TB/s; doubling it to 2048 saved email-Enron 3.4 us over 8k fewer blocks. Without
/// it the model ranked the 512 tile first on short-row graphs, where it measured 2-5% slower.
inline constexpr double kStreamBlockBytes = 256.0;

/// csr_stream: the work each row and each nonzero costs beyond its bytes (a nonzero's product
/// goes through shared memory, a row's sum through the reduction), charged as bytes of reading:
/// the kernel's efficiency is bytes / (bytes + rows * kStreamRowBytes + nnz *
/// kStreamNonzeroBytes). Fitted to csr_stream's H100 times on the 20 x16M and generated matrices
/// of suite v11 whose x gathers stay local (both precisions, pass1 and pass2, and the
/// device-arrays run of 2026-11-23): the spread of measured over predicted time (sd of its log)
/// fell from 0.27 to 0.12. Without them the model had csr_stream with 16-bit columns and 8-bit
/// values ahead of csr on delaunay_n16 (6 nonzeros a row), where it measured 1.27x slower.
inline constexpr double kStreamRowBytes = 23.0;
inline constexpr double kStreamNonzeroBytes = 6.6;

/// csr: threads per block. 256 gives 8 warps per block and full occupancy at <= 32 registers.
inline constexpr int kCsrBlockSize = 256;

// Value codings (formats/values): their bytes are counted exactly; these are the cost of the
// table read each value adds, as lane efficiency. An 8-bit table (<= 2 KiB) is an L1 hit beside
// the x gather. A 16-bit table that stays in L1 (bcsstk16: 15.8k values, 126 KB in fp64) still
// won (csr 1.07x, bro_ell 1.27x over plain values, H100 suite v2); past it, every value is an L2
// read (vt2010 and de2010, 37-56k values, 0.30-0.44 MB: csr 0.57-0.64x of plain values): charged
// as a lane efficiency that loses to plain values.
inline constexpr double kValueTable8Efficiency = 0.95;
inline constexpr double kValueTable16Efficiency = 0.8;
inline constexpr double kValueTableL1Bytes = 128.0 * 1024;
inline constexpr double kValueTableL2Efficiency = 0.4;

}  // namespace spmvc::heuristics
