// The ell-family device-build unit (ell, sell and hyb built from device arrays, and the per-slice
// padding pass) compiles with NVRTC to an sm_90 CUBIN without spills, every entry point in the
// image; and the ell-family kernels generated from the device build's sizes compile too.
#include <doctest/doctest.h>

#include "nvrtc_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_ell.hpp"
#include "spmvc/generators.hpp"

using namespace spmvc;

TEST_CASE("device ell: the build unit compiles without spills, every entry point in the image") {
  const KernelSource k = codegen::device_ell_source();
  test::check_compiles(k);
  const runtime::Cubin cubin = runtime::compile_cubin(k, "sm_90");
  for (const char* entry :
       {codegen::kSliceLongestEntry, codegen::kEllFillEntry, codegen::kSellSortEntry,
        codegen::kSellWidthsEntry, codegen::kSellFillEntry, codegen::kHybTailsEntry,
        codegen::kHybCooFillEntry, codegen::kScanPartialsEntry, codegen::kScanTopEntry,
        codegen::kScanApplyEntry}) {
    CAPTURE(entry);
    CHECK(cubin.log.find(entry) != std::string::npos);
  }
  // Deterministic: one text, so one cache entry per architecture.
  CHECK(codegen::device_ell_source().source == k.source);
}

TEST_CASE("device ell: the kernels generated from the device build's sizes compile") {
  const CsrMatrix a = gen::rmat(10, 8);
  const Profile profile = inspect(a, InspectDepth::rows);
  EllParams e;
  e.width = static_cast<int>(profile.row_max);
  e.threads_per_row = 4;
  HybParams h;
  h.width = 7;
  h.row_lengths = true;
  SellParams s;
  s.slice_height = 16;
  s.sigma = 256;
  for (const FormatParams& params : {FormatParams{e}, FormatParams{h}, FormatParams{s}}) {
    Plan plan;
    plan.format = std::string(format_of(params));
    plan.params = params;
    plan.precision = Precision::f32_acc64;
    test::check_compiles(compiler::generate_device_ell(plan, profile, 64, 1000));
  }
}
