// What the dense-block formats (bcsr, bellpack, blocked) share: the aligned block-row builder,
// the block statistics a cost model reads from the Profile, and their tuning constants.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "formats/arrays.hpp"
#include "spmvc/blocks.hpp"
#include "spmvc/error.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/parallel.hpp"
#include "spmvc/profile.hpp"

namespace spmvc::formats::blocks {

/// Fill below which a shape is not proposed at all (whatever its bytes).
inline constexpr double kMinProposedFill = 0.5;
/// A shape is proposed only when its matrix bytes are at most this share of csr's (4-byte index
/// + value per nonzero): with less to save than that, the zero fill and the block bookkeeping
/// have eaten the index saving.
inline constexpr double kMaxBytesVsCsr = 0.95;

/// The objection to the least-bytes r x c shape when no shape pays: `reason` and what it stores.
inline std::string least_bytes_reason(const std::string& reason, int r, int c, double bytes,
                                      const Profile& p) {
  return fmt::format("{}; {}x{} stores {:.2f} matrix bytes per nonzero", reason, r, c,
                     bytes / std::max<double>(1.0, static_cast<double>(p.nnz)));
}

/// Why no r x c shape is proposed: the best shape seen and its fill (bcsr and bellpack).
inline std::string no_shape_reason(const Profile& p, int best_r, int best_c, double best_fill) {
  return p.block_shapes.empty()
             ? std::string("no block shapes inspected")
             : fmt::format(
                   "no r x c shape stores fewer bytes than csr (best fill: {}x{} at {:.3f})",
                   best_r, best_c, best_fill);
}

/// csr's matrix bytes per nonzero (4-byte column index and one value), the yardstick above.
inline double csr_bytes(const Profile& p, double value_bytes) {
  return static_cast<double>(p.nnz) * (4.0 + value_bytes);
}
/// Shapes each format proposes (the best by predicted bytes).
inline constexpr int kProposedShapes = 3;
/// One r x c shape a format may propose: its parameters, predicted matrix bytes and fill.
template <typename Params>
struct ShapeOption {
  Params p;
  double bytes = 0;
  double fill = 0;
  /// Why the shape is proposed: its fill and matrix bytes a nonzero.
  std::string reason(const Profile& profile) const {
    return fmt::format("{}x{} blocks {:.0f}% full, {:.2f} matrix bytes per nonzero", p.block_rows,
                       p.block_cols, 100.0 * fill,
                       bytes / std::max<double>(1.0, static_cast<double>(profile.nnz)));
  }
};

/// The aligned shapes of a Profile as bcsr and bellpack rank them (rank_aligned_shapes).
template <typename Params>
struct RankedShapes {
  /// Those that pay (fill >= kMinProposedFill, bytes <= kMaxBytesVsCsr x csr's), fewest bytes
  /// first, at most kProposedShapes.
  std::vector<ShapeOption<Params>> paying;
  /// The fewest bytes among those that do not pay: what a forced format takes.
  std::optional<ShapeOption<Params>> least_bad;
  /// The best fill seen, and its shape.
  double best_fill = 0;
  int best_r = 1, best_c = 1;

