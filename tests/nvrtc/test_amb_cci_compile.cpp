// Every amb and cci golden plan, and a grid of their parameters, compiles with NVRTC to an sm_90
// CUBIN without register spills (no GPU needed).
#include <doctest/doctest.h>

#include "golden/test_amb_cci_plans.hpp"
#include "nvrtc_support.hpp"

namespace {

void check_compiles(const spmvc::test::GoldenPlan& g) {
  spmvc::test::check_compiles(spmvc::test::generate_golden(g));
}

}  // namespace

TEST_CASE("every amb and cci golden plan compiles to an sm_90 CUBIN without spills") {
  for (const auto& g : spmvc::test::amb_golden_plans()) check_compiles(g);
  for (const auto& g : spmvc::test::cci_golden_plans()) check_compiles(g);
}

TEST_CASE("amb: block sizes, chunk heights and both variants compile without spills") {
  for (int b : {1, 2, 5, 10}) {
    for (int c : {8, 32, 128}) {
      for (bool det : {false, true}) {
        for (auto p : {spmvc::Precision::f64, spmvc::Precision::f32}) {
          check_compiles(spmvc::test::forced("sweep", "stencil7:n=5", p,
                                             spmvc::test::amb_params(12, c, 256, b, det)));
        }
      }
    }
  }
}

TEST_CASE("cci: every lane count, table and layout compiles without spills") {
  for (int t : {1, 2, 4, 8, 16, 32}) {
    for (bool paper : {false, true}) {
      for (bool il : {false, true}) {
        for (auto p : {spmvc::Precision::f64, spmvc::Precision::f32_acc64}) {
          check_compiles(spmvc::test::forced("sweep", "elasticity:n=3", p,
                                             spmvc::test::cci_params(t, paper, il)));
        }
      }
    }
  }
}
