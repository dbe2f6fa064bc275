// The generic tier: a CSR SpMV compiled by nvcc when the library is built (sm_90 code plus
// compute_90 PTX, which the driver compiles for newer GPUs), embedded in the library as a fatbin
// and loaded with cudaLibraryLoadData, so it runs without NVRTC while the specialised kernel
// compiles (runtime/generic_tier.hpp).
//
// It is templates/csr.cuh's kernel (y = alpha*A*x + beta*y, no read of y when beta is zero) on
// plain CSR arrays: unpadded, so unaligned scalar loads (kVector 1, kAligned false), with the
// threads per row (T) fixed per entry point and chosen at run time from the mean row length.
//
// Entry points: spmvc_generic_csr_t<T>_<precision>_<offsets>(nrows, row_ptr, col_idx, values, x,
// y, alpha, beta) with T in {1, 2, 4, 8, 16, 32}, precision f64 (double values, vectors and sums),
// f32 (float throughout) or f32acc64 (float values and vectors, double sums, double alpha and
// beta), and row offsets i32 (int) or i64 (long long). runtime/generic_tier.cpp builds the same
// names.
#include "spmvc/csr.cuh"

namespace {

// 256 threads: whole warps for every T, and the block size the csr plans use most.
constexpr int kBlock = 256;
// Two steps' loads in flight before the first x gather (csr.cuh's kUnroll).
constexpr int kUnroll = 2;

template <int kThreadsPerRow, typename Offset, typename Value, typename Acc>
__device__ __forceinline__ void generic_csr(long long nrows, const Offset* __restrict__ row_ptr,
                                            const int* __restrict__ col_idx,
                                            const Value* __restrict__ values,
                                            const Value* __restrict__ x, Value* __restrict__ y,
                                            Acc alpha, Acc beta) {
  spmvc::csr::spmv<kThreadsPerRow, 1, kBlock, kUnroll, false>(nrows, row_ptr, col_idx, values, x, y,
                                                              alpha, beta);
}

}  // namespace

// One extern "C" entry point per (T, precision, offsets): the names the runtime looks up.
#define SPMVC_GENERIC_CSR(T, PRECISION, OFFSETS, Offset, Value, Acc)                            \
  extern "C" __global__ void __launch_bounds__(kBlock)                                          \
      spmvc_generic_csr_t##T##_##PRECISION##_##OFFSETS(                                         \
          long long nrows, const Offset* __restrict__ row_ptr, const int* __restrict__ col_idx, \
          const Value* __restrict__ values, const Value* __restrict__ x, Value* __restrict__ y, \
          Acc alpha, Acc beta) {                                                                \
    generic_csr<T>(nrows, row_ptr, col_idx, values, x, y, alpha, beta);                         \
  }

#define SPMVC_GENERIC_CSR_PRECISIONS(T, OFFSETS, Offset)     \
  SPMVC_GENERIC_CSR(T, f64, OFFSETS, Offset, double, double) \
  SPMVC_GENERIC_CSR(T, f32, OFFSETS, Offset, float, float)   \
  SPMVC_GENERIC_CSR(T, f32acc64, OFFSETS, Offset, float, double)

#define SPMVC_GENERIC_CSR_ALL(T)            \
  SPMVC_GENERIC_CSR_PRECISIONS(T, i32, int) \
  SPMVC_GENERIC_CSR_PRECISIONS(T, i64, long long)

SPMVC_GENERIC_CSR_ALL(1)
SPMVC_GENERIC_CSR_ALL(2)
SPMVC_GENERIC_CSR_ALL(4)
SPMVC_GENERIC_CSR_ALL(8)
SPMVC_GENERIC_CSR_ALL(16)
SPMVC_GENERIC_CSR_ALL(32)

// The vector orders' permutations (Options::plan_order, Operator::to_plan_order and
// from_plan_order), here so they load with the image the library already embeds. Elements move
// as raw 4- or 8-byte words: out[i] = in[map[i]] (gather, into the plan's order),
// out[map[i]] = in[i] (scatter, back to the caller's), or a copy where map is null.
namespace {

template <typename Word>
__device__ __forceinline__ void permute_vector(long long n, const int* __restrict__ map,
                                               const Word* __restrict__ in, Word* __restrict__ out,
                                               int scatter) {
  const long long i = static_cast<long long>(blockIdx.x) * kBlock + threadIdx.x;
  if (i >= n) return;
  if (map == nullptr) {
    out[i] = in[i];
  } else if (scatter != 0) {
    out[__ldg(map + i)] = __ldg(in + i);
  } else {
    out[i] = __ldg(in + __ldg(map + i));
  }
}

}  // namespace

#define SPMVC_PERMUTE_VECTOR(BITS, Word)                                             \
  extern "C" __global__ void __launch_bounds__(kBlock) spmvc_permute_vector_b##BITS( \
      long long n, const int* __restrict__ map, const Word* __restrict__ in,         \
      Word* __restrict__ out, int scatter) {                                         \
    permute_vector(n, map, in, out, scatter);                                        \
  }

SPMVC_PERMUTE_VECTOR(32, unsigned int)
SPMVC_PERMUTE_VECTOR(64, unsigned long long)
