// The csr_warp plans whose generated source is kept byte for byte under tests/golden/expected/
// (test_csr_warp_golden.cpp), compiled by the nvrtc tests and flattened by the tooling tests: a
// power-law graph whose long rows bring the fixup launch, in fp64 with plain values, and a
// stencil's few values as 8-bit codes in fp32 (one launch, the scan on every step).
#pragma once

#include <vector>

#include "golden_plans.hpp"

namespace spmvc::test {

inline std::vector<GoldenPlan> csr_warp_golden_plans() {
  std::vector<GoldenPlan> plans;
  compiler::PlanOptions o;
  CsrWarpParams w;
  w.chunk = 64;
  o.params = FormatParams{w};
  o.precision = Precision::f64;
  plans.push_back({"csr_warp_c64_rmat_f64", "rmat:scale=9,ef=16", o});
  w.chunk = 512;
  w.values = formats::kValuesTable8;
  o.params = FormatParams{w};
  o.precision = Precision::f32;
  plans.push_back({"csr_warp_c512_vt8_stencil27_f32", "stencil27:n=5", o});
  return plans;
}

}  // namespace spmvc::test
