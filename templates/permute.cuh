// Gathers x into the column order of a matrix whose columns were renumbered by a symmetric
// ordering (B = P A P^T): x_perm[j] = x[col_map[j]]. Launched before the format's kernels, which
// then read x_perm; one pass over ncols elements.
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace permute {

template <int kBlockSize, typename Value>
__device__ __forceinline__ void gather(long long ncols, const int* __restrict__ col_map,
                                       const Value* __restrict__ x, Value* __restrict__ x_perm) {
  const long long j = static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x;
  if (j < ncols) x_perm[j] = load_ro(x + load_ro(col_map + j));
}

}  // namespace permute
}  // namespace spmvc
