// Generated source of the dense-block formats (blocked, bellpack, bcsr) compared byte for byte
// with tests/golden/expected/<plan>.cu. Regenerate: SPMVC_UPDATE_GOLDEN=1 ctest -L golden
#include <doctest/doctest.h>

#include "block_plans.hpp"

namespace fs = std::filesystem;

TEST_CASE("block formats: generated translation units match the golden files") {
  const fs::path dir = SPMVC_GOLDEN_DIR;
  for (const auto& g : spmvc::test::block_golden_plans()) {
    CAPTURE(g.name);
    spmvc::test::check_golden(dir / (g.name + ".cu"), spmvc::test::generate_golden(g).source);
  }
}

TEST_CASE("block formats: kernel names spell out their parameters") {
  const auto plans = spmvc::test::block_golden_plans();
  CHECK(spmvc::test::generate_golden(plans[0]).kernel_name == "spmv_bcsr_r3_c3_t4_b256_f64");
  // stencil2d n=7 has 49 columns: the last 4-wide block column runs past them.
  CHECK(spmvc::test::generate_golden(plans[1]).kernel_name == "spmv_bcsr_r2_c4_t1_b256_tail_f32");
  CHECK(spmvc::test::generate_golden(plans[2]).kernel_name == "spmv_bcsrsym_r3_c3_t4_b256_f64");
  // 49 rows of 2x2 blocks: the last block column runs past them.
  CHECK(spmvc::test::generate_golden(plans[3]).kernel_name ==
        "spmv_bcsrsym_r2_c2_t1_b256_tail_f32");
  CHECK(spmvc::test::generate_golden(plans[4]).kernel_name == "spmv_bellpack_r3_c3_s32_b256_f64");
  CHECK(spmvc::test::generate_golden(plans[5]).kernel_name ==
        "spmv_bellpack_r2_c2_s16_b128_tail_f32acc64");
  CHECK(spmvc::test::generate_golden(plans[6]).kernel_name == "spmv_blocked_br4_bc64_a16_b256_f64");
  const spmvc::KernelSource k = spmvc::test::generate_golden(plans[7]);
  // One warp per block row: elasticity n=3 has 81 rows = 27 block rows = 4 blocks of 8 warps.
  CHECK(k.grid == 4);
}
