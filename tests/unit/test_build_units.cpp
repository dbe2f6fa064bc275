// The GPU build's units compiled by nvcc into the library, checked without a GPU: each fatbin
// holds SASS for every architecture the library was built for and the last one's PTX, every
// entry point the unit's source defines (and so every one its loader looks up), and the rule
// that picks the embedded image over NVRTC.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "build_units.hpp"
#include "fatbin_support.hpp"
#include "spmvc/compiler/device_bro.hpp"
#include "spmvc/compiler/device_build.hpp"
#include "spmvc/compiler/device_ell.hpp"
#include "spmvc/error.hpp"

using namespace spmvc;
using namespace spmvc::runtime;
using spmvc::test::elf_functions;
using spmvc::test::fatbin_entries;
using spmvc::test::FatbinEntry;

namespace {

// Every extern "C" kernel a unit's source defines: the name after each `__launch_bounds__(...)`.
std::vector<std::string> defined_entries(const std::string& source) {
  std::vector<std::string> out;
  const std::string_view marker = "extern \"C\" __global__ void __launch_bounds__(";
  for (std::size_t at = source.find(marker); at != std::string::npos;
       at = source.find(marker, at + 1)) {
    std::size_t depth = 1, i = at + marker.size();
    for (; i < source.size() && depth > 0; ++i) {
      if (source[i] == '(') ++depth;
      if (source[i] == ')') --depth;
    }
    while (i < source.size() && (source[i] == ' ' || source[i] == '\n')) ++i;
    const std::size_t end = source.find('(', i);
    REQUIRE(end != std::string::npos);
    out.push_back(source.substr(i, end - i));
  }
  return out;
}

struct Unit {
  BuildUnit unit;
  KernelSource source;
  std::vector<std::string> loaded;  // what runtime's loader for the unit looks up
};

std::vector<Unit> units() {
  using namespace spmvc::codegen;
  return {
      {BuildUnit::device_csr,
       device_csr_source(),
       {kRowStatsEntry, kStreamCountEntry, kStreamScanEntry, kStreamFillEntry, kCodeValuesEntry,
        kNarrowValuesEntry, kNarrowSlicesEntry, kNarrowColumnsEntry}},
      {BuildUnit::device_ell,
       device_ell_source(),
       {kSliceLongestEntry, kEllFillEntry, kSellSortEntry, kSellWidthsEntry, kSellFillEntry,
        kHybTailsEntry, kHybCooFillEntry, kScanPartialsEntry, kScanTopEntry, kScanApplyEntry}},
      {BuildUnit::device_bro,
       device_bro_source(),
       {kBroInspectEntry, kBroEllColumnsEntry, kBroEllWidthsEntry, kBroEllSliceEntry,
        kBroEllFill32Entry, kBroEllFill64Entry, kBroCooCountsEntry, kBroCooSelectEntry,
        kBroCooWidthsEntry, kBroCooFill32Entry, kBroCooFill64Entry}},
  };
}

}  // namespace

TEST_CASE("build units: each fatbin holds the build's architectures and every entry point") {
  const std::vector<int> archs = build_unit_archs();
  if (build_unit_fatbin(BuildUnit::device_csr).empty()) {
    // Built with SPMVC_NVCC_BUILD_UNITS off: no unit, no architecture, NVRTC for every GPU.
    CHECK(archs.empty());
    CHECK(build_unit_fatbin(BuildUnit::device_bro).empty());
    return;
  }
  REQUIRE_FALSE(archs.empty());
  for (const Unit& u : units()) {
    CAPTURE(u.source.file_name);
    const std::vector<std::string> defined = defined_entries(u.source.source);
    REQUIRE(defined.size() >= u.loaded.size());
    for (const std::string& name : u.loaded)
      CHECK_MESSAGE(std::find(defined.begin(), defined.end(), name) != defined.end(), name);
    std::set<int> sass;
    int ptx = 0;
    for (const FatbinEntry& e : fatbin_entries(build_unit_fatbin(u.unit))) {
      if (e.kind == 2) {
        sass.insert(static_cast<int>(e.arch));
        const std::set<std::string> functions = elf_functions(e.payload);
        for (const std::string& name : defined) CHECK_MESSAGE(functions.count(name), name);
      } else {
        CHECK(e.kind == 1);
        ptx = static_cast<int>(e.arch);
        const std::string text(reinterpret_cast<const char*>(e.payload.data()), e.payload.size());
        for (const std::string& name : defined)
          CHECK_MESSAGE(text.find(".entry " + name) != std::string::npos, name);
      }
    }
    CHECK(sass == std::set<int>(archs.begin(), archs.end()));
    CHECK(ptx == archs.back());
  }
}

TEST_CASE("build units: the embedded image serves the GPUs its SASS or PTX runs on") {
  const std::vector<int> sm90 = {90};
  CHECK(embedded_image_serves(sm90, 90));   // its own SASS
  CHECK(embedded_image_serves(sm90, 100));  // the driver compiles the compute_90 PTX
  CHECK(embedded_image_serves(sm90, 120));
  CHECK_FALSE(embedded_image_serves(sm90, 89));  // older: NVRTC
  CHECK_FALSE(embedded_image_serves(sm90, 80));
  const std::vector<int> two = {80, 90};
  CHECK(embedded_image_serves(two, 80));
  CHECK(embedded_image_serves(two, 86));  // sm_80 SASS runs on sm_86
  CHECK_FALSE(embedded_image_serves(two, 75));
  CHECK_FALSE(embedded_image_serves({}, 90));  // no embedded units: NVRTC
  // The running library's own: an H100 or H200 (sm_90) loads it without NVRTC.
  if (!build_unit_fatbin(BuildUnit::device_bro).empty())
    CHECK(embedded_image_serves(build_unit_archs(), 90));
}

TEST_CASE("build units: SM numbers from DeviceInfo::arch") {
  CHECK(sm_number("sm_90") == 90);
  CHECK(sm_number("sm_100") == 100);
  CHECK(sm_number("sm_90a") == 90);
  CHECK_THROWS_AS(sm_number("compute_90"), InternalError);
  CHECK_THROWS_AS(sm_number("sm_"), InternalError);
}
