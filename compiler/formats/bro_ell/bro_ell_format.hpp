// bro_ell: BRO-ELL (Tang et al., SC13, section 3.1 and Algorithm 1).
//
// Encoded arrays, in kernel-parameter order: col_ptr, sym_ptr, widths, symbols, values; the
// layout (delta code, slices of h rows of T lanes, per-slice width tables, symbol multiplexing,
// padding) is defined in bro_ell_codec.hpp. The kernel skips `widths` when the tables are
// __constant__ data or baked into the unit (tables 1 and 2); the array stays in the encoding
// for the host reference. Template: templates/bro_ell.cuh.
#pragma once

#include <utility>

#include "formats/bro_ell/bro_ell_codec.hpp"
#include "formats/format.hpp"

namespace spmvc::formats {

class BroEllFormat final : public FormatUnit {
 public:
  std::string_view name() const override { return "bro_ell"; }
  std::string_view summary() const override {
    return "BRO-ELL: delta-coded column indices bit-packed per slice column, symbol-multiplexed "
           "streams, branch-uniform decode (Tang et al.)";
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

  static std::string kernel_name(const BroEllParams& p, Precision precision);
  /// Fraction of the bandwidth-bound speed the kernel keeps once decode work and the dependent
  /// index -> x chain are charged (times the padding's lane efficiency in cost()).
  static double decode_efficiency(const Profile& profile, const bro::EllShape& shape);
  /// Share of the bandwidth-bound speed the x gather leaves, from the rows' x locality
  /// (bro::model::kLocalSectorsPerNonzero): 1 where a row's nonzeros share x sectors, down to
  /// kScatteredGatherEfficiency where they do not (also for a profile without x_sectors).
  static double gather_efficiency(const Profile& profile);
  /// The decode's own floor under the time of `padded_entries` (0 for baked widths, whose decode
  /// stayed under the bandwidth floor in every measurement).
  static double decode_seconds(const bro::EllShape& shape, double padded_entries);
};

namespace bro {

/// The pieces of a unit that runs a BRO-ELL part: shared by bro_ell and bro_hyb.
struct EllKernelText {
  std::vector<std::pair<std::string, std::string>> constants;
  std::string definitions;  ///< the __constant__ table or the baked pattern, after the constants
  std::string asserts;
  std::string entry;  ///< the extern "C" entry point
  std::vector<KernelParam> params;
  std::int64_t grid = 1;
};
EllKernelText ell_kernel_text(const Encoded& e, const std::string& prefix, const EllShape& shape,
                              int block_size, int unroll, bool prefetch,
                              const std::string& entry_name);

}  // namespace bro

}  // namespace spmvc::formats
