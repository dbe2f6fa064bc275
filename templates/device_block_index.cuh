// What the GPU build of bcsr and bellpack (templates/device_block.cuh) decides for each nonzero:
// the arithmetic alone, without CUDA built-ins, so that a host test runs it over the same
// matrices as the host encoders (compiler/formats/{bcsr,bellpack}, built on
// formats/common/block_common.hpp's block rows) and the block inspection
// (inspector/blocks.cpp), and compares what it lays out and counts.
//
// Columns are strictly increasing within every row (the device build refuses the block formats
// otherwise). Aligned r x c blocks: block row br holds rows [br*r, br*r + r), block column bc
// columns [bc*c, bc*c + c). The blocks of a block row are its distinct block columns,
// ascending; a nonzero "opens" its block when it is the block's first in CSR order: no earlier
// row of the block row has a column in the block, and the nonzero before it in its own row lies
// in another block. With `incl` the inclusive scan of the open flags over all nonzeros:
//   brow_ptr[br]     = opened(row_ptr[br*r])         (a block row's nonzeros are contiguous)
//   rank of block bc = the blocks of the block row opened by columns below bc*c, row by row
//   bcsr     value (i, j) of block b at (b*r + i)*c + j
//   bellpack slot k of the block row at position bl of slice s (block rows sorted by block count,
//            longest first, stable) at slice_ptr[s] + k*C + bl; its value (i, j) at
//            slice_ptr[s]*r*c + (k*c + j)*(C*r) + bl*r + i
// A unit defines SPMVC_HD before including this header to compile it for the host; NVRTC
// takes the default.
#pragma once

#ifndef SPMVC_HD
#define SPMVC_HD __device__ __forceinline__
#endif

namespace spmvc {
namespace device_block {

/// Largest block height and width the block formats take (1..8 each): the shapes inspected.
constexpr int kMaxBlock = 8;
constexpr int kShapes = kMaxBlock * kMaxBlock;

/// Index of the last row whose offset is <= k (the row of nonzero k; empty rows skipped):
/// row_ptr has nrows + 1 entries.
SPMVC_HD long long row_of(const int* row_ptr, long long nrows, long long k) {
  long long lo = 0, hi = nrows;  // row_ptr[lo] <= k < row_ptr[hi]
  while (hi - lo > 1) {
    const long long mid = lo + (hi - lo) / 2;
    if (static_cast<long long>(row_ptr[mid]) <= k) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

/// First index in [begin, end) of the sorted columns whose column is >= value (end if none).
SPMVC_HD long long lower_bound(const int* col_idx, long long begin, long long end,
                               long long value) {
  while (begin < end) {
    const long long mid = begin + (end - begin) / 2;
    if (static_cast<long long>(col_idx[mid]) < value) {
      begin = mid + 1;
    } else {
      end = mid;
    }
  }
  return begin;
}

/// For every width c = 1..kMaxBlock, bit c-1 set when nonzero k (of row `row`, in the block row
/// starting at row r0) opens its aligned block of width c.
SPMVC_HD unsigned open_mask(const int* row_ptr, const int* col_idx, long long r0, long long row,
                            long long k) {
  const long long col = col_idx[k];
  const long long prev_own = k > row_ptr[row] ? static_cast<long long>(col_idx[k - 1]) : -1;
  unsigned mask = 0;
  for (int c = 1; c <= kMaxBlock; ++c) {
    const long long start = col / c * c;
    if (prev_own < start) mask |= 1u << (c - 1);
  }
  // An earlier row of the block row holds a column of the block when its nearest columns on
  // either side of `col` fall inside it: one search per row serves every width.
  for (long long q = r0; q < row && mask != 0; ++q) {
    const long long b = row_ptr[q], e = row_ptr[q + 1];
    const long long p = lower_bound(col_idx, b, e, col);
    const long long next = p < e ? static_cast<long long>(col_idx[p]) : -1;
    const long long prev = p > b ? static_cast<long long>(col_idx[p - 1]) : -1;
    for (int c = 1; c <= kMaxBlock; ++c) {
      const long long start = col / c * c;
      if ((next >= 0 && next < start + c) || (prev >= 0 && prev >= start)) mask &= ~(1u << (c - 1));
    }
  }
  return mask;
}

/// The open flags before nonzero p, from their inclusive scan `incl`.
SPMVC_HD long long opened_before(const long long* incl, long long p) {
  return p > 0 ? incl[p - 1] : 0;
}

/// Index of block column bc among the blocks of the block row of rows [r0, r1): the blocks its
/// rows opened with columns below bc*c.
SPMVC_HD long long block_rank(const int* row_ptr, const int* col_idx, const long long* incl,
                              long long r0, long long r1, long long bc, int c) {
  long long rank = 0;
  for (long long q = r0; q < r1; ++q) {
    const long long b = row_ptr[q];
    const long long p = lower_bound(col_idx, b, row_ptr[q + 1], bc * c);
    rank += opened_before(incl, p) - opened_before(incl, b);
  }
  return rank;
}

/// bcsr: position of element (i, j) of block `blk`.
SPMVC_HD long long bcsr_value_slot(long long blk, int r, int c, int i, int j) {
  return (blk * r + i) * c + j;
}

/// bellpack: the slot of the k-th block of the block row at position bl of a slice of height h
/// whose slots start at `base`, and the position of its element (i, j).
SPMVC_HD long long bellpack_slot(long long base, long long k, int h, long long bl) {
  return base + k * h + bl;
}
SPMVC_HD long long bellpack_value_slot(long long base, long long k, int h, long long bl, int r,
                                       int c, int i, int j) {
  return base * r * c + (k * c + j) * (static_cast<long long>(h) * r) + bl * r + i;
}

/// bellpack's sort key: block rows sorted by ascending key are sorted by descending block count
/// (`most` the largest count).
SPMVC_HD long long sort_key(long long count, long long most) { return most - count; }

/// One pass of the stable binary radix sort: where element i goes when the elements whose bit
/// is 0 (`zero`) keep their order ahead of the others. `incl` is the inclusive count of zeros up
/// to i, `zeros` their total.
SPMVC_HD long long split_position(long long i, bool zero, long long incl, long long zeros) {
  return zero ? incl - 1 : zeros + (i - incl);
}

/// Whether the block row of rows [r0, r0 + r) is among those the block inspection visits: on a
/// sampled matrix, the block rows lying wholly inside one of `windows` windows of `len` rows
/// starting at rows i*nrows/windows (inspector/blocks.cpp); every block row otherwise
/// (windows = 1, len = nrows).
SPMVC_HD bool block_row_visited(long long r0, int r, long long nrows, long long windows,
                                long long len) {
  if (r0 >= nrows) return false;
  const long long r1 = r0 + r < nrows ? r0 + r : nrows;
  // The window with the last start at or before r0 (windows do not overlap).
  long long i = r0 * windows / nrows;
  if (i > windows - 1) i = windows - 1;
  while (i + 1 < windows && (i + 1) * nrows / windows <= r0) ++i;
  while (i > 0 && i * nrows / windows > r0) --i;
  const long long begin = i * nrows / windows, end = begin + len;
  return r0 >= begin && (r1 <= end || end >= nrows);
}

}  // namespace device_block
}  // namespace spmvc
