// 16-bit value codes on the GPU for a CSR matrix in device memory (spmvc::DeviceCsr): the
// values' distinct bit patterns up to a 16-bit table's 65,536, and each value's code in their
// sorted table. The 8-bit passes of device_csr.cuh track at most 256 patterns in the row pass;
// these run when there are more.
//
// value_sketch a thread per sampled nonzero (kSketchSample of them, spread evenly over the
//              matrix): a HyperLogLog sketch of the sample's distinct patterns, kSketchRegisters
//              registers maxed in shared memory, then into `registers`. The host estimates the
//              count from them (codegen::estimate_distinct); a sample with far more than kCap
//              patterns settles the answer without the exact set below.
// value_set    a thread per nonzero (grid-stride): its bit pattern (a float's zero-extended)
//              into an open-addressed set of kSlots patterns in global memory (empty slots all
//              ones; the all-ones pattern itself, a NaN, is flagged in out[2] instead), after
//              a block-local filter in shared memory. out[0] counts the patterns added; past
//              kCap, out[1] is set and every thread stops (at its next probe, or within 16
//              nonzeros).
// value_gather a thread per slot: the set's patterns packed into out[1..n], out[0] counting them
//              (all of them, also past n: the host checks the count and reads back n + 1 words,
//              not the whole set).
// value_code16 a thread per nonzero: codes[k] = the index of value k's pattern in the sorted
//              `table` of n patterns (a binary search); a value the table lacks is counted in
//              out[0] and coded 0.
#pragma once

#if defined(__CUDACC__)
#define SPMVC_VALUES_HD __host__ __device__ __forceinline__
#else
#define SPMVC_VALUES_HD inline
#endif

