// Every golden plan of the dense-block formats, and a grid of their parameters in every
// precision, compiles with NVRTC to an sm_90 CUBIN without register spills (no GPU needed).
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "block_plans.hpp"
#include "nvrtc_compiler.hpp"

TEST_CASE("block formats: every golden plan compiles to an sm_90 CUBIN without spills") {
  for (const auto& g : spmvc::test::block_golden_plans()) {
    CAPTURE(g.name);
    const spmvc::KernelSource src = spmvc::test::generate_golden(g);
    const spmvc::runtime::Cubin cubin = spmvc::runtime::compile_cubin(src, "sm_90");
    REQUIRE(cubin.image.size() > 4);
    CHECK(std::memcmp(cubin.image.data(),
                      "\x7f"
                      "ELF",
                      4) == 0);
    CHECK(cubin.registers > 0);
    CHECK(cubin.spill_store_bytes == 0);
    CHECK(cubin.spill_load_bytes == 0);
    CHECK(cubin.log.find(src.kernel_name) != std::string::npos);
  }
}

TEST_CASE("block formats: every shape, mapping and precision compiles without spills") {
  std::vector<spmvc::FormatParams> grid = spmvc::test::block_param_grid();
  for (const spmvc::FormatParams& p : spmvc::test::bcsr_half_grid()) grid.push_back(p);
  for (const spmvc::FormatParams& p : grid) {
    for (auto prec : {spmvc::Precision::f64, spmvc::Precision::f32, spmvc::Precision::f32_acc64}) {
      // 7 columns per row: a column tail for every c that does not divide it. Symmetric, so
      // bcsr's symmetric half takes it too.
      const auto g = spmvc::test::block_plan("sweep", "banded:n=61,hbw=3", prec, p);
      const spmvc::KernelSource src = spmvc::test::generate_golden(g);
      CAPTURE(src.kernel_name);
      const auto cubin = spmvc::runtime::compile_cubin(src, "sm_90");
      CHECK(cubin.spill_store_bytes == 0);
      CHECK(cubin.spill_load_bytes == 0);
    }
  }
}
