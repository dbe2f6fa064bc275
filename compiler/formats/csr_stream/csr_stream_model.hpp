// csr_stream's model constants as data, each with where it came from.
#pragma once

namespace spmvc::heuristics {

/// csr_stream: the fixed start of each row block (its bounds, then its rows' bounds, before any
/// nonzero loads), charged as this many bytes of reading: the H100 tile sweeps (fp32, x16M,
/// scripts/gpu/param-sweep) put a block's start at a few hundred bytes of reading. Without it the
/// model ranked the 512-nonzero tile first on short-row graphs, where it measured slower.
inline constexpr double kStreamBlockBytes = 256.0;

/// csr_stream: the work each row and each nonzero costs beyond its bytes (a nonzero's product
/// goes through shared memory, a row's sum through the reduction), charged as bytes of reading:
/// the kernel's efficiency is bytes / (bytes + rows * kStreamRowBytes + nnz *
/// kStreamNonzeroBytes). Fitted to csr_stream's H100 times on the suite v11 matrices whose x
/// gathers stay local (both precisions). Without them the model ranked csr_stream with 16-bit
/// columns and 8-bit values ahead of csr on short rows, where it measured slower. What the
/// gathers of scattered rows cost beyond that is each GPU's price per gathered x sector
/// (Cost::gathered_sectors, calibration/<gpu>.inc's sector_bytes).
inline constexpr double kStreamRowBytes = 23.0;
inline constexpr double kStreamNonzeroBytes = 6.6;

}  // namespace spmvc::heuristics
