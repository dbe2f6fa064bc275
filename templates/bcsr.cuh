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
//
// Symmetric half (spmv_symmetric; square blocks, a matrix equal to its transpose): the arrays
// above hold only the blocks on and below the diagonal. Block row b's blocks above the diagonal
// are the transposes of the stored blocks (J, b), J > b, which a second index lists:
//   mptr[nbrows+1]  long long; block row b's mirrored blocks are [mptr[b], mptr[b+1])
//   mrow[mirrors]   int, J: the block row the mirror is stored in (x is read at columns J*kC..)
//   mpos[mirrors]   int, the mirror's block number in bcol/values
// A block row's lanes deal out its stored blocks, then its mirrored ones, the same way. A stored
// value is read twice, once for each of its two rows; the second read, by a block row near the
// first, mostly comes from L2.
//
// The block columns and values are read through L1 (load_ro), not evict-first as ell's are: a
// lane reads its block's r*c values one by one, so the block's lines are reused from L1 between
// its own loads. Evict-first measured 16% slower on bcsstk16 x16M fp64 and 25% on elasticity
// n=60 fp64 on the H200 (5% faster on bcsstk16 fp32;
// bench/results/2026-11-29-h200-stream-loads-ell/bcsr-stream-ab.txt).
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace bcsr {

/// The kT lanes' sums of block row `brow` combined with warp shuffles (every lane of the warp
/// takes part), and its rows of y written by its first lane.
template <int kR, int kT, typename Value, typename Acc>
__device__ __forceinline__ void store_block_row(Acc (&sum)[kR], int lane, long long brow,
                                                long long nbrows, long long nrows,
                                                Value* __restrict__ y, Acc alpha, Acc beta) {
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
  store_block_row<kR, kT>(sum, lane, brow, nbrows, nrows, y, alpha, beta);
}

/// One block's products into sum: `v` the block's r*c values; `transposed` reads it as its
/// transpose (a mirrored block). x is read at col0 .. col0+kC-1, below ncols with kColTail.
template <int kR, int kC, bool kColTail, typename Value, typename Acc>
__device__ __forceinline__ void block_products(Acc (&sum)[kR], const Value* __restrict__ v,
                                               bool transposed, long long col0, long long ncols,
                                               const Value* __restrict__ x) {
  Acc xv[kC];
#pragma unroll
  for (int k = 0; k < kC; ++k) {
    xv[k] = (!kColTail || col0 + k < ncols) ? static_cast<Acc>(load_ro(x + col0 + k)) : Acc(0);
  }
  Acc a[kR * kC];
#pragma unroll
  for (int e = 0; e < kR * kC; ++e) a[e] = static_cast<Acc>(load_ro(v + e));
#pragma unroll
  for (int i = 0; i < kR; ++i) {
#pragma unroll
    for (int k = 0; k < kC; ++k) sum[i] += (transposed ? a[k * kC + i] : a[i * kC + k]) * xv[k];
  }
}

template <int kR, int kC, int kT, int kBlockSize, bool kColTail, typename Value, typename Acc>
__device__ __forceinline__ void spmv_symmetric(
    long long nrows, long long ncols, const long long* __restrict__ brow_ptr,
    const int* __restrict__ bcol, const Value* __restrict__ values,
    const long long* __restrict__ mptr, const int* __restrict__ mrow, const int* __restrict__ mpos,
    const Value* __restrict__ x, Value* __restrict__ y, Acc alpha, Acc beta) {
  static_assert(kR == kC, "a symmetric half needs square blocks");
  static_assert(kR >= 1 && kR <= 8, "block shape out of range");
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
      block_products<kR, kC, kColTail>(sum, values + j * (kR * kC), false, col0, ncols, x);
    }
    const long long mend = mptr[brow + 1];
    for (long long m = mptr[brow] + lane; m < mend; m += kT) {
      const long long col0 = static_cast<long long>(load_ro(mrow + m)) * kC;
      const long long at = load_ro(mpos + m);
      block_products<kR, kC, kColTail>(sum, values + at * (kR * kC), true, col0, ncols, x);
    }
  }
  store_block_row<kR, kT>(sum, lane, brow, nbrows, nrows, y, alpha, beta);
}

}  // namespace bcsr
}  // namespace spmvc
