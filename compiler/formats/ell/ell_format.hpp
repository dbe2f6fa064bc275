// ell: ELLPACK and ELLPACK-R (Tang et al., SC13 "BRO", sections 2.1.2 and 2.1.4; Bell & Garland).
//
// Encoded arrays, in kernel-parameter order:
//   row_lengths  i32  nrows entries, ELL-R only (row_lengths = true): each row's nonzeros
//   col_idx      i32  Kp * pitch slots, -1 in padding slots
//   values       f64 (f32 for f32 and f32_acc64), 0 in padding slots
// Kp is the width K rounded up to a multiple of T; pitch is nrows rounded up to kPitchAlign.
// Slot k of row r sits at (k / T) * (pitch * T) + r * T + (k % T): column-major when T = 1 (the
// paper's layout), and for T > 1 a row's T lanes read adjacent slots, so every step of a warp is
// one contiguous, aligned run. The kernel derives pitch from nrows and Kp is a compile-time
// constant, so the generated unit asserts both against this encoding.
// Template: templates/ell.cuh.
#pragma once

#include <functional>

#include "formats/format.hpp"

namespace spmvc::codegen {
struct ArrayDecl;
}

namespace spmvc::formats {

class EllFormat final : public FormatUnit {
 public:
  std::string_view name() const override { return "ell"; }
  std::string_view summary() const override {
    return "ELLPACK / ELLPACK-R, column-major padded to the longest row, T lanes per row (Bell & "
           "Garland; BRO 2.1.2, 2.1.4)";
  }
  std::vector<Candidate> propose(const Profile& profile, Precision precision) const override;
  std::optional<std::string> cannot_implement(const Profile& profile, const FormatParams& params,
                                              Precision precision) const override;
  Cost cost(const Profile& profile, const FormatParams& params, Precision precision) const override;
  Encoded encode(const CsrMatrix& a, const FormatParams& params,
                 Precision precision) const override;
  void reference_spmv(const Encoded& encoded, const FormatParams& params, std::span<const double> x,
                      std::span<double> y, double alpha, double beta) const override;
  KernelSource generate(const Encoded& encoded, const FormatParams& params,
                        const std::string& banner) const override;

  /// Rows the column stride is rounded up to; must equal kEllPitchAlign in templates/ell.cuh.
  static constexpr int kPitchAlign = 32;
  static std::int64_t pitch(std::int64_t nrows);
  /// K rounded up to a multiple of T.
  static std::int64_t padded_width(std::int64_t width, int threads_per_row);
  /// The width a parameter set stores for this matrix: params.width, or the longest row for 0.
  static std::int64_t width_for(const Profile& profile, const EllParams& p);
  /// The unit generate() writes, from the sizes alone: `width` the stored (padded) width. The
  /// GPU build (compiler/codegen/device_ell.cpp) generates it before its arrays exist.
  static KernelSource generate_kernel(const EllParams& p, Precision precision, std::int64_t nrows,
                                      std::int64_t width, const std::string& banner);
  /// Entry point name, e.g. spmv_ell_k27_t4_b256_u1_f64 (spmv_ellr_... for ELL-R).
  static std::string kernel_name(const EllParams& p, std::int64_t padded_width,
                                 Precision precision);
};

/// The pieces hyb shares with ell.
namespace ell_part {

/// Why an ELL part of `width` slots per row with T lanes cannot be stored for this matrix, or
/// nullopt. `stored_nnz` is the nonzeros the part holds (nnz for ell, the ELL share for hyb).
std::optional<std::string> check_size(const Profile& profile, std::int64_t width,
                                      int threads_per_row, std::int64_t stored_nnz,
                                      Precision precision);
/// Checks T, block size and unroll.
std::optional<std::string> check_mapping(const Profile& profile, int threads_per_row,
                                         int block_size, int unroll);

/// Appends the ELL part's arrays to `e` (named prefix + "row_lengths" when row_lengths,
/// prefix + "col_idx", prefix + "values"): the first min(len, width) nonzeros of each row.
/// The values are coded as `values` says (formats/values/values.hpp).
void encode(const CsrMatrix& a, std::int64_t width, int threads_per_row, bool row_lengths,
            Precision precision, const std::string& prefix, Encoded& e, int values = 0);
/// Element type of the ELL family's array `name` (columns, row lengths and COO rows i32; values
/// as `values` codes them; their table in `precision`), for units declared without the arrays.
codegen::ArrayDecl array_decl(const std::string& name, int values, Precision precision);
/// The padded width stored in `e` (derived from the array sizes).
std::int64_t stored_width(const Encoded& e, const std::string& prefix);
/// y = alpha * A_ell * x + beta * y over the ELL part in `e` (fp64 accumulation).
void multiply(const Encoded& e, int threads_per_row, bool row_lengths, const std::string& prefix,
              std::span<const double> x, std::span<double> y, double alpha, double beta,
              int values = 0);

/// Bytes, lane efficiency and dependent steps of an ELL part whose rows hold `lengths` nonzeros
/// in `width` slots (y and x not included).
struct PartCost {
  double matrix_bytes = 0;
  double lane_efficiency = 1;
  double serial_steps = 0;
};
PartCost cost(const Profile& profile, const std::function<double(double)>& row_length,
              std::int64_t width, int threads_per_row, bool row_lengths, Precision precision,
              int values = 0);

}  // namespace ell_part

}  // namespace spmvc::formats
