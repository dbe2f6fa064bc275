// bro_coo: BRO-COO (Tang et al., SC13, section 3.2).
//
// Encoded arrays, in kernel-parameter order: count, row_base, widths, sym_ptr, symbols, col_idx,
// values (layout in bro_coo_codec.hpp). Two launches: a pass that scales y by beta, then the
// interval kernel, whose lanes add their row sums to y with atomics. Template:
// templates/bro_coo.cuh.
#pragma once

#include <utility>

#include "formats/bro_coo/bro_coo_codec.hpp"
#include "formats/format.hpp"

namespace spmvc::formats {

class BroCooFormat final : public FormatUnit {
 public:
  std::string_view name() const override { return "bro_coo"; }
  std::string_view summary() const override {
    return "BRO-COO: delta-coded, bit-packed row indices per interval, one warp per interval, "
           "atomic row sums (Tang et al.)";
  }
  std::vector<Candidate> propose(const Profile& profile, Precision precision) const override;
  std::optional<std::string> cannot_implement(const Profile& profile, const FormatParams& params,
                                              Precision precision) const override;
  std::optional<std::string> nondeterminism(const FormatParams&) const override {
    return "each interval adds its rows' sums to y with floating-point atomics";
  }
  Cost cost(const Profile& profile, const FormatParams& params, Precision precision) const override;
  Encoded encode(const CsrMatrix& a, const FormatParams& params,
                 Precision precision) const override;
  void reference_spmv(const Encoded& encoded, const FormatParams& params, std::span<const double> x,
                      std::span<double> y, double alpha, double beta) const override;
  KernelSource generate(const Encoded& encoded, const FormatParams& params,
                        const std::string& banner) const override;

  static std::string kernel_name(const BroCooParams& p, Precision precision);
};

namespace bro {

/// The COO entry point of a unit (bro_coo's main launch, bro_hyb's second).
struct CooKernelText {
  std::vector<std::pair<std::string, std::string>> constants;
  std::string entry;
  KernelLaunch launch;
};
CooKernelText coo_kernel_text(const Encoded& e, const std::string& prefix, int interval,
                              int block_size, const std::string& entry_name, int values = 0);

}  // namespace bro

}  // namespace spmvc::formats
