// Device helpers shared by every spmvc kernel template.
#pragma once

namespace spmvc {

/// Read-only load through the non-coherent (texture) path: x and the matrix never change while
/// a kernel runs, and this path keeps them out of the way of y's writes.
template <typename T>
__device__ __forceinline__ T load_ro(const T* p) {
  return __ldg(p);
}

/// Sums `v` over each aligned group of kGroup lanes (kGroup a power of two <= 32). Every lane of
/// the warp must call it; lane 0 of each group receives the group's total.
template <int kGroup, typename Acc>
__device__ __forceinline__ Acc group_sum(Acc v) {
  static_assert(kGroup >= 1 && kGroup <= 32 && (kGroup & (kGroup - 1)) == 0,
                "group size must be a power of two no larger than a warp");
#pragma unroll
  for (int offset = kGroup / 2; offset > 0; offset /= 2) {
    v += __shfl_down_sync(0xffffffffu, v, offset, kGroup);
  }
  return v;
}

/// y = alpha*sum + beta*y, without reading y when beta is zero (y may hold garbage then, as
/// BLAS allows).
template <typename Value, typename Acc>
__device__ __forceinline__ void store_y(Value* y, long long row, Acc sum, Acc alpha, Acc beta) {
  Acc out = alpha * sum;
  if (beta != Acc(0)) out += beta * static_cast<Acc>(y[row]);
  y[row] = static_cast<Value>(out);
}

}  // namespace spmvc
