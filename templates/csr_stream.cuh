// csr_stream: CSR with row blocks balanced by nonzeros. Each thread block takes a run of
// consecutive rows holding at most kTile nonzeros, streams their products into shared memory
// with fully coalesced loads, then reduces each row from shared memory; a row longer than kTile
// gets a block of its own that walks it with every thread. The load phase has no idle lanes
// whatever the row lengths, which is what irregular short-row matrices (road and census graphs,
// power-law graphs) lose under a fixed number of lanes per row. The matrix's streams (columns and
// values, read once per multiply) are loaded evict-first (load_stream), so that they do not push
// x's lines out of L1 while x is gathered: on the H200 that took the multiply on email-Enron x16M
// from 56.1 to 50.7 us fp32 and astro-ph x16M from 62.5 to 58.5 us fp64 (census graphs, whose
// gathers miss L1 either way, are unchanged).
//
// Layout (0-based CSR plus the block partition):
//   row_blocks[nblocks+1]  int; block b computes rows [row_blocks[b], row_blocks[b+1]). A block
//                          holds at most kBlockSize rows and kTile nonzeros, or one longer row.
//   row_ptr[nrows+1]       Offset (int or long long)
//   col_idx[nnz]           int; or, with narrow columns (Columns = NarrowColumns), per block a
//                          base column and an unsigned short offset per nonzero when the block's
//                          columns span less than 2^16, else int columns in a side array
//   values[nnz]            Value, or coded (common.cuh)
//
// Reduction: with R rows in a block, L = the largest power of two <= min(32, kBlockSize / R)
// lanes share each row; they sum its products cyclically and combine them with warp shuffles.
// Every row is written once by one lane: no atomics, results are the same run to run. Each
// thread block computes one row block and reduces each row in one pass: the reduction is on
// every block's critical path, so neither rounds that share long rows among more lanes nor
// blocks that walk several row blocks in turn pay (the hardware's scheduling of independent
// blocks hides the bounds' latency better; both measured slower, bench/results/README.md).
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace csr_stream {

/// Column accessors: the column of nonzero k (k counted from the matrix's first nonzero).
struct IntColumn {
  static constexpr bool kShort = false;
  const int* __restrict__ col_idx;
  template <typename K>
  __device__ __forceinline__ int operator()(K k) const {
    return load_stream(col_idx + k);
  }
};
struct ShortColumn {
  static constexpr bool kShort = true;
  const unsigned short* __restrict__ narrow;
  int base;
  template <typename K>
  __device__ __forceinline__ int operator()(K k) const {
    return base + static_cast<int>(load_stream(narrow + k));
  }
};

/// 32-bit columns: the column of nonzero k is col_idx[k].
struct WideColumns {
  const int* __restrict__ col_idx;
  /// Returns f(block b's column accessor).
  template <typename F>
  __device__ __forceinline__ auto with_block(int, long long, const F& f) const {
    return f(IntColumn{col_idx});
  }
};

/// 16-bit columns: block b's nonzeros store column - base[b] as unsigned short when its columns
/// span less than 2^16 (base[b] >= 0). A wider block has base[b] = -1 - w: its columns sit in
/// wide[w ...] as int, in nonzero order from the block's first nonzero. The choice is made once
/// per block, and each branch runs its own copy of the loops (a choice per nonzero measured
/// slower than 32-bit columns on the H100).
struct NarrowColumns {
  const int* __restrict__ base;
  const unsigned short* __restrict__ narrow;
  const int* __restrict__ wide;
  template <typename F>
  __device__ __forceinline__ auto with_block(int b, long long start, const F& f) const {
    const int at = __ldg(base + b);
    if (at >= 0) return f(ShortColumn{narrow, at});
    return f(IntColumn{wide + (-1 - at) - start});
  }
};

/// Lanes per row for `rows` rows in a block of kBlockSize threads: a power of two in 1..32.
template <int kBlockSize>
__device__ __forceinline__ int lanes_per_row(int rows) {
  int lanes = 32;
  while (lanes > 1 && lanes * rows > kBlockSize) lanes >>= 1;
  return lanes;
}

template <typename Values>
struct IsTable {
  static constexpr bool value = false;
};
template <typename Value, typename Code>
struct IsTable<TableValues<Value, Code>> {
  static constexpr bool value = true;
};

/// The stream phase of a block whose rows fit the tile: its n products into shared memory.
/// Every thread loads up to four (col, value) pairs first, then gathers x; wider tiles take
/// their steps four at a time (eight pairs in flight spill registers). A struct with a
/// force-inlined call rather than a lambda: NVRTC left a generic lambda's call out of line,
/// with a stack frame.
template <int kBlockSize, int kSteps, typename Value, typename Acc, typename Values>
struct StreamTile {
  Values values;
  const Value* __restrict__ x;
  Acc* products;
  long long start;
  int n, t;
  template <typename Column>
  __device__ __forceinline__ void operator()(Column column) const {
    // 16-bit columns beside table-coded values keep two pairs in flight: four spilled at the
    // 32 registers ptxas allots for eight 256-thread blocks per SM.
    constexpr int kWidest = Column::kShort && IsTable<Values>::value ? 2 : 4;
    constexpr int kRound = kSteps < kWidest ? kSteps : kWidest;
#pragma unroll
    for (int r = 0; r < kSteps; r += kRound) {
      int c[kRound];
      Value v[kRound];
#pragma unroll
      for (int i = 0; i < kRound; ++i) {
        const int k = (r + i) * kBlockSize + t;
        if (k < n) {
          c[i] = column(start + k);
          v[i] = load_stream(values + (start + k));
        }
      }
#pragma unroll
      for (int i = 0; i < kRound; ++i) {
        const int k = (r + i) * kBlockSize + t;
        if (k < n) products[k] = static_cast<Acc>(v[i]) * static_cast<Acc>(load_ro(x + c[i]));
      }
    }
  }
};

/// A long row's partial sum for thread t: every kBlockSize-th product from its t-th.
template <int kBlockSize, typename Offset, typename Value, typename Acc, typename Values>
struct LongRowSum {
  Values values;
  const Value* __restrict__ x;
  Offset start, end;
  int t;
  template <typename Column>
  __device__ __forceinline__ Acc operator()(Column column) const {
    Acc sum = Acc(0);
#pragma unroll 4
    for (Offset k = start + t; k < end; k += kBlockSize) {
      sum += static_cast<Acc>(load_stream(values + k)) * static_cast<Acc>(load_ro(x + column(k)));
    }
    return sum;
  }
};

template <int kBlockSize, int kTile, typename Offset, typename Value, typename Acc,
          typename Columns, typename Values>
__device__ __forceinline__ void spmv(const int* __restrict__ row_blocks,
                                     const Offset* __restrict__ row_ptr, Columns columns,
                                     Values values, const Value* __restrict__ x,
                                     Value* __restrict__ y, Acc alpha, Acc beta) {
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  static_assert(kTile % kBlockSize == 0, "the tile is a whole number of block-wide steps");
  constexpr int kSteps = kTile / kBlockSize;
  __shared__ Acc products[kTile];

  const int first = __ldg(row_blocks + blockIdx.x);
  const int last = __ldg(row_blocks + blockIdx.x + 1);
  const int t = static_cast<int>(threadIdx.x);
  // Each lane's row bounds for the reduction are loaded here, beside the block's bounds, rather
  // than after the products: one dependent load fewer on the block's critical path.
  const int rows = last - first;
  const int lanes = lanes_per_row<kBlockSize>(rows);
  const int local = t / lanes;
  const int lane = t % lanes;
  Offset row_begin = 0, row_end = 0;
  if (local < rows) {
    row_begin = __ldg(row_ptr + first + local);
    row_end = __ldg(row_ptr + first + local + 1);
  }
  const Offset start = __ldg(row_ptr + first);
  const Offset end = __ldg(row_ptr + last);

  if (end - start <= static_cast<Offset>(kTile)) {
    using Stream = StreamTile<kBlockSize, kSteps, Value, Acc, Values>;
    columns.with_block(static_cast<int>(blockIdx.x), static_cast<long long>(start),
                       Stream{values, x, products, static_cast<long long>(start),
                              static_cast<int>(end - start), t});
    __syncthreads();

    Acc sum = Acc(0);
    if (local < rows) {
      const int b = static_cast<int>(row_begin - start);
      const int e = static_cast<int>(row_end - start);
      for (int k = b + lane; k < e; k += lanes) sum += products[k];
    }
    // `lanes` is the same for the whole block, so every lane of the warp runs these shuffles.
    for (int offset = lanes / 2; offset > 0; offset /= 2) {
      sum += __shfl_down_sync(0xffffffffu, sum, offset, lanes);
    }
    if (lane == 0 && local < rows) store_y(y, first + local, sum, alpha, beta);
    return;
  }

  // One long row: every thread strides over it, then a block-wide sum.
  using LongRow = LongRowSum<kBlockSize, Offset, Value, Acc, Values>;
  Acc sum = columns.with_block(static_cast<int>(blockIdx.x), static_cast<long long>(start),
                               LongRow{values, x, start, end, t});
  sum = group_sum<32>(sum);
  if (t % 32 == 0) products[t / 32] = sum;
  __syncthreads();
  if (t < 32) {
    sum = t < kBlockSize / 32 ? products[t] : Acc(0);
    sum = group_sum<32>(sum);
    if (t == 0) store_y(y, first, sum, alpha, beta);
  }
}

}  // namespace csr_stream
}  // namespace spmvc
