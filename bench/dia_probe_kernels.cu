// The diagonal probe's kernels (dia_probe.cpp), compiled by nvcc apart from the host code, which
// needs C++20 headers that CMake cannot ask nvcc for.
#include "dia_probe_kernels.hpp"

namespace dia_probe {
namespace {

// y[r] = sum over diagonals d of val[d][r] * x[r + off[d]] (val[d][r] = 0 where r + off[d] is
// outside the matrix).
template <typename T>
__global__ void dia_full(int n, int ndiag, const int* __restrict__ off, const T* __restrict__ val,
                         const T* __restrict__ x, T* __restrict__ y) {
  __shared__ int s_off[kMaxDiagonals];
  if (threadIdx.x < ndiag) s_off[threadIdx.x] = off[threadIdx.x];
  __syncthreads();
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= n) return;
  T sum = 0;
  for (int d = 0; d < ndiag; ++d) {
    const int c = r + s_off[d];
    if (c >= 0 && c < n) sum += __ldcs(val + static_cast<std::size_t>(d) * n + r) * __ldg(x + c);
  }
  y[r] = sum;
}

// Symmetric: lower diagonals (off < 0) and the main one stored; the entry at (r, r - o) for a
// lower offset -o is val[d][r], and the upper entry (r, r + o) equals (r + o, r), which is
// val[d][r + o].
template <typename T>
__global__ void dia_sym(int n, int nlower, const int* __restrict__ off, const T* __restrict__ val,
                        const T* __restrict__ diag, const T* __restrict__ x, T* __restrict__ y) {
  __shared__ int s_off[kMaxDiagonals];
  if (threadIdx.x < nlower) s_off[threadIdx.x] = off[threadIdx.x];
  __syncthreads();
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= n) return;
  T sum = __ldcs(diag + r) * __ldg(x + r);
  for (int d = 0; d < nlower; ++d) {
    const int o = -s_off[d];  // > 0
    const T* column = val + static_cast<std::size_t>(d) * n;
    if (r - o >= 0) sum += __ldg(column + r) * __ldg(x + r - o);
    if (r + o < n) sum += __ldg(column + r + o) * __ldg(x + r + o);
  }
  y[r] = sum;
}

}  // namespace

template <typename T>
void launch_full(int n, int ndiag, const int* off, const T* val, const T* x, T* y) {
  dia_full<T><<<(n + 255) / 256, 256>>>(n, ndiag, off, val, x, y);
}
template <typename T>
void launch_sym(int n, int nlower, const int* off, const T* val, const T* diag, const T* x, T* y) {
  dia_sym<T><<<(n + 255) / 256, 256>>>(n, nlower, off, val, diag, x, y);
}
template void launch_full<double>(int, int, const int*, const double*, const double*, double*);
template void launch_full<float>(int, int, const int*, const float*, const float*, float*);
template void launch_sym<double>(int, int, const int*, const double*, const double*, const double*,
                                 double*);
template void launch_sym<float>(int, int, const int*, const float*, const float*, const float*,
                                float*);

}  // namespace dia_probe
