// ell: ELLPACK and ELLPACK-R (Tang et al., SC13 "BRO", sections 2.1.2 and 2.1.4; Bell & Garland,
// SC09), specialised at compile time.
//
// Layout: every row owns kWidth slots (kWidth a multiple of T, at least the longest row), its
// nonzeros packed to the left. Slot k of row r lives at
//     (k / T) * (pitch * T) + r * T + (k % T),   pitch = nrows rounded up to kEllPitchAlign,
// i.e. column-major as in the paper when T = 1, and for T > 1 the T slots a row's lanes read in
// one step sit side by side, so a warp's loads of one step are always one contiguous run. The
// pitch keeps each step's run aligned to 128 bytes. Padding slots hold column -1 and value 0.
// The columns and values, read once per multiply, are loaded evict-first (load_stream) so that
// they leave x's lines in L1: on the H200, Kronecker scale 21 under dbg took hyb 191 us against
// 198 fp32 and 247 against 256 fp64 (bench/results/2026-11-29-h200-stream-loads-ell/).
//   row_lengths[nrows]  int, ELL-R only: the row's nonzeros
//   col[kWidth*pitch]   int
//   values[...]         Value
// Offsets are 64-bit: kWidth * pitch may pass 2^31.
//
// Thread mapping: T consecutive lanes share a row; lane l takes the row's slots l, l+T, ...
// ELL-R (kRowLengths) loops to the stored length and never reads padding. Plain ELL loops to
// kWidth and stops at the lane's first -1 column, loading a value only for real columns. Partial
// sums meet in a warp-shuffle reduction and lane 0 writes y once: no atomics.
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace ell {

/// Rows the column stride is rounded up to (one warp's worth: each step's run starts aligned).
constexpr int kEllPitchAlign = 32;

__device__ __forceinline__ long long pitch(long long nrows) {
  return (nrows + kEllPitchAlign - 1) / kEllPitchAlign * kEllPitchAlign;
}

template <int kWidth, int kThreadsPerRow, int kBlockSize, int kUnroll, bool kRowLengths,
          typename Value, typename Acc, typename Values, typename X>
__device__ __forceinline__ void spmv(long long nrows, const int* __restrict__ row_lengths,
                                     const int* __restrict__ col, Values values, X x,
                                     Value* __restrict__ y, Acc alpha, Acc beta) {
  constexpr int kSteps = kWidth / kThreadsPerRow;
  static_assert(kWidth % kThreadsPerRow == 0, "the width is a multiple of the lanes per row");
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  static_assert(kBlockSize % kThreadsPerRow == 0, "a row's lanes stay inside one block");
  static_assert(kUnroll >= 1 && kUnroll <= 8, "unroll depth out of range");

  const long long tid = static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x;
  const long long row = tid / kThreadsPerRow;
  const int lane = static_cast<int>(threadIdx.x) % kThreadsPerRow;

  // No early return: every lane of the warp must reach the shuffle reduction.
  Acc sum = Acc(0);
  if (row < nrows) {
    const long long stride = pitch(nrows) * kThreadsPerRow;
    long long p = row * kThreadsPerRow + lane;
    if constexpr (kRowLengths) {
      const int len = row_lengths[row];
      const int mine = len > lane ? (len - lane + kThreadsPerRow - 1) / kThreadsPerRow : 0;
      for (int i = 0; i < mine; i += kUnroll) {
        int c[kUnroll];
        Value v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          c[u] = 0;
          v[u] = Value(0);
          if (i + u < mine) {
            c[u] = load_stream(col + p + u * stride);
            v[u] = load_stream(values + p + u * stride);
          }
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          if (i + u < mine) sum += static_cast<Acc>(v[u]) * static_cast<Acc>(load_ro(x + c[u]));
        }
        p += kUnroll * stride;
      }
    } else {
      for (int s = 0; s < kSteps; s += kUnroll) {
        int c[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          c[u] = s + u < kSteps ? load_stream(col + p + u * stride) : -1;
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          if (c[u] >= 0) {
            sum += static_cast<Acc>(load_stream(values + p + u * stride)) *
                   static_cast<Acc>(load_ro(x + c[u]));
          }
        }
        // Nonzeros are packed left: a -1 means the rest of this lane's slots are padding too.
        if (c[kUnroll - 1] < 0) break;
        p += kUnroll * stride;
      }
    }
  }
  sum = group_sum<kThreadsPerRow>(sum);
  if (lane == 0 && row < nrows) store_y(y, row, sum, alpha, beta);
}

}  // namespace ell
}  // namespace spmvc
