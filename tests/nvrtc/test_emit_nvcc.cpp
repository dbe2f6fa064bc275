// `spmvc emit` output builds with plain nvcc, as its README says. No GPU is needed to compile;
// the gpu-check script runs the built harness on the device.
#include <doctest/doctest.h>

#include <unistd.h>
#include <array>
#include <cstdio>

#include "golden_plans.hpp"
#include "spmvc/compiler/emit.hpp"

namespace fs = std::filesystem;
using namespace spmvc;

namespace {

// Runs `cmd` and returns (exit status, combined output).
std::pair<int, std::string> run(const std::string& cmd) {
  std::string out;
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), pipe) != nullptr) out += buf.data();
  return {pclose(pipe), out};
}

}  // namespace

TEST_CASE("an emitted directory builds with plain nvcc") {
  const fs::path nvcc = "/usr/local/cuda/bin/nvcc";
  REQUIRE_MESSAGE(fs::exists(nvcc), "the CUDA toolkit is part of the build requirements");
  for (Precision p : {Precision::f64, Precision::f32}) {
    const CsrMatrix a = gen::from_spec("stencil27:n=6");
    const Profile prof = inspect(a);
    compiler::PlanOptions o;
    o.format = "csr";  // these tests are about the csr format
    o.precision = p;
    const Plan plan = compiler::make_plan(prof, o);
    const Encoded enc = compiler::encode(a, plan);
    const KernelSource src = codegen::generate(plan, enc, prof);
    const fs::path dir =
        fs::temp_directory_path() /
        ("spmvc-test-nvcc-" + std::to_string(::getpid()) + std::string(to_string(p)));
    fs::remove_all(dir);
    codegen::emit(plan, enc, src, std::vector<double>(static_cast<std::size_t>(a.nrows)), dir);
    const auto [status, log] = run("cd " + dir.string() + " && " + nvcc.string() +
                                   " -O3 -std=c++17 -arch=sm_90 -I. harness.cu -o harness");
    CAPTURE(log);
    CHECK(status == 0);
    CHECK(fs::exists(dir / "harness"));
    fs::remove_all(dir);
  }
}
