// ell, sell and hyb: generated source compared byte for byte with
// tests/golden/expected/<plan>.cu. Regenerate after an intended change with:
// SPMVC_UPDATE_GOLDEN=1 ./build/rel/tests/test_golden -tc='ell*'
#include <doctest/doctest.h>

#include "ell_golden_plans.hpp"

namespace fs = std::filesystem;

TEST_CASE("ell, sell, hyb: generated translation units match the golden files") {
  const fs::path dir = SPMVC_GOLDEN_DIR;
  for (const auto& g : spmvc::test::ell_golden_plans()) {
    CAPTURE(g.name);
    const spmvc::KernelSource src = spmvc::test::generate_golden(g);
    spmvc::test::check_golden(dir / (g.name + ".cu"), src.source);
    CHECK(src.source == spmvc::test::generate_golden(g).source);  // deterministic
  }
}

TEST_CASE("ell, sell, hyb: kernel names spell out their parameters") {
  const auto plans = spmvc::test::ell_golden_plans();
  auto name_of = [&](const std::string& plan) {
    for (const auto& g : plans) {
      if (g.name == plan) return spmvc::test::generate_golden(g).kernel_name;
    }
    return std::string("no such plan");
  };
  CHECK(name_of("ell_r_t1_u1_f64") == "spmv_ellr_k5_t1_b256_u1_f64");
  CHECK(name_of("ell_t4_u2_f32") == "spmv_ell_k8_t4_b256_u2_f32");
  CHECK(name_of("ell_t32_b128_f64") == "spmv_ell_k64_t32_b128_u1_f64");
  CHECK(name_of("sell_c8_s64_t4_f32") == "spmv_sell_c8_s64_t4_b256_f32");
  CHECK(name_of("sell_c64_s1024_t2_f32acc64") == "spmv_sell_c64_s1024_t2_b256_f32acc64");
  CHECK(name_of("hyb_k3_t2_i64_r_f32acc64") == "spmv_hyb_k4_t2_b256_i64_r_f32acc64");
  CHECK(name_of("hyb_k0_i32_b128_f32") == "spmv_hyb_k0_t1_b128_i32_f32");
}
