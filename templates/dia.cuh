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
// Thread mapping: one thread per row, each writing its y once: no atomics.
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace dia {

/// The stored diagonals' offsets, ascending.
template <int... kOffsets>
struct Offsets {};

/// Adds the d-th stored diagonal (offset `offset`) to row `row`'s sum.
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

template <int kBlockSize, bool kSymmetric, typename Value, typename Acc, int... kOffsets>
__device__ __forceinline__ void spmv(Offsets<kOffsets...>, long long nrows, long long ncols,
                                     const Value* __restrict__ values, const Value* __restrict__ x,
                                     Value* __restrict__ y, Acc alpha, Acc beta) {
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  const long long row = static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x;
  if (row >= nrows) return;
  // The offsets as a local array, its loop unrolled: each index is a constant, so each offset
  // is an immediate (no memory holds them).
  constexpr int kCount = sizeof...(kOffsets);
  const int offsets[kCount > 0 ? kCount : 1] = {kOffsets...};
  Acc sum = Acc(0);
#pragma unroll
  for (int d = 0; d < kCount; ++d) {
    add_diagonal<kSymmetric>(offsets[d], d, row, nrows, ncols, values, x, sum);
  }
  store_y(y, row, sum, alpha, beta);
}

}  // namespace dia
}  // namespace spmvc
