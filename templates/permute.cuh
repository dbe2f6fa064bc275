// Gathers x into the column order of a matrix whose columns were renumbered by a symmetric
// ordering (B = P A P^T): x_perm[j] = x[col_map[j]]. Launched before the format's kernels, which
// then read x_perm; one pass over ncols elements, each block taking kBlockSize x kPerThread
// consecutive ones (so that reads sharing a line of x meet in its L1), each thread's loads all
// in flight before its stores.
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace permute {

template <int kBlockSize, int kPerThread, typename Value>
__device__ __forceinline__ void gather(long long ncols, const int* __restrict__ col_map,
                                       const Value* __restrict__ x, Value* __restrict__ x_perm) {
  const long long first =
      static_cast<long long>(blockIdx.x) * (kBlockSize * kPerThread) + threadIdx.x;
  Value v[kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const long long j = first + static_cast<long long>(i) * kBlockSize;
    if (j < ncols) v[i] = load_ro(x + load_ro(col_map + j));
  }
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const long long j = first + static_cast<long long>(i) * kBlockSize;
    if (j < ncols) x_perm[j] = v[i];
  }
}

}  // namespace permute
}  // namespace spmvc
