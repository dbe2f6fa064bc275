// bcsr: block CSR with aligned r x c dense blocks (Im & Yelick's BCSR, the constant-block format
// Baskaran & Bordawekar start from in section 4.2), T lanes per block row.
//
// Layout:
//   brow_ptr[nbrows+1]  long long; block row b's blocks are [brow_ptr[b], brow_ptr[b+1])
//   bcol[blocks]        int, block column (the block covers columns bcol*kC .. bcol*kC+kC-1),
//                       increasing within a block row
//   values[blocks*kR*kC] Value, block-major, row-major inside a block; fill entries are zero
// Block row b covers rows b*kR .. b*kR+kR-1 (the last one may run past nrows: those rows are
// not written). The last block column may run past ncols: with kColTail, x is read only below
// ncols (the matching values are zero fill).
//
// Thread mapping: kT consecutive lanes share a block row and deal its blocks out cyclically. A
// lane loads the block's kC x values once into registers and reuses each across the block's kR
// rows (x reuse in registers), accumulating kR partial sums; the group then reduces them with
// warp shuffles and its first lane writes the kR rows of y.
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace bcsr {

template <int kR, int kC, int kT, int kBlockSize, bool kColTail, typename Value, typename Acc>
__device__ __forceinline__ void spmv(long long nrows, long long ncols,
                                     const long long* __restrict__ brow_ptr,
                                     const int* __restrict__ bcol, const Value* __restrict__ values,
                                     const Value* __restrict__ x, Value* __restrict__ y, Acc alpha,
                                     Acc beta) {
  static_assert(kR >= 1 && kR <= 8 && kC >= 1 && kC <= 8, "block shape out of range");
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  static_assert(kBlockSize % kT == 0, "a block row's lanes stay inside one block");

  const long long tid = static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x;
  const long long brow = tid / kT;
  const int lane = static_cast<int>(threadIdx.x) % kT;
  const long long nbrows = (nrows + kR - 1) / kR;

  Acc sum[kR];
#pragma unroll
  for (int i = 0; i < kR; ++i) sum[i] = Acc(0);
  // No early return: every lane of the warp must reach the shuffle reduction.
  if (brow < nbrows) {
    const long long end = brow_ptr[brow + 1];
    for (long long j = brow_ptr[brow] + lane; j < end; j += kT) {
      const long long col0 = static_cast<long long>(load_ro(bcol + j)) * kC;
      Acc xv[kC];
#pragma unroll
      for (int k = 0; k < kC; ++k) {
        if (!kColTail || col0 + k < ncols) {
          xv[k] = static_cast<Acc>(load_ro(x + col0 + k));
        } else {
          xv[k] = Acc(0);
        }
      }
      const Value* v = values + j * (kR * kC);
#pragma unroll
      for (int i = 0; i < kR; ++i) {
#pragma unroll
        for (int k = 0; k < kC; ++k) sum[i] += static_cast<Acc>(load_ro(v + i * kC + k)) * xv[k];
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kR; ++i) sum[i] = group_sum<kT>(sum[i]);
  if (lane == 0 && brow < nbrows) {
#pragma unroll
    for (int i = 0; i < kR; ++i) {
      const long long row = brow * kR + i;
      if (row < nrows) store_y(y, row, sum[i], alpha, beta);
    }
  }
}

}  // namespace bcsr
}  // namespace spmvc
