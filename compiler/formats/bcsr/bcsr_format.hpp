// bcsr: block CSR with aligned r×c dense blocks, T lanes per block row.
//
// Encoded arrays, in kernel-parameter order:
//   brow_ptr  i64  nbrows+1 block offsets (nbrows = ceil(nrows / r))
//   bcol      i32  block column of each block (column / c), increasing within a block row
//   values    f64 (f32 for f32 and f32_acc64)  blocks*r*c, block-major, row-major inside a
//                  block; fill entries are zero
// Template: templates/bcsr.cuh. Cost: values with fill plus one index per block.
#pragma once

#include "formats/format.hpp"

namespace spmvc::formats {

class BcsrFormat final : public FormatUnit {
 public:
  std::string_view name() const override { return "bcsr"; }
  std::string_view summary() const override {
    return "block CSR, aligned r x c dense blocks, T lanes per block row, x reused in registers";
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

  /// T for a mean of `blocks_per_row` blocks of r*c entries per block row.
  static int threads_for(double blocks_per_row);
  /// Entry point name, e.g. spmv_bcsr_r3_c3_t4_b256_f64.
  static std::string kernel_name(const BcsrParams& p, Precision precision, bool col_tail);
};

}  // namespace spmvc::formats
