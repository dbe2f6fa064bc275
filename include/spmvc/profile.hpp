// What the inspector sees in a matrix: the facts the planner decides from.
#pragma once

#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spmvc/blocks.hpp"
#include "spmvc/matrix.hpp"

namespace spmvc {

/// Whether `v` survives a round trip through fp32 unchanged (what Profile::fp32_exact_values
/// counts, and what fp32 storage of fp64 values requires). Infinities do; NaNs do not.
inline bool exact_in_fp32(double v) {
  // The range test comes first: narrowing a double beyond FLT_MAX to float is undefined.
  return std::isinf(v) ||
         (std::fabs(v) <= FLT_MAX && static_cast<double>(static_cast<float>(v)) == v);
}

/// One bin of the row-length histogram: rows with lo <= length <= hi.
struct HistogramBin {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  std::int64_t count = 0;
};

/// Fill of aligned r×c blocks: the matrix cut into a grid of r×c tiles, `blocks` the number of
/// tiles holding at least one nonzero, fill = nnz / (blocks·r·c).
struct BlockFill {
  int r = 1;
  int c = 1;
  std::int64_t blocks = 0;
  double fill = 0.0;
};

/// How much of the Profile to compute.
enum class InspectDepth {
  full,  ///< everything
  rows,  ///< only what the row scan gives (sizes, row lengths, histogram, bandwidth, profile,
         ///< delta bits, x sectors, and the value counts the value codings need): what the
         ///< planner needs, in a fraction of the time. Block fill, fp32-exact values and
         ///< symmetry are left empty / zero / false.
  row_lengths,  ///< only sizes, row lengths (statistics, histogram, slice_longest), the narrow
                ///< slices and what the value codings need: what the GPU computes from a matrix
                ///< already in device memory (compile(DeviceCsr), codegen::row_length_profile
                ///< says what each value field holds); the rest is left empty / zero / false.
};

/// At InspectDepth::rows distinct values are counted up to this many (the largest value table a
/// format can use); a matrix with more reads kDistinctValuesCap + 1.
inline constexpr std::int64_t kDistinctValuesCap = 65536;
/// The most distinct diagonals (column - row offsets) Profile::diagonals counts; a matrix with
/// more reads -1 (the diagonal format stores no more).
inline constexpr std::int64_t kMaxDiagonals = 64;
/// Profile::narrow_slice_nnz's slices (rows, aligned at row 0) and the largest column span
/// (largest - smallest) a 16-bit offset from the smallest holds.
inline constexpr int kNarrowSliceRows = 256;
inline constexpr std::int64_t kNarrowColumnSpan = 65535;

struct Profile {
  static constexpr int kSchemaVersion = 1;

  std::int64_t nrows = 0, ncols = 0, nnz = 0;

  // Row lengths.
  double row_mean = 0.0;
  double row_stddev = 0.0;
  std::int64_t row_min = 0;
  std::int64_t row_max = 0;
  std::int64_t empty_rows = 0;
  /// Of those, the rows after the last row with an entry (the pipeline's packed rows put an
  /// ordering's empty rows there): the row-block formats' blocks with work hold only the rows
  /// before them, while empty rows among the others take a lane each in those blocks.
  std::int64_t trailing_empty_rows = 0;
  /// Exact bins for lengths 0..32, then power-of-two ranges (33..64, 65..128, ...); only
  /// non-empty bins are listed, in increasing order.
  std::vector<HistogramBin> row_histogram;
  /// slice_longest[k]: the sum over slices of 2^k consecutive rows (aligned at row 0, the last
  /// one possibly short) of the slice's longest row, k = 0..8 (1..256 rows): the entries per lane
  /// an ELL slice of that height pads to, measured rather than drawn from the histogram (rows
  /// that sit next to alike rows pad far less than independent draws would). All 0 when not
  /// inspected. Measured on the GPU too, for device arrays (compile(DeviceCsr)).
  std::array<std::int64_t, 9> slice_longest{};
  /// Nonzeros in slices of kNarrowSliceRows consecutive rows (aligned at row 0) whose columns
  /// span at most 65536 (largest - smallest <= kNarrowColumnSpan): the share of a row-block
  /// format's nonzeros that can keep 16-bit column offsets from a base per block. -1 when not
  /// inspected. Measured on the GPU too, for device arrays.
  std::int64_t narrow_slice_nnz = -1;

