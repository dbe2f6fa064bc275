// transpose: A^T's CSR arrays built on the GPU from A's (0-based CSR, 32-bit offsets and
// columns), by a counting sort over the columns:
//   1. count:  counts[c] = nonzeros in column c of A (one thread per nonzero, atomic adds);
//   2. an exclusive scan of counts into A^T's row_ptr (the device build's stream_scan);
//   3. fill:   next[] starts as a copy of that row_ptr; one thread per row r of A places each
//              of its nonzeros (r, c, v) at next[c]++ (an atomic add) as column r, value v of
//              row c of A^T.
// The fill's atomics order each row of A^T by whichever thread got there first, so the columns
// of a row of A^T are not sorted, and their order (hence the summation order of a multiply by
// A^T) can differ from one build to the next. Each built A^T then multiplies the same way every
// time.
#pragma once

namespace spmvc {
namespace transpose {

__device__ __forceinline__ void count(long long nnz, const int* __restrict__ col_idx,
                                      int* __restrict__ counts) {
  const long long j = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < nnz) atomicAdd(counts + __ldg(col_idx + j), 1);
}

template <typename Value>
__device__ __forceinline__ void fill(long long nrows, const int* __restrict__ row_ptr,
                                     const int* __restrict__ col_idx,
                                     const Value* __restrict__ values, int* __restrict__ next,
                                     int* __restrict__ t_col, Value* __restrict__ t_values) {
  const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= nrows) return;
  const int end = __ldg(row_ptr + r + 1);
  for (int j = __ldg(row_ptr + r); j < end; ++j) {
    const int at = atomicAdd(next + __ldg(col_idx + j), 1);
    t_col[at] = static_cast<int>(r);
    t_values[at] = __ldg(values + j);
  }
}

}  // namespace transpose
}  // namespace spmvc
