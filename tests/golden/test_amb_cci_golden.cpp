// amb and cci generated source compared byte for byte with tests/golden/expected/<plan>.cu.
// Regenerate after an intended change with: SPMVC_UPDATE_GOLDEN=1 ctest -L golden
#include <doctest/doctest.h>

#include "golden/test_amb_cci_plans.hpp"

namespace fs = std::filesystem;

TEST_CASE("amb and cci translation units match the golden files") {
  const fs::path dir = SPMVC_GOLDEN_DIR;
  auto plans = spmvc::test::amb_golden_plans();
  for (auto& g : spmvc::test::cci_golden_plans()) plans.push_back(g);
  for (const auto& g : plans) {
    CAPTURE(g.name);
    const spmvc::KernelSource k = spmvc::test::generate_golden(g);
    spmvc::test::check_golden(dir / (g.name + ".cu"), k.source);
    CHECK(k.source == spmvc::test::generate_golden(g).source);  // deterministic
  }
}

TEST_CASE("amb and cci kernel names spell out their parameters") {
  const auto amb = spmvc::test::amb_golden_plans();
  CHECK(spmvc::test::generate_golden(amb[0]).kernel_name ==
        "spmv_amb_seg16_c32_s32768_cb3_b256_f64");
  CHECK(spmvc::test::generate_golden(amb[2]).kernel_name ==
        "spmv_amb_seg16_c32_s32768_cb2_b256_det_f32acc64");
  const auto cci = spmvc::test::cci_golden_plans();
  CHECK(spmvc::test::generate_golden(cci[1]).kernel_name == "spmv_cci_t8_b256_slices_paper_f32");
}
