// csr_stream's model constants as data, each with where it came from.
#pragma once

namespace spmvc::heuristics {

/// csr_stream: the fixed start of each row block (its bounds, then its rows' bounds, before any
/// nonzero loads), charged as this many bytes of reading in the model's own units (before the
/// calibration's factor, about 0.4-0.5 for csr_stream on the H100 and the H200: some 650 bytes
/// read). Measured: halving the tile from 1024 to 512 cost 190-770 bytes of reading a block on
/// the H100 (suite v5's sweep, email-Enron and ct2010 x16M fp32); the 512-thread tile of 4096
/// with two rows a lane saved 1,500-2,800 a block against 256 x 1024 on the four census graphs
/// x16M fp32 on the H200 (bench/results/2026-11-29-h200-dia-tiles/census-rows-per-lane.txt). At
/// 256 the model ranked that shape behind 256 x 1024, which measured 4-12% slower there; at 1536
/// it ranks it first by 1-2%. Without the term the model ranked the 512-nonzero tile first on
/// short-row graphs, where it measured slower.
inline constexpr double kStreamBlockBytes = 1536.0;

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
