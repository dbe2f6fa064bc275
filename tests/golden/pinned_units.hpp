// Units the plan-only golden lists do not reach: csr_stream (16-bit columns, 64-bit offsets),
// every value-coded format (8-bit and 16-bit tables, fp32 storage), and units passed through
// codegen::attach_reordering (a row map, and a row map with a gather of x). Their source is kept
// byte for byte under tests/golden/expected/ (test_pinned_golden.cpp) and compiled to CUBIN by
// test_golden_compile.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/codegen.hpp"
#include "formats/values/values.hpp"
#include "golden_plans.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/generators.hpp"

namespace spmvc::test {

struct PinnedUnit {
  std::string name;  ///< file stem under tests/golden/expected/
  std::string spec;  ///< generator spec
  std::string format;
  Precision precision = Precision::f64;
  std::optional<FormatParams> params;  ///< forced parameters; nullopt: the planner's pick
  int values = formats::kValuesPlain;  ///< value coding laid over the parameters
  enum class Reorder { none, rows, rows_and_columns } reorder = Reorder::none;
};

inline std::vector<PinnedUnit> pinned_units() {
  using R = PinnedUnit::Reorder;
  CsrStreamParams narrow;
  narrow.narrow_columns = true;
  CsrStreamParams wide;
  wide.offsets64 = true;
  wide.block_size = 128;
  wide.tile = 512;
  // The Laplacians hold a handful of distinct values: every table coding applies.
  return {
      {"csr_stream_c16_rmat_f64", "rmat:scale=8,ef=16", "csr_stream", Precision::f64, narrow},
      {"csr_stream_c16_stencil27_f32acc64", "stencil27:n=6", "csr_stream", Precision::f32_acc64,
       narrow},
      {"csr_stream_o64_b128_f32", "stencil2d:n=16", "csr_stream", Precision::f32, wide},
      {"coded_csr_val2_f64", "stencil2d:n=16", "csr", Precision::f64, std::nullopt,
       formats::kValuesTable8},
      {"coded_csr_stream_c16_val3_f32", "stencil27:n=6", "csr_stream", Precision::f32, narrow,
       formats::kValuesTable16},
      {"coded_ell_val2_f32", "stencil7:n=6", "ell", Precision::f32, std::nullopt,
       formats::kValuesTable8},
      {"coded_hyb_val4_f64", "stencil2d:n=16", "hyb", Precision::f64, std::nullopt,
       formats::kValuesF32},
      {"coded_bro_ell_val2_f32acc64", "stencil27:n=6", "bro_ell", Precision::f32_acc64,
       std::nullopt, formats::kValuesTable8},
      {"coded_bro_coo_val3_f64", "stencil2d:n=16", "bro_coo", Precision::f64, std::nullopt,
       formats::kValuesTable16},
      {"coded_bro_hyb_val2_f64", "stencil7:n=6", "bro_hyb", Precision::f64, std::nullopt,
       formats::kValuesTable8},
      {"reordered_csr_rows_f64", "stencil7:n=5", "csr", Precision::f64, std::nullopt,
       formats::kValuesPlain, R::rows},
      {"reordered_csr_rows_cols_f32", "stencil7:n=5", "csr", Precision::f32, std::nullopt,
       formats::kValuesPlain, R::rows_and_columns},
      {"reordered_hyb_rows_cols_f32acc64", "stencil2d:n=16", "hyb", Precision::f32_acc64,
       std::nullopt, formats::kValuesTable8, R::rows_and_columns},
  };
}

/// Generates `u`'s translation unit, encoded matrix included (no GPU needed).
inline KernelSource generate_pinned(const PinnedUnit& u) {
  const CsrMatrix a = gen::from_spec(u.spec);
  const Profile profile = inspect(a);
  compiler::PlanOptions o;
  o.format = u.format;
  o.precision = u.precision;
  o.params = u.params;
  Plan plan = compiler::make_plan(profile, o);
  if (u.values != formats::kValuesPlain) {
    o.params = formats::with_value_coding(plan.params, u.values);
    plan = compiler::make_plan(profile, o);
  }
  Encoded encoded = compiler::encode(a, plan);
  KernelSource source = codegen::generate(plan, encoded, profile);
  if (u.reorder != PinnedUnit::Reorder::none) {
    // The reversed order: the source depends only on whether there is a map, not on its
    // entries (the map travels as the row_map and col_map arrays).
    std::vector<std::int32_t> perm(static_cast<std::size_t>(a.nrows));
    for (std::size_t i = 0; i < perm.size(); ++i)
      perm[i] = static_cast<std::int32_t>(perm.size() - 1 - i);
    codegen::attach_reordering(
        source, encoded,
        {perm,
         u.reorder == PinnedUnit::Reorder::rows_and_columns ? perm : std::vector<std::int32_t>{}});
  }
  return source;
}

}  // namespace spmvc::test
