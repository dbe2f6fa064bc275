// blocked: Baskaran & Bordawekar's GPU-specific block storage ("Optimizing Sparse Matrix-Vector
// Multiplication on GPUs", section 4.2, Figure 8).
//
// Blocks are kBR x kBC; a block starts at a row that is a multiple of kBR and at a column that
// is a multiple of kAlign (the paper: half a warp; here the coalescing granule, a parameter). A
// block row's blocks are placed greedily: each starts at its first uncovered nonzero column,
// rounded down to kAlign. A block is not made dense: its row i stores only the columns
// start .. start + len_i*kAlign - 1, the prefix up to its last nonzero rounded up to kAlign.
//
// Layout:
//   brow_ptr[nbrows+1]   long long; block row b's blocks are [brow_ptr[b], brow_ptr[b+1])
//   brow_val[nbrows+1]   long long; block row b's values start at values[brow_val[b]]
//   block_col[blocks]    int; start column of each block (a multiple of kAlign)
//   block_len[blocks*kBR] unsigned char; len_i, row i's stored length in units of kAlign
//   values[...]          Value; per block, row 0's len_0*kAlign values, then row 1's, ...
//                        (fill zero); every block starts at a multiple of kAlign elements
//
// Thread mapping: one warp per block row. For each block the warp stages the x values the block
// needs into shared memory once (the paper's x reuse: each is read by up to kBR rows), then deals
// the block's stored values out to its lanes, consecutive lanes on consecutive values (coalesced,
// sector-aligned loads); each lane keeps kBR partial sums. A warp reduction per row at the end;
// lane 0 writes the block row's y. Columns past ncols (zero fill) read no x.
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace blocked {

template <int kBR, int kBC, int kAlign, int kBlockSize, typename Value, typename Acc>
__device__ __forceinline__ void spmv(long long nrows, long long ncols,
                                     const long long* __restrict__ brow_ptr,
                                     const long long* __restrict__ brow_val,
                                     const int* __restrict__ block_col,
                                     const unsigned char* __restrict__ block_len,
                                     const Value* __restrict__ values, const Value* __restrict__ x,
                                     Value* __restrict__ y, Acc alpha, Acc beta) {
  static_assert(kBR >= 1 && kBR <= 8, "block rows out of range");
  static_assert(kBC % kAlign == 0 && kBC <= 128, "bc is a multiple of the alignment, <= 128");
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  constexpr int kWarps = kBlockSize / 32;
  __shared__ Value xs[kWarps][kBC];

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const long long brow = static_cast<long long>(blockIdx.x) * kWarps + warp;
  const long long nbrows = (nrows + kBR - 1) / kBR;
  if (brow >= nbrows) return;  // the whole warp leaves together: no block-wide barrier below

  Acc sum[kBR];
#pragma unroll
  for (int i = 0; i < kBR; ++i) sum[i] = Acc(0);
  long long off = brow_val[brow];
  const long long end = brow_ptr[brow + 1];
  for (long long j = brow_ptr[brow]; j < end; ++j) {
    const long long c0 = load_ro(block_col + j);
    // Where each row's values start inside the block, and how many columns the block needs.
    int start[kBR + 1];
    start[0] = 0;
    int span = 0;
#pragma unroll
    for (int i = 0; i < kBR; ++i) {
      const int n = static_cast<int>(load_ro(block_len + j * kBR + i)) * kAlign;
      start[i + 1] = start[i] + n;
      span = n > span ? n : span;
    }
    for (int k = lane; k < span; k += 32) {
      xs[warp][k] = c0 + k < ncols ? load_ro(x + c0 + k) : Value(0);
    }
    __syncwarp();
    const int total = start[kBR];
    for (int e = lane; e < total; e += 32) {
      // Row of entry e: the last row whose values start at or before e (rows of length zero
      // share their start with the next row and are passed over).
      int row = 0, base = 0;
#pragma unroll
      for (int i = 1; i < kBR; ++i) {
        if (e >= start[i]) {
          row = i;
          base = start[i];
        }
      }
      const Acc prod =
          static_cast<Acc>(load_ro(values + off + e)) * static_cast<Acc>(xs[warp][e - base]);
#pragma unroll
      for (int i = 0; i < kBR; ++i) {
        if (i == row) sum[i] += prod;
      }
    }
    __syncwarp();  // xs is overwritten by the next block
    off += total;
  }
#pragma unroll
  for (int i = 0; i < kBR; ++i) sum[i] = group_sum<32>(sum[i]);
  if (lane == 0) {
#pragma unroll
    for (int i = 0; i < kBR; ++i) {
      const long long row = brow * kBR + i;
      if (row < nrows) store_y(y, row, sum[i], alpha, beta);
    }
  }
}

}  // namespace blocked
}  // namespace spmvc
