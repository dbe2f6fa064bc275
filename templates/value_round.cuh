// Rounding of stored values for opt-in mixed precision (Options::mixed_precision), shared by the
// host encoder (compiler/formats/values) and the kernels, so both produce the same bits.
//
// bf16 keeps fp32's sign and 8-bit exponent and the top 7 bits of its 23-bit fraction: a bf16
// value is the high 16-bit word of an fp32 word. Widening is a shift (no cuda_bf16.h, which
// NVRTC would have to be given); narrowing rounds the dropped 16 bits to nearest, ties to even,
// so the largest relative error of a normal value is 2^-8.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__) || defined(__CUDA__)
#define SPMVC_HOST_DEVICE __host__ __device__
#else
#define SPMVC_HOST_DEVICE
#endif

namespace spmvc {

/// The bf16 word nearest the fp32 value whose bits are `bits` (ties to the even word). A value
/// past bf16's largest finite one rounds to infinity, as fp32 rounding does; a NaN stays a NaN
/// (quieted, so that dropping its low fraction bits cannot make it an infinity).
SPMVC_HOST_DEVICE inline unsigned short bf16_round_bits(unsigned int bits) {
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((bits >> 16) | 0x40u);
  const unsigned int odd = (bits >> 16) & 1u;  // the kept word's last bit: ties go to even
  return static_cast<unsigned short>((bits + 0x7fffu + odd) >> 16);
}

/// The fp32 bits of the bf16 word `word` (exact).
SPMVC_HOST_DEVICE inline unsigned int bf16_widen_bits(unsigned short word) {
  return static_cast<unsigned int>(word) << 16;
}

}  // namespace spmvc
