// The dictionary probe's kernels (dict_probe.cpp), compiled by nvcc apart from the host code.
#include "dict_probe_kernels.hpp"
#include "probe_tile.cuh"

namespace dict_probe {
namespace {

constexpr int kBlock = 256;

template <typename T, int kLanes, bool kStaged, bool kPattern>
__global__ void __launch_bounds__(kBlock)
    dict_spmv(const int* __restrict__ blk_row, const int* __restrict__ blk_dict,
              const int* __restrict__ dict, const int* __restrict__ row_ptr,
              const unsigned short* __restrict__ lcol, const int* __restrict__ col,
              const T* __restrict__ val, const T* __restrict__ x, T* __restrict__ y) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* xs = reinterpret_cast<T*>(smem_raw);
  const int b = blockIdx.x;
  if constexpr (kStaged) {
    const int d0 = blk_dict[b], nd = blk_dict[b + 1] - d0;
    for (int k = threadIdx.x; k < nd; k += kBlock) xs[k] = __ldg(x + __ldg(dict + d0 + k));
    __syncthreads();
  }
  const int r0 = blk_row[b], r1 = blk_row[b + 1];
  constexpr int kGroups = kBlock / kLanes;
  const int lane = threadIdx.x % kLanes, group = threadIdx.x / kLanes;
  for (int base = r0; base < r1; base += kGroups) {
    const int r = base + group;
    T sum = 0;
    if (r < r1) {
      const int s = __ldg(row_ptr + r), e = __ldg(row_ptr + r + 1);
      for (int j = s + lane; j < e; j += kLanes) {
        T xv;
        if constexpr (kStaged) {
          xv = xs[__ldcs(lcol + j)];
        } else {
          xv = __ldg(x + __ldcs(col + j));
        }
        if constexpr (kPattern) {
          sum += xv;
        } else {
          sum += __ldcs(val + j) * xv;
        }
      }
    }
#pragma unroll
    for (int o = kLanes / 2; o > 0; o >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, o, kLanes);
    if (r < r1 && lane == 0) y[r] = sum;
  }
}

template <typename T, int kLanes, bool kStaged>
void go(const DictArgs<T>& a) {
  const std::size_t smem = kStaged ? static_cast<std::size_t>(a.max_dict) * sizeof(T) : 0;
  auto run = [&](auto kernel) {
    if (smem > 48 * 1024)
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(smem));
    kernel<<<a.nblocks, kBlock, smem>>>(a.blk_row, a.blk_dict, a.dict, a.row_ptr, a.lcol, a.col,
                                        a.val, a.x, a.y);
  };
  if (a.pattern) {
    run(dict_spmv<T, kLanes, kStaged, true>);
  } else {
    run(dict_spmv<T, kLanes, kStaged, false>);
  }
}

template <typename T, bool kStaged>
void by_lanes(const DictArgs<T>& a, int lanes) {
  switch (lanes) {
    case 4:
      go<T, 4, kStaged>(a);
      break;
    case 8:
      go<T, 8, kStaged>(a);
      break;
    case 16:
      go<T, 16, kStaged>(a);
      break;
    default:
      go<T, 32, kStaged>(a);
      break;
  }
}

template <typename T, int kTile, bool kStaged, bool kPattern>
__global__ void __launch_bounds__(kBlock)
    tile_spmv(const int* __restrict__ blk_row, const int* __restrict__ blk_dict,
              const unsigned char* __restrict__ blk_wide, const int* __restrict__ dict,
              const int* __restrict__ row_ptr, const unsigned short* __restrict__ lcol,
              const int* __restrict__ col, const T* __restrict__ val, const T* __restrict__ x,
              T* __restrict__ y) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* prod = reinterpret_cast<T*>(smem_raw);
  T* xs = prod + kTile;
  const int b = blockIdx.x, t = threadIdx.x;
  const int r0 = __ldg(blk_row + b), r1 = __ldg(blk_row + b + 1);
  const int base = __ldg(row_ptr + r0), n = __ldg(row_ptr + r1) - base;
  const bool staged = kStaged && blk_wide[b] == 0;
  if (staged) {
    const int d0 = __ldg(blk_dict + b), nd = __ldg(blk_dict + b + 1) - d0;
    for (int k = t; k < nd; k += kBlock) xs[k] = __ldg(x + __ldg(dict + d0 + k));
    __syncthreads();
  }
  auto term = [&](int k) -> T {
    const T xv = staged ? xs[__ldcs(lcol + base + k)] : __ldg(x + __ldcs(col + base + k));
    if constexpr (kPattern) {
      return xv;
    } else {
      return __ldcs(val + base + k) * xv;
    }
  };
  probe_tile::tile<T, kTile, kBlock, false>(r0, r1, base, n, row_ptr, prod, y, term);
}

template <typename T, int kTile, bool kStaged>
void go_tile(const DictArgs<T>& a) {
  const std::size_t smem = static_cast<std::size_t>(kStaged ? 2 * kTile : kTile) * sizeof(T);
  auto run = [&](auto kernel) {
    if (smem > 48 * 1024)
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(smem));
    kernel<<<a.nblocks, kBlock, smem>>>(a.blk_row, a.blk_dict, a.wide, a.dict, a.row_ptr, a.lcol,
                                        a.col, a.val, a.x, a.y);
  };
  if (a.pattern) {
    run(tile_spmv<T, kTile, kStaged, true>);
  } else {
    run(tile_spmv<T, kTile, kStaged, false>);
  }
}

}  // namespace

template <typename T>
void launch(const DictArgs<T>& args, int lanes, bool staged) {
  if (staged) {
    by_lanes<T, true>(args, lanes);
  } else {
    by_lanes<T, false>(args, lanes);
  }
}

template <typename T>
void launch_tile(const DictArgs<T>& args, int tile, bool staged) {
  if (tile == 1024) {
    if (staged)
      go_tile<T, 1024, true>(args);
    else
      go_tile<T, 1024, false>(args);
  } else {
    if (staged)
      go_tile<T, 2048, true>(args);
    else
      go_tile<T, 2048, false>(args);
  }
}

template void launch_tile<float>(const DictArgs<float>&, int, bool);
template void launch_tile<double>(const DictArgs<double>&, int, bool);
template void launch<float>(const DictArgs<float>&, int, bool);
template void launch<double>(const DictArgs<double>&, int, bool);

}  // namespace dict_probe
