// csr: compressed sparse row with T threads per row (Baskaran & Bordawekar, section 4.1).
//
// Encoded arrays, in kernel-parameter order:
//   row_ptr  i32 (i64 when offsets64)  nrows+1 offsets, row_ptr[0] = 0, row_ptr[nrows] = nnz
//   col_idx  i32                       column indices, strictly increasing within a row
//   values   f64 (f32 for f32 and f32_acc64)
// col_idx and values hold nnz entries then zeros up to padded_nnz(nnz), a multiple of
// kPadElements, so aligned vector loads past the last row stay inside the arrays. The aligned
// start itself is computed in the kernel, not stored.
// Template: templates/csr.cuh.
#pragma once

#include "formats/format.hpp"

namespace spmvc::formats {

class CsrFormat final : public FormatUnit {
 public:
  std::string_view name() const override { return "csr"; }
  std::string_view summary() const override {
    return "CSR, T threads per row from an aligned start, warp-shuffle reduction (Baskaran)";
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

  /// Padding granule of col_idx and values: covers one step of the widest group (T*V = 32*4);
  /// must equal kCsrPadElements in templates/csr.cuh (the generated unit asserts it).
  static constexpr int kPadElements = 128;
  static std::int64_t padded_nnz(std::int64_t nnz);

  /// E[steps of the longest of the 32/T rows a warp runs] / E[steps of a row], a row taking
  /// ceil(len/T) steps (at least one), rows drawn independently from the row-length histogram.
  static double warp_imbalance(const Profile& profile, int threads_per_row);

  /// The parameters the heuristics pick for this row-length distribution.
  static CsrParams choose(const Profile& profile, Precision precision = Precision::f64);
  /// heuristics::kCsrNonzerosPerLane for `precision`.
  static double nonzeros_per_lane(Precision precision);
  /// V for T lanes per row (heuristics::kCsrVectorSlack, applied to the nonzero-weighted mean
  /// row length), and the unroll depth for V.
  static int vector_width_for(const Profile& profile, int threads_per_row);
  static int unroll_for(int vector_width);
  /// Fraction of lane slots doing useful work when T lanes share each row.
  static double lane_efficiency(const Profile& profile, int threads_per_row);
  /// Entry point name, e.g. spmv_csr_t8_b256_u2_f64.
  static std::string kernel_name(const CsrParams& p, Precision precision);
};

}  // namespace spmvc::formats
