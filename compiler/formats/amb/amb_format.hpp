// amb: Adaptive Multi-level Blocking (Nagasaka, Nukada, Matsuoka; seeds/amb-multilevel-blocking-
// slides.txt).
//
// Level 1: the columns are cut into segments of W = 2^segment_bits columns (W <= 2^16).
// Level 3 (done first here): each row's nonzeros are grouped greedily, left to right, into blocks
//   of b contiguous columns [s, s+b) starting at the first uncovered nonzero (zero filled); a
//   block that would pass the last column is shifted left to end at it (s = ncols - b), taking
//   only the nonzeros not yet covered. A block belongs to the segment holding its first column.
// Level 2: per segment, the rows with a block there are sorted by block count (descending,
//   stable) within windows of sigma rows and cut into chunks of C rows; each chunk is ELLPACK,
//   column-major, as wide as its longest row; empty chunks are never stored.
//
// Encoded arrays, in kernel-parameter order:
//   chunk_len    u32  [nc]      (segment << 16) | width; width < 2^16 blocks
//   chunk_start  i32  [nc]      first element of the chunk (elements = blocks incl. padding)
//   perm         u16  [nc*C]    row - window*sigma, 0xFFFF for padding rows   (atomic variant)
//   perm_offset  u16  [nc]      window index: the chunk's rows are window*sigma + perm
//   slot         i32  [nc*C]    partial-sum slot, -1 for padding rows    (deterministic variant)
//   col          u16  [nelem]   block start - segment base, element (j, r) at start + j*C + r
//   values       f64/f32 [nelem*b]  value t of element (j, r) at start*b + (j*b + t)*C + r
//   red_ptr      i32  [nrows+1] deterministic: row r's partial sums are [red_ptr[r], red_ptr[r+1])
//   partial      f64/f32 [pairs] deterministic, scratch: one sum per (row, segment), row-major
// nc is padded with empty chunks (width 0, every row padding) to whole thread blocks, so the
// kernel needs no bound check. Padding elements have column offset 0 and value 0.
// Template: templates/amb.cuh. Traffic model: amb_traffic.hpp.
#pragma once

#include <cstdint>
#include <vector>

#include "formats/amb/amb_traffic.hpp"
#include "formats/arrays.hpp"
#include "formats/format.hpp"

namespace spmvc::formats {

/// The AMB layout of a matrix, before it becomes Encoded arrays.
struct AmbLayout {
  std::vector<std::uint32_t> chunk_len;
  std::vector<std::int32_t> chunk_start;
  std::vector<std::uint16_t> perm, perm_offset;  // atomic variant
  std::vector<std::int32_t> slot;                // deterministic variant
  std::vector<std::int32_t> red_ptr;             // deterministic variant
  HostVector<std::uint16_t> col;                 // zeroed on the host threads, then written
  HostVector<double> values;
  AmbLayoutStats stats;
};

/// Builds the layout (both row maps when `params.deterministic`: slot and red_ptr; otherwise perm
/// and perm_offset). InputError when the matrix does not fit the parameters.
AmbLayout build_amb_layout(const CsrMatrix& a, const AmbParams& params);

class AmbFormat final : public FormatUnit {
 public:
  std::string_view name() const override { return "amb"; }
  std::string_view summary() const override {
    return "AMB: column segments, SELL-C-sigma per segment with 16-bit indices, column blocks, "
           "atomic accumulation (Nagasaka)";
  }
  std::vector<Candidate> propose(const Profile& profile, Precision precision) const override;
  std::optional<std::string> cannot_implement(const Profile& profile, const FormatParams& params,
                                              Precision precision) const override;
  /// The atomic variant only: the deterministic one reduces its partial sums in a fixed order.
  std::optional<std::string> nondeterminism(const FormatParams& params) const override;
  Cost cost(const Profile& profile, const FormatParams& params, Precision precision) const override;
  Encoded encode(const CsrMatrix& a, const FormatParams& params,
                 Precision precision) const override;
  void reference_spmv(const Encoded& encoded, const FormatParams& params, std::span<const double> x,
                      std::span<double> y, double alpha, double beta) const override;
  KernelSource generate(const Encoded& encoded, const FormatParams& params,
                        const std::string& banner) const override;

  /// Row permutation sentinel for padding rows.
  static constexpr std::uint16_t kPadRow = 0xFFFF;
  /// Cost for a traffic estimate (the planner's semantics; see amb_format.cpp).
  static Cost cost_of(const TrafficEstimate& t, Precision precision);
  /// Predicted seconds of `cost` with the planner's formula at the default bandwidth.
  static double predict_seconds(const Cost& cost);
  /// The parameter set the traffic model predicts fastest (deterministic as given).
  static AmbParams choose(const Profile& profile, Precision precision, bool deterministic);
  /// Entry point name of the main kernel, e.g. spmv_amb_seg16_c32_s32768_cb3_b256_f64.
  static std::string kernel_name(const AmbParams& p, Precision precision);
};

}  // namespace spmvc::formats
