// The golden plans of the BRO formats (bro_ell, bro_coo, bro_hyb): their generated source is kept
// byte for byte under tests/golden/expected/ and compiled to CUBIN by the nvrtc tests. Each
// covers a corner: the paper's kernel with __constant__ tables, warp slices with 64-bit symbols
// and prefetch, lanes sharing rows, the baked width pattern, the planner's own picks, the COO
// pass with its beta-scaling pass, and the two-launch hyb unit.
#pragma once

#include "golden_plans.hpp"

namespace spmvc::test {

inline std::vector<GoldenPlan> bro_golden_plans() {
  std::vector<GoldenPlan> plans;
  auto add = [&](std::string name, std::string spec, Precision p, std::string format,
                 std::optional<FormatParams> params) {
    compiler::PlanOptions o;
    o.format = std::move(format);
    o.precision = p;
    o.params = std::move(params);
    plans.push_back({std::move(name), std::move(spec), o});
  };
  add("bro_ell_h256_s32_const_f64", "stencil2d:n=16", Precision::f64, "bro_ell",
      BroEllParams{256, 32, 1, 256, 1, false, 1});
  add("bro_ell_h32_s64_u2_pf_f32", "stencil27:n=6", Precision::f32, "bro_ell",
      BroEllParams{32, 64, 1, 256, 2, true, 0});
  add("bro_ell_h8_t4_s32_u4_pf_f32acc64", "random:n=400,per_row=20", Precision::f32_acc64,
      "bro_ell", BroEllParams{8, 32, 4, 256, 4, true, 0});
  add("bro_ell_h32_s32_baked_f64", "stencil27:n=5", Precision::f64, "bro_ell",
      BroEllParams{32, 32, 1, 256, 1, false, 2});
  add("bro_ell_h16_t2_s64_baked_f32", "elasticity:n=3", Precision::f32, "bro_ell",
      BroEllParams{16, 64, 2, 128, 1, false, 2});
  add("bro_ell_auto_stencil7_f64", "stencil7:n=6", Precision::f64, "bro_ell", std::nullopt);
  add("bro_coo_i1024_s32_f64", "random:n=300,per_row=6", Precision::f64, "bro_coo",
      BroCooParams{1024, 32, 256});
  add("bro_coo_i64_s64_f32", "rmat:scale=7,ef=4", Precision::f32, "bro_coo",
      BroCooParams{64, 64, 128});
  add("bro_hyb_auto_rmat_f64", "rmat:scale=8,ef=16", Precision::f64, "bro_hyb", std::nullopt);
  add("bro_hyb_k4_h8_t4_baked_f32", "rmat:scale=7,ef=8", Precision::f32, "bro_hyb",
      BroHybParams{4, 8, 32, 4, 256, 1, false, 2, 256});
  return plans;
}

}  // namespace spmvc::test
