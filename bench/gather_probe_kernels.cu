// The gather probe's kernels (gather_probe.cpp), compiled by nvcc apart from the host code, which
// needs C++20 headers that CMake cannot ask nvcc for.
#include "gather_probe_kernels.hpp"

#include <algorithm>

#include "spmvc/csr_warp.cuh"

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

namespace {

template <int kChunk, int kRound, int kRows, bool kSkip, int kMinBlocks, typename T>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
    warp_main(const int* __restrict__ chunk_row, const long long* __restrict__ chunk_nz,
              const long long* __restrict__ row_ptr, const int* __restrict__ col,
              const T* __restrict__ val, const T* __restrict__ x, T* __restrict__ y,
              T* __restrict__ partial) {
  spmvc::csr_warp::spmv<kChunk, kRound, kRows, kSkip, kBlock, long long, T, T>(
      chunk_row, chunk_nz, row_ptr, col, val, x, y, partial, T(1), T(0));
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    warp_fixup(const int* __restrict__ long_rows, const T* __restrict__ partial,
               T* __restrict__ y) {
  spmvc::csr_warp::fixup<kBlock, T, T>(long_rows, partial, y, T(1));
}

template <int kChunk, int kRound, int kRows, bool kSkip, int kMinBlocks, typename T>
void warp_pair(const WarpArgs<T>& a) {
  constexpr int kWarps = kBlock / 32;
  // Both counts are padded to whole blocks.
  warp_main<kChunk, kRound, kRows, kSkip, kMinBlocks, T>
      <<<static_cast<unsigned>(a.nchunks / kWarps), kBlock>>>(a.chunk_row, a.chunk_nz, a.row_ptr,
                                                              a.col, a.val, a.x, a.y, a.partial);
  if (a.nlong > 0) {
    warp_fixup<T><<<static_cast<unsigned>(a.nlong / kWarps), kBlock>>>(a.long_rows, a.partial, a.y);
  }
}

// chunk / round / skip; every variant has two rows a lane, the partition csr_warp encodes
// (formats/csr_warp): variant 0 is the shape the format generates.
constexpr int kChunks[kWarpVariants] = {512, 256, 512, 512};
constexpr const char* kNames[kWarpVariants] = {"512/2/s", "256/2/s", "512/2", "512/4/s"};

}  // namespace

int warp_variant_chunk(int variant) { return kChunks[variant]; }
const char* warp_variant_name(int variant) { return kNames[variant]; }

template <typename T>
void launch_warp(int variant, const WarpArgs<T>& a) {
  switch (variant) {
    case 0:
      warp_pair<512, 2, 2, true, 1, T>(a);
      break;
    case 1:
      warp_pair<256, 2, 2, true, 1, T>(a);
      break;
    case 2:
      warp_pair<512, 2, 2, false, 1, T>(a);
      break;
    default:
      warp_pair<512, 4, 2, true, 1, T>(a);
      break;
  }
}

template void launch_warp<float>(int, const WarpArgs<float>&);
template void launch_warp<double>(int, const WarpArgs<double>&);

template void launch<float>(Pass, Layout, int, long long, const int*, const float*, const float*,
                            float*);
template void launch<double>(Pass, Layout, int, long long, const int*, const double*, const double*,
                             double*);

}  // namespace gather_probe
