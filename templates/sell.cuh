// sell: SELL-C-sigma (Kreutzer, Hager, Wellein, Fehske & Bishop, SIAM J. Sci. Comput. 2014; the
// AMB slides' level 2), specialised at compile time.
//
// Layout: rows are sorted by decreasing length within windows of sigma rows (perm[i] is the
// original row at sorted position i; sigma = 1 keeps the order and stores no perm). Sorted rows
// are cut into slices of C. Slice s holds C rows of width w_s (its longest row rounded up to T);
// slot k of the slice's row i lives at
//     slice_ptr[s] + (k / T) * (C * T) + i * T + (k % T),
// column-major within the slice as in the paper when T = 1, with a row's T lanes side by side
// for T > 1. slice_ptr[s + 1] - slice_ptr[s] = w_s * C. Padding slots (and the rows past nrows
// in the last slice) hold column -1 and value 0. Columns and values are loaded evict-first
// (load_stream), as ell's are.
//   slice_ptr[nslices+1]  long long (64-bit: the slots may pass 2^31)
//   perm[nrows]           int, only when sigma > 1
//   col[slice_ptr[nslices]], values[...]
//
// Thread mapping: T consecutive lanes share a sorted row and walk its slice's width, stopping at
// their first -1 column; values are loaded only for real columns. A warp covers 32 / T sorted
// rows, possibly of several slices when C < 32 / T. Warp-shuffle reduction, then lane 0 writes
// y[perm[i]] once: y stays in the caller's order with no extra pass.
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace sell {

template <int kSliceHeight, int kThreadsPerRow, int kBlockSize, bool kPermuted, typename Value,
          typename Acc>
__device__ __forceinline__ void spmv(long long nrows, const long long* __restrict__ slice_ptr,
                                     const int* __restrict__ perm, const int* __restrict__ col,
                                     const Value* __restrict__ values, const Value* __restrict__ x,
                                     Value* __restrict__ y, Acc alpha, Acc beta) {
  constexpr int kStep = kSliceHeight * kThreadsPerRow;
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  static_assert(kBlockSize % kThreadsPerRow == 0, "a row's lanes stay inside one block");

  const long long tid = static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x;
  const long long sorted_row = tid / kThreadsPerRow;
  const int lane = static_cast<int>(threadIdx.x) % kThreadsPerRow;

  // No early return: every lane of the warp must reach the shuffle reduction.
  Acc sum = Acc(0);
  if (sorted_row < nrows) {
    const long long slice = sorted_row / kSliceHeight;
    const int in_slice = static_cast<int>(sorted_row % kSliceHeight);
    const long long end = slice_ptr[slice + 1];
    for (long long p = slice_ptr[slice] + in_slice * kThreadsPerRow + lane; p < end; p += kStep) {
      const int c = load_stream(col + p);
      // Nonzeros are packed left: a -1 means the rest of this lane's slots are padding too.
      if (c < 0) break;
      sum += static_cast<Acc>(load_stream(values + p)) * static_cast<Acc>(load_ro(x + c));
    }
  }
  sum = group_sum<kThreadsPerRow>(sum);
  if (lane == 0 && sorted_row < nrows) {
    const long long row = kPermuted ? static_cast<long long>(perm[sorted_row]) : sorted_row;
    store_y(y, row, sum, alpha, beta);
  }
}

}  // namespace sell
}  // namespace spmvc
