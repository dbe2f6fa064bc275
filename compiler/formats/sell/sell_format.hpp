// sell: SELL-C-sigma (Kreutzer, Hager, Wellein, Fehske & Bishop, SIAM J. Sci. Comput. 2014; the
// AMB slides, level 2: "converting each sub-matrix to SELL-C-sigma").
//
// Rows are sorted by decreasing length within windows of sigma rows (stable, so rows of equal
// length keep their order; sigma = 1 sorts nothing) and the sorted rows cut into slices of C.
// Encoded arrays, in kernel-parameter order:
//   slice_ptr  i64  nslices + 1 offsets; slice s holds (slice_ptr[s+1] - slice_ptr[s]) / C slots
//                   per row: its longest row rounded up to a multiple of T
//   perm       i32  nrows entries, sigma > 1 only: perm[i] = original row at sorted position i
//   col_idx    i32  slice_ptr[nslices] slots, -1 in padding slots and in the rows past nrows
//   values     f64 (f32 for f32 and f32_acc64), 0 in padding slots
// Slot k of the i-th row of slice s sits at slice_ptr[s] + (k / T) * (C * T) + i * T + (k % T):
// column-major within the slice for T = 1, a row's T lanes side by side for T > 1.
// Template: templates/sell.cuh.
#pragma once

#include "formats/format.hpp"

namespace spmvc::formats {

class SellFormat final : public FormatUnit {
 public:
  std::string_view name() const override { return "sell"; }
  std::string_view summary() const override {
    return "SELL-C-sigma: slices of C rows sorted by length within sigma-row windows, each "
           "padded to its own longest row (Kreutzer et al.; AMB)";
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

  /// Expected slots stored per row (padding included), from the row-length histogram.
  static double stored_per_row(const Profile& profile, const SellParams& p);
  /// Expected bytes of y written per multiply: rows permuted by the sort scatter their writes.
  static double y_write_bytes(const Profile& profile, const SellParams& p, Precision precision);
  /// The unit generate() writes, from the sizes alone (the GPU build generates it before its
  /// arrays exist).
  static KernelSource generate_kernel(const SellParams& p, Precision precision, std::int64_t nrows,
                                      const std::string& banner);
  /// Entry point name, e.g. spmv_sell_c32_s1024_t1_b256_f64.
  static std::string kernel_name(const SellParams& p, Precision precision);
};

}  // namespace spmvc::formats
