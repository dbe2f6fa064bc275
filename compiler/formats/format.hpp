// The face every storage format shows the rest of the compiler (DESIGN.md, "Formats").
//
// A format is one unit: named parameters (its folder's params.hpp, public as
// spmvc/params/<name>.hpp), proposals of
// parameter sets for a matrix with the reason each does or does not apply, an encoder, a host
// reference SpMV over the encoded arrays (the oracle for its GPU kernel), a cost model, and the
// generator of its kernel translation unit around its template. Formats are listed in one table
// (registry.cpp); adding a format touches that table and the format's own folder.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spmvc/kernel.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"

namespace spmvc::formats {

/// Bytes one multiply moves through device memory, by kind.
struct Cost {
  double matrix_bytes = 0;  ///< every encoded array read once
  double x_bytes = 0;       ///< x read once (compulsory; gathers that miss cache are not counted)
  double y_bytes = 0;       ///< y written once (and read once when beta != 0)
  double total() const { return matrix_bytes + x_bytes + y_bytes; }
  /// Fraction of issued lane work that is useful (1 = no idle lanes); scales predicted time.
  double lane_efficiency = 1.0;
  /// The longest chain of dependent steps one lane must run (the longest row): a floor under
  /// the predicted time however much bandwidth is left.
  double serial_seconds = 0;
  /// Steps a warp runs (its longest row) over the steps its average row needs, for formats whose
  /// warps run rows of unequal length side by side (1 where rows are balanced or padded, the
  /// padding counted in bytes). Not in lane_efficiency: how much of it shows in time on a GPU is
  /// measured, and the calibration applies it (time_factor, calibration.hpp).
  double warp_imbalance = 1.0;
  /// 32-byte sectors of x the rows gather one at a time (Profile::x_sectors), for formats whose
  /// time shows them beyond x_bytes' single read (csr_stream: one dependent gather per sector,
  /// served mostly from L2). Not in the bytes: what a sector costs on a GPU is measured, and the
  /// calibration charges each as its format's sector_bytes of reading (calibration.hpp); 0 for
  /// formats it does not price.
  double gathered_sectors = 0;
};

/// Profile::x_sectors, or where the Profile has none (a matrix planned from device arrays:
/// InspectDepth::row_lengths counts no sectors) its nonzeros times
/// heuristics::kUnknownSectorsPerNonzero.
double gathered_x_sectors(const Profile& profile);

class FormatUnit {
 public:
  virtual ~FormatUnit() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view summary() const = 0;

  /// Parameter sets worth considering for `a`, each with its cost and label; sets that cannot be
  /// used carry applicable = false and the reason.
  virtual std::vector<Candidate> propose(const Profile& profile, Precision precision) const = 0;
  /// Why `params` cannot implement this matrix, or nullopt when it can.
  virtual std::optional<std::string> cannot_implement(const Profile& profile,
                                                      const FormatParams& params,
                                                      Precision precision) const = 0;
  virtual Cost cost(const Profile& profile, const FormatParams& params,
                    Precision precision) const = 0;
  /// Why `params`' y may differ run to run in its last bits (floating-point atomics, whose order
  /// of arrival the hardware picks), or nullopt when every multiply gives bitwise the same y.
  /// Options::deterministic rejects the candidates that have a reason.
  virtual std::optional<std::string> nondeterminism(const FormatParams& /*params*/) const {
    return std::nullopt;
  }
  virtual Encoded encode(const CsrMatrix& a, const FormatParams& params,
                         Precision precision) const = 0;
  /// The encoded arrays that hold a plain int column index a slot (-1 in a padding slot) and
  /// nothing else, where the kernel templates read column c of x as load_ro(x + c) with x of
  /// any type `X` (templates/common.cuh: SplitX). codegen::split_x_reads renumbers them so that
  /// a reordered unit gathers only its hub columns; empty (the default) where the format codes
  /// its columns otherwise: x is then gathered whole.
  virtual std::vector<std::string> plain_column_arrays() const { return {}; }
  /// y = alpha*A*x + beta*y computed on the host from `encoded` alone, accumulating in fp64.
  virtual void reference_spmv(const Encoded& encoded, const FormatParams& params,
                              std::span<const double> x, std::span<double> y, double alpha,
                              double beta) const = 0;
  /// The kernel translation unit for `params`; `banner` is the plan/profile summary codegen
  /// prints at the top.
  virtual KernelSource generate(const Encoded& encoded, const FormatParams& params,
                                const std::string& banner) const = 0;

 protected:
  // What every format's propose, encode and generate begin with.

  /// `params` as a candidate of this format, labelled by describe(); when it cannot implement
  /// the matrix, not applicable with the reason. The caller adds, to an applicable one, why it
  /// is worth considering (and the predicted bytes its propose reports).
  Candidate candidate(const Profile& profile, const FormatParams& params,
                      Precision precision) const;
  /// `params` as a candidate of this format that cannot implement the matrix, for `reason`.
  Candidate rejected(const FormatParams& params, std::string reason) const;
  /// `params` as a candidate the planner would not choose for `reason` (it does not pay), but
  /// that can implement the matrix (Candidate::representable): a forced format may still take
  /// it. When it cannot implement the matrix either, it is candidate()'s rejection.
  Candidate not_paying(const Profile& profile, const FormatParams& params, Precision precision,
                       std::string reason) const;
  /// `a`'s encoding in this format at `precision`: its sizes, no arrays yet.
  Encoded encoded_for(const CsrMatrix& a, Precision precision) const;
  /// A unit whose main entry point is `kernel_name` (its file named after it), with the
  /// embedded `templates` and everything they include, the base NVRTC options, and the source
  /// begun with `banner`; the launch geometry and parameters are the caller's.
  static KernelSource kernel_source(const std::string& kernel_name,
                                    const std::vector<std::string>& templates,
                                    const std::string& banner);
};

/// Every format, in a fixed order.
const std::vector<const FormatUnit*>& registry();
/// The format called `name`; InputError (listing the known names) otherwise.
const FormatUnit& find_format(std::string_view name);

}  // namespace spmvc::formats
