// The fixed set of plans whose generated source is kept byte for byte under
// tests/golden/expected/ and compiled to CUBIN by the nvrtc tests. Each covers a different corner
// of codegen: precisions, thread mappings, unroll, 64-bit offsets, unaligned start.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/codegen.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/generators.hpp"

namespace spmvc::test {

struct GoldenPlan {
  std::string name;  ///< file stem under tests/golden/expected/
  std::string spec;  ///< generator spec
  compiler::PlanOptions options;
};

inline CsrParams csr_params(int t, int u, bool aligned = true, bool offsets64 = false, int v = 1) {
  CsrParams p;
  p.threads_per_row = t;
  p.vector_width = v;
  p.unroll = u;
  p.aligned = aligned;
  p.offsets64 = offsets64;
  return p;
}

inline std::vector<GoldenPlan> golden_plans() {
  std::vector<GoldenPlan> plans;
  auto add = [&](std::string name, std::string spec, Precision p, std::optional<CsrParams> csr) {
    compiler::PlanOptions o;
    o.format = "csr";  // these tests are about the csr format
    o.precision = p;
    o.csr = csr;
    plans.push_back({std::move(name), std::move(spec), o});
  };
  add("csr_auto_stencil27_f64", "stencil27:n=6", Precision::f64, std::nullopt);
  add("csr_auto_stencil2d_f32", "stencil2d:n=16", Precision::f32, std::nullopt);
  add("csr_auto_rmat_f32acc64", "rmat:scale=8,ef=16", Precision::f32_acc64, std::nullopt);
  add("csr_t1_u1_f64", "banded:n=200,hbw=2", Precision::f64, csr_params(1, 1));
  add("csr_t32_u4_f64", "random:n=300,per_row=40", Precision::f64, csr_params(32, 4));
  add("csr_t4_u2_unaligned_f32", "stencil7:n=6", Precision::f32, csr_params(4, 2, false));
  add("csr_t8_u2_o64_f64", "stencil27:n=5", Precision::f64, csr_params(8, 2, true, true));
  add("csr_t4_v2_u1_f64", "stencil27:n=5", Precision::f64, csr_params(4, 1, true, false, 2));
  add("csr_t2_v4_u2_f32", "stencil2d:n=12", Precision::f32, csr_params(2, 2, true, false, 4));
  return plans;
}

/// Checks `actual` against the golden file `path` byte for byte; with SPMVC_UPDATE_GOLDEN set,
/// rewrites the file first.
inline void check_golden(const std::filesystem::path& path, const std::string& actual) {
  if (std::getenv("SPMVC_UPDATE_GOLDEN") != nullptr) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << actual;
  }
  REQUIRE_MESSAGE(std::filesystem::exists(path),
                  "missing golden file; run with SPMVC_UPDATE_GOLDEN=1");
  std::ifstream in(path, std::ios::binary);
  std::stringstream expected;
  expected << in.rdbuf();
  CHECK(expected.str() == actual);
}

/// Generates the translation unit for `g` (no GPU needed).
inline KernelSource generate_golden(const GoldenPlan& g) {
  const CsrMatrix a = gen::from_spec(g.spec);
  const Profile profile = inspect(a);
  const Plan plan = compiler::make_plan(profile, g.options);
  const Encoded encoded = compiler::encode(a, plan);
  return codegen::generate(plan, encoded, profile);
}

}  // namespace spmvc::test
