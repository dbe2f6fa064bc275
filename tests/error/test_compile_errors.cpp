// NVRTC rejections reach the caller as CompileError with the log, the options and a dump of the
// source that reproduces them.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "kernel_cache.hpp"
#include "nvrtc_compiler.hpp"
#include "spmvc/error.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace spmvc;
using namespace spmvc::runtime;

namespace {

// A TempDir tagged for this file's tests.
struct TempDir : spmvc::test::TempDir {
  TempDir() : spmvc::test::TempDir("dump") {}
};
using spmvc::test::EnvVar;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

KernelSource broken_source() {
  KernelSource src;
  src.kernel_name = "spmvc_test_broken";
  src.file_name = "spmvc_test_broken.cu";
  src.headers = {
      {"spmvc/helper.cuh", "#pragma once\n__device__ inline int helper() { return 1; }\n"}};
  src.source =
      "#include \"spmvc/helper.cuh\"\n"
      "extern \"C\" __global__ void spmvc_test_broken(int* y) {\n"
      "  y[threadIdx.x] = helper() + undeclared_thing;\n"
      "}\n";
  src.options = {"-DSPMVC_TEST=1"};
  return src;
}

// Compiles `src` expecting failure and returns the error.
CompileError expect_compile_error(const KernelSource& src, const std::string& arch = "sm_90") {
  try {
    (void)compile_cubin(src, arch);
  } catch (const CompileError& e) {
    return e;
  }
  FAIL("compile_cubin did not throw CompileError");
  return CompileError("", {}, "", "");
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST_CASE("a syntax error gives CompileError with log, options and a dump in SPMVC_DUMP_DIR") {
  TempDir tmp;
  EnvVar dump("SPMVC_DUMP_DIR", tmp.path().c_str());
  const KernelSource src = broken_source();
  const CompileError e = expect_compile_error(src);

  CHECK(e.kernel_name() == "spmvc_test_broken");
  CHECK(e.log().find("undeclared_thing") != std::string::npos);
  CHECK(e.log().find("spmvc_test_broken.cu(3)") != std::string::npos);  // file and line
  CHECK(contains(e.options(), "-arch=sm_90"));
  CHECK(contains(e.options(), "-DSPMVC_TEST=1"));
  CHECK(contains(e.options(), "--ptxas-options=-v"));
  CHECK(std::string(e.what()).find("spmvc_test_broken") != std::string::npos);

  REQUIRE_FALSE(e.dump_path().empty());
  const fs::path dumped(e.dump_path());
  CHECK(dumped == tmp.path() / "spmvc_test_broken.cu");
  CHECK(read_text(dumped) == src.source);
  CHECK(read_text(tmp.path() / "spmvc" / "helper.cuh") == src.headers[0].second);
  const std::string notes = read_text(dumped.string() + ".log");
  CHECK(notes.find("-arch=sm_90") != std::string::npos);
  CHECK(notes.find("undeclared_thing") != std::string::npos);
}

TEST_CASE("without SPMVC_DUMP_DIR the dump goes to <temp>/spmvc-dump") {
  TempDir tmp;
  EnvVar dump("SPMVC_DUMP_DIR", nullptr);
  EnvVar tmpdir("TMPDIR", tmp.path().c_str());
  const CompileError e = expect_compile_error(broken_source());
  const fs::path expected = tmp.path() / "spmvc-dump" / "spmvc_test_broken.cu";
  CHECK(fs::path(e.dump_path()) == expected);
  CHECK(fs::is_regular_file(expected));
}

TEST_CASE("an unwritable dump directory leaves dump_path empty but keeps the error") {
  TempDir tmp;
  const fs::path file = tmp.path() / "not-a-dir";
  std::ofstream(file) << "x";
  EnvVar dump("SPMVC_DUMP_DIR", file.c_str());
  const CompileError e = expect_compile_error(broken_source());
  CHECK(e.dump_path().empty());
  CHECK(e.log().find("undeclared_thing") != std::string::npos);
}

TEST_CASE("dumped headers stay inside the dump directory") {
  TempDir tmp;
  const fs::path dump_dir = tmp.path() / "dump";
  EnvVar dump("SPMVC_DUMP_DIR", dump_dir.c_str());
  KernelSource src = broken_source();
  src.headers.push_back({"../escaped.cuh", "// unused\n"});
  const CompileError e = expect_compile_error(src);
  CHECK_FALSE(fs::exists(tmp.path() / "escaped.cuh"));
  CHECK(fs::is_regular_file(dump_dir / "escaped.cuh"));
}

TEST_CASE("an option NVRTC rejects is a CompileError naming it") {
  TempDir tmp;
  EnvVar dump("SPMVC_DUMP_DIR", tmp.path().c_str());
  KernelSource src = broken_source();
  src.source = "extern \"C\" __global__ void spmvc_test_broken(int* y) { y[0] = 1; }\n";
  src.options = {"--no-such-option-spmvc"};
  const CompileError e = expect_compile_error(src);
  CHECK(e.log().find("no-such-option-spmvc") != std::string::npos);
  CHECK(contains(e.options(), "--no-such-option-spmvc"));
}

TEST_CASE("the kernel cache passes compile errors through and caches nothing") {
  TempDir tmp;
  EnvVar dump("SPMVC_DUMP_DIR", (tmp.path() / "dump").c_str());
  KernelCache cache(tmp.path() / "cache");
  CHECK_THROWS_AS(cache.get(broken_source(), "sm_90"), CompileError);
  CHECK_FALSE(fs::exists(cache.entry_path(KernelCache::key(broken_source(), "sm_90"))));
  CHECK_THROWS_AS(cache.get(broken_source(), "sm_90"), CompileError);
}
