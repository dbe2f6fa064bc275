// cci: compressed column indices (Lawlor, IA^3 2013, the appendix "CCI Decode for GPU"),
// specialised at compile time: T lanes per row (the paper's SLICES), the decode table as
// constants packed into two 64-bit words (one byte per entry), so decoding reads no memory and
// takes no data-dependent branch.
//
// Layout (compiler/formats/cci/cci_format.hpp):
//   row_ptr[nrows+1]  int; row r's values are values[row_ptr[r] .. row_ptr[r+1])
//   cstart            int; kInterleaved: [nrows+1], lane s of row r reads words
//                     cstart[r] + s, + s + T, ...; otherwise [nrows*T+1], lane s reads
//                     cstart[r*T + s], + 1, ...
//   codes             unsigned; bit streams, first code in the low bits; T spare words at the end
//   values[nnz]       Value, CSR order: lane s takes the row's nonzeros s, s+T, ...
// A code is an opcode (low bits, up to 3) then an immediate; delta = T + immediate. Lane 0 starts
// from column -T (its first code is the row's first column); lane s > 0 from first + s - T, the
// first column coming from lane 0 by a shuffle.
#pragma once

#include "spmvc/common.cuh"

namespace spmvc {
namespace cci {

/// One decode-table entry: the opcode's length and the immediate's, in bits.
struct Entry {
  unsigned char op_len;
  unsigned char imm_bits;
};

constexpr unsigned long long pack_op_len(const Entry (&t)[8]) {
  unsigned long long v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<unsigned long long>(t[i].op_len) << (8 * i);
  return v;
}
constexpr unsigned long long pack_imm_bits(const Entry (&t)[8]) {
  unsigned long long v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<unsigned long long>(t[i].imm_bits) << (8 * i);
  return v;
}
/// Every code fits the 32 bits one refill guarantees.
constexpr bool valid_table(const Entry (&t)[8]) {
  for (int i = 0; i < 8; ++i)
    if (t[i].op_len > 3 || t[i].op_len + t[i].imm_bits > 32) return false;
  return true;
}

/// One lane's decoder: a 64-bit buffer holding mbits valid low bits.
template <int kT, bool kInterleaved, unsigned long long kOpLen, unsigned long long kImmBits>
struct Decoder {
  const unsigned* __restrict__ codes;
  long long word;
  unsigned long long m = 0;
  int mbits = 0;

  /// The next column delta (T + immediate).
  __device__ __forceinline__ int next() {
    // One refill always suffices: a code is at most 32 bits.
    if (mbits < 32) {
      m |= static_cast<unsigned long long>(load_ro(codes + word)) << mbits;
      word += kInterleaved ? kT : 1;
      mbits += 32;
    }
    const unsigned shift = (static_cast<unsigned>(m) & 7u) * 8u;
    const unsigned len = static_cast<unsigned>(kOpLen >> shift) & 0xFFu;
    const unsigned bits = static_cast<unsigned>(kImmBits >> shift) & 0xFFu;
    const int imm = static_cast<int>((m >> len) & ((1ull << bits) - 1ull));
    m >>= len + bits;
    mbits -= static_cast<int>(len + bits);
    return kT + imm;
  }
};

template <int kT, int kBlockSize, bool kInterleaved, unsigned long long kOpLen,
          unsigned long long kImmBits, typename Value, typename Acc>
__device__ __forceinline__ void spmv(long long nrows, const int* __restrict__ row_ptr,
                                     const int* __restrict__ cstart,
                                     const unsigned* __restrict__ codes,
                                     const Value* __restrict__ values, const Value* __restrict__ x,
                                     Value* __restrict__ y, Acc alpha, Acc beta) {
  static_assert(kT >= 1 && kT <= 32 && (kT & (kT - 1)) == 0, "T is a power of two <= 32");
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  const long long tid = static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x;
  const long long row = tid / kT;
  const int slice = static_cast<int>(threadIdx.x) % kT;

  // No early return: every lane of the warp must reach the shuffles.
  int beg = 0, end = 0;
  Decoder<kT, kInterleaved, kOpLen, kImmBits> dec{codes, 0};
  if (row < nrows) {
    beg = row_ptr[row];
    end = row_ptr[row + 1];
    dec.word = kInterleaved ? static_cast<long long>(cstart[row]) + slice
                            : static_cast<long long>(cstart[row * kT + slice]);
  }
  int col = -kT;
  if (slice == 0 && beg < end) col += dec.next();  // the row's first column
  if constexpr (kT > 1) {
    const int first = __shfl_sync(0xffffffffu, col, 0, kT);
    if (slice != 0) col = first + slice - kT;
  }
  Acc sum = Acc(0);
  for (int i = beg + slice; i < end; i += kT) {
    if (i != beg) col += dec.next();
    sum += static_cast<Acc>(load_ro(values + i)) * static_cast<Acc>(load_ro(x + col));
  }
  sum = group_sum<kT>(sum);
  if (slice == 0 && row < nrows) store_y(y, row, sum, alpha, beta);
}

}  // namespace cci
}  // namespace spmvc
