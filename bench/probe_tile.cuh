// csr_stream's shape for the GPU probes (dict_probe, affinity_probe): one block of kBlock threads
// takes a tile of rows [r0, r1) whose nonzeros [base, base + n) number at most kTile, or one
// longer row. The tile's products (term(k) for its k-th nonzero) go to shared memory, then each
// row is summed from there by 1-32 lanes (a lane a row past kBlock rows); a longer row is summed
// by the whole block. y is stored plainly or, with kEvictFirstY, evict-first.
#pragma once

namespace probe_tile {

template <bool kEvictFirstY, typename T>
__device__ __forceinline__ void store(T* y, int r, T v) {
  if constexpr (kEvictFirstY) {
    __stcs(y + r, v);
  } else {
    y[r] = v;
  }
}

template <typename T, int kTile, int kBlock, bool kEvictFirstY, typename Term>
__device__ __forceinline__ void tile(int r0, int r1, int base, int n,
                                     const int* __restrict__ row_ptr, T* prod, T* __restrict__ y,
                                     const Term& term) {
  const int t = threadIdx.x;
  if (n > kTile) {  // one long row
    T s = 0;
    for (int k = t; k < n; k += kBlock) s += term(k);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if ((t & 31) == 0) prod[t >> 5] = s;
    __syncthreads();
    if (t == 0) {
      T total = 0;
      for (int w = 0; w < kBlock / 32; ++w) total += prod[w];
      store<kEvictFirstY>(y, r0, total);
    }
    return;
  }
#pragma unroll 4
  for (int k = t; k < n; k += kBlock) prod[k] = term(k);
  __syncthreads();
  const int nrows = r1 - r0;
  if (nrows > kBlock) {
    for (int r = r0 + t; r < r1; r += kBlock) {
      const int s0 = __ldg(row_ptr + r) - base, s1 = __ldg(row_ptr + r + 1) - base;
      T s = 0;
      for (int k = s0; k < s1; ++k) s += prod[k];
      store<kEvictFirstY>(y, r, s);
    }
    return;
  }
  int lanes = 1;
  while (lanes < 32 && lanes * 2 * nrows <= kBlock) lanes *= 2;
  const int group = t / lanes, lane = t % lanes;
  T s = 0;
  const int r = r0 + group;
  if (group < nrows) {
    const int s0 = __ldg(row_ptr + r) - base, s1 = __ldg(row_ptr + r + 1) - base;
    for (int k = s0 + lane; k < s1; k += lanes) s += prod[k];
  }
  for (int o = 16; o > 0; o >>= 1) {
    const T other = __shfl_down_sync(0xffffffffu, s, o);
    if (o < lanes) s += other;
  }
  if (group < nrows && lane == 0) store<kEvictFirstY>(y, r, s);
}

}  // namespace probe_tile
