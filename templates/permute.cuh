// Gathers x into the column order of a matrix whose columns were renumbered by a symmetric
// ordering (B = P A P^T): x_perm[j] = x[col_map[j]]. Launched before the format's kernels, which
// then read x_perm; one pass over ncols elements. Each thread moves kItems elements, a block's
// threads side by side in each (coalesced map reads and writes): all its map entries are loaded,
// then all its elements of x, so kItems gathers are in flight a thread where one at a time
// waited out two dependent loads each.
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace permute {

template <int kBlockSize, int kItems, typename Value>
__device__ __forceinline__ void gather(long long ncols, const int* __restrict__ col_map,
                                       const Value* __restrict__ x, Value* __restrict__ x_perm) {
  const long long first = static_cast<long long>(blockIdx.x) * kBlockSize * kItems + threadIdx.x;
  int from[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const long long j = first + static_cast<long long>(k) * kBlockSize;
    from[k] = j < ncols ? load_ro(col_map + j) : 0;
  }
  Value v[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const long long j = first + static_cast<long long>(k) * kBlockSize;
    v[k] = j < ncols ? load_ro(x + from[k]) : Value(0);
  }
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const long long j = first + static_cast<long long>(k) * kBlockSize;
    if (j < ncols) x_perm[j] = v[k];
  }
}

}  // namespace permute
}  // namespace spmvc
