// dia: storage by diagonals (Bell & Garland, SC09, "DIA"), and its symmetric form.
//
// Encoded arrays:
//   offsets  i32  the stored diagonals' offsets (column - row), ascending: every diagonal that
//                 holds a nonzero; with `symmetric`, those <= 0 only (the lower ones, then 0)
//   values   f64 (f32 for f32 and f32_acc64), offsets.size() x nrows: row r of the d-th stored
//                 diagonal at d * nrows + r, 0 where the diagonal has no entry in that row
// The kernel bakes the offsets in (they are few: at most kMaxDiagonals) and reads only the
// values: with `symmetric`, the entry (r, r + o) above the diagonal is the stored (r + o, r),
// row r + o of the diagonal at -o. Rows of a stored diagonal that fall outside the matrix hold 0
// and are never read. Template: templates/dia.cuh.
#pragma once

#include "formats/format.hpp"

namespace spmvc::formats {

class DiaFormat final : public FormatUnit {
 public:
  std::string_view name() const override { return "dia"; }
  std::string_view summary() const override {
    return "DIA: one value array per occupied diagonal, no indices; symmetric matrices store the "
           "lower half (Bell & Garland)";
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

  /// The planner's thread shape for a matrix (`symmetric` and `block_size` left as they are):
  /// with 4-byte values, interior tiles skip the bounds tests, and a band within
  /// heuristics::kDiaNarrowBand of the main diagonal takes two rows a thread; with 8-byte values
  /// one row a thread, every row tested (dia_model.hpp says why).
  static void shape_for(const Profile& profile, Precision precision, DiaParams& p);
  /// Diagonals a parameter set stores for a matrix with `diagonals` occupied ones (a symmetric
  /// pattern's: the main one and half of the others).
  static std::int64_t stored_diagonals(std::int64_t diagonals, bool symmetric);
  /// The offsets a parameter set stores, ascending, from the occupied diagonals' `occupied`:
  /// all of them, or with `symmetric` each one's lower mirror -|o| and the main diagonal 0.
  static std::vector<std::int32_t> stored_offsets(const std::vector<std::int32_t>& occupied,
                                                  bool symmetric);
  /// The unit generate() writes, from the sizes and the stored offsets alone (the GPU build
  /// generates it from its own diagonal pass).
  static KernelSource generate_kernel(const DiaParams& p, Precision precision, std::int64_t nrows,
                                      const std::vector<std::int32_t>& offsets,
                                      const std::string& banner);
  /// Entry point name, e.g. spmv_dia_d27_b256_r1_f64, spmv_diasym_d14_b256_r2i_f32 (symmetric,
  /// two rows a thread, interior tiles untested).
  static std::string kernel_name(const DiaParams& p, std::int64_t stored, Precision precision);
};

}  // namespace spmvc::formats
