// The ell, sell and hyb plans whose generated source is kept byte for byte under
// tests/golden/expected/ (test_ell_golden.cpp) and compiled to CUBIN by the nvrtc tests
// (test_ell_compile.cpp). Each covers a corner of the three generators: ELL-R and plain ELL,
// lanes per row, unroll, the sorted and unsorted SELL, hyb with and without a COO part, and
// every precision.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "golden_plans.hpp"

namespace spmvc::test {

inline std::vector<GoldenPlan> ell_golden_plans() {
  std::vector<GoldenPlan> plans;
  auto add = [&](std::string name, std::string spec, std::string format, Precision p,
                 std::optional<FormatParams> params) {
    compiler::PlanOptions o;
    o.format = std::move(format);
    o.precision = p;
    o.params = std::move(params);
    plans.push_back({std::move(name), std::move(spec), o});
  };
  const auto ell = [](int t, int u, bool r, int b = 256) {
    EllParams p;
    p.threads_per_row = t;
    p.unroll = u;
    p.row_lengths = r;
    p.block_size = b;
    return FormatParams{p};
  };
  const auto sell = [](int c, int sigma, int t) {
    SellParams p;
    p.slice_height = c;
    p.sigma = sigma;
    p.threads_per_row = t;
    return FormatParams{p};
  };
  const auto hyb = [](int k, int t, int interval, bool r, int b = 256) {
    HybParams p;
    p.width = k;
    p.threads_per_row = t;
    p.coo_interval = interval;
    p.row_lengths = r;
    p.block_size = b;
    return FormatParams{p};
  };
  add("ell_auto_stencil27_f64", "stencil27:n=6", "ell", Precision::f64, std::nullopt);
  add("ell_r_t1_u1_f64", "banded:n=200,hbw=2", "ell", Precision::f64, ell(1, 1, true));
  add("ell_t4_u2_f32", "stencil7:n=6", "ell", Precision::f32, ell(4, 2, false));
  add("ell_r_t2_u4_f32acc64", "stencil2d:n=12", "ell", Precision::f32_acc64, ell(2, 4, true));
  add("ell_t32_b128_f64", "random:n=300,per_row=40", "ell", Precision::f64, ell(32, 1, false, 128));
  add("sell_auto_rmat_f64", "rmat:scale=8,ef=16", "sell", Precision::f64, std::nullopt);
  add("sell_c32_s1_t1_f64", "stencil2d:n=16", "sell", Precision::f64, sell(32, 1, 1));
  add("sell_c8_s64_t4_f32", "random:n=300,per_row=20", "sell", Precision::f32, sell(8, 64, 4));
  add("sell_c64_s1024_t2_f32acc64", "elasticity:n=3", "sell", Precision::f32_acc64,
      sell(64, 1024, 2));
  add("hyb_auto_rmat_f64", "rmat:scale=8,ef=16", "hyb", Precision::f64, std::nullopt);
  add("hyb_k3_t2_i64_r_f32acc64", "rmat:scale=8,ef=16", "hyb", Precision::f32_acc64,
      hyb(3, 2, 64, true));
  add("hyb_k0_i32_b128_f32", "random:n=200,per_row=5", "hyb", Precision::f32,
      hyb(0, 1, 32, false, 128));
  return plans;
}

}  // namespace spmvc::test