  /// The best-fill shape, what a format rejects when no shape can stand in.
  Params best_shape() const {
    Params p;
    p.block_rows = best_r;
    p.block_cols = best_c;
    return p;
  }
  /// Why no shape is proposed, naming the least-bytes one where there is one.
  std::string why_none(const Profile& profile) const {
    const std::string reason = no_shape_reason(profile, best_r, best_c, best_fill);
    if (!least_bad) return reason;
    return least_bytes_reason(reason, least_bad->p.block_rows, least_bad->p.block_cols,
                              least_bad->bytes, profile);
  }
};

/// profile.block_shapes' aligned shapes of more than one entry and at most 8 columns, each made
/// into parameters by make(shape) and costed by bytes(params) (matrix bytes), ranked for a
/// format whose values take `value_bytes` bytes.
template <typename Params, typename Make, typename Bytes>
RankedShapes<Params> rank_aligned_shapes(const Profile& profile, double value_bytes, Make make,
                                         Bytes bytes) {
  RankedShapes<Params> out;
  for (const BlockShape& b : profile.block_shapes) {
    if (b.placement != BlockPlacement::aligned || b.c > 8 || b.r * b.c < 2) continue;
    if (b.fill() > out.best_fill) {
      out.best_fill = b.fill();
      out.best_r = b.r;
      out.best_c = b.c;
    }
    const Params p = make(b);
    const ShapeOption<Params> o{p, bytes(p), b.fill()};
    if (b.fill() < kMinProposedFill || o.bytes > kMaxBytesVsCsr * csr_bytes(profile, value_bytes)) {
      if (!out.least_bad || o.bytes < out.least_bad->bytes) out.least_bad = o;
      continue;
    }
    out.paying.push_back(o);
  }
  std::stable_sort(out.paying.begin(), out.paying.end(),
                   [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  if (out.paying.size() > static_cast<std::size_t>(kProposedShapes))
    out.paying.resize(kProposedShapes);
  return out;
}

/// Dependent steps (load a block index, then its x) one lane or warp walks before the model
/// charges it for lost memory parallelism; csr's 6 nonzeros per lane (heuristics.hpp) are 6 such
/// steps, and a block step brings r*c independent values with it, so more are tolerated. Not
/// yet measured on the H100: the same order as csr's constant, by analogy.
inline constexpr double kStepsPerLane = 8.0;
/// Seconds per dependent step of one lane (csr's kCsrStepSeconds, heuristics.hpp).
inline constexpr double kStepSeconds = 0.2e-6;
/// bcsr's symmetric half (S=1): the share of the plain kernel's read rate it keeps, fp64 and
/// fp32. Each stored block off the diagonal is read twice (the second time mostly from L2) and
/// its mirror costs two dependent index loads, so the kernel moves as many value loads through
/// L1 as the plain one. On the H200 (3x3, T=4 and 8, bcsstk16 replicated to 16M nonzeros and
/// elasticity n=60) it moved its own bytes at 0.63-0.77 of the plain kernel's rate in fp64 and
/// 0.59-0.65 in fp32: 0.79-0.92 of its time in fp64, 0.99-1.07 in fp32
/// (bench/results/2026-11-28-h200-bcsr-symmetric/sweep.txt).
inline constexpr double kMirrorEfficiency64 = 0.65;
inline constexpr double kMirrorEfficiency32 = 0.6;
/// Stored entries the encoders refuse beyond (64-bit offsets everywhere, but an encoding this
/// large would not fit a GPU beside anything else): 2^31.
inline constexpr double kMaxStored = 2147483648.0;

/// Aligned r×c block rows: blocks sorted by column within each block row, values row-major
/// within each block (fill entries are zeros).
struct BlockRows {
  int r = 1, c = 1;
  std::int64_t nbrows = 0;
  std::vector<std::int64_t> ptr{0};  ///< nbrows+1 block offsets
  std::vector<std::int32_t> col;     ///< block column (column / c) of each block
  std::vector<double> val;           ///< blocks * r * c
  std::int64_t blocks() const { return static_cast<std::int64_t>(col.size()); }
};

/// Scratch the block-row builder may take for its per-range slot arrays (one int32 per block
/// column each): a matrix with more block columns runs on fewer ranges.
inline constexpr double kBlockScratchBytes = 256.0 * 1024 * 1024;

/// Contiguous ranges of block rows for `a`'s r-row block rows, balanced by nonzeros
/// (split_rows's cuts moved up to the next block-row boundary), at most `most` of them.
inline std::vector<Range> block_row_ranges(const CsrMatrix& a, int r, std::int64_t most) {
  const std::int64_t nbrows = (a.nrows + r - 1) / r;
  std::vector<std::int64_t> cuts{0};
  for (const Range& rows : split_rows(a, kRowGrain)) {
    const std::int64_t cut = std::min(nbrows, (rows.end + r - 1) / r);
    if (cut > cuts.back()) cuts.push_back(cut);
  }
  if (cuts.back() < nbrows) cuts.push_back(nbrows);
  // Too many for the scratch: every k-th cut.
  const auto ranges = static_cast<std::int64_t>(cuts.size()) - 1;
  const std::int64_t step =
      std::max<std::int64_t>(1, (ranges + most - 1) / std::max<std::int64_t>(1, most));
  std::vector<Range> out;
  for (std::int64_t i = 0; i < ranges; i += step)
    out.push_back({cuts[static_cast<std::size_t>(i)],
                   cuts[static_cast<std::size_t>(std::min(i + step, ranges))]});
  return out;
}

/// Two passes over ranges of block rows, in parallel: the first finds each block row's block
/// columns (a slot per block column marks those seen; sorted), the second places every nonzero
/// in its block (the slot then holds the block's rank in its block row). The arrays do not
/// depend on the ranges; a column repeated in a row keeps its last value, as a row-by-row pass
/// would.
inline BlockRows build_block_rows(const CsrMatrix& a, int r, int c) {
  BlockRows b;
  b.r = r;
  b.c = c;
  b.nbrows = (a.nrows + r - 1) / r;
  const std::int64_t nbcols = (a.ncols + c - 1) / c;
  const auto most = static_cast<std::int64_t>(kBlockScratchBytes /
                                              std::max(1.0, 4.0 * static_cast<double>(nbcols)));
  const std::vector<Range> ranges = block_row_ranges(a, r, std::max<std::int64_t>(1, most));
  std::vector<std::int64_t> count(static_cast<std::size_t>(b.nbrows) + 1, 0);
  const std::vector<std::vector<std::int32_t>> cols_of =
      map_ranges(ranges, [&](std::int64_t b0, std::int64_t b1) {
        std::vector<std::int32_t> slot(static_cast<std::size_t>(nbcols), -1);
        std::vector<std::int32_t> out, cols;
        for (std::int64_t br = b0; br < b1; ++br) {
          const std::int64_t r0 = br * r, r1 = std::min(r0 + r, a.nrows);
          cols.clear();
          for (std::int64_t k = a.row_ptr[r0]; k < a.row_ptr[r1]; ++k) {
            const std::int32_t bc = a.col_idx[k] / c;
            if (slot[bc] < 0) {
              slot[bc] = 0;
              cols.push_back(bc);
            }
          }
          std::sort(cols.begin(), cols.end());
          for (const std::int32_t bc : cols) slot[bc] = -1;
          out.insert(out.end(), cols.begin(), cols.end());
          count[static_cast<std::size_t>(br) + 1] = static_cast<std::int64_t>(cols.size());
        }
        return out;
      });
  for (std::size_t i = 1; i < count.size(); ++i) count[i] += count[i - 1];
  b.ptr = std::move(count);
  b.col.resize(static_cast<std::size_t>(b.ptr.back()));
  b.val.assign(static_cast<std::size_t>(b.ptr.back()) * static_cast<std::size_t>(r * c), 0.0);
  run_ranges(ranges, [&](std::size_t p, std::int64_t b0, std::int64_t b1) {
    std::copy(cols_of[p].begin(), cols_of[p].end(),
              b.col.begin() + static_cast<std::ptrdiff_t>(b.ptr[static_cast<std::size_t>(b0)]));
    std::vector<std::int32_t> slot(static_cast<std::size_t>(nbcols), -1);
    for (std::int64_t br = b0; br < b1; ++br) {
      const std::int64_t base = b.ptr[static_cast<std::size_t>(br)];
      const std::int64_t end = b.ptr[static_cast<std::size_t>(br) + 1];
      for (std::int64_t j = base; j < end; ++j)
        slot[b.col[static_cast<std::size_t>(j)]] = static_cast<std::int32_t>(j - base);
      const std::int64_t r0 = br * r, r1 = std::min(r0 + r, a.nrows);
      for (std::int64_t row = r0; row < r1; ++row) {
        for (std::int64_t k = a.row_ptr[row]; k < a.row_ptr[row + 1]; ++k) {
          const std::int32_t col = a.col_idx[k];
          const std::int64_t blk = base + slot[col / c];
          b.val[static_cast<std::size_t>((blk * r + (row - r0)) * c + col % c)] = a.values[k];
        }
      }
      for (std::int64_t j = base; j < end; ++j) slot[b.col[static_cast<std::size_t>(j)]] = -1;
    }
  });
  return b;
}

/// Block statistics of one shape as a cost model uses them.
struct ShapeStats {
  bool measured = false;     ///< false: estimated (shape absent from the Profile)
  double blocks = 0;         ///< blocks holding a nonzero
  double stored_padded = 0;  ///< blocked: entries with rows padded to the alignment
  double fill = 0;
};

/// The shape's statistics from profile.block_shapes; when the inspector did not measure it (a
/// hand-made Profile, or a forced shape outside the measured set), the pessimistic estimate of
/// one block per nonzero, capped by the blocks the matrix has room for.
inline ShapeStats shape_stats(const Profile& p, int r, int c, BlockPlacement placement,
                              int col_align = 1) {
  ShapeStats s;
  for (const BlockShape& b : p.block_shapes) {
    if (b.r == r && b.c == c && b.placement == placement &&
        (placement == BlockPlacement::aligned || b.col_align == col_align)) {
      s.measured = true;
      s.blocks = static_cast<double>(b.blocks);
      s.stored_padded = static_cast<double>(b.stored_row_padded);
      s.fill = b.fill();
      return s;
    }
  }
  const double room =
      std::ceil(static_cast<double>(p.nrows) / r) * std::ceil(static_cast<double>(p.ncols) / c);
  s.blocks = std::min(static_cast<double>(p.nnz), room);
  s.stored_padded = static_cast<double>(p.nnz) * col_align;
  s.fill = s.blocks > 0 ? static_cast<double>(p.nnz) / (s.blocks * r * c) : 0.0;
  return s;
}

/// BELLPACK's slices are column-major (ELL of blocks): a warp's lanes load neighbouring block
/// columns at each step and every step is independent of the last, so a lane may walk far more
/// blocks before its memory parallelism runs short: 32 is the least tolerance the H100 suite
/// (v10) allows, where a matrix of 27 block steps per lane ran near full read bandwidth.
inline constexpr double kSlicedStepsPerLane = 32.0;

/// Lane efficiency of a lane (or warp) walking `steps` dependent block steps on average, of
/// which `tolerated` cost nothing.
inline double latency_factor(double steps, double tolerated = kStepsPerLane) {
  return std::min(1.0, tolerated / std::max(steps, 1e-9));
}

/// Fraction of T lanes busy when a block row of m blocks (the mean) is dealt out T at a time.
inline double group_efficiency(double m, int t) {
  if (m <= 0) return 1.0;
  return m / (t * std::max(1.0, std::ceil(m / t)));
}

}  // namespace spmvc::formats::blocks
