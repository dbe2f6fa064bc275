// 16-bit value codes on the GPU for a CSR matrix in device memory (spmvc::DeviceCsr): the
// values' distinct bit patterns up to a 16-bit table's 65,536, and each value's code in their
// sorted table. The 8-bit passes of device_csr.cuh track at most 256 patterns in the row pass;
// these run when there are more.
//
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
//              `table` of n patterns (a binary search, in shared memory where the table fits);
//              a value the table lacks is counted in out[0] and coded 0.
#pragma once

namespace spmvc {
namespace device_values {

constexpr int kBlock = 256;
constexpr int kCap = 65536;      // distinct patterns a 16-bit code can name
constexpr int kSlots = 1 << 17;  // twice the cap: probes stay short
constexpr int kFilter = 2048;    // a block's filter of patterns already in the set
constexpr unsigned long long kEmpty = ~0ull;

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

__device__ __forceinline__ bool past_cap(unsigned long long* out) {
  return *static_cast<volatile unsigned long long*>(out + 1) != 0;
}

// One value's pattern into the set (value_set's step): false once the answer is known (past the
// cap), and the thread stops.
__device__ __forceinline__ bool add_pattern(unsigned long long bits,
                                            volatile unsigned long long* seen,
                                            unsigned long long* __restrict__ slots,
                                            unsigned long long* __restrict__ out) {
  if (bits == kEmpty) {
    if (*static_cast<volatile unsigned long long*>(out + 2) == 0) atomicExch(out + 2, 1ull);
    return true;
  }
  const unsigned long long h = mix_pattern(bits);
  const unsigned f = static_cast<unsigned>(h >> 40) & (kFilter - 1);
  if (seen[f] == bits || seen[f ^ 1] == bits) return true;  // in the set already
  unsigned s = static_cast<unsigned>(h) & (kSlots - 1);
  for (int probe = 0;; ++probe) {
    // More than kCap patterns (a full set has them too): the answer is known.
    if (probe == kSlots || past_cap(out)) {
      atomicExch(out + 1, 1ull);
      return false;
    }
    unsigned long long held = *static_cast<volatile unsigned long long*>(slots + s);
    if (held == kEmpty) held = atomicCAS(slots + s, kEmpty, bits);
    if (held == kEmpty) {
      if (atomicAdd(out, 1ull) + 1 > static_cast<unsigned long long>(kCap)) {
        atomicExch(out + 1, 1ull);
        return false;
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
  return true;
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
    // poll an L2 round trip on a hot line), and on every probe, where the set grows.
    if ((step & 15) == 0 && past_cap(out)) return;
    if (!add_pattern(pattern_of(values, value_bytes, k), seen, slots, out)) return;
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

// A table of at most kSharedTable patterns is searched in shared memory (a search is about
// log2(n) dependent loads), a longer one in global memory.
constexpr int kSharedTable = 2048;

__device__ __forceinline__ void value_code16(const void* __restrict__ values, int value_bytes,
                                             long long nnz,
                                             const unsigned long long* __restrict__ table, int n,
                                             unsigned short* __restrict__ codes,
                                             unsigned long long* __restrict__ out) {
  __shared__ unsigned long long shared_table[kSharedTable];
  const bool in_shared = n <= kSharedTable;  // the same for the whole grid
  if (in_shared) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) shared_table[i] = __ldg(table + i);
    __syncthreads();
  }
  const unsigned long long* search = in_shared ? shared_table : table;
  // kBatch values a grid stride apart loaded before any is searched: more loads in flight.
  constexpr int kBatch = 4;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  unsigned long long missed = 0;
  for (long long k = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; k < nnz;
       k += kBatch * stride) {
    unsigned long long bits[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i)
      bits[i] = k + i * stride < nnz ? pattern_of(values, value_bytes, k + i * stride) : 0ull;
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      if (k + i * stride >= nnz) break;
      int lo = 0, hi = n;  // first entry >= bits
      while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (search[mid] < bits[i]) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      const bool found = lo < n && search[lo] == bits[i];
      missed += found ? 0 : 1;
      codes[k + i * stride] = static_cast<unsigned short>(found ? lo : 0);
    }
  }
  if (missed > 0) atomicAdd(out, missed);
}

}  // namespace device_values
}  // namespace spmvc
