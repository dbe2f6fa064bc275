// The Krylov solver's kernels (bench/support/krylov.cpp) compile with NVRTC to an sm_90 CUBIN
// without spills, and the CUBIN holds every entry point the solver loads (no GPU needed).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "nvrtc_compiler.hpp"
#include "spmvc/bench/krylov.hpp"

using namespace spmvc;

TEST_CASE("the Krylov solver's kernels compile for sm_90 with every entry point") {
  const runtime::Cubin c = runtime::compile_cubin(bench::krylov_kernel_source(), "sm_90");
  const std::vector<std::string> names = bench::krylov_kernel_names();
  CHECK(names.size() == 18);  // nine steps, f64 and f32
  for (const std::string& name : names) {
    CAPTURE(name);
    CHECK(std::search(c.image.begin(), c.image.end(), name.begin(), name.end()) != c.image.end());
  }
  CHECK(c.spill_store_bytes == 0);
  CHECK(c.spill_load_bytes == 0);
}
