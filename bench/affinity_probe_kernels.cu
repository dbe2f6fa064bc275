// The affinity probe's kernels (affinity_probe.cpp), compiled by nvcc apart from the host code.
#include <cuda_runtime.h>

#include "affinity_probe_kernels.hpp"
#include "probe_tile.cuh"

namespace affinity_probe {
namespace {

constexpr int kBlock = 256;
constexpr int kTile = 2048;

__device__ __forceinline__ unsigned sm_id() {
  unsigned r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}

template <typename T, bool kPattern>
__device__ __forceinline__ void tile(int b, T* prod, const int* __restrict__ tile_row,
                                     const int* __restrict__ row_ptr, const int* __restrict__ col,
                                     const T* __restrict__ val, const T* __restrict__ x,
                                     T* __restrict__ y) {
  const int r0 = __ldg(tile_row + b), r1 = __ldg(tile_row + b + 1);
  const int base = __ldg(row_ptr + r0), n = __ldg(row_ptr + r1) - base;
  auto term = [&](int k) -> T {
    const T xv = __ldg(x + __ldcs(col + base + k));
    if constexpr (kPattern) {
      return xv;
    } else {
      return __ldcs(val + base + k) * xv;
    }
  };
  probe_tile::tile<T, kTile, kBlock, true>(r0, r1, base, n, row_ptr, prod, y, term);
}

template <typename T, bool kPattern>
__global__ void __launch_bounds__(kBlock)
    per_tile(const int* __restrict__ tile_row, const int* __restrict__ row_ptr,
             const int* __restrict__ col, const T* __restrict__ val, const T* __restrict__ x,
             T* __restrict__ y) {
  __shared__ T prod[kTile];
  tile<T, kPattern>(blockIdx.x, prod, tile_row, row_ptr, col, val, x, y);
}

template <typename T, bool kPattern>
__global__ void __launch_bounds__(kBlock)
    affine(int nshares, const int* __restrict__ share_of, const int* __restrict__ share_first,
           int* next, const int* __restrict__ tile_row, const int* __restrict__ row_ptr,
           const int* __restrict__ col, const T* __restrict__ val, const T* __restrict__ x,
           T* __restrict__ y) {
  __shared__ T prod[kTile];
  __shared__ int rank;
  // Every multiprocessor present has a share (the host makes one for each %smid it saw). A block
  // takes a rank among its multiprocessor's blocks once (one atomic), then the share's tiles
  // first + rank, first + rank + per_sm, ...: no atomic a tile. (Taking each tile by an atomic
  // and walking the other shares after its own cost more than the whole multiply.)
  const int own = __ldg(share_of + sm_id());
  const int per_sm = gridDim.x / nshares;
  if (threadIdx.x == 0) rank = atomicAdd(next + own, 1);
  __syncthreads();
  const int first = __ldg(share_first + own), last = __ldg(share_first + own + 1);
  const int r = rank;
  if (r >= per_sm) return;  // a block the scheduler put past the share's count (none expected)
  for (int b = first + r; b < last; b += per_sm) {
    tile<T, kPattern>(b, prod, tile_row, row_ptr, col, val, x, y);
    __syncthreads();  // prod is the next tile's
  }
}

__global__ void record_smids(int* present) {
  if (threadIdx.x == 0 && sm_id() < 1024) present[sm_id()] = 1;
}

}  // namespace

template <typename T>
void launch(const TileArgs<T>& a, int mode) {
  if (mode == 0) {
    if (a.pattern) {
      per_tile<T, true><<<a.ntiles, kBlock>>>(a.tile_row, a.row_ptr, a.col, a.val, a.x, a.y);
    } else {
      per_tile<T, false><<<a.ntiles, kBlock>>>(a.tile_row, a.row_ptr, a.col, a.val, a.x, a.y);
    }
    return;
  }
  cudaMemsetAsync(a.next, 0, static_cast<size_t>(a.nshares) * sizeof(int));
  if (a.pattern) {
    affine<T, true><<<a.grid, kBlock>>>(a.nshares, a.share_of, a.share_first, a.next, a.tile_row,
                                        a.row_ptr, a.col, a.val, a.x, a.y);
  } else {
    affine<T, false><<<a.grid, kBlock>>>(a.nshares, a.share_of, a.share_first, a.next, a.tile_row,
                                         a.row_ptr, a.col, a.val, a.x, a.y);
  }
}

std::vector<int> present_smids() {
  int* d = nullptr;
  cudaMalloc(&d, 1024 * sizeof(int));
  cudaMemset(d, 0, 1024 * sizeof(int));
  record_smids<<<65536, 32>>>(d);
  std::vector<int> h(1024);
  cudaMemcpy(h.data(), d, 1024 * sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(d);
  std::vector<int> out;
  for (int i = 0; i < 1024; ++i)
    if (h[i] != 0) out.push_back(i);
  return out;
}

template void launch<float>(const TileArgs<float>&, int);
template void launch<double>(const TileArgs<double>&, int);

}  // namespace affinity_probe
