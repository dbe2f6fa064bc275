// bro_ell: BRO-ELL SpMV (Tang et al., "Accelerating Sparse Matrix-Vector Multiplication on GPUs
// using Bit-Representation-Optimized Schemes", SC13, section 3.1 and Algorithm 1), specialised
// at compile time and tuned for Hopper.
//
// Layout (compiler/formats/bro_ell/bro_ell_codec.hpp has the full definition):
//   col_ptr[nslices+1]  long long  prefix sums of numCol; slice s has ncol =
//   col_ptr[s+1]-col_ptr[s] sym_ptr[nslices+1]  long long  prefix sums of symbols per lane
//   widths[col_ptr[n]]  uchar      bit width of column position j of slice s at col_ptr[s]+j (>= 1)
//   symbols             Word       symbol m of lane v of slice s at (sym_ptr[s]+m)*kLanes + v
//   values              Value      position j of lane v of slice s at (col_ptr[s]+j)*kLanes + v
//                                  (or coded: common.cuh's UnitValues / TableValues)
// A slice is kSliceRows rows of kThreadsPerRow lanes each (kLanes lanes in all, whole warps);
// lane t of a row owns the row's nonzeros t, t+T, ... as a delta-coded stream: the first field
// is column+1, the next ones column differences, 0 marks padding past the lane's last nonzero.
// Fields are packed MSB first.
//
// Decode (Algorithm 1): every lane of a slice reads the same width for the same position, so
// the "need another symbol?" test is uniform across the warp and costs no divergence; the
// symbol loads of a slice's lanes are consecutive words (coalesced). The paper's buffer of
// sym_len bits is a 64-bit window here (kSymbolBits 32) or a window plus the split read
// (kSymbolBits 64), so no shift ever reaches the word size. Hopper additions: T lanes per row
// with a shuffle reduction, 64-bit symbols, kPrefetch (the next symbol is loaded as soon as the
// current one is taken, so its latency is off the index -> x chain), kUnroll (indices decoded
// ahead of their gathers), and widths from __constant__ data or baked into the unit as template
// arguments (spmv_baked: every shift and symbol index is then a compile-time constant). Symbols
// and values, read once per multiply, are loaded evict-first (load_stream), as ell's are.
#pragma once

// SPMVC_BRO_HOST_TEST: tests/unit/test_bro_host_decode.cpp compiles these templates as host
// C++ (with stand-ins for the CUDA built-ins) to run the decode loops without a GPU.
#ifndef SPMVC_BRO_HOST_TEST
#include "spmvc/common.cuh"
#define SPMVC_BRO_PRAGMA(text) _Pragma(#text)
#else
#define SPMVC_BRO_PRAGMA(text)
#endif

