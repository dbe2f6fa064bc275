// The gather probe's kernels (gather_probe.cpp), compiled by nvcc apart from the host code, which
// needs C++20 headers that CMake cannot ask nvcc for.
#include "gather_probe_kernels.hpp"

#include <algorithm>

namespace gather_probe {
namespace {

constexpr int kBlock = 256;
constexpr int kUnroll = 4;  // independent loads in flight per thread and stream (sweep)
constexpr int kTile = 2048;

template <typename T, Pass kPass>
__device__ __forceinline__ T term(long long k, const int* __restrict__ col,
                                  const T* __restrict__ val, const T* __restrict__ x) {
  if constexpr (kPass == Pass::stream) {
    return static_cast<T>(__ldcs(col + k)) * __ldcs(val + k);
  } else if constexpr (kPass == Pass::gather || kPass == Pass::gather_shared ||
                       kPass == Pass::gather_shuffle) {
    return __ldg(x + __ldcs(col + k));
  } else {
    return __ldcs(val + k) * __ldg(x + __ldcs(col + k));
  }
}

// The streams are loaded evict-first and x through the read-only path, as spmvc's kernels load
// them.
template <typename T, Pass kPass>
__global__ void __launch_bounds__(kBlock)
    sweep(long long nnz, const int* __restrict__ col, const T* __restrict__ val,
          const T* __restrict__ x, T* __restrict__ out) {
  const long long stride = static_cast<long long>(gridDim.x) * kBlock;
  const long long first = static_cast<long long>(blockIdx.x) * kBlock + threadIdx.x;
  T sum = 0;
  long long k = first;
  for (; k + (kUnroll - 1) * stride < nnz; k += kUnroll * stride) {
    T t[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) t[u] = term<T, kPass>(k + u * stride, col, val, x);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) sum += t[u];
  }
  for (; k < nnz; k += stride) sum += term<T, kPass>(k, col, val, x);
  out[first] = sum;
}

template <typename T, Pass kPass>
__global__ void __launch_bounds__(kBlock)
    tile(long long nnz, const int* __restrict__ col, const T* __restrict__ val,
         const T* __restrict__ x, T* __restrict__ out) {
  const long long base = static_cast<long long>(blockIdx.x) * kTile + threadIdx.x;
  constexpr int kPer = kTile / kBlock;
  T t[kPer];
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    const long long k = base + u * kBlock;
    t[u] = k < nnz ? term<T, kPass>(k, col, val, x) : T(0);
  }
  if constexpr (kPass == Pass::gather_shared || kPass == Pass::gather_values_shared) {
    __shared__ T products[kTile];
#pragma unroll
    for (int u = 0; u < kPer; ++u) products[threadIdx.x + u * kBlock] = t[u];
    __syncthreads();
#pragma unroll
    for (int u = 0; u < kPer; ++u) t[u] = products[threadIdx.x + u * kBlock];
  }
  if constexpr (kPass == Pass::gather_shuffle || kPass == Pass::gather_values_shuffle) {
#pragma unroll
    for (int u = 0; u < kPer; ++u) {
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) t[u] += __shfl_xor_sync(0xffffffffu, t[u], d);
    }
  }
  T sum = 0;
#pragma unroll
  for (int u = 0; u < kPer; ++u) sum += t[u];
  out[static_cast<long long>(blockIdx.x) * kBlock + threadIdx.x] = sum;
}

template <typename T, Pass kPass>
void launch_pass(Layout layout, int blocks, long long nnz, const int* col, const T* val, const T* x,
                 T* out) {
  constexpr bool kTileOnly = kPass == Pass::gather_shared || kPass == Pass::gather_values_shared ||
                             kPass == Pass::gather_shuffle || kPass == Pass::gather_values_shuffle;
  if (layout == Layout::sweep && !kTileOnly) {
    sweep<T, kPass><<<blocks, kBlock>>>(nnz, col, val, x, out);
  } else {
    const unsigned grid = std::max(1u, static_cast<unsigned>((nnz + kTile - 1) / kTile));
    tile<T, kPass><<<grid, kBlock>>>(nnz, col, val, x, out);
  }
}

}  // namespace

long long out_entries(Layout layout, int blocks, long long nnz) {
  const long long tiles = (nnz + kTile - 1) / kTile;
  return (layout == Layout::sweep ? blocks : (tiles > 0 ? tiles : 1)) *
         static_cast<long long>(kBlock);
}

namespace {

// The launch of pass p, one of kPasses.
template <typename T, Pass... kPasses>
void launch_one_of(Pass p, Layout layout, int blocks, long long nnz, const int* col, const T* val,
                   const T* x, T* out) {
  ((p == kPasses ? launch_pass<T, kPasses>(layout, blocks, nnz, col, val, x, out) : void()), ...);
}

}  // namespace

template <typename T>
void launch(Pass p, Layout layout, int blocks, long long nnz, const int* col, const T* val,
            const T* x, T* out) {
  launch_one_of<T, Pass::stream, Pass::gather, Pass::gather_values, Pass::gather_shared,
                Pass::gather_values_shared, Pass::gather_shuffle, Pass::gather_values_shuffle>(
      p, layout, blocks, nnz, col, val, x, out);
}

template void launch<float>(Pass, Layout, int, long long, const int*, const float*, const float*,
                            float*);
template void launch<double>(Pass, Layout, int, long long, const int*, const double*, const double*,
                             double*);

}  // namespace gather_probe
