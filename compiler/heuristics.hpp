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

/// csr: target number of nonzeros each lane handles per row. T (threads per row) is the
/// smallest power of two with mean_row_length / T <= this. Baskaran's mapping spreads a row
/// over a (half-)warp; on Hopper, fewer lanes per row with more work each hides the col -> x
/// latency better on short rows (issue 2 GPU sweep; see bench/results/).
inline constexpr double kCsrNonzerosPerLane = 4.0;

/// csr: lanes per row never drop below this when value bytes * T would leave a 32-byte sector
/// half used (fp64: 2 lanes read 16 B). 1 keeps the scalar (one row per thread) kernel allowed.
inline constexpr int kCsrMinThreadsPerRow = 1;

/// csr: unroll depth used when each lane handles at least this many nonzeros of a row.
inline constexpr double kCsrUnrollMinPerLane = 4.0;

/// csr: threads per block. 256 gives 8 warps per block and full occupancy at <= 32 registers.
inline constexpr int kCsrBlockSize = 256;

}  // namespace spmvc::heuristics
