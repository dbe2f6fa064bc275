// Units the plan-only golden lists do not reach: csr_stream (16-bit columns, 64-bit offsets),
// every value-coded format (8-bit and 16-bit tables, fp32 storage), and units passed through
// codegen::attach_reordering (a row map, a row map with a gather of x, and the columns alone with
// x read in two parts: codegen::split_x_reads). Their source is kept
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
  /// columns_hubs: the columns alone, the first quarter of them hubs (x read in two parts).
  enum class Reorder { none, rows, rows_and_columns, columns_hubs } reorder = Reorder::none;
};

/// hyb with an ELL part of 2 slots a row: most of a graph's nonzeros in its COO part.
inline HybParams hyb_k2() {
  HybParams p;
  p.width = 2;
  return p;
}

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
      {"csr_warp_hub_split_f64", "rmat:scale=9,ef=8", "csr_warp", Precision::f64, std::nullopt,
       formats::kValuesPlain, R::columns_hubs},
      {"hyb_k2_hub_split_f32", "rmat:scale=9,ef=8", "hyb", Precision::f32, hyb_k2(),
       formats::kValuesPlain, R::columns_hubs},
  };
}

/// `u` built as the pipeline builds it: the plan, profile and encoding its unit is generated from.
struct PinnedBuild {
  Plan plan;
  Profile profile;
  Encoded encoded;
  KernelSource source;
};

/// Builds `u`'s translation unit and encoded matrix (no GPU needed).
inline PinnedBuild build_pinned(const PinnedUnit& u) {
  const CsrMatrix a = gen::from_spec(u.spec);
  PinnedBuild b;
  b.profile = inspect(a);
  compiler::PlanOptions o;
  o.format = u.format;
  o.precision = u.precision;
  o.params = u.params;
  b.plan = compiler::make_plan(b.profile, o);
  if (u.values != formats::kValuesPlain) {
    o.params = formats::with_value_coding(b.plan.params, u.values);
    b.plan = compiler::make_plan(b.profile, o);
  }
  b.encoded = compiler::encode(a, b.plan);
  // The reversed order: the source depends only on whether there is a map (and how many hubs
  // it names), not on its entries (the map travels as the row_map and col_map arrays).
  std::vector<std::int32_t> perm(static_cast<std::size_t>(a.nrows));
  for (std::size_t i = 0; i < perm.size(); ++i)
    perm[i] = static_cast<std::int32_t>(perm.size() - 1 - i);
  RowColumnMap map;
  if (u.reorder == PinnedUnit::Reorder::columns_hubs) {
    map.rows.resize(perm.size());
    for (std::size_t i = 0; i < perm.size(); ++i) map.rows[i] = static_cast<std::int32_t>(i);
    map.cols = perm;
    map.hub_columns = a.ncols / 4;
    codegen::split_x_reads(b.encoded, map);
  } else {
    map.rows = perm;
    if (u.reorder == PinnedUnit::Reorder::rows_and_columns) map.cols = perm;
  }
  b.source = codegen::generate(b.plan, b.encoded, b.profile);
  if (u.reorder != PinnedUnit::Reorder::none) codegen::attach_reordering(b.source, b.encoded, map);
  return b;
}

/// `u`'s translation unit.
inline KernelSource generate_pinned(const PinnedUnit& u) { return build_pinned(u).source; }

}  // namespace spmvc::test
