// csr_warp: generated translation units compared byte for byte with
// tests/golden/expected/<plan>.cu. Regenerate after an intended change with:
// SPMVC_UPDATE_GOLDEN=1 ./build/ci/tests/test_golden -tc='csr_warp*'
#include <doctest/doctest.h>

#include "csr_warp_golden_plans.hpp"

namespace fs = std::filesystem;

TEST_CASE("csr_warp: generated translation units match the golden files") {
  const fs::path dir = SPMVC_GOLDEN_DIR;
  for (const auto& g : spmvc::test::csr_warp_golden_plans()) {
    CAPTURE(g.name);
    const spmvc::KernelSource src = spmvc::test::generate_golden(g);
    spmvc::test::check_golden(dir / (g.name + ".cu"), src.source);
    CHECK(src.source == spmvc::test::generate_golden(g).source);  // deterministic
  }
  // The first unit carries the long rows' fixup launch; the coded one none.
  const auto plans = spmvc::test::csr_warp_golden_plans();
  const spmvc::KernelSource first = spmvc::test::generate_golden(plans[0]);
  CHECK(first.kernel_name == "spmv_csr_warp_c64_f64");
  REQUIRE(first.post_launches.size() == 1);
  CHECK(first.post_launches[0].entry == "spmv_csr_warp_fixup_c64_f64");
  const spmvc::KernelSource coded = spmvc::test::generate_golden(plans[1]);
  CHECK(coded.kernel_name == "spmv_csr_warp_c512_vt8_f32");
  CHECK(coded.post_launches.empty());
  CHECK(coded.source.find("constexpr bool kSkip = false;") != std::string::npos);
}
