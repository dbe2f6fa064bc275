// csr: Baskaran & Bordawekar's CSR kernel ("Optimizing Sparse Matrix-Vector Multiplication on
// GPUs", sections 4.1.2-4.1.3), specialised at compile time.
//
// Layout (0-based CSR):
//   row_ptr[nrows+1]  Offset (int or long long); row r's nonzeros are [row_ptr[r], row_ptr[r+1])
//   col_idx[nnz]      int, strictly increasing within a row
//   values[nnz]       Value (double or float)
//
// Thread mapping: kThreadsPerRow (T) consecutive lanes share a row and walk its nonzeros
// cyclically, so a group's loads of col_idx/values are contiguous (coalesced). With kAligned the
// walk starts at the T-aligned offset at or below the row's start, so every step after the first
// touches whole aligned segments (the paper's "aligned global memory access"); lanes below the
// start skip the first step. Partial sums are combined with warp shuffles instead of the paper's
// shared-memory reduction (Hopper has no reason to round-trip through shared memory), and lane 0
// of the group writes y once: no atomics, no inter-block synchronisation.
//
// kUnroll > 1 issues kUnroll independent (col, value) loads per lane before the first x gather,
// which keeps more memory requests in flight to cover the col -> x[col] dependent latency.
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace csr {

template <int kThreadsPerRow, int kBlockSize, int kUnroll, bool kAligned, typename Offset,
          typename Value, typename Acc>
__device__ __forceinline__ void spmv(long long nrows, const Offset* __restrict__ row_ptr,
                                     const int* __restrict__ col_idx,
                                     const Value* __restrict__ values,
                                     const Value* __restrict__ x, Value* __restrict__ y,
                                     Acc alpha, Acc beta) {
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  static_assert(kBlockSize % kThreadsPerRow == 0, "a row's lanes stay inside one block");
  static_assert(kUnroll >= 1 && kUnroll <= 8, "unroll depth out of range");

  const long long tid = static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x;
  const long long row = tid / kThreadsPerRow;
  const int lane = static_cast<int>(threadIdx.x) % kThreadsPerRow;

  // No early return: every lane of the warp must reach the shuffle reduction.
  Acc sum = Acc(0);
  if (row < nrows) {
    const Offset start = row_ptr[row];
    const Offset end = row_ptr[row + 1];
    Offset j;
    if (kAligned && kThreadsPerRow > 1) {
      // First step over the aligned segment that contains `start`.
      j = (start & ~static_cast<Offset>(kThreadsPerRow - 1)) + lane;
      if (j >= start && j < end) {
        sum += static_cast<Acc>(load_ro(values + j)) *
               static_cast<Acc>(load_ro(x + load_ro(col_idx + j)));
      }
      j += kThreadsPerRow;
    } else {
      j = start + lane;
    }
    if (kUnroll > 1) {
      for (; j + (kUnroll - 1) * kThreadsPerRow < end; j += kUnroll * kThreadsPerRow) {
        int c[kUnroll];
        Value v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          c[u] = load_ro(col_idx + j + u * kThreadsPerRow);
          v[u] = load_ro(values + j + u * kThreadsPerRow);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          sum += static_cast<Acc>(v[u]) * static_cast<Acc>(load_ro(x + c[u]));
        }
      }
    }
    for (; j < end; j += kThreadsPerRow) {
      sum += static_cast<Acc>(load_ro(values + j)) *
             static_cast<Acc>(load_ro(x + load_ro(col_idx + j)));
    }
  }
  sum = group_sum<kThreadsPerRow>(sum);
  if (lane == 0 && row < nrows) store_y(y, row, sum, alpha, beta);
}

}  // namespace csr
}  // namespace spmvc
