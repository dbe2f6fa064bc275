// bellpack: blocked ELLPACK (Choi, Singh & Vuduc, PPoPP 2010, as described in the reordering
// paper, section 2): r x c dense blocks; block rows sorted by block count, longest first, and
// cut into slices of kSlice block rows, each stored ELL-style and padded to its widest block row.
//
// Layout:
//   slice_ptr[nslices+1]  long long; slice s holds width_s*kSlice block slots from slice_ptr[s]
//                         (width_s = (slice_ptr[s+1]-slice_ptr[s]) / kSlice)
//   bcol[slots]           int; slot slice_ptr[s] + k*kSlice + b is the k-th block of the slice's
//                         b-th block row: its block column (columns bcol*kC ..), or -1 (padding,
//                         always after a row's real blocks)
//   values[slots*kR*kC]   Value; the block in slot (s, k, b) has element (i, j) at
//                         slice_ptr[s]*kR*kC + (k*kC + j)*(kSlice*kR) + b*kR + i: consecutive
//                         threads read consecutive addresses
//   perm[nbrows]          int; the original block row of sorted block row s*kSlice + b
//
// Thread mapping: one thread per matrix row of a sorted block row (thread b*kR + i of a slice
// takes row i of its b-th block row); the kR threads of a block row read the same block column
// (one broadcast load) and the same kC x values (served once by L1). y is written through perm,
// so no pass restores the original order.
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace bellpack {

template <int kR, int kC, int kSlice, int kBlockSize, bool kColTail, typename Value, typename Acc>
__device__ __forceinline__ void spmv(long long nrows, long long ncols,
                                     const long long* __restrict__ slice_ptr,
                                     const int* __restrict__ bcol, const Value* __restrict__ values,
                                     const int* __restrict__ perm, const Value* __restrict__ x,
                                     Value* __restrict__ y, Acc alpha, Acc beta) {
  static_assert(kR >= 1 && kR <= 8 && kC >= 1 && kC <= 8, "block shape out of range");
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  constexpr int kSliceThreads = kSlice * kR;

  const long long tid = static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x;
  const long long slice = tid / kSliceThreads;
  const int local = static_cast<int>(tid % kSliceThreads);
  const int b = local / kR;
  const int i = local % kR;
  const long long nbrows = (nrows + kR - 1) / kR;
  const long long sorted = slice * kSlice + b;
  if (sorted >= nbrows) return;  // no shuffles below: threads may leave early

  const long long base = slice_ptr[slice];
  const long long width = (slice_ptr[slice + 1] - base) / kSlice;
  const Value* v = values + base * (kR * kC) + local;
  Acc sum = Acc(0);
  for (long long k = 0; k < width; ++k) {
    const int bc = load_ro(bcol + base + k * kSlice + b);
    if (bc < 0) break;
    const long long col0 = static_cast<long long>(bc) * kC;
#pragma unroll
    for (int j = 0; j < kC; ++j) {
      if (!kColTail || col0 + j < ncols) {
        sum += static_cast<Acc>(load_ro(v + (k * kC + j) * kSliceThreads)) *
               static_cast<Acc>(load_ro(x + col0 + j));
      }
    }
  }
  const long long row = static_cast<long long>(load_ro(perm + sorted)) * kR + i;
  if (row < nrows) store_y(y, row, sum, alpha, beta);
}

}  // namespace bellpack
}  // namespace spmvc
