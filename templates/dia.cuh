// dia: storage by diagonals (Bell & Garland, SC09), and its symmetric form, specialised at
// compile time: the stored diagonals' offsets are template arguments, so each row's loop is
// unrolled with constant offsets and reads no index.
//
// Layout: values[d * nrows + r] is row r of the d-th stored diagonal, the entry (r, r + o_d), 0
// where the diagonal has no entry in row r. Plain (kSymmetric false): every occupied diagonal.
// Symmetric: the diagonals with o_d <= 0 only; the entry (r, r - o_d) above the diagonal equals
// (r - o_d, r), which is values[d * nrows + r - o_d]. Those mirrored reads are the values another
// block streams, mostly served by L2, so the plain form streams its values evict-first and the
// symmetric one keeps them cached.
//
// Thread mapping: a block takes a tile of kBlockSize x kRowsPerThread rows, each thread every
// kBlockSize-th row of it, writing each row's y once: no atomics.
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace dia {

/// The stored diagonals' offsets, ascending.
template <int... kOffsets>
struct Offsets {};

/// Adds the d-th stored diagonal (offset `offset`) to row `row`'s sum, testing that the column
/// and the mirrored row lie inside the matrix.
template <bool kSymmetric, typename Value, typename Acc>
__device__ __forceinline__ void add_diagonal(int offset, int d, long long row, long long nrows,
                                             long long ncols, const Value* __restrict__ values,
                                             const Value* __restrict__ x, Acc& sum) {
  const Value* diagonal = values + static_cast<long long>(d) * nrows;
  const long long c = row + offset;
  if (c >= 0 && c < ncols) {
    const Value v = kSymmetric ? load_ro(diagonal + row) : load_stream(diagonal + row);
    sum += static_cast<Acc>(v) * static_cast<Acc>(load_ro(x + c));
  }
  if (kSymmetric && offset < 0) {
    const long long m = row - offset;  // the row whose entry (m, row) mirrors (row, m)
    if (m < nrows)
      sum += static_cast<Acc>(load_ro(diagonal + m)) * static_cast<Acc>(load_ro(x + m));
  }
}

/// add_diagonal without the tests, for a tile inside the matrix: the row `t` places past the
/// tile's first, whose row `v` and `x` point at.
template <bool kSymmetric, typename Value, typename Acc>
__device__ __forceinline__ void add_interior_diagonal(int offset, int d, int t, long long nrows,
                                                      const Value* __restrict__ v,
                                                      const Value* __restrict__ x, Acc& sum) {
  const Value* diagonal = v + static_cast<long long>(d) * nrows;
  const Value a = kSymmetric ? load_ro(diagonal + t) : load_stream(diagonal + t);
  sum += static_cast<Acc>(a) * static_cast<Acc>(load_ro(x + t + offset));
  if (kSymmetric && offset < 0)
    sum += static_cast<Acc>(load_ro(diagonal + t - offset)) *
           static_cast<Acc>(load_ro(x + t - offset));
}

/// The tile's rows from `first`: thread i takes rows first + i, first + i + kBlockSize, ...
/// (kRowsPerThread of them), so each diagonal's loads stay coalesced and a thread keeps that many
/// rows' loads in flight. kChecked: rows past the matrix are skipped and every load is tested
/// (add_diagonal); otherwise the tile lies inside the matrix (add_interior_diagonal).
template <bool kChecked, int kBlockSize, int kRowsPerThread, bool kSymmetric, typename Value,
          typename Acc, int... kOffsets>
__device__ __forceinline__ void tile_rows(long long first, long long nrows, long long ncols,
                                          const Value* __restrict__ values,
                                          const Value* __restrict__ x, Value* __restrict__ y,
                                          Acc alpha, Acc beta) {
  constexpr int kCount = sizeof...(kOffsets);
  // The offsets as a local array, its loops unrolled: each index is a constant, so each offset
  // is an immediate (no memory holds them).
  const int offsets[kCount > 0 ? kCount : 1] = {kOffsets...};
  const long long row0 = first + threadIdx.x;
  if (kChecked && kRowsPerThread == 1 && row0 >= nrows) return;
  Acc sum[kRowsPerThread];
#pragma unroll
  for (int i = 0; i < kRowsPerThread; ++i) sum[i] = Acc(0);
#pragma unroll
  for (int d = 0; d < kCount; ++d) {
#pragma unroll
    for (int i = 0; i < kRowsPerThread; ++i) {
      const long long row = row0 + i * kBlockSize;
      if (!kChecked) {
        add_interior_diagonal<kSymmetric>(offsets[d], d,
                                          static_cast<int>(threadIdx.x) + i * kBlockSize, nrows,
                                          values + first, x + first, sum[i]);
      } else if (kRowsPerThread == 1 || row < nrows) {
        add_diagonal<kSymmetric>(offsets[d], d, row, nrows, ncols, values, x, sum[i]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kRowsPerThread; ++i) {
    const long long row = row0 + i * kBlockSize;
    if (!kChecked || kRowsPerThread == 1 || row < nrows) store_y(y, row, sum[i], alpha, beta);
  }
}

template <int kBlockSize, int kRowsPerThread, bool kInterior, bool kSymmetric, typename Value,
          typename Acc, int... kOffsets>
__device__ __forceinline__ void spmv(Offsets<kOffsets...>, long long nrows, long long ncols,
                                     const Value* __restrict__ values, const Value* __restrict__ x,
                                     Value* __restrict__ y, Acc alpha, Acc beta) {
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  static_assert(kRowsPerThread >= 1, "a thread takes at least one row");
  constexpr int kCount = sizeof...(kOffsets);
  constexpr int kTile = kBlockSize * kRowsPerThread;
  // The offsets ascend: the first is the lowest, the last the highest.
  constexpr int kAll[kCount + 1] = {kOffsets..., 0};
  constexpr int kLow = kAll[0];  // 0 when no diagonal is stored (kAll is then {0})
  constexpr int kHigh = kAll[kCount > 0 ? kCount - 1 : 0];
  const long long first = static_cast<long long>(blockIdx.x) * kTile;
  const long long end = first + kTile < nrows ? first + kTile : nrows;
  // kInterior: a whole tile whose every row reads every diagonal inside x (and, symmetric, every
  // mirrored row inside the matrix) runs without bounds tests.
  const bool interior = kInterior && end - first == kTile && first + kLow >= 0 &&
                        end - 1 + kHigh < ncols && (!kSymmetric || end - 1 - kLow < nrows);
  if (interior) {
    tile_rows<false, kBlockSize, kRowsPerThread, kSymmetric, Value, Acc, kOffsets...>(
        first, nrows, ncols, values, x, y, alpha, beta);
  } else {
    tile_rows<true, kBlockSize, kRowsPerThread, kSymmetric, Value, Acc, kOffsets...>(
        first, nrows, ncols, values, x, y, alpha, beta);
  }
}

}  // namespace dia
}  // namespace spmvc
