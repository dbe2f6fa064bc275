// The amb and cci plans whose generated source is kept under tests/golden/expected/ and compiled
// to CUBIN by the nvrtc tests: precisions, block sizes, the deterministic variant, per-matrix and
// paper decode tables, both code layouts.
#pragma once

#include <string>
#include <vector>

#include "golden_plans.hpp"

namespace spmvc::test {

inline GoldenPlan forced(std::string name, std::string spec, Precision p, FormatParams params) {
  compiler::PlanOptions o;
  o.precision = p;
  o.params = std::move(params);
  return {std::move(name), std::move(spec), o};
}

inline AmbParams amb_params(int seg, int c, int sigma, int b, bool det) {
  AmbParams p;
  p.segment_bits = seg;
  p.slice_height = c;
  p.sigma = sigma;
  p.column_block = b;
  p.deterministic = det;
  return p;
}

inline CciParams cci_params(int t, bool paper, bool interleaved) {
  CciParams p;
  p.threads_per_row = t;
  p.paper_table = paper;
  p.interleaved = interleaved;
  return p;
}

inline std::vector<GoldenPlan> amb_golden_plans() {
  return {
      forced("amb_seg16_c32_cb3_f64", "stencil27:n=6", Precision::f64,
             amb_params(16, 32, 32768, 3, false)),
      forced("amb_seg8_c16_cb1_f32", "rmat:scale=9,ef=8", Precision::f32,
             amb_params(8, 16, 64, 1, false)),
      forced("amb_seg16_c32_cb2_det_f32acc64", "stencil7:n=6", Precision::f32_acc64,
             amb_params(16, 32, 32768, 2, true)),
      forced("amb_seg10_c64_cb10_det_f64", "banded:n=300,hbw=12", Precision::f64,
             amb_params(10, 64, 128, 10, true)),
  };
}

inline std::vector<GoldenPlan> cci_golden_plans() {
  return {
      forced("cci_t4_f64", "stencil27:n=6", Precision::f64, cci_params(4, false, true)),
      forced("cci_t8_paper_slices_f32", "stencil2d:n=16", Precision::f32,
             cci_params(8, true, false)),
      forced("cci_t1_f32acc64", "rmat:scale=8,ef=16", Precision::f32_acc64,
             cci_params(1, false, true)),
      forced("cci_t32_slices_f64", "random:n=300,per_row=40", Precision::f64,
             cci_params(32, false, false)),
  };
}

}  // namespace spmvc::test
