// bellpack: blocked ELLPACK (Choi, Singh & Vuduc, PPoPP 2010; the reordering paper, section 2).
//
// Encoded arrays, in kernel-parameter order:
//   slice_ptr  i64  nslices+1 block-slot offsets; slice s has width_s * C slots
//   bcol       i32  per slot, the block column (column / c), -1 for padding; slot
//                   slice_ptr[s] + k*C + b is the k-th block of the slice's b-th block row
//   values     f64 (f32 for f32 and f32_acc64)  slots*r*c; slot (s, k, b) element (i, j) at
//                   slice_ptr[s]*r*c + (k*c + j)*(C*r) + b*r + i; padding and fill are zero
//   perm       i32  nbrows: sorted block row -> original block row (block rows sorted by block
//                   count, longest first, stable)
// Template: templates/bellpack.cuh. One thread per matrix row; y written through perm.
#pragma once

#include "formats/format.hpp"

namespace spmvc::formats {

class BellpackFormat final : public FormatUnit {
 public:
  std::string_view name() const override { return "bellpack"; }
  std::string_view summary() const override {
    return "blocked ELLPACK (Choi): r x c blocks, block rows sorted by length and sliced";
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

  /// Entry point name, e.g. spmv_bellpack_r3_c3_s32_b256_f64.
  static std::string kernel_name(const BellpackParams& p, Precision precision, bool col_tail);
};

}  // namespace spmvc::formats
