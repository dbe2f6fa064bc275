// New values for the same pattern (Operator::update_values): the stored value array of a plan
// rebuilt from values in the caller's CSR order through a gather, and the checks that say whether
// the new values still fit the plan's value coding.
//
//   source[slot]   Index: the caller's nonzero that slot holds, -1 for padding (nullptr: slot k
//                  holds nonzero k, no padding)
//   in[nnz]        In: new values (or table codes) in the caller's CSR order
//   out[slots]     Out: the stored array, padding slots 0
//   flags          one 64-bit word: bit 0 set when a value narrowed to Out (fp64 to fp32) is not
//                  exact, for gather_rounded (mixed precision) when a finite value rounds to an
//                  infinity, or, for check_ones, a value is not 1
// One thread per slot; the flag is raised with one atomicOr per warp that saw a fault.
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace value_gather {

inline constexpr int kBlock = 256;

template <typename Out, typename In>
__device__ __forceinline__ bool convert_exact(In v, Out* out) {
  *out = static_cast<Out>(v);
  return static_cast<In>(*out) == v || v != v;  // NaN stays NaN
}

template <typename Index, typename In, typename Out>
__device__ __forceinline__ void gather(const Index* __restrict__ source, long long slots,
                                       const In* __restrict__ in, Out* __restrict__ out,
                                       unsigned long long* __restrict__ flags) {
  const long long s = static_cast<long long>(blockIdx.x) * kBlock + threadIdx.x;
  bool fault = false;
  if (s < slots) {
    const long long k = source == nullptr ? s : static_cast<long long>(load_ro(source + s));
    Out v = Out(0);
    if (k >= 0) fault = !convert_exact<Out, In>(load_ro(in + k), &v);
    out[s] = v;
  }
  if (__any_sync(0xffffffffu, fault) && (threadIdx.x & 31) == 0) atomicOr(flags, 1ull);
}

// Mixed precision (rounded value codings): each value rounded to nearest, fp64 to fp32 as a
// conversion rounds, fp32 to a bf16 word as value_round.cuh does (what the host encoder
// stores). The flag says a finite value rounded to an infinity, which the coding cannot hold.
__device__ __forceinline__ bool convert_rounded(double v, float* out) {
  *out = static_cast<float>(v);  // round to nearest even
  const bool infinite = (__float_as_uint(*out) & 0x7fffffffu) == 0x7f800000u;
  return !infinite || v - v != v - v;  // v - v is 0 for a finite v, NaN otherwise
}

__device__ __forceinline__ bool convert_rounded(float v, unsigned short* out) {
  *out = bf16_round_bits(__float_as_uint(v));
  const bool infinite = (*out & 0x7fffu) == 0x7f80u;
  return !infinite || v - v != v - v;
}

template <typename Index, typename In, typename Out>
__device__ __forceinline__ void gather_rounded(const Index* __restrict__ source, long long slots,
                                               const In* __restrict__ in, Out* __restrict__ out,
                                               unsigned long long* __restrict__ flags) {
  const long long s = static_cast<long long>(blockIdx.x) * kBlock + threadIdx.x;
  bool fault = false;
  if (s < slots) {
    const long long k = source == nullptr ? s : static_cast<long long>(load_ro(source + s));
    Out v = Out(0);
    if (k >= 0) fault = !convert_rounded(load_ro(in + k), &v);
    out[s] = v;
  }
  if (__any_sync(0xffffffffu, fault) && (threadIdx.x & 31) == 0) atomicOr(flags, 1ull);
}

template <typename In>
__device__ __forceinline__ void check_ones(long long n, const In* __restrict__ in,
                                           unsigned long long* __restrict__ flags) {
  const long long k = static_cast<long long>(blockIdx.x) * kBlock + threadIdx.x;
  const bool fault = k < n && load_ro(in + k) != In(1);
  if (__any_sync(0xffffffffu, fault) && (threadIdx.x & 31) == 0) atomicOr(flags, 1ull);
}

}  // namespace value_gather
}  // namespace spmvc
