// csr_warp: CSR whose rows are summed by warps that never wait for one another. Each warp takes
// a chunk: a run of at most 32 x kRowsPerLane consecutive rows holding at most kChunk nonzeros,
// or one piece of kChunk nonzeros of a longer row. Its lanes stream the chunk's nonzeros 32 at a
// time, fully coalesced, and keep the products in registers: a segmented scan with warp shuffles
// sums each row's run, and lane l, which owns the chunk's rows l, l + 32, ..., picks each one's
// total out of the lane where the row ends. No shared memory and no block barrier: a warp whose
// gathers of x miss stalls no other warp, which is what the gather-bound power-law graphs lose
// under csr_stream's block-wide staging (bench/results/2026-11-29-h200-gather-floor/: on Kronecker
// scale 21 under dbg, the products' round trip through shared memory and a barrier cost 14-37%,
// five warp shuffles at most 3%).
//
// Layout (0-based CSR plus the chunk partition; nchunks a whole number of blocks' warps, the
// last chunks empty: chunk_row = nrows, chunk_nz = nnz):
//   chunk_row[nchunks+1]  int: chunk w writes rows [chunk_row[w], chunk_row[w+1]) (at most
//                         32 x kRowsPerLane)
//   chunk_nz[nchunks+1]   Offset: and reads nonzeros [chunk_nz[w], chunk_nz[w+1]) (at most
//                         kChunk)
//   row_ptr[nrows+1]      Offset
//   col_idx[nnz]          int
//   values[nnz]           Value, or coded (common.cuh)
//   long_rows[3*nlong]    int: for each row longer than kChunk, its row, its first piece's chunk
//                         and its number of pieces (>= 2); nlong a whole number of blocks'
//                         warps, padded with pieces 0
//   partial[nchunks]      Acc, scratch: the sum of each piece of a long row but its last
// A row longer than kChunk is cut into pieces of kChunk nonzeros, a chunk each. Its last piece
// writes the row (the sum of its own nonzeros); the others leave their sums in partial[], and a
// second launch (fixup) adds them to y in piece order, one warp per long row. Every row is
// written by one lane and summed in a fixed order: no atomics, results are the same run to run.
//
// Per step of 32 nonzeros a warp pays one vote (does a row start or end here), and where one
// does an OR-reduction (which lanes start a row), five shuffles of the scan, one to carry the
// last lane's run into the next step and one per row a lane to pick out each row's total. The
// loads of kRound steps are issued before their gathers, and the gathers before the scans, so
// that every lane keeps kRound columns, values and x's elements in flight. On the H200 (gather
// probe, bench/results/2026-11-29-h200-csr-warp/): chunks of 512 nonzeros with 2 rows a lane and
// the skip took Kronecker scale 21 under dbg to 215 us fp64 against 226.8 for 256 nonzeros with
// one row a lane and no skip; two steps in flight measured as fast as four, with fewer registers.
// Through the pipeline, whose reordered plans also gather x into the order and write y through
// the row map, that is 1.05x of cuSPARSE, as hyb so ordered (kron-picks.txt there).
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace csr_warp {

constexpr unsigned kAll = 0xffffffffu;

/// The OR of `bits` over the warp.
__device__ __forceinline__ unsigned warp_or(unsigned bits) {
#if __CUDA_ARCH__ >= 800
  return __reduce_or_sync(kAll, bits);
#else
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) bits |= __shfl_xor_sync(kAll, bits, d);
  return bits;
#endif
}

/// Products of one chunk, kRound steps of 32 at a time. `col` and `values` start at the chunk's
/// first nonzero; step j's products are those of nonzeros 32 j + lane.
template <int kRound, typename Value, typename Acc, typename Values, typename X>
__device__ __forceinline__ void products(const int* __restrict__ col, Values values, X x, int lane,
                                         int first, int n, Acc (&v)[kRound]) {
  int c[kRound];
#pragma unroll
  for (int i = 0; i < kRound; ++i) {
    const int k = first + 32 * i + lane;
    c[i] = k < n ? load_stream(col + k) : -1;
  }
  Value w[kRound];
#pragma unroll
  for (int i = 0; i < kRound; ++i) {
    const int k = first + 32 * i + lane;
    w[i] = k < n ? load_stream(values + k) : Value(0);
  }
#pragma unroll
  for (int i = 0; i < kRound; ++i) {
    v[i] = c[i] >= 0 ? static_cast<Acc>(w[i]) * static_cast<Acc>(load_ro(x + c[i])) : Acc(0);
  }
}

/// y = alpha * A x + beta * y for the rows the chunks write; a long row's pieces but its last
/// leave their sums in partial[] for fixup(). One warp per chunk of at most 32 x kRowsPerLane
/// rows: lane l owns rows l, l + 32, ... of its chunk. With kSkip, a step in which no row starts
/// or ends (one row's run crossing all 32 lanes) skips the scan: its products wait in each lane
/// and join the carried run at the next step that scans.
template <int kChunk, int kRound, int kRowsPerLane, bool kSkip, int kBlockSize, typename Offset,
          typename Value, typename Acc, typename Values, typename X>