namespace spmvc {
namespace bro {

template <int kSymbolBits>
struct SymbolWord;
template <>
struct SymbolWord<32> {
  using type = unsigned int;
};
template <>
struct SymbolWord<64> {
  using type = unsigned long long;
};

/// One lane's symbols, kStride words apart. With kPrefetch the next symbol is already in flight
/// when the current one is handed out (the stream is padded so reading one past its end is
/// safe).
template <typename Word, int kStride, bool kPrefetch>
struct SymbolStream;

template <typename Word, int kStride>
struct SymbolStream<Word, kStride, false> {
  const Word* __restrict__ p;
  __device__ __forceinline__ explicit SymbolStream(const Word* start) : p(start) {}
  __device__ __forceinline__ Word operator()() {
    const Word w = load_stream(p);
    p += kStride;
    return w;
  }
};

template <typename Word, int kStride>
struct SymbolStream<Word, kStride, true> {
  const Word* __restrict__ p;
  Word next;
  __device__ __forceinline__ explicit SymbolStream(const Word* start)
      : p(start + kStride), next(load_stream(start)) {}
  __device__ __forceinline__ Word operator()() {
    const Word w = next;
    next = load_stream(p);
    p += kStride;
    return w;
  }
};

/// Reads fields of 1..32 bits, MSB first, from a lane's symbol stream.
template <int kSymbolBits>
struct BitReader;

template <>
struct BitReader<32> {
  unsigned long long window = 0;  // `left` valid bits at the top, zeros below
  int left = 0;
  template <typename Stream>
  __device__ __forceinline__ unsigned int take(int bits, Stream& next) {
    if (bits > left) {  // uniform: every lane of the slice has consumed the same bits
      window |= static_cast<unsigned long long>(next()) << (32 - left);
      left += 32;
    }
    const unsigned int d = static_cast<unsigned int>(window >> (64 - bits));
    window <<= bits;
    left -= bits;
    return d;
  }
};

template <>
struct BitReader<64> {
  unsigned long long window = 0;  // `left` valid bits at the top, zeros below
  int left = 0;
  template <typename Stream>
  __device__ __forceinline__ unsigned int take(int bits, Stream& next) {
    unsigned long long d;
    if (bits > left) {  // uniform, as above: the paper's second branch
      const unsigned long long word = next();
      const int low = bits - left;  // 1..32 bits from the new symbol
      // The window's `left` bits (none when left is 0: the window is then all zeros, and the
      // two-step shift keeps every shift below 64).
      const unsigned long long high = (window >> 1) >> (63 - left);
      d = (high << low) | (word >> (64 - low));
      window = word << low;
      left = 64 - low;
    } else {
      d = window >> (64 - bits);
      window <<= bits;
      left -= bits;
    }
    return static_cast<unsigned int>(d);
  }
};

/// Width tables in global memory, read through the read-only path (every lane of a warp reads
/// the same byte: one broadcast transaction).
struct GlobalWidths {
  const unsigned char* __restrict__ table;
  __device__ __forceinline__ int operator()(long long i) const { return load_ro(table + i); }
};

/// y = alpha*A*x + beta*y over BRO-ELL with run-time width tables (`Widths` maps a position of
/// the table to its width: GlobalWidths, or a reader of __constant__ data from the unit).
template <int kSliceRows, int kThreadsPerRow, int kSymbolBits, int kBlockSize, int kUnroll,
          bool kPrefetch, typename Widths, typename Value, typename Acc, typename Values>
__device__ __forceinline__ void spmv(
    long long nrows, const long long* __restrict__ col_ptr, const long long* __restrict__ sym_ptr,
    Widths widths, const typename SymbolWord<kSymbolBits>::type* __restrict__ symbols,
    Values values, const Value* __restrict__ x, Value* __restrict__ y, Acc alpha, Acc beta) {
  using Word = typename SymbolWord<kSymbolBits>::type;
  constexpr int kLanes = kSliceRows * kThreadsPerRow;
  static_assert(kLanes % 32 == 0, "a slice is whole warps (uniform decode branches)");
  static_assert(kBlockSize % kLanes == 0, "a slice stays inside one block");
  static_assert(kUnroll >= 1 && kUnroll <= 8, "unroll depth out of range");

  const long long tid = static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x;
  const long long slice = tid / kLanes;
  const int local = static_cast<int>(tid % kLanes);
  const long long row = slice * kSliceRows + local / kThreadsPerRow;
  const long long nslices = (nrows + kSliceRows - 1) / kSliceRows;

  Acc sum = Acc(0);
  if (slice < nslices) {  // uniform per warp
    const long long cbase = col_ptr[slice];
    const int ncol = static_cast<int>(col_ptr[slice + 1] - cbase);
    const auto v = values + cbase * kLanes + local;
    SymbolStream<Word, kLanes, kPrefetch> next(symbols + sym_ptr[slice] * kLanes + local);
    BitReader<kSymbolBits> reader;
    int col = -1;
    for (int j0 = 0; j0 < ncol; j0 += kUnroll) {
      int c[kUnroll];
      bool valid[kUnroll];
      SPMVC_BRO_PRAGMA(unroll)
      for (int u = 0; u < kUnroll; ++u) {
        c[u] = 0;
        valid[u] = false;
        if (j0 + u < ncol) {  // uniform
          const unsigned int d = reader.take(widths(cbase + j0 + u), next);
          col += static_cast<int>(d);
          c[u] = col;
          valid[u] = d != 0u;
        }
      }
      Value a[kUnroll];
      SPMVC_BRO_PRAGMA(unroll)
      for (int u = 0; u < kUnroll; ++u)
        a[u] = valid[u] ? load_stream(v + static_cast<long long>(j0 + u) * kLanes) : Value(0);
      SPMVC_BRO_PRAGMA(unroll)
      for (int u = 0; u < kUnroll; ++u)
        if (valid[u]) sum += static_cast<Acc>(a[u]) * static_cast<Acc>(load_ro(x + c[u]));
    }
  }
  sum = group_sum<kThreadsPerRow>(sum);
  if (local % kThreadsPerRow == 0 && row < nrows) store_y(y, row, sum, alpha, beta);
}

/// One width pattern for every slice, as template arguments: kWidths[j] is the width of column
/// position j (>= 1).
template <int... kWidths>
struct WidthPattern {
  static constexpr int kColumns = sizeof...(kWidths);
  static_assert(kColumns >= 1, "a pattern has at least one column");
  __host__ __device__ static constexpr int width(int j) {
    constexpr int w[] = {kWidths...};
    return w[j];
  }
  /// Bit offset of position j in a lane's stream.
  __host__ __device__ static constexpr int start(int j) {
    int s = 0;
    for (int i = 0; i < j; ++i) s += width(i);
    return s;
  }
  __host__ __device__ static constexpr int bits() { return start(kColumns); }
};

/// Field kJ of a lane whose symbols are all in `sym`: a fixed symbol index and fixed shifts.
template <typename Pattern, int kSymbolBits, int kJ, typename Word, int kSymbols>
__device__ __forceinline__ unsigned int baked_field(const Word (&sym)[kSymbols]) {
  constexpr int b = Pattern::width(kJ);
  constexpr int pos = Pattern::start(kJ);
  constexpr int m = pos / kSymbolBits;
  constexpr int off = pos % kSymbolBits;
  static_assert(b >= 1 && b <= 32, "widths are 1..32 bits");
  if constexpr (off + b <= kSymbolBits) {
    return static_cast<unsigned int>(static_cast<Word>(sym[m] << off) >> (kSymbolBits - b));
  } else {
    static_assert(m + 1 < kSymbols, "a field spanning two symbols has both loaded");
    return static_cast<unsigned int>((static_cast<Word>(sym[m] << off) >> (kSymbolBits - b)) |
                                     (sym[m + 1] >> (2 * kSymbolBits - off - b)));
  }
}

template <typename Pattern, int kSymbolBits, int kLanes, int kJ, typename Word, int kSymbols,
          typename Values, typename Value, typename Acc>
__device__ __forceinline__ void baked_steps(const Word (&sym)[kSymbols], int ncol, int col,
                                            Values v, const Value* __restrict__ x, Acc& sum) {
  if constexpr (kJ < Pattern::kColumns) {
    const unsigned int d = baked_field<Pattern, kSymbolBits, kJ>(sym);
    if constexpr (sizeof(Acc) == sizeof(Value)) {
      if (kJ < ncol && d != 0u) {  // kJ < ncol is uniform; a zero field is padding
        col += static_cast<int>(d);
        sum += static_cast<Acc>(load_stream(v + kJ * kLanes)) * static_cast<Acc>(load_ro(x + col));
      }
    } else if (kJ < ncol) {
      // Wider accumulation than storage (fp32 values, fp64 sums): the branch above made ptxas
      // spill on long patterns, so padding loads x at the lane's last column (0 before any) and
      // a select drops its product. Only here: where the branch does not spill, it measured
      // faster (bench/results/2026-11-23-h100-bro-sweep).
      col += static_cast<int>(d);
      const Acc product = static_cast<Acc>(load_stream(v + kJ * kLanes)) *
                          static_cast<Acc>(load_ro(x + (col < 0 ? 0 : col)));
      sum += d != 0u ? product : Acc(0);
    }
    baked_steps<Pattern, kSymbolBits, kLanes, kJ + 1>(sym, ncol, col, v, x, sum);
  }
}

/// y = alpha*A*x + beta*y over BRO-ELL whose slices all follow `Pattern`: the lane's whole
/// stream is loaded up front (every load independent, all in flight at once), then decoded with
/// constant shifts. Slices shorter than the pattern stop at their numCol; their over-read
/// symbols (the next slice's, or the padding after the last) are never used.
template <int kSliceRows, int kThreadsPerRow, int kSymbolBits, int kBlockSize, typename Pattern,
          typename Value, typename Acc, typename Values>
__device__ __forceinline__ void spmv_baked(
    long long nrows, const long long* __restrict__ col_ptr, const long long* __restrict__ sym_ptr,
    const typename SymbolWord<kSymbolBits>::type* __restrict__ symbols, Values values,
    const Value* __restrict__ x, Value* __restrict__ y, Acc alpha, Acc beta) {
  using Word = typename SymbolWord<kSymbolBits>::type;
  constexpr int kLanes = kSliceRows * kThreadsPerRow;
  constexpr int kSymbols = (Pattern::bits() + kSymbolBits - 1) / kSymbolBits;
  static_assert(kLanes % 32 == 0, "a slice is whole warps (uniform decode branches)");
  static_assert(kBlockSize % kLanes == 0, "a slice stays inside one block");

  const long long tid = static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x;
  const long long slice = tid / kLanes;
  const int local = static_cast<int>(tid % kLanes);
  const long long row = slice * kSliceRows + local / kThreadsPerRow;
  const long long nslices = (nrows + kSliceRows - 1) / kSliceRows;

  Acc sum = Acc(0);
  if (slice < nslices) {
    const long long cbase = col_ptr[slice];
    const int ncol = static_cast<int>(col_ptr[slice + 1] - cbase);
    const Word* __restrict__ s = symbols + sym_ptr[slice] * kLanes + local;
    Word sym[kSymbols];
    SPMVC_BRO_PRAGMA(unroll)
    for (int m = 0; m < kSymbols; ++m) sym[m] = load_stream(s + m * kLanes);
    baked_steps<Pattern, kSymbolBits, kLanes, 0>(sym, ncol, -1, values + cbase * kLanes + local, x,
                                                 sum);
  }
  sum = group_sum<kThreadsPerRow>(sum);
  if (local % kThreadsPerRow == 0 && row < nrows) store_y(y, row, sum, alpha, beta);
}

}  // namespace bro
}  // namespace spmvc
