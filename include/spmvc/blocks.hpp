// Dense-block inspection (Baskaran & Bordawekar, section 4.2; Choi et al.'s BELLPACK): how well
// the nonzeros of a matrix pack into r×c blocks, for every shape the block formats can use.
//
// Two placements are measured for each shape:
//   aligned    blocks start at rows that are multiples of r and columns that are multiples of c
//              (BCSR, BELLPACK);
//   unaligned  blocks start at rows that are multiples of r (block rows as above), but each block
//              starts at the first nonzero column not yet covered in its block row, rounded down
//              to a multiple of `col_align` (greedy, left to right). col_align = 1 is UBCSR's
//              free placement; Baskaran's format aligns the start to the coalescing granule.
// For the wide shapes (c = 16, 32, 64, Baskaran's format) the count `stored_row_padded` is also
// given: the entries a block stores when each of its rows keeps only the prefix up to its last
// nonzero, rounded up to a multiple of col_align (the paper's "rows padded to the half warp").
//
// Exact on small matrices; on large ones the counts come from a fixed set of evenly spaced
// windows of block rows and are scaled to the whole matrix by nonzeros (`sampled` says so).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "spmvc/matrix.hpp"

namespace spmvc {

enum class BlockPlacement { aligned, unaligned };

/// How the nonzeros of a matrix pack into blocks of one shape and placement.
struct BlockShape {
  int r = 1;
  int c = 1;
  BlockPlacement placement = BlockPlacement::aligned;
  int col_align = 1;        ///< unaligned only: block start columns are multiples of this
  std::int64_t blocks = 0;  ///< blocks holding a nonzero (estimated when sampled)
  std::int64_t nnz = 0;     ///< nonzeros the counts are relative to (the matrix's nnz)
  std::int64_t stored_row_padded = 0;  ///< wide shapes: entries with rows padded to col_align
  /// nnz / (blocks·r·c): the share of stored entries that are nonzeros (0 when no blocks).
  double fill() const;
  /// nnz / stored_row_padded (0 when not measured).
  double row_padded_fill() const;
};

struct BlockOptions {
  /// Exact counts when the matrix has at most this many nonzeros; sampled otherwise.
  std::int64_t exact_max_nnz = std::int64_t{1} << 18;
  /// Sampled: about this many nonzeros are visited, in `sample_windows` evenly spaced windows.
  std::int64_t sample_nnz = std::int64_t{1} << 16;
  int sample_windows = 64;
  /// Largest r and c of the small shapes (1..8 each).
  int max_small = 8;
  /// Start-column alignments measured for the wide (Baskaran) shapes: 4 is one 32-byte sector of
  /// fp64 x on Hopper, 16 the paper's half warp.
  std::vector<int> wide_aligns = {4, 16};
};

/// Natural row groups: maximal runs of consecutive non-empty rows with identical column
/// patterns (the row side of "varied size blocks").
struct RowGroups {
  std::int64_t rows = 0;  ///< rows looked at (all, or the sampled windows)
  /// rows_in[h]: rows in groups of height h (1..7), rows_in[8]: height 8 or more, rows_in[0]:
  /// empty rows.
  std::array<std::int64_t, 9> rows_in{};
};

struct BlockReport {
  std::int64_t nrows = 0, ncols = 0, nnz = 0;
  bool sampled = false;
  std::int64_t sampled_rows = 0;  ///< rows visited (== nrows when exact)
  std::int64_t sampled_nnz = 0;   ///< nonzeros visited
  std::vector<BlockShape> shapes;
  RowGroups groups;
  /// The largest-area shape (r·c >= 2) with fill >= kDenseFill, aligned preferred; r = c = 0 when
  /// none.
  BlockShape best;
  /// "uniform RxC, aligned", "uniform RxC, unaligned", "mixed" or "none" (section 4.2's classes:
  /// same-size blocks uniformly or non-uniformly aligned, varied sizes, or no block structure).
  std::string structure;
  double seconds = 0;

  /// Fill a shape needs to count as dense in `best` and `structure`.
  static constexpr double kDenseFill = 0.9;
  /// The measured shape, or nullptr.
  const BlockShape* find(int r, int c, BlockPlacement placement, int col_align = 1) const;
};

/// Measures every candidate shape of `a` (see the file comment).
BlockReport inspect_blocks(const CsrMatrix& a, const BlockOptions& options = {});

/// Readable report: structure, best shapes, sampling, time.
std::string to_report(const BlockReport& report);

}  // namespace spmvc
