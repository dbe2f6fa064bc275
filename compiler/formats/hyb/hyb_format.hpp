// hyb: the hybrid ELL + COO format of Bell & Garland (SC09), as the BRO paper describes it
// (section 2.1.3): the first K nonzeros of every row in an ELL part, the rest in COO. K comes
// from formats::hyb_split_width at propose time and travels in HybParams, so the plan and the
// encoding always agree.
//
// Encoded arrays, in kernel-parameter order of the two launches:
//   ell_row_lengths  i32  nrows entries, only with row_lengths (ELL-R part)
//   ell_col_idx      i32  the ELL part, laid out exactly as the ell format with width K
//   ell_values       f64 / f32
//   coo_row          i32  the remaining nonzeros, sorted by row then column; with narrow_rows
//                         instead:
//   coo_base         i32  per interval of coo_interval entries its first row, or -1 - o when
//                         its rows span more than 65535
//   coo_row16        u16  row - coo_base of the entry's interval (0 in wide intervals)
//   coo_row_wide     i32  the wide intervals' rows, interval after interval (>= 1 entry)
//   coo_col          i32
//   coo_values       f64 / f32
// Launch 1 (main): the ELL kernel writes y = alpha*A_ell*x + beta*y for every row. Launch 2
// (post, only when the COO part is not empty): the COO kernel adds alpha*A_coo*x with one warp
// per coo_interval entries, a segmented warp reduction and an atomicAdd per row run.
// Templates: templates/ell.cuh and templates/coo.cuh.
#pragma once

#include "formats/format.hpp"

namespace spmvc::formats {

class HybFormat final : public FormatUnit {
 public:
  std::string_view name() const override { return "hyb"; }
  std::string_view summary() const override {
    return "HYB: ELL part of width K plus a COO remainder with a segmented warp reduction (Bell & "
           "Garland; BRO 2.1.3)";
  }
  std::vector<Candidate> propose(const Profile& profile, Precision precision) const override;
  std::optional<std::string> cannot_implement(const Profile& profile, const FormatParams& params,
                                              Precision precision) const override;
  std::optional<std::string> nondeterminism(const FormatParams&) const override {
    return "its COO part adds rows cut by interval boundaries to y with floating-point atomics";
  }
  Cost cost(const Profile& profile, const FormatParams& params, Precision precision) const override;
  Encoded encode(const CsrMatrix& a, const FormatParams& params,
                 Precision precision) const override;
  void reference_spmv(const Encoded& encoded, const FormatParams& params, std::span<const double> x,
                      std::span<double> y, double alpha, double beta) const override;
  KernelSource generate(const Encoded& encoded, const FormatParams& params,
                        const std::string& banner) const override;
  std::vector<std::string> plain_column_arrays() const override {
    return {"ell_col_idx", "coo_col"};
  }

  /// Nonzeros past column K of their row (the COO part), from the histogram and nnz: exact for
  /// K up to 32 (every row the histogram's range bins hold spills, and the nonzeros their
  /// midpoints miscount are given back to the COO part), estimated above.
  static double coo_nonzeros(const Profile& profile, std::int64_t width);
  /// The unit generate() writes, from the sizes alone: `width` the ELL part's stored (padded)
  /// width, `coo` the COO part's entries. The GPU build generates it before its arrays exist.
  /// `split_x`: x read in two parts (codegen::split_x_reads).
  static KernelSource generate_kernel(const HybParams& p, Precision precision, std::int64_t nrows,
                                      std::int64_t width, std::int64_t coo,
                                      const std::string& banner, bool split_x = false);
  /// The ELL launch's entry point (the unit's name); the COO launch's is it with "_coo", both
  /// with codegen::XArgs::name_suffix before that where the unit reads x in two parts.
  static std::string kernel_name(const HybParams& p, std::int64_t padded_width,
                                 Precision precision);
};

}  // namespace spmvc::formats
