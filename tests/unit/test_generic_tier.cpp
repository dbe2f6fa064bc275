// The generic tier without a GPU: the fatbin nvcc built into the library holds sm_90 SASS and
// compute_90 PTX with every entry point the runtime looks up, the lanes-per-row rule, and
// SPMVC_TIERED / Options::tiered, and SPMVC_EARLY_LAUNCH.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "device.hpp"
#include "fatbin_support.hpp"
#include "generic_tier.hpp"
#include "spmvc/error.hpp"
#include "test_support.hpp"
#include "tiers.hpp"

using namespace spmvc;
using namespace spmvc::runtime;
using spmvc::test::elf_functions;
using spmvc::test::fatbin_entries;
using spmvc::test::FatbinEntry;

namespace {

std::vector<std::string> all_entries() {
  std::vector<std::string> out;
  for (int t = 1; t <= 32; t *= 2)
    for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64})
      for (bool offsets64 : {false, true}) out.push_back(generic_csr_entry(t, p, offsets64));
  return out;
}

}  // namespace

TEST_CASE("generic tier: entry point names") {
  CHECK(generic_csr_entry(1, Precision::f64, false) == "spmvc_generic_csr_t1_f64_i32");
  CHECK(generic_csr_entry(32, Precision::f32_acc64, true) == "spmvc_generic_csr_t32_f32acc64_i64");
  CHECK(generic_csr_entry(4, Precision::f32, true) == "spmvc_generic_csr_t4_f32_i64");
  CHECK(all_entries().size() == 36);
}

TEST_CASE("generic tier: lanes per row follow the mean row length, one to a warp") {
  CHECK(generic_threads_per_row(0, 0) == 1);
  CHECK(generic_threads_per_row(0, 10) == 1);
  CHECK(generic_threads_per_row(10, 10) == 1);
  CHECK(generic_threads_per_row(11, 10) == 2);    // mean 1.1 rounds up to 2
  CHECK(generic_threads_per_row(50, 10) == 8);    // mean 5
  CHECK(generic_threads_per_row(270, 10) == 32);  // mean 27 (a 27-point stencil)
  CHECK(generic_threads_per_row(std::int64_t{1} << 40, 10) == 32);
}

TEST_CASE("generic tier: the fatbin holds sm_90 SASS and PTX with every entry point") {
  const std::span<const unsigned char> fatbin = generic_csr_fatbin();
  const std::vector<FatbinEntry> entries = fatbin_entries(fatbin);
  int elf_images = 0, ptx_images = 0;
  for (const FatbinEntry& e : entries) {
    CAPTURE(e.kind);
    CHECK(e.arch == 90);
    if (e.kind == 2) {
      ++elf_images;
      const std::set<std::string> functions = elf_functions(e.payload);
      for (const std::string& name : all_entries()) {
        CAPTURE(name);
        CHECK(functions.count(name) == 1);
      }
    } else if (e.kind == 1) {
      ++ptx_images;
      const std::string ptx(e.payload.begin(), e.payload.end());
      CHECK(ptx.find(".target sm_90") != std::string::npos);
      for (const std::string& name : all_entries()) {
        CAPTURE(name);
        CHECK(ptx.find(".entry " + name + "(") != std::string::npos);
      }
    }
  }
  CHECK(elf_images == 1);
  CHECK(ptx_images == 1);
}

namespace {

// With `variable` set to `value`, `read` throws an InputError naming the variable and the value.
template <typename F>
void check_refused(const char* variable, const char* value, F read) {
  spmvc::test::EnvVar env(variable, value);
  try {
    read();
    FAIL(variable << "=" << value << " was accepted");
  } catch (const InputError& e) {
    CHECK(e.source() == variable);
    CHECK(std::string(e.what()).find("'" + std::string(value) + "'") != std::string::npos);
  }
}

}  // namespace

TEST_CASE("tiered: Options::tiered when set, else SPMVC_TIERED, else on") {
  Options o;
  {
    spmvc::test::EnvVar env("SPMVC_TIERED", nullptr);
    CHECK(tiered(o));
    o.tiered = false;
    CHECK_FALSE(tiered(o));
    o.tiered.reset();
    // A deterministic compile never tiers, even when asked to: the tiers round differently.
    Options deterministic;
    deterministic.deterministic = true;
    deterministic.tiered = true;
    CHECK_FALSE(tiered(deterministic));
  }
  for (const char* off : {"0", "off", "false"}) {
    spmvc::test::EnvVar env("SPMVC_TIERED", off);
    CHECK_FALSE(tiered(o));
    Options on;
    on.tiered = true;
    CHECK(tiered(on));
  }
  for (const char* on : {"1", "on", "true", ""}) {
    spmvc::test::EnvVar env("SPMVC_TIERED", on);
    CHECK(tiered(o));
  }
  check_refused("SPMVC_TIERED", "maybe", [&] { (void)tiered(o); });
}

TEST_CASE(
    "early launches: sm_90 and newer unless SPMVC_EARLY_LAUNCH is off; a bad value is named") {
  DeviceInfo hopper, ampere;
  hopper.cc_major = 9;
  ampere.cc_major = 8;
  {
    spmvc::test::EnvVar env("SPMVC_EARLY_LAUNCH", nullptr);
    CHECK(early_launch(hopper));
    CHECK_FALSE(early_launch(ampere));
  }
  for (const char* off : {"0", "off", "false"}) {
    spmvc::test::EnvVar env("SPMVC_EARLY_LAUNCH", off);
    CHECK_FALSE(early_launch(hopper));
  }
  for (const char* on : {"1", "on", "true", ""}) {
    spmvc::test::EnvVar env("SPMVC_EARLY_LAUNCH", on);
    CHECK(early_launch(hopper));
    CHECK_FALSE(early_launch(ampere));
  }
  for (const DeviceInfo& device : {hopper, ampere})
    check_refused("SPMVC_EARLY_LAUNCH", "sometimes", [&] { (void)early_launch(device); });
}
