// The BRO formats' generated translation units, byte for byte (tests/bro_golden_plans.hpp).
// Regenerate after an intended change with: SPMVC_UPDATE_GOLDEN=1 ctest -L golden
#include <doctest/doctest.h>

#include "bro_golden_plans.hpp"

namespace fs = std::filesystem;

TEST_CASE("bro: generated translation units match the golden files") {
  const fs::path dir = SPMVC_GOLDEN_DIR;
  for (const auto& g : spmvc::test::bro_golden_plans()) {
    CAPTURE(g.name);
    const spmvc::KernelSource k = spmvc::test::generate_golden(g);
    spmvc::test::check_golden(dir / (g.name + ".cu"), k.source);
    CHECK(k.source == spmvc::test::generate_golden(g).source);  // deterministic
  }
}

TEST_CASE("bro: kernel names and launches spell out the plan") {
  const auto plans = spmvc::test::bro_golden_plans();
  const auto paper = spmvc::test::generate_golden(plans[0]);
  CHECK(paper.kernel_name == "spmv_bro_ell_h256_s32_t1_b256_u1_const_f64");
  CHECK(paper.source.find("__constant__ unsigned char kWidthTable[") != std::string::npos);
  // The constant-table kernel takes no widths pointer; the global one does.
  CHECK(paper.params.size() == 9);
  const auto warp = spmvc::test::generate_golden(plans[1]);
  CHECK(warp.kernel_name == "spmv_bro_ell_h32_s64_t1_b256_u2_pf_f32");
  CHECK(warp.params.size() == 10);
  const auto baked = spmvc::test::generate_golden(plans[3]);
  CHECK(baked.kernel_name == "spmv_bro_ell_h32_s32_t1_b256_u1_baked_f64");
  CHECK(baked.source.find("using Pattern = spmvc::bro::WidthPattern<") != std::string::npos);
  // Grid: one thread per row lane, slices rounded up to blocks (125 rows of stencil27:n=5).
  CHECK(baked.grid == 1);
  const auto coo = spmvc::test::generate_golden(plans[6]);
  CHECK(coo.kernel_name == "spmv_bro_coo_i1024_s32_b256_f64");
  REQUIRE(coo.pre_launches.size() == 1);
  CHECK(coo.pre_launches[0].entry == "spmv_bro_coo_i1024_s32_b256_f64_scale_y");
  CHECK(coo.post_launches.empty());
  const auto hyb = spmvc::test::generate_golden(plans[9]);
  CHECK(hyb.kernel_name == "spmv_bro_hyb_k4_h8_s32_t4_b256_u1_baked_i256_f32");
  REQUIRE(hyb.post_launches.size() == 1);
  CHECK(hyb.post_launches[0].entry == hyb.kernel_name + "_coo");
  CHECK(hyb.pre_launches.empty());
}
