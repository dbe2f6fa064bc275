// coo: y += alpha * A * x for a matrix in coordinate form (Bell & Garland, SC09, section 3.5; the
// BRO paper's section 2.1.1): the building block of hyb's second launch. It adds into y and never
// applies beta, so it runs after a kernel that has written y = alpha*A1*x + beta*y.
//
// Layout: n entries sorted by row (columns in any order within a row):
//   rows[n] int (WideRows), cols[n] int, values[n] Value.
// Or, with 16-bit rows (NarrowRows), in place of rows: per interval of kInterval entries a base
// row and an unsigned short row - base per entry, when the interval's rows span at most 65535;
// a wider interval keeps int rows in a side array. The row stream is then 2 bytes of the 10-14
// an entry reads besides x, against 4 of 12-16; on the H200 the Kronecker graphs' COO launch
// measured within 2% either way, bound by its gathers of x (the planner does not propose it).
// No padding: the entry count is an argument. The entries, read once per multiply, are loaded
// evict-first (load_stream) so that they leave x's lines in L1, as ell's are.
//
// Thread mapping: warp w owns the entries [w * kInterval, (w + 1) * kInterval). It walks them 32
// at a time, one per lane: each lane forms its product, then a segmented inclusive scan over the
// warp (five shuffle rounds, adding only across equal rows; rows are sorted, so equal rows are
// contiguous) leaves each row run's total in its last lane. That lane adds it into y with one
// atomicAdd (double atomics need sm_60). The run that reaches lane 31 is carried into the next
// 32 entries instead, so a row gets one atomic per interval it touches, not one per 32 entries.
// Rows cut by interval boundaries get several atomics: the sum is exact, but its rounding order
// varies from run to run.
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace coo {

/// 32-bit rows: entry i's row is rows[i].
struct WideRows {
  const int* __restrict__ rows;
  /// Interval w's row code: none (every interval reads rows).
  __device__ __forceinline__ int interval_code(long long) const { return 0; }
  /// The row of entry i of the interval whose code is `code` and whose first entry is `begin`.
  __device__ __forceinline__ int operator()(int, long long i, long long) const {
    return load_stream(rows + i);
  }
};

/// 16-bit rows: interval w's entries store row - base[w] as unsigned short when its rows span at
/// most 65535 (base[w] >= 0). A wider interval has base[w] = -1 - o: its rows sit in wide[o ...]
/// as int, in entry order from its first entry. The code is the same for the whole warp, so the
/// choice does not diverge.
struct NarrowRows {
  const int* __restrict__ base;
  const unsigned short* __restrict__ narrow;
  const int* __restrict__ wide;
  __device__ __forceinline__ int interval_code(long long w) const { return __ldg(base + w); }
  __device__ __forceinline__ int operator()(int code, long long i, long long begin) const {
    if (code >= 0) return code + static_cast<int>(load_stream(narrow + i));
    return load_stream(wide + (static_cast<long long>(-1 - code) + (i - begin)));
  }
};

template <typename Value, typename Acc>
__device__ __forceinline__ void add_y(Value* y, long long row, Acc value) {
  atomicAdd(y + y_row(row), static_cast<Value>(value));
}

template <int kInterval, int kBlockSize, typename Value, typename Acc, typename Rows,
          typename Values, typename X>
__device__ __forceinline__ void spmv_add(long long n, Rows rows, const int* __restrict__ cols,
                                         Values values, X x, Value* y, Acc alpha) {
  static_assert(kInterval % 32 == 0, "an interval is whole warp steps");
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  constexpr unsigned kAll = 0xffffffffu;

  const long long warp = (static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const long long begin = warp * kInterval;
  if (begin >= n) return;  // the whole warp leaves together
  const long long end = begin + kInterval < n ? begin + kInterval : n;
  const int code = rows.interval_code(warp);

  int carry_row = -1;  // the row run that reached lane 31 of the previous step, and its sum
  Acc carry = Acc(0);
  for (long long base = begin; base < end; base += 32) {
    const long long i = base + lane;
    int row = -1;  // lanes past the end hold row -1, which matches no real row
    Acc v = Acc(0);
    if (i < end) {
      row = rows(code, i, begin);
      v = static_cast<Acc>(load_stream(values + i)) *
          static_cast<Acc>(load_ro(x + load_stream(cols + i)));
    }
    if (lane == 0) {
      if (row == carry_row) {
        v += carry;  // the carried run continues here; the scan spreads it along the run
      } else if (carry_row >= 0) {
        add_y(y, carry_row, alpha * carry);
      }
    }
#pragma unroll
    for (int offset = 1; offset < 32; offset *= 2) {
      const Acc up = __shfl_up_sync(kAll, v, offset);
      const int up_row = __shfl_up_sync(kAll, row, offset);
      if (lane >= offset && up_row == row) v += up;
    }
    const int next_row = __shfl_down_sync(kAll, row, 1);
    if (lane < 31 && next_row != row && row >= 0) add_y(y, row, alpha * v);
    carry_row = __shfl_sync(kAll, row, 31);
    carry = __shfl_sync(kAll, v, 31);
  }
  if (lane == 0 && carry_row >= 0) add_y(y, carry_row, alpha * carry);
}

}  // namespace coo
}  // namespace spmvc
