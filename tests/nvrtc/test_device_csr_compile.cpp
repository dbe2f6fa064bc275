// The device-build unit (row statistics and csr_stream's row blocks from device arrays) compiles
// with NVRTC to an sm_90 CUBIN without spills, every entry point present; and csr_stream's
// kernel generated without host arrays is the one generated from the encoded matrix.
#include <doctest/doctest.h>

#include "codegen/codegen.hpp"
#include "formats/csr_stream/csr_stream_format.hpp"
#include "nvrtc_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_build.hpp"
#include "spmvc/generators.hpp"

using namespace spmvc;

TEST_CASE("device csr: the build unit compiles without spills, every entry point in the image") {
  const KernelSource k = codegen::device_csr_source();
  test::check_compiles(k);
  const runtime::Cubin cubin = runtime::compile_cubin(k, "sm_90");
  for (const char* entry :
       {codegen::kRowStatsEntry, codegen::kStreamCountEntry, codegen::kStreamScanEntry,
        codegen::kStreamFillEntry, codegen::kCodeValuesEntry, codegen::kNarrowValuesEntry,
        codegen::kNarrowSlicesEntry, codegen::kNarrowColumnsEntry}) {
    CAPTURE(entry);
    CHECK(cubin.log.find(entry) != std::string::npos);
  }
}

TEST_CASE("device csr: csr_stream's kernel without host arrays equals the encoded one") {
  const CsrMatrix a = gen::rmat(11, 8);
  const formats::CsrStreamFormat unit;
  for (Precision p : {Precision::f64, Precision::f32}) {
    CsrStreamParams params;
    params.tile = 2048;
    const Encoded e = unit.encode(a, params, p);
    const KernelSource from_arrays = unit.generate(e, params, "// banner\n");
    const KernelSource from_count = formats::CsrStreamFormat::generate_kernel(
        params, p, e.array("row_blocks").count() - 1, "// banner\n");
    CHECK(from_count.source == from_arrays.source);
    CHECK(from_count.grid == from_arrays.grid);
    CHECK(from_count.kernel_name == from_arrays.kernel_name);
    REQUIRE(from_count.params.size() == from_arrays.params.size());
    for (std::size_t i = 0; i < from_count.params.size(); ++i)
      CHECK(from_count.params[i].name == from_arrays.params[i].name);
  }
}
