// amb: Adaptive Multi-level Blocking (Nagasaka, Nukada, Matsuoka; the "SpMV Kernel for AMB format
// in CUDA" slide): one thread per chunk row walks its row's blocks in one column segment and adds
// the row's partial sum into y with atomicAdd, after a first launch that sets y = beta*y. The
// deterministic variant writes each partial sum to its own slot instead, and a second launch adds
// a row's slots in segment order.
//
// Layout (compiler/formats/amb/amb_format.hpp):
//   chunk_len[nc]    unsigned: (segment << 16) | width (blocks per row of the chunk)
//   chunk_start[nc]  int: first element; element (j, r) of a chunk is start + j*C + r
//   perm[nc*C]       unsigned short: row - window*sigma, kPadRow for padding rows
//   perm_offset[nc]  unsigned short: window of the chunk's rows
//   slot[nc*C]       int: partial-sum slot, -1 for padding rows (deterministic variant)
//   col[nelem]       unsigned short: block's first column - segment base
//   values[nelem*b]  value t of element (j, r) at start*b + (j*b + t)*C + r: each load of a warp
//                    is contiguous
// nc is a whole number of thread blocks' chunks, so there is no bound check; a block never passes
// the last column, so x needs no padding.
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace amb {

/// Permutation entry of a padding row.
constexpr unsigned kPadRow = 0xFFFF;

/// y = beta*y, or 0 when beta is zero (y may hold NaN then): the first launch of the atomic
/// variant.
template <int kThreads, typename Value, typename Acc>
__device__ __forceinline__ void scale_y(long long nrows, Value* __restrict__ y, Acc beta) {
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= nrows) return;
  y[i] = beta != Acc(0) ? static_cast<Value>(beta * static_cast<Acc>(y[i])) : Value(0);
}

/// Sum over the blocks of chunk `chunk`, row `r`.
template <int kSegmentBits, int kChunkRows, int kColumnBlock, typename Value, typename Acc>
__device__ __forceinline__ Acc chunk_row_sum(unsigned cl, int start, int r,
                                             const unsigned short* __restrict__ col,
                                             const Value* __restrict__ values,
                                             const Value* __restrict__ x) {
  const int width = static_cast<int>(cl & 0xFFFFu);
  const int base = static_cast<int>(cl >> 16) << kSegmentBits;
  const unsigned short* c = col + start + r;
  const Value* v = values + static_cast<long long>(start) * kColumnBlock + r;
  Acc sum = Acc(0);
  // Several blocks' loads in flight; fewer for wide blocks, whose loads are already many (b = 5
  // and up at depth 4 spilled in fp64).
  constexpr int kUnroll = kColumnBlock > 4 ? 2 : 4;
#pragma unroll kUnroll
  for (int j = 0; j < width; ++j) {
    const int first = base + static_cast<int>(load_ro(c + j * kChunkRows));
    const Value* vj = v + static_cast<long long>(j) * kColumnBlock * kChunkRows;
#pragma unroll
    for (int t = 0; t < kColumnBlock; ++t) {
      sum +=
          static_cast<Acc>(load_ro(vj + t * kChunkRows)) * static_cast<Acc>(load_ro(x + first + t));
    }
  }
  return sum;
}

/// The atomic variant: y[row] += alpha * (row's sum in this segment).
template <int kSegmentBits, int kChunkRows, int kSigma, int kColumnBlock, int kBlockSize,
          typename Value, typename Acc>
__device__ __forceinline__ void spmv_atomic(
    const unsigned* __restrict__ chunk_len, const int* __restrict__ chunk_start,
    const unsigned short* __restrict__ perm, const unsigned short* __restrict__ perm_offset,
    const unsigned short* __restrict__ col, const Value* __restrict__ values,
    const Value* __restrict__ x, Value* __restrict__ y, Acc alpha) {
  static_assert(kBlockSize % kChunkRows == 0, "a chunk's rows stay inside one block");
  static_assert(kSegmentBits >= 1 && kSegmentBits <= 16, "16-bit column offsets");
  static_assert(kSigma % kChunkRows == 0 && kSigma <= 32768, "16-bit permutation");
  static_assert(kColumnBlock >= 1 && kColumnBlock <= 10, "block of 1..10 columns");
  const long long tid = static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x;
  const long long chunk = tid / kChunkRows;
  const int r = static_cast<int>(threadIdx.x) % kChunkRows;
  const unsigned p = load_ro(perm + tid);
  if (p == kPadRow) return;
  const Acc sum = chunk_row_sum<kSegmentBits, kChunkRows, kColumnBlock, Value, Acc>(
      load_ro(chunk_len + chunk), load_ro(chunk_start + chunk), r, col, values, x);
  const long long row = static_cast<long long>(load_ro(perm_offset + chunk)) * kSigma + p;
  atomicAdd(y + y_row(row), static_cast<Value>(alpha * sum));
}

/// The deterministic variant, first launch: each chunk row's sum to its slot.
template <int kSegmentBits, int kChunkRows, int kColumnBlock, int kBlockSize, typename Value,
          typename Acc>
__device__ __forceinline__ void spmv_partial(
    const unsigned* __restrict__ chunk_len, const int* __restrict__ chunk_start,
    const int* __restrict__ slot, const unsigned short* __restrict__ col,
    const Value* __restrict__ values, const Value* __restrict__ x, Acc* __restrict__ partial) {
  static_assert(kBlockSize % kChunkRows == 0, "a chunk's rows stay inside one block");
  const long long tid = static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x;
  const long long chunk = tid / kChunkRows;
  const int r = static_cast<int>(threadIdx.x) % kChunkRows;
  const int s = load_ro(slot + tid);
  if (s < 0) return;
  partial[s] = chunk_row_sum<kSegmentBits, kChunkRows, kColumnBlock, Value, Acc>(
      load_ro(chunk_len + chunk), load_ro(chunk_start + chunk), r, col, values, x);
}

/// The deterministic variant, second launch: y = alpha * (row's slots, in segment order) + beta*y.
template <int kThreads, typename Value, typename Acc>
__device__ __forceinline__ void reduce(long long nrows, const int* __restrict__ red_ptr,
                                       const Acc* __restrict__ partial, Value* __restrict__ y,
                                       Acc alpha, Acc beta) {
  const long long row = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (row >= nrows) return;
  Acc sum = Acc(0);
  for (int k = red_ptr[row]; k < red_ptr[row + 1]; ++k) sum += partial[k];
  store_y(y, row, sum, alpha, beta);
}

}  // namespace amb
}  // namespace spmvc