namespace spmvc {
namespace device_values {

constexpr int kBlock = 256;
constexpr int kCap = 65536;      // distinct patterns a 16-bit code can name
constexpr int kSlots = 1 << 17;  // twice the cap: probes stay short
constexpr int kFilter = 2048;    // a block's filter of patterns already in the set
constexpr unsigned long long kEmpty = ~0ull;
constexpr int kSketchBits = 12;  // value_sketch: 2^12 registers (a standard error of 1.6%)
constexpr int kSketchRegisters = 1 << kSketchBits;
constexpr long long kSketchSample = 1 << 20;  // nonzeros value_sketch reads

// A pattern's sketch register (the hash's top kSketchBits bits) and rank (the leading zeros of
// the rest, plus one). The hash is SplitMix64's finalizer, whose first step shifts high bits
// down: the sketch needs every bit of the hash near uniform, also for patterns that differ only
// in their high bits, where mix_pattern left the estimate off by up to 66%.
SPMVC_VALUES_HD void sketch_slot(unsigned long long bits, int& index, unsigned& rank) {
  unsigned long long h = bits;
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  h ^= h >> 31;
  index = static_cast<int>(h >> (64 - kSketchBits));
  const unsigned long long w = h << kSketchBits;
#if defined(__CUDA_ARCH__)
  rank =
      w == 0 ? 65u - kSketchBits : static_cast<unsigned>(__clzll(static_cast<long long>(w))) + 1u;
#else
  rank = w == 0 ? 65u - kSketchBits : static_cast<unsigned>(__builtin_clzll(w)) + 1u;
#endif
}

#if defined(__CUDACC__)

__device__ __forceinline__ unsigned long long pattern_of(const void* __restrict__ values,
                                                         int value_bytes, long long k) {
  return value_bytes == 8 ? static_cast<unsigned long long>(
                                __double_as_longlong(__ldg(static_cast<const double*>(values) + k)))
                          : static_cast<unsigned long long>(
                                __float_as_uint(__ldg(static_cast<const float*>(values) + k)));
}

// The slot and the block filter's entry of a pattern: a multiply-xorshift mix, so that patterns
// differing only in their high bits (short mantissas) spread as well as those differing low.
__device__ __forceinline__ unsigned long long mix_pattern(unsigned long long bits) {
  bits *= 0x9E3779B97F4A7C15ull;
  bits ^= bits >> 31;
  bits *= 0xD6E8FEB86659FD93ull;
  return bits ^ (bits >> 29);
}

// The sample's registers: sample j is nonzero j * nnz / sample (every nonzero when sample >= nnz).
__device__ __forceinline__ void value_sketch(const void* __restrict__ values, int value_bytes,
                                             long long nnz, long long sample,
                                             unsigned* __restrict__ registers) {
  __shared__ unsigned block_registers[kSketchRegisters];
  for (int i = threadIdx.x; i < kSketchRegisters; i += blockDim.x) block_registers[i] = 0;
  __syncthreads();
  const long long n = sample < nnz ? sample : nnz;
  for (long long j = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; j < n;
       j += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long k = n == nnz ? j : j * nnz / n;
    int index;
    unsigned rank;
    sketch_slot(pattern_of(values, value_bytes, k), index, rank);
    atomicMax(block_registers + index, rank);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kSketchRegisters; i += blockDim.x)
    if (block_registers[i] > 0) atomicMax(registers + i, block_registers[i]);
}

__device__ __forceinline__ bool past_cap(unsigned long long* out) {
  return *static_cast<volatile unsigned long long*>(out + 1) != 0;
}

// Each block first looks a pattern up in its own filter in shared memory (kFilter entries, each
// pattern at one of two neighbouring entries), which holds patterns already in the set: a value
// met before costs no global access, so a few values repeated over millions of nonzeros do not
// queue on their slots. Every probe polls the cap flag: once the set holds more than kCap
// patterns no thread walks on, so a matrix of millions of distinct values stops after about kCap
// inserts, however full the set.
__device__ __forceinline__ void value_set(const void* __restrict__ values, int value_bytes,
                                          long long nnz, unsigned long long* __restrict__ slots,
                                          unsigned long long* __restrict__ out) {
  __shared__ unsigned long long filter[kFilter];
  for (int i = threadIdx.x; i < kFilter; i += blockDim.x) filter[i] = kEmpty;
  __syncthreads();
  volatile unsigned long long* seen = filter;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  int step = 0;
  for (long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; k < nnz;
       k += stride, ++step) {
    // The flag is one word every warp reads: polled every 16th nonzero between nonzeros (each
    // poll an L2 round trip on a hot line), and on every probe below, where the set grows.
    if ((step & 15) == 0 && past_cap(out)) return;
    const unsigned long long bits = pattern_of(values, value_bytes, k);
    if (bits == kEmpty) {
      if (*static_cast<volatile unsigned long long*>(out + 2) == 0) atomicExch(out + 2, 1ull);
      continue;
    }
    const unsigned long long h = mix_pattern(bits);
    const unsigned f = static_cast<unsigned>(h >> 40) & (kFilter - 1);
    if (seen[f] == bits || seen[f ^ 1] == bits) continue;  // in the set already
    unsigned s = static_cast<unsigned>(h) & (kSlots - 1);
    for (int probe = 0;; ++probe) {
      // More than kCap patterns (a full set has them too): the answer is known.
      if (probe == kSlots || past_cap(out)) {
        atomicExch(out + 1, 1ull);
        return;
      }
      unsigned long long held = *static_cast<volatile unsigned long long*>(slots + s);
      if (held == kEmpty) held = atomicCAS(slots + s, kEmpty, bits);
      if (held == kEmpty) {
        if (atomicAdd(out, 1ull) + 1 > static_cast<unsigned long long>(kCap)) {
          atomicExch(out + 1, 1ull);
          return;
        }
        break;
      }
      if (held == bits) break;
      s = (s + 1) & (kSlots - 1);
    }
    // The pair's empty entry, else the first. With one entry per pattern, about half of 723
    // patterns (G3_circuit's) collide in a 1,024-entry filter (1 - e^(-723/1024)), and each value
    // of a pattern evicted there probes the set in global memory.
    seen[seen[f] != kEmpty && seen[f ^ 1] == kEmpty ? f ^ 1 : f] = bits;
  }
}

__device__ __forceinline__ void value_gather(const unsigned long long* __restrict__ slots,
                                             unsigned long long n,
                                             unsigned long long* __restrict__ out) {
  const int stride = static_cast<int>(gridDim.x * blockDim.x);
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < kSlots; i += stride) {
    const unsigned long long bits = slots[i];
    if (bits == kEmpty) continue;
    const unsigned long long at = atomicAdd(out, 1ull);
    if (at < n) out[1 + at] = bits;
  }
}

__device__ __forceinline__ void value_code16(const void* __restrict__ values, int value_bytes,
                                             long long nnz,
                                             const unsigned long long* __restrict__ table, int n,
                                             unsigned short* __restrict__ codes,
                                             unsigned long long* __restrict__ out) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  unsigned long long missed = 0;
  for (long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; k < nnz;
       k += stride) {
    const unsigned long long bits = pattern_of(values, value_bytes, k);
    int lo = 0, hi = n;  // first entry >= bits
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (__ldg(table + mid) < bits) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    const bool found = lo < n && __ldg(table + lo) == bits;
    missed += found ? 0 : 1;
    codes[k] = static_cast<unsigned short>(found ? lo : 0);
  }
  if (missed > 0) atomicAdd(out, missed);
}

#endif  // __CUDACC__

}  // namespace device_values
}  // namespace spmvc
