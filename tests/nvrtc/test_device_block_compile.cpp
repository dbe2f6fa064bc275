// The block device-build unit (bcsr and bellpack built from device arrays, and the block
// inspection) compiles with NVRTC to an sm_90 CUBIN, every entry point in the image; and the
// bcsr and bellpack kernels generated from the device build's sizes compile too.
#include <doctest/doctest.h>

#include "nvrtc_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_block.hpp"
#include "spmvc/generators.hpp"

using namespace spmvc;

TEST_CASE("device block: the build unit compiles, every entry point in the image") {
  const KernelSource k = codegen::device_block_source();
  test::check_compiles(k);
  const runtime::Cubin cubin = runtime::compile_cubin(k, "sm_90");
  for (const char* entry :
       {codegen::kBlockInspectEntry, codegen::kBlockOpenEntry, codegen::kBlockRowPtrEntry,
        codegen::kBcsrFillEntry, codegen::kBellpackIotaEntry, codegen::kBellpackSplitFlagsEntry,
        codegen::kBellpackSplitScatterEntry, codegen::kBellpackWidthsEntry,
        codegen::kBellpackFillEntry}) {
    CAPTURE(entry);
    CHECK(cubin.log.find(entry) != std::string::npos);
  }
  CHECK(codegen::device_block_source().source == k.source);
}

TEST_CASE("device block: the kernels generated from the device build's sizes compile") {
  const CsrMatrix a = gen::elasticity_3d(4, 4, 4);
  const Profile profile = inspect(a, InspectDepth::rows);
  BcsrParams bc;
  bc.block_rows = 3;
  bc.block_cols = 3;
  BellpackParams bp;
  bp.block_rows = 3;
  bp.block_cols = 3;
  for (const FormatParams& params : {FormatParams{bc}, FormatParams{bp}}) {
    Plan plan;
    plan.format = std::string(format_of(params));
    plan.params = params;
    plan.precision = Precision::f32_acc64;
    test::check_compiles(compiler::generate_device_block(plan, profile, a.nrows, a.ncols, a.nnz()));
  }
}
