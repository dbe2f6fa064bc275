// bro_coo: BRO-COO SpMV (Tang et al., SC13, section 3.2): bit-packed, delta-coded row indices
// in intervals, one warp per interval.
//
// Layout (compiler/formats/bro_coo/bro_coo_codec.hpp has the full definition):
//   count[1]             long long  entries
//   row_base[nint]       int        row of each interval's first entry
//   widths[2*nint]       uchar      (first-delta width, other-delta width), 0..31
//   sym_ptr[nint+1]      long long  prefix sums of symbols per lane
//   symbols              Word       symbol m of lane l of interval k at (sym_ptr[k]+m)*32 + l
//   col_idx, values      int, Value entry e of lane l of interval k at k*kInterval + e*32 + l
// Lane l of an interval owns its entries l*E .. l*E+E-1 (E = kInterval/32) in row order, so its
// row index only grows: it sums a row's products in a register and, when the row changes (a
// non-zero delta), adds the sum to y with one atomic (a fire-and-forget reduction in L2 on
// sm_90). The paper's segmented scan and second reduction kernel become these atomics. Every
// lane of the warp decodes fields of the same widths, so the symbol-load branch is uniform; the
// column and value loads are coalesced (entry e of the 32 lanes is 32 consecutive slots) and
// evict-first (load_stream), so that they leave x's lines in L1 as ell's do.
#pragma once

// SPMVC_BRO_HOST_TEST: tests/unit/test_bro_host_decode.cpp compiles these templates as host
// C++ (with stand-ins for the CUDA built-ins) to run the decode loops without a GPU.
#ifndef SPMVC_BRO_HOST_TEST
#include "spmvc/bro_ell.cuh"
#endif

namespace spmvc {
namespace bro {

/// y = beta*y (y = 0 when beta is 0, without reading y): the pass before a COO kernel that
/// only adds to y.
template <int kBlockSize, typename Value, typename Acc>
__device__ __forceinline__ void scale_y(long long nrows, Value* __restrict__ y, Acc beta) {
  const long long i = static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x;
  if (i < nrows)
    y[i] = beta == Acc(0) ? Value(0) : static_cast<Value>(beta * static_cast<Acc>(y[i]));
}

/// y += alpha*A*x over BRO-COO.
template <int kInterval, int kSymbolBits, int kBlockSize, typename Value, typename Acc,
          typename Values>
__device__ __forceinline__ void spmv_coo(
    const long long* __restrict__ count, const int* __restrict__ row_base,
    const unsigned char* __restrict__ widths, const long long* __restrict__ sym_ptr,
    const typename SymbolWord<kSymbolBits>::type* __restrict__ symbols,
    const int* __restrict__ col_idx, Values values, const Value* __restrict__ x,
    Value* __restrict__ y, Acc alpha) {
  using Word = typename SymbolWord<kSymbolBits>::type;
  constexpr int kPerLane = kInterval / 32;
  static_assert(kInterval % 32 == 0, "an interval is 32 lanes' runs");
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");

  const long long warp = (static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const long long entries = load_ro(count);
  if (warp >= (entries + kInterval - 1) / kInterval) return;  // whole warps: no shuffles follow

  const long long base = warp * kInterval;
  const int first_bits = load_ro(widths + 2 * warp);
  const int rest_bits = load_ro(widths + 2 * warp + 1);
  SymbolStream<Word, 32, false> next(symbols + sym_ptr[warp] * 32 + lane);
  BitReader<kSymbolBits> reader;
  int row = load_ro(row_base + warp);
  if (first_bits != 0) row += static_cast<int>(reader.take(first_bits, next));  // uniform
  const long long left = entries - (base + static_cast<long long>(lane) * kPerLane);
  const int valid = left <= 0 ? 0 : (left >= kPerLane ? kPerLane : static_cast<int>(left));

  Acc sum = Acc(0);
  SPMVC_BRO_PRAGMA(unroll 4)
  for (int e = 0; e < kPerLane; ++e) {
    if (e > 0 && rest_bits != 0) {  // uniform
      const unsigned int d = reader.take(rest_bits, next);
      if (d != 0u) {  // a new row: padding past the last entry has delta 0
        atomicAdd(y + y_row(row), static_cast<Value>(alpha * sum));
        sum = Acc(0);
        row += static_cast<int>(d);
      }
    }
    if (e < valid) {
      const long long i = base + static_cast<long long>(e) * 32 + lane;
      sum += static_cast<Acc>(load_stream(values + i)) *
             static_cast<Acc>(load_ro(x + load_stream(col_idx + i)));
    }
  }
  if (valid > 0) atomicAdd(y + y_row(row), static_cast<Value>(alpha * sum));
}

}  // namespace bro
}  // namespace spmvc
