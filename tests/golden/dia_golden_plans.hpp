// The dia plans whose generated source is kept byte for byte under tests/golden/expected/
// (test_dia_golden.cpp), compiled by the nvrtc tests and flattened by the tooling tests: the
// plain form (every diagonal) and the symmetric one (the lower half), their offsets baked in.
#pragma once

#include <vector>

#include "golden_plans.hpp"

namespace spmvc::test {

inline std::vector<GoldenPlan> dia_golden_plans() {
  std::vector<GoldenPlan> plans;
  for (const bool symmetric : {false, true}) {
    compiler::PlanOptions o;
    DiaParams d;
    d.symmetric = symmetric;
    o.params = FormatParams{d};
    o.precision = symmetric ? Precision::f32 : Precision::f64;
    plans.push_back({symmetric ? "dia_sym_stencil27_f32" : "dia_stencil7_f64",
                     symmetric ? "stencil27:n=5,contrast=100" : "stencil7:n=6", o});
  }
  return plans;
}

}  // namespace spmvc::test
