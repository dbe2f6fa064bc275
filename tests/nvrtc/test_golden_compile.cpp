// Every golden plan's kernel compiles with NVRTC to an sm_90 CUBIN on a machine without a GPU,
// and ptxas reports no register spills.
#include <doctest/doctest.h>

#include <cstring>

#include "golden/pinned_units.hpp"
#include "golden_plans.hpp"
#include "nvrtc_compiler.hpp"
#include "nvrtc_support.hpp"

TEST_CASE("every golden plan compiles to an sm_90 CUBIN without spills") {
  for (const auto& g : spmvc::test::golden_plans()) {
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

TEST_CASE("every pinned csr_stream, value-coded and reordered unit compiles without spills") {
  for (const auto& u : spmvc::test::pinned_units()) {
    CAPTURE(u.name);
    spmvc::test::check_compiles(spmvc::test::generate_pinned(u));
  }
}

TEST_CASE("every thread mapping and precision of csr compiles without spills") {
  for (int t : {1, 2, 4, 8, 16, 32}) {
    for (int v : {1, 2, 4}) {
      for (int u : {1, 2, 4}) {
        for (auto p : {spmvc::Precision::f64, spmvc::Precision::f32, spmvc::Precision::f32_acc64}) {
          spmvc::test::GoldenPlan g{"sweep", "stencil7:n=4", {}};
          g.options.precision = p;
          g.options.csr = spmvc::test::csr_params(t, u, true, false, v);
          const spmvc::KernelSource src = spmvc::test::generate_golden(g);
          CAPTURE(src.kernel_name);
          const auto cubin = spmvc::runtime::compile_cubin(src, "sm_90");
          CHECK(cubin.spill_store_bytes == 0);
        }
      }
    }
  }
}
