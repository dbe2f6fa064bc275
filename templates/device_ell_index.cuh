// Where the GPU build of ell, sell and hyb (templates/device_ell.cuh) puts each element: the
// arithmetic alone, without CUDA built-ins, so that a host test runs it over the same matrices
// as the host encoders (compiler/formats/{ell,sell,hyb}) and compares the arrays it lays out.
// The layouts are the host encoders' (their headers define them):
//   ell   slot k of row r at (k / T) * (pitch * T) + r * T + k % T, pitch = nrows rounded up to
//         32; rows past their length and rows past nrows hold column -1 and value 0
//   sell  slot k of sorted position i at slice_ptr[i / C] + (k / T) * (C * T) + (i % C) * T
//         + k % T; a slice is as wide as its longest row rounded up to T
//   hyb   the first K nonzeros of each row in an ell part of width K, the rest in COO order
//         (rows in order, each row's entries in order)
// A unit defines SPMVC_HD before including this header to compile it for the host; NVRTC
// takes the default.
#pragma once

#ifndef SPMVC_HD
#define SPMVC_HD __device__ __forceinline__
#endif

namespace spmvc {
namespace device_ell {

/// Rows the ell pitch is rounded up to (EllFormat::kPitchAlign, ell.cuh's kEllPitchAlign).
constexpr long long kPitchAlign = 32;
/// Slice heights 2^0 .. 2^8 whose padding slice_longest measures (Profile::slice_longest).
constexpr int kSliceLevels = 9;
/// Rows one warp of slice_longest covers: the tallest slice, 8 rows a lane.
constexpr int kLevelRows = 256;
constexpr int kRowsPerLane = 8;
/// The longest sorting window sell_sort ranks in shared memory (ints).
constexpr int kMaxSortWindow = 4096;

/// The ell pitch: nrows rounded up to kPitchAlign.
SPMVC_HD long long ell_pitch(long long nrows) {
  return (nrows + kPitchAlign - 1) / kPitchAlign * kPitchAlign;
}

/// `width` rounded up to a multiple of t (EllFormat::padded_width).
SPMVC_HD long long padded_width(long long width, int t) { return (width + t - 1) / t * t; }

/// Slot of the k-th stored nonzero of row `row` in an ell part of `pitch` rows and t lanes.
SPMVC_HD long long ell_slot(long long k, long long row, int t, long long pitch) {
  return (k / t) * (pitch * t) + row * t + k % t;
}

/// Slot of the k-th nonzero of the row at position `in_slice` of a sell slice starting at
/// `slice_base`, slice height c, t lanes.
SPMVC_HD long long sell_slot(long long slice_base, long long in_slice, long long k, int c, int t) {
  return slice_base + (k / t) * (static_cast<long long>(c) * t) + in_slice * t + k % t;
}

/// Position of row i of a window among the window's `w` rows sorted by decreasing length, rows
/// of equal length in their own order (std::stable_sort with len(a) > len(b)): the rows that
/// are longer, and the rows of the same length before it.
SPMVC_HD int window_rank(const int* lens, int w, int i) {
  const int mine = lens[i];
  int rank = 0;
  for (int j = 0; j < w; ++j) {
    const int other = lens[j];
    rank += (other > mine || (other == mine && j < i)) ? 1 : 0;
  }
  return rank;
}

/// Nonzeros of a row of `len` the ell part of width `width` holds, and the COO part gets.
SPMVC_HD long long ell_part_length(long long len, long long width) {
  return len < width ? len : width;
}
SPMVC_HD long long coo_part_length(long long len, long long width) {
  return len > width ? len - width : 0;
}

/// One lane's share of slice_longest: its kRowsPerLane consecutive rows of lengths `len` (0 past
/// the matrix) add their slices' longest rows for heights 1, 2, 4 and 8 to acc[0..3]; returns
/// the lane's longest row, which the warp combines for heights 16..256.
SPMVC_HD long long lane_slice_longest(const long long* len, unsigned long long* acc) {
  long long level[kRowsPerLane];
  for (int u = 0; u < kRowsPerLane; ++u) {
    level[u] = len[u];
    acc[0] += static_cast<unsigned long long>(len[u]);
  }
  int n = kRowsPerLane;
  for (int k = 1; k <= 3; ++k) {
    n /= 2;
    for (int u = 0; u < n; ++u) {
      level[u] = level[2 * u] > level[2 * u + 1] ? level[2 * u] : level[2 * u + 1];
      acc[k] += static_cast<unsigned long long>(level[u]);
    }
  }
  return level[0];
}

}  // namespace device_ell
}  // namespace spmvc
