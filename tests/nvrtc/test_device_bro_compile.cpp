// The BRO device-build unit compiles with NVRTC to an sm_90 CUBIN, every entry point present;
// and the kernels of bro_ell, bro_coo and bro_hyb generated from what the GPU build hands the
// host (sizes, the width table or pattern an ELL part bakes, a COO part's entry count) are the
// ones the host pipeline generates from the encoded matrix, in every width-table mode and value
// coding (8- and 16-bit tables included).
#include <doctest/doctest.h>

#include "codegen/codegen.hpp"
#include "formats/bro_ell/bro_ell_codec.hpp"
#include "formats/values/values.hpp"
#include "nvrtc_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_bro.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;

TEST_CASE("device bro: the build unit compiles, every entry point in the image") {
  const KernelSource k = codegen::device_bro_source();
  test::check_compiles(k);
  const runtime::Cubin cubin = runtime::compile_cubin(k, "sm_90");
  for (const char* entry :
       {codegen::kBroInspectEntry, codegen::kBroEllColumnsEntry, codegen::kBroEllWidthsEntry,
        codegen::kBroEllSliceEntry, codegen::kBroEllFill32Entry, codegen::kBroEllFill64Entry,
        codegen::kBroCooCountsEntry, codegen::kBroCooSelectEntry, codegen::kBroCooWidthsEntry,
        codegen::kBroCooFill32Entry, codegen::kBroCooFill64Entry}) {
    CAPTURE(entry);
    CHECK(cubin.log.find(entry) != std::string::npos);
  }
}

TEST_CASE("device bro: bro_ell's kernel from the GPU build is the host pipeline's") {
  const CsrMatrix a = gen::from_spec("stencil2d:n=64");  // two distinct values: codes apply
  const Profile profile = inspect(a, InspectDepth::rows);
  const test::HostDeviceCsr arrays(a);
  const DeviceCsr& view = arrays.view;
  for (Precision p : {Precision::f64, Precision::f32}) {
    for (int tables : {0, 1, 2}) {
      for (int coding : {formats::kValuesPlain, formats::kValuesTable8, formats::kValuesF32,
                         formats::kValuesTable16}) {
        if (coding == formats::kValuesF32 && p != Precision::f64) continue;
        BroEllParams params;
        params.tables = tables;
        params.values = coding;
        if (tables == 2) params.prefetch = false;
        CAPTURE(describe(params));
        CAPTURE(to_string(p));
        Options o;
        o.precision = p;
        o.params = params;
        const Plan plan = compiler::plan_device_csr(view, profile, o, BuildTarget{});
        const Encoded encoded = compiler::encode(a, plan);
        const KernelSource host = codegen::generate(plan, encoded, profile);
        std::vector<std::uint8_t> baked;
        if (tables == 1) {
          const EncodedArray& w = encoded.array("widths");
          for (std::int64_t i = 0; i < w.count(); ++i)
            baked.push_back(static_cast<std::uint8_t>(w.bytes[static_cast<std::size_t>(i)]));
        } else if (tables == 2) {
          for (int b : formats::bro::baked_pattern(encoded, ""))
            baked.push_back(static_cast<std::uint8_t>(b));
        }
        const KernelSource device = compiler::generate_device_bro_ell(plan, profile, view, baked);
        CHECK(device.source == host.source);
        CHECK(device.grid == host.grid);
        CHECK(device.kernel_name == host.kernel_name);
        REQUIRE(device.params.size() == host.params.size());
        for (std::size_t i = 0; i < device.params.size(); ++i)
          CHECK(device.params[i].name == host.params[i].name);
        test::check_compiles(device);
      }
    }
  }
}

TEST_CASE("device bro: bro_coo's kernel from the GPU build is the host pipeline's") {
  const CsrMatrix a = gen::from_spec("stencil2d:n=64");
  const Profile profile = inspect(a, InspectDepth::rows);
  const test::HostDeviceCsr arrays(a);
  const DeviceCsr& view = arrays.view;
  for (Precision p : {Precision::f64, Precision::f32}) {
    for (int coding : {formats::kValuesPlain, formats::kValuesTable8, formats::kValuesTable16}) {
      for (int symbol_bits : {32, 64}) {
        BroCooParams params;
        params.values = coding;
        params.symbol_bits = symbol_bits;
        CAPTURE(describe(params));
        Options o;
        o.precision = p;
        o.params = params;
        const Plan plan = compiler::plan_device_csr(view, profile, o, BuildTarget{});
        const Encoded encoded = compiler::encode(a, plan);
        const KernelSource host = codegen::generate(plan, encoded, profile);
        const KernelSource device = compiler::generate_device_bro_coo(plan, profile, view, a.nnz());
        CHECK(device.source == host.source);
        CHECK(device.grid == host.grid);
        REQUIRE(device.pre_launches.size() == host.pre_launches.size());
        REQUIRE(device.params.size() == host.params.size());
        for (std::size_t i = 0; i < device.params.size(); ++i)
          CHECK(device.params[i].name == host.params[i].name);
        test::check_compiles(device);
      }
    }
  }
}

TEST_CASE("device bro: bro_hyb's kernel from the GPU build is the host pipeline's") {
  const CsrMatrix a = gen::from_spec("stencil2d:n=64");
  const Profile profile = inspect(a, InspectDepth::rows);
  const test::HostDeviceCsr arrays(a);
  const DeviceCsr& view = arrays.view;
  for (int tables : {0, 1, 2}) {
    for (int coding : {formats::kValuesPlain, formats::kValuesTable8, formats::kValuesTable16}) {
      BroHybParams params;
      params.width = 3;
      params.tables = tables;
      params.values = coding;
      CAPTURE(describe(params));
      Options o;
      o.params = params;
      const Plan plan = compiler::plan_device_csr(view, profile, o, BuildTarget{});
      const Encoded encoded = compiler::encode(a, plan);
      const KernelSource host = codegen::generate(plan, encoded, profile);
      std::vector<std::uint8_t> baked;
      if (tables == 1) {
        const EncodedArray& w = encoded.array("ell_widths");
        for (std::int64_t i = 0; i < w.count(); ++i)
          baked.push_back(static_cast<std::uint8_t>(w.bytes[static_cast<std::size_t>(i)]));
      } else if (tables == 2) {
        for (int b : formats::bro::baked_pattern(encoded, "ell_"))
          baked.push_back(static_cast<std::uint8_t>(b));
      }
      const std::int64_t entries =
          *reinterpret_cast<const std::int64_t*>(encoded.array("coo_count").bytes.data());
      const KernelSource device =
          compiler::generate_device_bro_hyb(plan, profile, view, baked, entries);
      CHECK(device.source == host.source);
      CHECK(device.grid == host.grid);
      REQUIRE(device.post_launches.size() == host.post_launches.size());
      CHECK(device.post_launches.front().grid == host.post_launches.front().grid);
      test::check_compiles(device);
    }
  }
}
