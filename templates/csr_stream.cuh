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
//                          holds at most kBlockSize x kRowsPerLane rows and kTile nonzeros, or
//                          one longer row.
//   row_ptr[nrows+1]       Offset (int or long long)
//   col_idx[nnz]           int; or, with narrow columns (Columns = NarrowColumns), per block a
//                          base column and an unsigned short offset per nonzero when the block's
//                          columns span less than 2^16, else int columns in a side array
//   values[nnz]            Value, or coded (common.cuh)
//   slots[nnz]             unsigned short, with sorted tiles (Slots = Slotted) only: a block that
//                          fits the tile stores its columns and values in column order, and
//                          slots[k] is nonzero k's place in the block's CSR order, where its
//                          product goes in shared memory. The reduction reads the products as
//                          without it, so y is the same bit for bit; a warp's gather of x touches
//                          fewer lines.
//   lanes[nblocks * kBlockSize]  unsigned, with split rows (SplitRows) only: each lane's segment
//
// Reduction: with R rows in a block, L = the largest power of two <= min(32, kBlockSize / R)
// lanes share each row; they sum its products cyclically and combine them with warp shuffles.
// Every row is written once by one lane: no atomics, results are the same run to run. Each
// thread block computes one row block and reduces each row in one pass: the reduction is on
// every block's critical path, so neither rounds that share long rows among more lanes nor
// blocks that walk several row blocks in turn pay (the hardware's scheduling of independent
// blocks hides the bounds' latency better; both measured slower, bench/results/README.md), nor
// does a long row among one-lane rows summed by its lane's whole warp once the warp's other rows
// are done (wiki-Vote x16M fp32 on the H200 43.5-43.7 -> 46.3-46.4 us;
// bench/results/2026-12-01-h200-stream-reduction/warp-long-rows.txt).
// With split rows (SplitRows) the encoder assigns the lanes instead: a long row is summed in
// segments by lanes of one warp and its first lane adds their sums, which measured 5% faster in
// fp32 on the power-law graphs whose blocks hold one row a lane (email-Enron, astro-ph x16M on
// the H200; bench/results/2026-12-02-h200-split-rows/).
// With kRowsPerLane 2 a block may hold up to 2 x kBlockSize rows, lane t summing rows t and
// t + kBlockSize: short rows then fill a tile of eight products a thread.
// With one lane per row (more than kBlockSize / 2 rows, as on census and road graphs) a lane
// walks its row four products at a time with one compare, then up to three under predicates:
// the lanes' counts differ and a warp runs its longest row, so each step's overhead counts.
//
// Instruction count: short-row matrices leave the kernel issue- and latency-bound rather than
// bandwidth-bound, so the template keeps per-block work small. Within a block, nonzeros are int
// offsets from the block's first (a block that fits the tile holds at most kTile <= 4096): only
// the block's base pointers take 64-bit arithmetic, and each stream step's loads are the
// thread's pointer plus a constant. A long row's loop counts from the matrix's first nonzero
// instead, which measured faster (LongRowSum). Lanes per row are shifts and masks, not divisions. A
// block's first loads (its bounds, each lane's row bounds, its column code) depend only on
// row_blocks, so they share one step of the block's chain of dependent loads.
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace csr_stream {

/// Column accessors: the column of nonzero k, counted from the nonzero the accessor's pointer
/// is at (the matrix's first, or in spmv the block's first, so that a block's indices are int).
struct IntColumn {
  static constexpr bool kShort = false;
  const int* __restrict__ col_idx;
  template <typename K>
  __device__ __forceinline__ int operator()(K k) const {
    return load_stream(col_idx + k);
  }
  /// The accessor counted from nonzero i.
  __device__ __forceinline__ IntColumn operator+(int i) const { return IntColumn{col_idx + i}; }
};
struct ShortColumn {
  static constexpr bool kShort = true;
  const unsigned short* __restrict__ narrow;
  int base;
  template <typename K>
  __device__ __forceinline__ int operator()(K k) const {
    return base + static_cast<int>(load_stream(narrow + k));
  }
  /// The accessor counted from nonzero i.
  __device__ __forceinline__ ShortColumn operator+(int i) const {
    return ShortColumn{narrow + i, base};
  }
};

/// 32-bit columns: the column of nonzero k is col_idx[k].
struct WideColumns {
  static constexpr bool kNarrow = false;
  const int* __restrict__ col_idx;
  /// Block b's column code: none (every block reads col_idx).
  __device__ __forceinline__ int block_code(int) const { return 0; }
  /// Returns f(the block's column accessor), counted from the block's first nonzero `start`.
  template <typename F>
  __device__ __forceinline__ auto with_block(int, long long start, const F& f) const {
    return f(IntColumn{col_idx + start});
  }
  /// Returns f(the block's column accessor), counted from the matrix's first nonzero.
  template <typename F>
  __device__ __forceinline__ auto with_block_absolute(int, long long, const F& f) const {
    return f(IntColumn{col_idx});
  }
};

/// 16-bit columns: block b's nonzeros store column - base[b] as unsigned short when its columns
/// span less than 2^16 (base[b] >= 0). A wider block has base[b] = -1 - w: its columns sit in
/// wide[w ...] as int, in nonzero order from the block's first nonzero. The choice is made once
/// per block, and each branch runs its own copy of the loops (a choice per nonzero measured
/// slower than 32-bit columns on the H100).
struct NarrowColumns {
  static constexpr bool kNarrow = true;
  const int* __restrict__ base;
  const unsigned short* __restrict__ narrow;
  const int* __restrict__ wide;
  /// Block b's column code, base[b].
  __device__ __forceinline__ int block_code(int b) const { return __ldg(base + b); }
  /// Returns f(the column accessor of the block whose code is `at`), counted from the block's
  /// first nonzero `start`.
  template <typename F>
  __device__ __forceinline__ auto with_block(int at, long long start, const F& f) const {
    if (at >= 0) return f(ShortColumn{narrow + start, at});
    return f(IntColumn{wide + (-1 - at)});
  }
  /// Returns f(the column accessor of the block whose code is `at` and whose first nonzero is
  /// `start`), counted from the matrix's first nonzero.
  template <typename F>
  __device__ __forceinline__ auto with_block_absolute(int at, long long start, const F& f) const {
    if (at >= 0) return f(ShortColumn{narrow, at});
    return f(IntColumn{wide + (-1 - at) - start});
  }
};

/// log2 of the lanes per row for `rows` rows in a block of kBlockSize threads: the largest
/// L = 2^s <= 32 with L * rows <= kBlockSize, or 1. Leading-zero counts and a shift rather than
/// a loop, so that the block's lane arithmetic is shifts and masks, not divisions by L.
template <int kBlockSize>
__device__ __forceinline__ int lanes_per_row_log2(int rows) {
  // rows << s reaches kBlockSize's bit length for s = the difference of their leading zeros, and
  // passes kBlockSize or not; clamped to 0..5 first, which also keeps the shift in range.
  int s = __clz(rows) - __clz(kBlockSize);
  s = s < 0 ? 0 : s > 5 ? 5 : s;
  s -= (rows << s) > kBlockSize ? 1 : 0;
  return s < 0 ? 0 : s;
}

/// Where a staged product goes in shared memory. InPlace: nonzero k's product at k (the
/// nonzeros in CSR order). Slotted: at slots[k] (sorted tiles).
struct InPlace {
  static constexpr bool kSorted = false;
  template <typename K>
  __device__ __forceinline__ InPlace operator+(K) const {
    return {};
  }
  template <typename K>
  __device__ __forceinline__ int operator()(K) const {
    return 0;
  }
};
struct Slotted {
  static constexpr bool kSorted = true;
  const unsigned short* __restrict__ slots;
  template <typename K>
  __device__ __forceinline__ Slotted operator+(K i) const {
    return Slotted{slots + i};
  }
  template <typename K>
  __device__ __forceinline__ int operator()(K k) const {
    return static_cast<int>(load_stream(slots + k));
  }
};

/// How a block that fits the tile assigns its lanes for the reduction. WholeRows: lanes per
/// row from the block's row count (below). SplitRows: each lane reads a 32-bit descriptor,
/// lanes[block * kBlockSize + lane], that the host encoder lays out (split_rows):
///   bits  0-10  b, the segment's first product counted from the block's first nonzero
///   bits 11-17  len, the segment's products (0: an idle lane, or a row with none)
///   bit  18     head: the lane writes the row's y
///   bits 19-23  extra: the row's further segments, len products each but the last, whose
///               sums their lanes leave at their first product's place
///   bits 24-31  the row counted from the block's first
/// A row's segments lie in one warp, so a __syncwarp, not a block barrier, orders the partial
/// sums before its head adds them: no lane walks more than a segment plus a row's partial
/// sums, where with WholeRows one lane walks a whole row of a power-law graph (100-900 products)
/// while its block waits.
struct WholeRows {
  static constexpr bool kSplit = false;
  __device__ __forceinline__ unsigned lane(long long) const { return 0u; }
};
struct SplitRows {
  static constexpr bool kSplit = true;
  const unsigned* __restrict__ lanes;
  __device__ __forceinline__ unsigned lane(long long i) const { return __ldg(lanes + i); }
};

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
/// their steps four at a time: eight pairs in flight measured slower, also in units that did
/// not spill (Maragal_6 x16M fp64 on the H200 55.5-56.1 -> 59.7-60.4 us; eight-in-flight.txt in
/// bench/results/2026-12-01-h200-stream-reduction/). Nor did wider loads: four nonzeros a load
/// (16-bit columns in one 8-byte load, values in one 16-byte load), where a warp's gather of x
/// then reads every fourth of 128 nonzeros rather than 32 consecutive ones (email-Enron x16M fp32
/// 44.9 -> 48.6 us, astro-ph fp64 56.3 -> 65.3 us; only census graphs, whose gathers miss L1
/// either way, gained: vt2010 fp32 54.7 -> 53.3 us), nor the block's whole tile copied into shared
/// memory first with 16-byte asynchronous copies (cp.async) and gathered from there: 9-25% slower
/// on every matrix timed, Maragal_6 fp32 37.9 -> 47.5 us
/// (bench/results/2026-12-01-h200-stream-wide-loads/). `values` and the column accessor start at
/// the block's first nonzero, so each step's loads are the thread's pointer plus a constant. A
/// struct with a force-inlined call rather than a lambda: NVRTC left a generic lambda's call out of
/// line, with a stack frame.
template <int kBlockSize, int kSteps, typename Value, typename Acc, typename Values,
          typename Slots = InPlace>
struct StreamTile {
  Values values;
  const Value* __restrict__ x;
  Acc* products;
  int n, t;
  Slots slots;  // from the block's first nonzero
  template <typename Column>
  __device__ __forceinline__ void operator()(Column column) const {
    // 16-bit columns beside table-coded values keep two pairs in flight: four spilled at the
    // 32 registers ptxas allots for eight 256-thread blocks per SM.
    constexpr int kWidest = Column::kShort && IsTable<Values>::value ? 2 : 4;
    constexpr int kRound = kSteps < kWidest ? kSteps : kWidest;
    // The thread's own pointers: each step's loads and store add a constant to them.
    const Column column_t = column + t;
    const Values values_t = values + t;
    const Slots slots_t = slots + t;
    Acc* const products_t = products + t;
    const int left = n - t;  // step s is the thread's while s * kBlockSize < left
#pragma unroll
    for (int r = 0; r < kSteps; r += kRound) {
      int c[kRound];
      Value v[kRound];
      int at[kRound];
#pragma unroll
      for (int i = 0; i < kRound; ++i) {
        const int k = (r + i) * kBlockSize;
        if (k < left) {
          c[i] = column_t(k);
          v[i] = load_stream(values_t + k);
          if (Slots::kSorted) at[i] = slots_t(k);
        }
      }
#pragma unroll
      for (int i = 0; i < kRound; ++i) {
        const int k = (r + i) * kBlockSize;
        if (k < left) {
          const Acc product = static_cast<Acc>(v[i]) * static_cast<Acc>(load_ro(x + c[i]));
          if (Slots::kSorted) {
            products[at[i]] = product;
          } else {
            products_t[k] = product;
          }
        }
      }
    }
  }
};

/// products[k], products[k + stride], ... below e, added in that order to zero: four at a time
/// while four remain, then up to three under predicates. Each lane's count differs and the warp
/// runs its longest, so the loop keeps one compare per four products and is not unrolled
/// further (an unrolled loop of unknown stride computes its trip count with a division).
template <typename Acc>
__device__ __forceinline__ Acc strided_sum(const Acc* products, int k, int e, int stride) {
  Acc sum = Acc(0);
#pragma unroll 1
  for (; k + 3 * stride < e; k += 4 * stride) {
    sum += products[k];
    sum += products[k + stride];
    sum += products[k + 2 * stride];
    sum += products[k + 3 * stride];
  }
  if (k < e) sum += products[k];
  if (k + stride < e) sum += products[k + stride];
  if (k + 2 * stride < e) sum += products[k + 2 * stride];
  return sum;
}

/// A long row's partial sum for thread t: every kBlockSize-th product of nonzeros start..end
/// from its t-th, counted from the matrix's first nonzero. (Counted from the row's first, with
/// `values` and the accessor moved there, the loop took 72 us instead of 56 us fp64 and 55 us
/// instead of 40 us fp32 on Maragal_6 x16M on the H200, whose rows reach 5,941 nonzeros.)
/// kDeep: eight column-value pairs loaded a thread before their gathers, then up to seven under
/// predicates, in place of a loop unrolled four times: Maragal_6 x16M fp64 55.0-55.6 -> 51.7-52.4
/// us on the H200. Taken where the unit stays at 32 registers (16-bit columns, one row a lane, no
/// value table: the wider units rose to 34, six blocks a multiprocessor instead of eight; fp32's
/// rose to 40 unbounded, so fp32 takes it only in units bounded to eight blocks, kDeepFp32:
/// Maragal_6 x16M fp32 40.3-40.5 -> 38.5-39.0 us; bench/results/2026-12-03-h200-long-rows/).
template <int kBlockSize, typename Offset, typename Value, typename Acc, typename Values,
          bool kDeep = false>
struct LongRowSum {
  Values values;
  const Value* __restrict__ x;
  Offset start, end;
  int t;
  template <typename Column>
  __device__ __forceinline__ Acc operator()(Column column) const {
    Acc sum = Acc(0);
    if constexpr (kDeep) {
      constexpr int kDepth = 8;
      Offset k = start + t;
#pragma unroll 1
      for (; k + (kDepth - 1) * kBlockSize < end; k += kDepth * kBlockSize) {
        int c[kDepth];
        Value v[kDepth];
#pragma unroll
        for (int i = 0; i < kDepth; ++i) {
          c[i] = column(k + i * kBlockSize);
          v[i] = load_stream(values + k + i * kBlockSize);
        }
#pragma unroll
        for (int i = 0; i < kDepth; ++i) {
          sum += static_cast<Acc>(v[i]) * static_cast<Acc>(load_ro(x + c[i]));
        }
      }
#pragma unroll
      for (int i = 0; i < kDepth - 1; ++i) {
        if (k + i * kBlockSize < end) {
          sum += static_cast<Acc>(load_stream(values + k + i * kBlockSize)) *
                 static_cast<Acc>(load_ro(x + column(k + i * kBlockSize)));
        }
      }
    } else {
#pragma unroll 4
      for (Offset k = start + t; k < end; k += kBlockSize) {
        sum += static_cast<Acc>(load_stream(values + k)) * static_cast<Acc>(load_ro(x + column(k)));
      }
    }
    return sum;
  }
};

/// kDeepFp32: fp32 units whose entry is compiled at eight 256-thread blocks a multiprocessor
/// (`__launch_bounds__(kBlockSize, 2048 / kBlockSize)`, which caps them at 32 registers) walk
/// long rows eight loads deep as fp64's do (see LongRowSum).
template <int kBlockSize, int kTile, int kRowsPerLane, typename Offset, typename Value,
          typename Acc, bool kDeepFp32 = false, typename Columns, typename Values,
          typename Slots = InPlace, typename Lanes = WholeRows>
__device__ __forceinline__ void spmv(const int* __restrict__ row_blocks,
                                     const Offset* __restrict__ row_ptr, Columns columns,
                                     Values values, const Value* __restrict__ x,
                                     Value* __restrict__ y, Acc alpha, Acc beta,
                                     Slots slots = Slots{}, Lanes lanes = Lanes{}) {
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  static_assert(kTile % kBlockSize == 0, "the tile is a whole number of block-wide steps");
  static_assert(kRowsPerLane == 1 || kRowsPerLane == 2, "a lane sums one or two rows");
  constexpr int kSteps = kTile / kBlockSize;
  __shared__ Acc products[kTile];

  const int first = __ldg(row_blocks + blockIdx.x);
  const int last = __ldg(row_blocks + blockIdx.x + 1);
  const int t = static_cast<int>(threadIdx.x);
  // Each lane's row bounds for the reduction and the block's column code are loaded here, beside
  // the block's bounds, rather than once those are known: dependent loads fewer on the block's
  // critical path.
  const int rows = last - first;
  const int shift = lanes_per_row_log2<kBlockSize>(rows);
  const int local = t >> shift;
  const Offset* __restrict__ bounds = row_ptr + first;
  Offset row_begin = 0, row_end = 0;
  // Split rows: the lane's segment descriptor in place of its row's bounds.
  const unsigned segment =
      lanes.lane(static_cast<long long>(blockIdx.x) * kBlockSize + static_cast<long long>(t));
  if (!Lanes::kSplit && local < rows) {
    row_begin = __ldg(bounds + local);
    row_end = __ldg(bounds + local + 1);
  }
  // A block of more rows than threads (kRowsPerLane 2): lane t also sums row t + kBlockSize.
  Offset row2_begin = 0, row2_end = 0;
  if (!Lanes::kSplit && kRowsPerLane > 1 && t + kBlockSize < rows) {
    row2_begin = __ldg(bounds + t + kBlockSize);
    row2_end = __ldg(bounds + t + kBlockSize + 1);
  }
  const Offset start = __ldg(bounds);
  const Offset end = __ldg(bounds + rows);
  const int code = columns.block_code(static_cast<int>(blockIdx.x));
  // The lane's row bounds counted from the block's first nonzero (for a block that fits the
  // tile). Taken after the stream phase, so that the stream does not wait for their loads; a
  // stream of more than four steps takes them before instead, so that start is not live across
  // it (its second round of loads spilled registers otherwise).
  constexpr bool kBoundsFirst = kSteps > 4;
  int b = 0, e = 0;
  if (kBoundsFirst) {
    b = static_cast<int>(row_begin - start);
    e = static_cast<int>(row_end - start);
  }

  if (end - start <= static_cast<Offset>(kTile)) {
    // Nonzeros counted from the block's first: int indices (n <= kTile).
    using Stream = StreamTile<kBlockSize, kSteps, Value, Acc, Values, Slots>;
    columns.with_block(
        code, static_cast<long long>(start),
        Stream{values + start, x, products, static_cast<int>(end - start), t, slots + start});
    __syncthreads();
    if (Lanes::kSplit) {
      const int sb = static_cast<int>(segment & 0x7ffu);
      const int len = static_cast<int>((segment >> 11) & 0x7fu);
      const bool head = ((segment >> 18) & 1u) != 0;
      const int extra = static_cast<int>((segment >> 19) & 0x1fu);
      Acc sum = strided_sum(products, sb, sb + len, 1);
      // The segment's first product is read by this lane only, above: its place takes the sum.
      if (!head && len > 0) products[sb] = sum;
      __syncwarp();
      if (head) {
        if (extra > 0) sum += strided_sum(products, sb + len, sb + len * extra + 1, len);
        store_y(y, first + static_cast<int>(segment >> 24), sum, alpha, beta);
      }
      return;
    }
    if (!kBoundsFirst) {
      b = static_cast<int>(row_begin - start);
      e = static_cast<int>(row_end - start);
    }

    if (rows > kBlockSize / 2) {
      // One lane per row (shift == 0): no shuffles.
      if (t < rows) store_y(y, first + t, strided_sum(products, b, e, 1), alpha, beta);
      if (kRowsPerLane > 1 && t + kBlockSize < rows) {
        const int b2 = static_cast<int>(row2_begin - start);
        const int e2 = static_cast<int>(row2_end - start);
        store_y(y, first + t + kBlockSize, strided_sum(products, b2, e2, 1), alpha, beta);
      }
      return;
    }
    const int lanes = 1 << shift;
    const int lane = t & (lanes - 1);
    Acc sum = local < rows ? strided_sum(products, b + lane, e, lanes) : Acc(0);
    // `lanes` is the same for the whole block, so every lane of the warp runs these shuffles.
    for (int offset = lanes / 2; offset > 0; offset /= 2) {
      sum += __shfl_down_sync(0xffffffffu, sum, offset, lanes);
    }
    if (lane == 0 && local < rows) store_y(y, first + local, sum, alpha, beta);
    return;
  }

  // One long row: every thread strides over it, then a block-wide sum.
  constexpr bool kDeep = (sizeof(Value) == 8 || kDeepFp32) && kRowsPerLane == 1 &&
                         Columns::kNarrow && !IsTable<Values>::value;
  using LongRow = LongRowSum<kBlockSize, Offset, Value, Acc, Values, kDeep>;
  Acc sum = columns.with_block_absolute(code, static_cast<long long>(start),
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
