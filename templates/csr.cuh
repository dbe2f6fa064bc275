// csr: Baskaran & Bordawekar's CSR kernel ("Optimizing Sparse Matrix-Vector Multiplication on
// GPUs", sections 4.1.2-4.1.3), specialised at compile time and widened for Hopper.
//
// Layout (0-based CSR):
//   row_ptr[nrows+1]  Offset (int or long long); row r's nonzeros are [row_ptr[r], row_ptr[r+1])
//   col_idx[nnz_pad]  int, strictly increasing within a row
//   values[nnz_pad]   Value (double or float), or coded (common.cuh: a table index per
//                     nonzero, or no array when every value is 1)
// col_idx and values are padded with zeros to nnz_pad, a multiple of kCsrPadElements (128), so a
// lane may load a whole aligned vector that runs past the last row; padded entries are never
// accumulated.
//
// Thread mapping: kThreadsPerRow (T) consecutive lanes share a row. With kVector (V) > 1 each lane
// loads V consecutive nonzeros with one 8- or 16-byte load; the group covers T*V nonzeros per
// step. With kAligned the walk starts at the (T*V)-aligned offset at or below the row's start,
// so every load is aligned and each group's loads are contiguous (the paper's "aligned global
// memory access"; on Hopper it is what makes vector loads legal). Entries before the row's start
// or after its end are loaded but not accumulated. Partial sums are combined with warp shuffles
// instead of the paper's shared-memory reduction, and lane 0 of the group writes y once: no
// atomics, no inter-block synchronisation.
//
// kUnroll (U) issues the loads of U steps before the first x gather, keeping more requests in
// flight to cover the col -> x[col] dependent latency.
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace csr {

/// Elements col_idx and values are padded to a multiple of (T*V <= 128).
constexpr int kCsrPadElements = 128;

template <int kBytes>
struct VectorWord;
template <>
struct VectorWord<1> {
  using type = unsigned char;
};
template <>
struct VectorWord<2> {
  using type = unsigned short;
};
template <>
struct VectorWord<4> {
  using type = unsigned int;
};
template <>
struct VectorWord<8> {
  using type = uint2;
};
template <>
struct VectorWord<16> {
  using type = uint4;
};

/// Loads kV consecutive elements starting at p (aligned to kV elements) with the widest loads
/// the size allows (16 bytes at most per load).
template <int kV, typename T>
__device__ __forceinline__ void load_vector(const T* __restrict__ p, T (&out)[kV]) {
  constexpr int kBytes = static_cast<int>(sizeof(T)) * kV;
  if constexpr (kBytes <= 16) {
    using Word = typename VectorWord<kBytes>::type;
    // One 8- or 16-byte load whose bytes are then read as kV elements. memcpy is the defined way
    // to reinterpret them (NVRTC and nvcc both lower it to register moves), and unlike an unnamed
    // union it prints back as source when tooling/ flattens the kernel.
    const Word word = __ldg(reinterpret_cast<const Word*>(p));
    memcpy(out, &word, sizeof(Word));
  } else {
    constexpr int kHalf = kV / 2;
    T lo[kHalf], hi[kHalf];
    load_vector<kHalf>(p, lo);
    load_vector<kHalf>(p + kHalf, hi);
#pragma unroll
    for (int i = 0; i < kHalf; ++i) {
      out[i] = lo[i];
      out[kHalf + i] = hi[i];
    }
  }
}

/// Coded values (common.cuh): kV codes with one narrow vector load, then their table entries;
/// narrow values with one vector load of the stored type, widened; unit values load nothing.
template <int kV, typename Value, typename Code>
__device__ __forceinline__ void load_vector(const TableValues<Value, Code>& p, Value (&out)[kV]) {
  Code code[kV];
  load_vector<kV>(p.code, code);
#pragma unroll
  for (int i = 0; i < kV; ++i) out[i] = __ldg(p.table + code[i]);
}
template <int kV, typename Value, typename Stored>
__device__ __forceinline__ void load_vector(const NarrowValues<Value, Stored>& p,
                                            Value (&out)[kV]) {
  Stored stored[kV];
  load_vector<kV>(p.stored, stored);
#pragma unroll
  for (int i = 0; i < kV; ++i) out[i] = static_cast<Value>(stored[i]);
}
template <int kV, typename Value>
__device__ __forceinline__ void load_vector(const Bf16Values<Value>& p, Value (&out)[kV]) {
  unsigned short stored[kV];
  load_vector<kV>(p.stored, stored);
#pragma unroll
  for (int i = 0; i < kV; ++i)
    out[i] = static_cast<Value>(__uint_as_float(bf16_widen_bits(stored[i])));
}
template <int kV, typename Value>
__device__ __forceinline__ void load_vector(const UnitValues<Value>&, Value (&out)[kV]) {
#pragma unroll
  for (int i = 0; i < kV; ++i) out[i] = Value(1);
}

template <int kThreadsPerRow, int kVector, int kBlockSize, int kUnroll, bool kAligned,
          typename Offset, typename Value, typename Acc, typename Values>
__device__ __forceinline__ void spmv(long long nrows, const Offset* __restrict__ row_ptr,
                                     const int* __restrict__ col_idx, Values values,
                                     const Value* __restrict__ x, Value* __restrict__ y, Acc alpha,
                                     Acc beta) {
  constexpr int kChunk = kThreadsPerRow * kVector;
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  static_assert(kBlockSize % kThreadsPerRow == 0, "a row's lanes stay inside one block");
  static_assert(kUnroll >= 1 && kUnroll <= 8, "unroll depth out of range");
  static_assert(kVector == 1 || kVector == 2 || kVector == 4, "vector width is 1, 2 or 4");
  static_assert(kVector == 1 || kAligned, "vector loads need the aligned start");
  static_assert(kChunk <= kCsrPadElements, "padding must cover one step of a group");

  const long long tid = static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x;
  const long long row = tid / kThreadsPerRow;
  const int lane = static_cast<int>(threadIdx.x) % kThreadsPerRow;

  // No early return: every lane of the warp must reach the shuffle reduction.
  Acc sum = Acc(0);
  if (row < nrows) {
    const Offset start = row_ptr[row];
    const Offset end = row_ptr[row + 1];
    const Offset base = kAligned ? (start & ~static_cast<Offset>(kChunk - 1)) : start;
    for (Offset j = base + lane * kVector; j < end; j += kChunk * kUnroll) {
      int c[kUnroll][kVector];
      Value v[kUnroll][kVector];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const Offset ju = j + u * kChunk;
        if (ju < end) {
          load_vector<kVector>(col_idx + ju, c[u]);
          load_vector<kVector>(values + ju, v[u]);
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
        for (int i = 0; i < kVector; ++i) {
          const Offset e = j + u * kChunk + i;
          if (e >= start && e < end) {
            sum += static_cast<Acc>(v[u][i]) * static_cast<Acc>(load_ro(x + c[u][i]));
          }
        }
      }
    }
  }
  sum = group_sum<kThreadsPerRow>(sum);
  if (lane == 0 && row < nrows) store_y(y, row, sum, alpha, beta);
}

}  // namespace csr
}  // namespace spmvc
