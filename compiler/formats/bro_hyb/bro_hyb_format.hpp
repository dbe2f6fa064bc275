// bro_hyb: BRO-HYB (Tang et al., SC13, section 3.3): the Bell-Garland split at width K (stored
// in the parameters, chosen at propose time from the profile), the first K nonzeros of each
// row in BRO-ELL and the rest in BRO-COO.
//
// Encoded arrays: the BRO-ELL part's (ell_col_ptr, ell_sym_ptr, ell_widths, ell_symbols,
// ell_values; bro_ell_codec.hpp) then the BRO-COO part's (coo_count, coo_row_base, coo_widths,
// coo_sym_ptr, coo_symbols, coo_col_idx, coo_values; bro_coo_codec.hpp). One unit, two
// launches: the ELL kernel writes y = alpha*A_ell*x + beta*y for every row, then the COO kernel
// adds alpha*A_coo*x with atomics. Templates: bro_ell.cuh, bro_coo.cuh.
#pragma once

#include "formats/format.hpp"

namespace spmvc::formats {

class BroHybFormat final : public FormatUnit {
 public:
  std::string_view name() const override { return "bro_hyb"; }
  std::string_view summary() const override {
    return "BRO-HYB: hyb split, the ELL part in BRO-ELL and the remainder in BRO-COO (Tang et al.)";
  }
  std::vector<Candidate> propose(const Profile& profile, Precision precision) const override;
  std::optional<std::string> cannot_implement(const Profile& profile, const FormatParams& params,
                                              Precision precision) const override;
  std::optional<std::string> nondeterminism(const FormatParams&) const override {
    return "its BRO-COO part adds each interval's row sums to y with floating-point atomics";
  }
  Cost cost(const Profile& profile, const FormatParams& params, Precision precision) const override;
  Encoded encode(const CsrMatrix& a, const FormatParams& params,
                 Precision precision) const override;
  void reference_spmv(const Encoded& encoded, const FormatParams& params, std::span<const double> x,
                      std::span<double> y, double alpha, double beta) const override;
  KernelSource generate(const Encoded& encoded, const FormatParams& params,
                        const std::string& banner) const override;

  static std::string kernel_name(const BroHybParams& p, Precision precision);
};

}  // namespace spmvc::formats
