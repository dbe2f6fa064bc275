// Plans of the dense-block formats (blocked, bellpack, bcsr) shared by their golden, nvrtc and
// gpu tests: the golden set (generated source kept byte for byte) and parameter grids.
#pragma once

#include <string>
#include <vector>

#include "golden_plans.hpp"

namespace spmvc::test {

inline GoldenPlan block_plan(std::string name, std::string spec, Precision p, FormatParams params) {
  compiler::PlanOptions o;
  o.format = std::string(format_of(params));
  o.precision = p;
  o.params = params;
  return {std::move(name), std::move(spec), o};
}

inline BcsrParams bcsr_params(int r, int c, int t, int block_size = 256, bool symmetric = false) {
  return BcsrParams{r, c, t, block_size, symmetric};
}
/// bcsr's symmetric half (S=1): r x r blocks, T lanes.
inline BcsrParams bcsr_half(int r, int t, int block_size = 256) {
  return bcsr_params(r, r, t, block_size, true);
}
inline BellpackParams bellpack_params(int r, int c, int slice, int block_size = 256) {
  return BellpackParams{r, c, slice, block_size};
}
inline BlockedParams blocked_params(int br, int bc, int align, int block_size = 256) {
  return BlockedParams{br, bc, align, block_size};
}

/// Golden plans: each format in each precision, the column tail, and the planner's own pick.
inline std::vector<GoldenPlan> block_golden_plans() {
  std::vector<GoldenPlan> g;
  g.push_back(
      block_plan("bcsr_r3_c3_t4_f64", "elasticity:n=3", Precision::f64, bcsr_params(3, 3, 4)));
  g.push_back(
      block_plan("bcsr_r2_c4_t1_tail_f32", "stencil2d:n=7", Precision::f32, bcsr_params(2, 4, 1)));
  g.push_back(
      block_plan("bcsrsym_r3_c3_t4_f64", "elasticity:n=3", Precision::f64, bcsr_half(3, 4)));
  g.push_back(
      block_plan("bcsrsym_r2_c2_t1_tail_f32", "stencil2d:n=7", Precision::f32, bcsr_half(2, 1)));
  g.push_back(block_plan("bellpack_r3_c3_s32_f64", "elasticity:n=3", Precision::f64,
                         bellpack_params(3, 3, 32)));
  g.push_back(block_plan("bellpack_r2_c2_s16_tail_f32acc64", "stencil7:n=5", Precision::f32_acc64,
                         bellpack_params(2, 2, 16, 128)));
  g.push_back(block_plan("blocked_br4_bc64_a16_f64", "elasticity:n=3", Precision::f64,
                         blocked_params(4, 64, 16)));
  g.push_back(block_plan("blocked_br3_bc16_a4_f32", "elasticity:n=3", Precision::f32,
                         blocked_params(3, 16, 4)));
  g.push_back(block_plan("blocked_br8_bc32_a8_f32acc64", "banded:n=100,hbw=6", Precision::f32_acc64,
                         blocked_params(8, 32, 8, 128)));
  return g;
}

/// Every format over a grid of its parameters (for compile and correctness sweeps).
inline std::vector<FormatParams> block_param_grid() {
  std::vector<FormatParams> out;
  for (int r : {1, 2, 3, 4, 8}) {
    for (int c : {1, 3, 4, 8}) {
      for (int t : {1, 4, 32}) out.push_back(bcsr_params(r, c, t));
      out.push_back(bellpack_params(r, c, r * c > 16 ? 8 : 32));
    }
  }
  for (int br : {1, 3, 4, 8}) {
    for (int bc : {16, 64}) {
      for (int a : {4, 16}) out.push_back(blocked_params(br, bc, a));
    }
  }
  out.push_back(blocked_params(2, 128, 1, 512));
  out.push_back(blocked_params(5, 32, 32, 64));
  return out;
}

/// bcsr's symmetric half over its shapes and lane counts (for matrices equal to their
/// transpose).
inline std::vector<FormatParams> bcsr_half_grid() {
  std::vector<FormatParams> out;
  for (int r : {1, 2, 3, 4, 8}) {
    for (int t : {1, 4, 32}) out.push_back(bcsr_half(r, t));
  }
  return out;
}

}  // namespace spmvc::test
