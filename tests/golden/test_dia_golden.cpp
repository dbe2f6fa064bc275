// dia: generated translation units compared byte for byte with tests/golden/expected/<plan>.cu.
// Regenerate after an intended change with:
// SPMVC_UPDATE_GOLDEN=1 ./build/ci/tests/test_golden -tc='dia*'
#include <doctest/doctest.h>

#include "dia_golden_plans.hpp"

namespace fs = std::filesystem;

TEST_CASE("dia: generated translation units match the golden files") {
  const fs::path dir = SPMVC_GOLDEN_DIR;
  for (const auto& g : spmvc::test::dia_golden_plans()) {
    CAPTURE(g.name);
    const spmvc::KernelSource src = spmvc::test::generate_golden(g);
    spmvc::test::check_golden(dir / (g.name + ".cu"), src.source);
    CHECK(src.source == spmvc::test::generate_golden(g).source);  // deterministic
  }
  // The kernel names spell out the form and the stored diagonals.
  const auto plans = spmvc::test::dia_golden_plans();
  CHECK(spmvc::test::generate_golden(plans[0]).kernel_name == "spmv_dia_d7_b256_r1i_f64");
  CHECK(spmvc::test::generate_golden(plans[1]).kernel_name == "spmv_diasym_d14_b256_r1i_f32");
}
