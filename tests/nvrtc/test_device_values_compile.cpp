// The 16-bit value-code unit compiles with NVRTC to an sm_90 CUBIN without spills, both entry
// points in the image, from the same text every time.
#include <doctest/doctest.h>

#include "nvrtc_support.hpp"
#include "spmvc/compiler/device_values.hpp"

using namespace spmvc;

TEST_CASE("device values: the 16-bit code unit compiles, both entry points in the image") {
  const KernelSource k = codegen::device_values_source();
  test::check_compiles(k);
  const runtime::Cubin cubin = runtime::compile_cubin(k, "sm_90");
  for (const char* entry :
       {codegen::kValueSetEntry, codegen::kValueGatherEntry, codegen::kValueCode16Entry}) {
    CAPTURE(entry);
    CHECK(cubin.log.find(entry) != std::string::npos);
  }
  CHECK(codegen::device_values_source().source == k.source);
}
