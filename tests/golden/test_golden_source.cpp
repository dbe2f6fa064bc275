// Generated source compared byte for byte with tests/golden/expected/<plan>.cu.
// Regenerate after an intended change with: SPMVC_UPDATE_GOLDEN=1 ctest -L golden
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "golden_plans.hpp"

namespace fs = std::filesystem;

TEST_CASE("generated translation units match the golden files") {
  const fs::path dir = SPMVC_GOLDEN_DIR;
  for (const auto& g : spmvc::test::golden_plans()) {
    CAPTURE(g.name);
    spmvc::test::check_golden(dir / (g.name + ".cu"), spmvc::test::generate_golden(g).source);
  }
}

TEST_CASE("codegen is deterministic: the same matrix and options give identical source") {
  for (const auto& g : spmvc::test::golden_plans()) {
    CAPTURE(g.name);
    CHECK(spmvc::test::generate_golden(g).source == spmvc::test::generate_golden(g).source);
  }
}

TEST_CASE("kernel names spell out their parameters") {
  const auto plans = spmvc::test::golden_plans();
  CHECK(spmvc::test::generate_golden(plans[3]).kernel_name == "spmv_csr_t1_v1_b256_u1_f64");
  CHECK(spmvc::test::generate_golden(plans[4]).kernel_name == "spmv_csr_t32_v1_b256_u4_f64");
  CHECK(spmvc::test::generate_golden(plans[5]).kernel_name ==
        "spmv_csr_t4_v1_b256_u2_unaligned_f32");
  CHECK(spmvc::test::generate_golden(plans[6]).kernel_name == "spmv_csr_t8_v1_b256_u2_o64_f64");
  CHECK(spmvc::test::generate_golden(plans[8]).kernel_name == "spmv_csr_t2_v4_b256_u2_f32");
}
