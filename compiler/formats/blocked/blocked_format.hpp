// blocked: Baskaran & Bordawekar's GPU-specific block storage (section 4.2): constant br×bc
// blocks, start rows multiples of br, start columns multiples of A, each block row of a block
// stored only up to its last nonzero, padded to a multiple of A; x staged in shared memory.
//
// Encoded arrays, in kernel-parameter order:
//   brow_ptr   i64  nbrows+1 block offsets (nbrows = ceil(nrows / br))
//   brow_val   i64  nbrows+1 offsets of each block row's values
//   block_col  i32  start column of each block (a multiple of A)
//   block_len  u8   br per block: row i's stored length in units of A (0..bc/A)
//   values     f64 (f32 for f32 and f32_acc64)  per block, row by row, len_i*A values each
//
// The alignment A: the paper fixed it at half a warp (16) for the coalescing rules of 2008. On
// Hopper a warp's loads are served in 32-byte sectors, so a block whose values and x start on a
// sector boundary is already coalesced; A = 4 (one sector of fp64) keeps that for fp64 (and
// 16-byte alignment for fp32) with 4x less row padding than 16. The planner proposes A = 4 and
// also the paper's br=4, bc=64, A=16 for comparison.
// Template: templates/blocked.cuh. One warp per block row.
#pragma once

#include "formats/format.hpp"

namespace spmvc::formats {

class BlockedFormat final : public FormatUnit {
 public:
  std::string_view name() const override { return "blocked"; }
  std::string_view summary() const override {
    return "Baskaran's block storage: br x bc blocks, aligned starts, x staged in shared memory";
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

  /// The alignment proposed on Hopper (one 32-byte sector of fp64).
  static constexpr int kHopperAlign = 4;
  /// Entry point name, e.g. spmv_blocked_br4_bc64_a4_b256_f64.
  static std::string kernel_name(const BlockedParams& p, Precision precision);
};

}  // namespace spmvc::formats