  // Shape of the nonzero pattern.
  std::int64_t bandwidth = 0;  ///< max |i - j| over nonzeros
  std::int64_t profile = 0;    ///< envelope: sum over rows of (i - first column) where positive
  /// Distinct diagonals (offsets j - i) holding nonzeros when there are at most kMaxDiagonals;
  /// -1 when there are more; 0 for a matrix without nonzeros, or not inspected (device arrays).
  /// Filled at both depths.
  std::int64_t diagonals = 0;

  /// delta_bits[b]: nonzeros (other than a row's first) whose column delta from the previous
  /// nonzero in the row needs exactly b bits (b = 1..32; delta >= 1 since columns increase).
  std::array<std::int64_t, 33> delta_bits{};
  /// first_col_bits[b]: non-empty rows whose first column index needs b bits (0 for column 0).
  std::array<std::int64_t, 33> first_col_bits{};

  /// Fill ratios for small aligned block shapes (see BlockFill).
  std::vector<BlockFill> block_fill;

  /// Sum over rows of the distinct 32-byte sectors of an fp64 x (4 consecutive columns) the
  /// row reads: the x traffic of a row-per-thread kernel that gets no reuse across rows. Against
  /// nnz it says how scattered the x accesses are (nnz/4 at best, nnz at worst).
  std::int64_t x_sectors = 0;

  /// Distinct values, comparing as doubles (-0.0 counts as 0.0); small counts permit an
  /// index-into-table value encoding.
  std::int64_t distinct_values = 0;
  /// Values exactly 1 (equal to nnz for a pattern matrix: its values need no storage).
  std::int64_t unit_values = 0;
  /// Values that survive a round trip through fp32 unchanged; when equal to nnz the values can
  /// be stored as fp32 without loss.
  std::int64_t fp32_exact_values = 0;
  /// Mixed precision (Options::mixed_precision): the largest relative error |s - v| / |v| of
  /// any value v stored rounded, s its fp32 rounding (f32_rounding_error) or the bf16 rounding
  /// of its fp32 rounding (bf16_rounding_error; relative to v itself, so it covers both steps).
  /// 0 when every value is exact in the narrower type; a value rounded to 0 (below the
  /// narrower type's least subnormal) counts 1. Finite values whose rounding overflows to an
  /// infinity are counted apart (f32_overflow, bf16_overflow): such a matrix cannot be stored
  /// rounded.
  double f32_rounding_error = 0.0;
  double bf16_rounding_error = 0.0;
  std::int64_t f32_overflow = 0;
  std::int64_t bf16_overflow = 0;
  bool square = false;
  bool structurally_symmetric = false;  ///< square and the pattern equals its transpose's
  /// Structurally symmetric and a(i,j) == a(j,i) for every stored entry, compared as doubles.
  /// square, structurally_symmetric and numerically_symmetric are checked at full depth, and at
  /// rows depth where the matrix has at most kMaxDiagonals diagonals (false otherwise).
  bool numerically_symmetric = false;

  double inspect_seconds = 0.0;
  InspectDepth depth = InspectDepth::full;

  /// Every block shape the block formats (blocked, bellpack, bcsr) can use, from
  /// inspect_blocks() (include/spmvc/blocks.hpp): exact on small matrices, sampled on large ones,
  /// so it is filled at both depths.
  std::vector<BlockShape> block_shapes;
};

/// The diagonals (offsets j - i) holding nonzeros of `a`, ascending, when there are at most
/// kMaxDiagonals of them; nullopt when there are more (the scan stops soon after). Runs on the
/// host threads; a row whose offsets are the previous row's is compared, not inserted.
std::optional<std::vector<std::int64_t>> occupied_diagonals(const CsrMatrix& a);

/// Analyses `a`. Linear in nnz apart from the symmetry check (a binary search per entry above the
/// diagonal). Runs on the host threads (spmvc/parallel.hpp); the Profile is the same, bit for
/// bit, for any number of them.
Profile inspect(const CsrMatrix& a, InspectDepth depth = InspectDepth::full);

/// Stable JSON document (keys fixed, schema_version included), pretty-printed.
std::string to_json(const Profile& p);
/// Readable multi-line report for a person.
std::string to_report(const Profile& p);

}  // namespace spmvc
