// Packing, scaling and scatter-add kernels of the distributed operator (device_kernels.hpp).
#include <cuda_runtime.h>

#include "device_kernels.hpp"

namespace spmvc::distributed::device {

namespace {

constexpr int kBlock = 256;

template <class T>
__global__ void __launch_bounds__(kBlock)
    gather_values(const T* __restrict__ x, const std::int32_t* __restrict__ index,
                  T* __restrict__ out, std::int64_t n) {
  const std::int64_t k = static_cast<std::int64_t>(blockIdx.x) * kBlock + threadIdx.x;
  if (k < n) out[k] = x[index[k]];
}

template <class T>
__global__ void __launch_bounds__(kBlock) scale_values(T* __restrict__ y, T beta, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kBlock + threadIdx.x;
  // beta = 0 writes zeros without reading y, which may hold NaN (as spmvc::Operator::apply).
  if (i < n) y[i] = beta == T(0) ? T(0) : beta * y[i];
}

template <class T>
__global__ void __launch_bounds__(kBlock)
    scatter_add(T* __restrict__ y, const std::int32_t* __restrict__ rows,
                const T* __restrict__ part, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * kBlock + threadIdx.x;
  if (i < n) y[rows[i]] += part[i];
}

unsigned blocks(std::int64_t n) { return static_cast<unsigned>((n + kBlock - 1) / kBlock); }

}  // namespace

int launch_gather(const void* x, const std::int32_t* index, void* out, std::int64_t n,
                  int value_bytes, void* stream) {
  if (n == 0) return cudaSuccess;
  auto s = static_cast<cudaStream_t>(stream);
  if (value_bytes == 8)
    gather_values<<<blocks(n), kBlock, 0, s>>>(static_cast<const double*>(x), index,
                                               static_cast<double*>(out), n);
  else
    gather_values<<<blocks(n), kBlock, 0, s>>>(static_cast<const float*>(x), index,
                                               static_cast<float*>(out), n);
  return cudaGetLastError();
}

int launch_scale(void* y, double beta, std::int64_t n, int value_bytes, void* stream) {
  if (n == 0) return cudaSuccess;
  auto s = static_cast<cudaStream_t>(stream);
  if (value_bytes == 8)
    scale_values<<<blocks(n), kBlock, 0, s>>>(static_cast<double*>(y), beta, n);
  else
    scale_values<<<blocks(n), kBlock, 0, s>>>(static_cast<float*>(y), static_cast<float>(beta), n);
  return cudaGetLastError();
}

int launch_scatter_add(void* y, const std::int32_t* rows, const void* part, std::int64_t n,
                       int value_bytes, void* stream) {
  if (n == 0) return cudaSuccess;
  auto s = static_cast<cudaStream_t>(stream);
  if (value_bytes == 8)
    scatter_add<<<blocks(n), kBlock, 0, s>>>(static_cast<double*>(y), rows,
                                             static_cast<const double*>(part), n);
  else
    scatter_add<<<blocks(n), kBlock, 0, s>>>(static_cast<float*>(y), rows,
                                             static_cast<const float*>(part), n);
  return cudaGetLastError();
}

}  // namespace spmvc::distributed::device
