// The device-build unit (row statistics and csr_stream's row blocks from device arrays) compiles
// with NVRTC to an sm_90 CUBIN without spills, every entry point present; and csr_stream's
// kernel generated without host arrays is the one generated from the encoded matrix.
#include <doctest/doctest.h>

#include "codegen/codegen.hpp"
#include "formats/csr_stream/csr_stream_format.hpp"
#include "formats/values/values.hpp"
#include "nvrtc_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_build.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

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

TEST_CASE("device csr: every device-array plan's unit is the host unit of the same plan") {
  // compile(DeviceCsr) generates without host arrays (compiler::generate_device_csr); for every
  // plan it may run, the unit must be the one the host pipeline generates from the encoded
  // matrix, and it must compile. The DeviceCsr's pointers are host arrays here: planning reads
  // only their alignment.
  CsrMatrix a = gen::from_spec("stencil2d:n=64");  // two distinct values: codes apply
  const Profile profile = inspect(a, InspectDepth::rows);
  test::HostDeviceCsr arrays(a);  // its values are set to 1 below
  const DeviceCsr& view = arrays.view;
  std::vector<FormatParams> forced;
  for (int coding : {formats::kValuesPlain, formats::kValuesUnit, formats::kValuesTable8}) {
    CsrParams c;
    c.threads_per_row = 4;
    c.values = coding;
    forced.push_back(c);
    CsrStreamParams s;
    s.values = coding;
    s.narrow_columns = coding == formats::kValuesTable8;
    forced.push_back(s);
  }
  for (Precision p : {Precision::f64, Precision::f32}) {
    for (const FormatParams& params : forced) {
      CAPTURE(describe(params));
      CAPTURE(to_string(p));
      Options o;
      o.precision = p;
      o.params = params;
      if (formats::value_coding_of(params) == formats::kValuesUnit) {
        // Only a pattern matrix stores no values: forcing it on this one is refused.
        CHECK_THROWS_AS(compiler::plan_device_csr(view, profile, o, BuildTarget{}), InputError);
        continue;
      }
      const Plan plan = compiler::plan_device_csr(view, profile, o, BuildTarget{});
      const Encoded encoded = compiler::encode(a, plan);
      const KernelSource host = codegen::generate(plan, encoded, profile);
      const std::int64_t blocks = std::holds_alternative<CsrStreamParams>(params)
                                      ? encoded.array("row_blocks").count() - 1
                                      : 0;
      const KernelSource device = compiler::generate_device_csr(plan, profile, view, blocks);
      CHECK(device.source == host.source);
      CHECK(device.grid == host.grid);
      test::check_compiles(device);
    }
  }
  // The unit-valued coding on a pattern matrix.
  for (double& v : a.values) v = 1.0;
  for (double& v : arrays.values) v = 1.0;
  const Profile ones = inspect(a, InspectDepth::rows);
  Options o;
  o.params = forced[2];
  const Plan plan = compiler::plan_device_csr(view, ones, o, BuildTarget{});
  const KernelSource host = codegen::generate(plan, compiler::encode(a, plan), ones);
  CHECK(compiler::generate_device_csr(plan, ones, view, 0).source == host.source);
}
