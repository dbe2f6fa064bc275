// Gathers x into the column order of a matrix whose columns were renumbered by a symmetric
// ordering (B = P A P^T): x_perm[j] = x[col_map[j]] (gather; for j < the columns read where
// those lead the order, RowColumnMap::packed_columns), or only the columns read, wherever they
// are (gather_slots). Launched before the format's kernels, which
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

// The same gather over the columns that stored entries read, where they are few enough that
// skipping the rest pays (codegen::attach_reordering): x_perm[col_slot[i]] = x[col_map[i]] for
// i < count, the slots ascending; the elements of x_perm that no entry reads are never written
// (the workspace is uploaded zeroed). Two indices an element against one and writes with gaps,
// so it pays only where few of the columns are read (spmvc::columns_gathered).
template <int kBlockSize, int kPerThread, typename Value>
__device__ __forceinline__ void gather_slots(long long count, const int* __restrict__ col_slot,
                                             const int* __restrict__ col_map,
                                             const Value* __restrict__ x,
                                             Value* __restrict__ x_perm) {
  const long long first =
      static_cast<long long>(blockIdx.x) * (kBlockSize * kPerThread) + threadIdx.x;
  Value v[kPerThread];
  int slot[kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const long long j = first + static_cast<long long>(i) * kBlockSize;
    if (j < count) {
      v[i] = load_ro(x + load_ro(col_map + j));
      slot[i] = load_ro(col_slot + j);
    }
  }
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const long long j = first + static_cast<long long>(i) * kBlockSize;
    if (j < count) x_perm[slot[i]] = v[i];
  }
}

}  // namespace permute
}  // namespace spmvc
