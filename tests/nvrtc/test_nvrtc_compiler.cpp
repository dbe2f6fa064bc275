// NVRTC to CUBIN without a GPU: images, ptxas resource parsing, in-memory headers.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "nvrtc_compiler.hpp"
#include "spmvc/bench/bandwidth.hpp"
#include "spmvc/error.hpp"
#include "test_kernels.hpp"

namespace fs = std::filesystem;
using namespace spmvc;
using namespace spmvc::runtime;
using namespace spmvc::bench;

namespace {

using spmvc::test::axpy_source;

bool is_elf(const std::vector<char>& image) {
  return image.size() > 4 && image[0] == '\x7f' && image[1] == 'E' && image[2] == 'L' &&
         image[3] == 'F';
}

bool image_contains(const std::vector<char>& image, std::string_view text) {
  return std::search(image.begin(), image.end(), text.begin(), text.end()) != image.end();
}

}  // namespace

TEST_CASE("arch names and NVRTC facts") {
  CHECK(arch_name(9, 0) == "sm_90");
  CHECK(arch_name(8, 6) == "sm_86");
  CHECK(arch_name(12, 1) == "sm_121");

  const std::string v = nvrtc_version();
  CHECK(v.find('.') != std::string::npos);
  CHECK(std::stoi(v) >= 12);

  const std::vector<int> archs = nvrtc_supported_archs();
  REQUIRE_FALSE(archs.empty());
  CHECK(std::find(archs.begin(), archs.end(), 90) != archs.end());
  CHECK(std::is_sorted(archs.begin(), archs.end()));
}

TEST_CASE("a small kernel compiles to an sm_90 CUBIN with its resources parsed") {
  const Cubin c = compile_cubin(axpy_source(), "sm_90");
  CHECK(is_elf(c.image));
  CHECK(image_contains(c.image, "spmvc_test_axpy"));
  CHECK(c.log.find("ptxas") != std::string::npos);
  CHECK(c.registers > 0);
  CHECK(c.registers <= 255);
  CHECK(c.spill_store_bytes == 0);
  CHECK(c.spill_load_bytes == 0);
  CHECK(c.stack_bytes == 0);
}

TEST_CASE("the same kernel compiles for the oldest and newest supported architectures") {
  const std::vector<int> archs = nvrtc_supported_archs();
  REQUIRE_FALSE(archs.empty());
  for (const int a : {archs.front(), archs.back()}) {
    CAPTURE(a);
    const Cubin c = compile_cubin(axpy_source(), arch_name(a / 10, a % 10));
    CHECK(is_elf(c.image));
    CHECK(c.registers > 0);
  }
}

TEST_CASE("parse_ptxas_log reads registers, spills and stack, taking the worst function") {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'k1' for 'sm_90'\n"
      "ptxas info    : Function properties for k1\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 32 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'k2' for 'sm_90'\n"
      "ptxas info    : Function properties for k2\n"
      "ptxas         .     48 bytes stack frame, 40 bytes spill stores, 36 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 0 barriers, 376 bytes cmem[0]\n"
      "ptxas info    : Compile time = 1.551 ms\n";
  Cubin c;
  parse_ptxas_log(log, c);
  CHECK(c.registers == 255);
  CHECK(c.stack_bytes == 48);
  CHECK(c.spill_store_bytes == 40);
  CHECK(c.spill_load_bytes == 36);

  Cubin one;
  parse_ptxas_log(
      "ptxas info    : Used 17 registers, used 0 barriers, 360 bytes cmem[0]\n"
      "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads",
      one);
  CHECK(one.registers == 17);
  CHECK(one.stack_bytes == 8);
  CHECK(one.spill_store_bytes == 4);
  CHECK(one.spill_load_bytes == 12);

  // A log without resource lines (ptxas -v not given) leaves every field unknown.
  Cubin none;
  none.registers = 5;
  parse_ptxas_log("ptxas info    : 0 bytes gmem\n", none);
  CHECK(none.registers == -1);
  CHECK(none.spill_store_bytes == -1);
  CHECK(none.spill_load_bytes == -1);
  CHECK(none.stack_bytes == -1);
}

TEST_CASE("in-memory headers are found by their include names") {
  KernelSource src;
  src.kernel_name = "spmvc_test_header";
  src.file_name = "spmvc_test_header.cu";
  src.headers = {
      {"spmvc/scale.cuh",
       "#pragma once\n#include \"spmvc/factor.cuh\"\n"
       "__device__ inline double scale(double v) { return kFactor * v; }\n"},
      {"spmvc/factor.cuh", "#pragma once\nconstexpr double kFactor = 3.0;\n"},
  };
  src.source =
      "#include \"spmvc/scale.cuh\"\n"
      "extern \"C\" __global__ void spmvc_test_header(double* y) { y[threadIdx.x] = "
      "scale(y[threadIdx.x]); }\n";
  src.options = {"-DSPMVC_UNUSED=1"};
  const Cubin c = compile_cubin(src, "sm_90");
  CHECK(is_elf(c.image));
  CHECK(image_contains(c.image, "spmvc_test_header"));

  // Without the headers the same source must fail, so the test above proves they were used.
  // The failure's dump goes to a private directory, not the shared temporary one.
  const fs::path dump =
      fs::temp_directory_path() / ("spmvc-test-nvrtc-" + std::to_string(::getpid()));
  ::setenv("SPMVC_DUMP_DIR", dump.c_str(), 1);
  src.headers.clear();
  CHECK_THROWS_AS(compile_cubin(src, "sm_90"), CompileError);
  ::unsetenv("SPMVC_DUMP_DIR");
  CHECK(fs::is_regular_file(dump / "spmvc_test_header.cu"));
  fs::remove_all(dump);
}

TEST_CASE("compile_cubin wants a real architecture") {
  CHECK_THROWS_AS(compile_cubin(axpy_source(), "compute_90"), InputError);
  CHECK_THROWS_AS(compile_cubin(axpy_source(), ""), InputError);
}

TEST_CASE("the bandwidth probe kernels compile for sm_90") {
  const Cubin c = compile_cubin(bandwidth_kernel_source(), "sm_90");
  CHECK(is_elf(c.image));
  CHECK(image_contains(c.image, "spmvc_read_bandwidth"));
  CHECK(image_contains(c.image, "spmvc_copy_bandwidth"));
  CHECK(c.registers > 0);
  CHECK(c.spill_store_bytes == 0);
  CHECK(c.spill_load_bytes == 0);
}