__device__ __forceinline__ void spmv(const int* __restrict__ chunk_row,
                                     const Offset* __restrict__ chunk_nz,
                                     const Offset* __restrict__ row_ptr,
                                     const int* __restrict__ col_idx, Values values, X x,
                                     Value* __restrict__ y, Acc* __restrict__ partial, Acc alpha,
                                     Acc beta) {
  static_assert(kChunk % (32 * kRound) == 0, "a chunk is whole rounds of 32-nonzero steps");
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  constexpr int kR = kRowsPerLane;
  const int w =
      static_cast<int>(blockIdx.x) * (kBlockSize / 32) + static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) & 31;

  const int r0 = __ldg(chunk_row + w);
  const int rows = __ldg(chunk_row + w + 1) - r0;
  const Offset start = __ldg(chunk_nz + w);
  const int n = static_cast<int>(__ldg(chunk_nz + w + 1) - start);
  const int* const col = col_idx + start;
  const Values vals = values + start;

  if (rows <= 1) {
    // A piece of a long row, or a chunk of one row (whose nonzeros are the chunk's): a plain
    // warp sum.
    Acc sum = Acc(0);
    for (int first = 0; first < n; first += 32 * kRound) {
      Acc v[kRound];
      products<kRound, Value>(col, vals, x, lane, first, n, v);
#pragma unroll
      for (int i = 0; i < kRound; ++i) sum += v[i];
    }
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) sum += __shfl_xor_sync(kAll, sum, d);
    if (lane == 0) {
      if (rows == 1) {
        store_y(y, r0, sum, alpha, beta);
      } else {
        partial[w] = sum;
      }
    }
    return;
  }

  // The lane's rows r0 + lane + 32 j and their nonzeros [s, e), counted from the chunk's first.
  // Row offsets are read once per multiply: evict-first, as the matrix's streams, so that they
  // leave the L2 to x (Kronecker scale 21 and 22 under the hub order: 0.5-1.7% less time).
  bool owner[kR], live[kR];
  int s[kR], e[kR];
#pragma unroll
  for (int j = 0; j < kR; ++j) {
    const int r = lane + 32 * j;
    owner[j] = r < rows;
    s[j] = e[j] = 0;
    if (owner[j]) {
      s[j] = static_cast<int>(__ldcs(row_ptr + r0 + r) - start);
      e[j] = static_cast<int>(__ldcs(row_ptr + r0 + r + 1) - start);
    }
    live[j] = e[j] > s[j];
  }
  const unsigned at_or_below = 0xffffffffu >> (31 - lane);
  Acc mine[kR];
#pragma unroll
  for (int j = 0; j < kR; ++j) mine[j] = Acc(0);
  Acc carry = Acc(0), waiting = Acc(0);
  bool any_waiting = false;
  for (int first = 0; first < n; first += 32 * kRound) {
    Acc v[kRound];
    products<kRound, Value>(col, vals, x, lane, first, n, v);
#pragma unroll
    for (int i = 0; i < kRound; ++i) {
      const int base = first + 32 * i;
      // Which lanes of this step start a row; where this lane's run began (0 with no start at
      // or below it: the run carries on the previous step's last).
      unsigned bits = 0;
      bool touches = false;
#pragma unroll
      for (int j = 0; j < kR; ++j) {
        const int at = s[j] - base, end = e[j] - 1 - base;
        const bool starts = live[j] && at >= 0 && at < 32;
        bits |= starts ? 1u << at : 0u;
        touches |= starts || (live[j] && end >= 0 && end < 32);
      }
      if (kSkip) {
        if (!__any_sync(kAll, touches)) {
          waiting += v[i];
          any_waiting = true;
          continue;
        }
        if (any_waiting) {
#pragma unroll
          for (int d = 16; d > 0; d >>= 1) waiting += __shfl_xor_sync(kAll, waiting, d);
          carry += waiting;
          waiting = Acc(0);
          any_waiting = false;
        }
      }
      const unsigned heads = warp_or(bits);
      const unsigned mine_and_below = heads & at_or_below;
      const int seg = mine_and_below != 0 ? 31 - __clz(mine_and_below) : 0;
      Acc t = v[i];
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const Acc up = __shfl_up_sync(kAll, t, d);
        if (lane - d >= seg) t += up;
      }
      if (mine_and_below == 0) t += carry;
      carry = __shfl_sync(kAll, t, 31);
#pragma unroll
      for (int j = 0; j < kR; ++j) {
        const int end = e[j] - 1 - base;
        const Acc total = __shfl_sync(kAll, t, end & 31);
        if (live[j] && end >= 0 && end < 32) mine[j] = total;
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kR; ++j) {
    if (owner[j]) store_y(y, r0 + lane + 32 * j, mine[j], alpha, beta);
  }
}

/// Adds each long row's pieces but its last (partial[]) to its row of y, in piece order: one
/// warp per long row.
template <int kBlockSize, typename Value, typename Acc>
__device__ __forceinline__ void fixup(const int* __restrict__ long_rows,
                                      const Acc* __restrict__ partial, Value* __restrict__ y,
                                      Acc alpha) {
  const int j =
      static_cast<int>(blockIdx.x) * (kBlockSize / 32) + static_cast<int>(threadIdx.x) / 32;
  const int pieces = __ldg(long_rows + 3 * j + 2);
  if (pieces < 2) return;  // padding: the whole warp leaves together
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int row = __ldg(long_rows + 3 * j), first = __ldg(long_rows + 3 * j + 1);
  Acc sum = Acc(0);
  for (int p = lane; p < pieces - 1; p += 32) sum += partial[first + p];
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) sum += __shfl_xor_sync(kAll, sum, d);
  if (lane == 0) {
    const long long i = y_row(row);
    y[i] = static_cast<Value>(static_cast<Acc>(y[i]) + alpha * sum);
  }
}

}  // namespace csr_warp
}  // namespace spmvc
