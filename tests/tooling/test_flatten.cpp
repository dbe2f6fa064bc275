// Flattening: every golden plan prints back as one template-free CUDA file that NVRTC compiles,
// and a few are kept byte for byte under tests/golden/expected/flat/ (regenerate with
// SPMVC_UPDATE_GOLDEN=1 ctest -L tooling).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <tuple>

#include "golden_plans.hpp"
#include "nvrtc_compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/tooling/flatten.hpp"

namespace fs = std::filesystem;

namespace {

// The bytes of ELF64 section `name` in a CUBIN (empty when absent): the kernel's machine code is
// `.text.<kernel>`, while the rest of the file carries build details that differ between units.
std::string elf_section(const std::vector<char>& elf, const std::string& name) {
  const auto read = [&](std::size_t at, std::size_t bytes) {
    std::uint64_t v = 0;
    std::memcpy(&v, elf.data() + at, bytes);  // little-endian host and file
    return static_cast<std::size_t>(v);
  };
  const std::size_t shoff = read(0x28, 8), shentsize = read(0x3A, 2), shnum = read(0x3C, 2);
  const std::size_t strtab = read(shoff + read(0x3E, 2) * shentsize + 0x18, 8);
  for (std::size_t i = 0; i < shnum; ++i) {
    const std::size_t sh = shoff + i * shentsize;
    if (name == elf.data() + strtab + read(sh, 4)) {
      return std::string(elf.data() + read(sh + 0x18, 8), read(sh + 0x20, 8));
    }
  }
  return {};
}

// The golden plans with plain values: flattening does not print value-coding accessors.
std::vector<spmvc::test::GoldenPlan> plain_golden_plans() {
  std::vector<spmvc::test::GoldenPlan> plans = spmvc::test::golden_plans();
  for (auto& g : plans) g.options.value_coding = false;
  return plans;
}

}  // namespace

TEST_CASE("a value-coded unit is refused with a message that says how to flatten it") {
  spmvc::test::GoldenPlan g = spmvc::test::golden_plans()[0];
  const spmvc::KernelSource src = spmvc::test::generate_golden(g);
  REQUIRE(src.kernel_name.find("_vt8") != std::string::npos);
  CHECK_THROWS_WITH_AS(spmvc::tooling::flatten(src), doctest::Contains("--no-value-coding"),
                       spmvc::InputError);
}

TEST_CASE("every golden plan flattens to template-free source that NVRTC compiles") {
  for (const auto& g : plain_golden_plans()) {
    CAPTURE(g.name);
    const spmvc::KernelSource src = spmvc::test::generate_golden(g);
    const spmvc::KernelSource flat = spmvc::tooling::flatten(src);
    CAPTURE(flat.source);
    CHECK(flat.headers.empty());
    CHECK(flat.kernel_name == src.kernel_name);
    CHECK_FALSE(std::regex_search(flat.source, std::regex(R"(\btemplate\b)")));
    CHECK(flat.source.find("spmvc::") == std::string::npos);
    CHECK(flat.source.find("#include") == std::string::npos);
    CHECK(flat.source.find("(enable)") == std::string::npos);
    CHECK(flat.source.find("if constexpr") == std::string::npos);
    CHECK(std::regex_search(flat.source,
                            std::regex(R"(extern "C" __global__ void __launch_bounds__\(256\)\s+)" +
                                       src.kernel_name + "\\(")));
    const spmvc::runtime::Cubin cubin = spmvc::runtime::compile_cubin(flat, "sm_90");
    CHECK(cubin.log.find(src.kernel_name) != std::string::npos);
    CHECK(cubin.spill_store_bytes == 0);
    // Same code spelled out: ptxas produces the same machine code, byte for byte.
    const spmvc::runtime::Cubin reference = spmvc::runtime::compile_cubin(src, "sm_90");
    CHECK(cubin.registers == reference.registers);
    const std::string text = elf_section(cubin.image, ".text." + src.kernel_name);
    CHECK(text.size() > 64);
    CHECK(text == elf_section(reference.image, ".text." + src.kernel_name));
  }
}

TEST_CASE("variants outside the golden set flatten to the same machine code") {
  // f64 with V=4 takes load_vector's recursive branch (two 16-byte loads per lane).
  for (auto [p, v, o64] : {std::tuple{spmvc::Precision::f64, 4, false},
                           std::tuple{spmvc::Precision::f32_acc64, 4, true},
                           std::tuple{spmvc::Precision::f64, 2, true}}) {
    spmvc::test::GoldenPlan g{"variant", "stencil27:n=5", {}};
    g.options.precision = p;
    g.options.csr = spmvc::test::csr_params(16, 2, true, o64, v);
    const spmvc::KernelSource src = spmvc::test::generate_golden(g);
    CAPTURE(src.kernel_name);
    const spmvc::KernelSource flat = spmvc::tooling::flatten(src);
    const std::string section = ".text." + src.kernel_name;
    const std::string text =
        elf_section(spmvc::runtime::compile_cubin(flat, "sm_90").image, section);
    CHECK(text.size() > 64);
    CHECK(text == elf_section(spmvc::runtime::compile_cubin(src, "sm_90").image, section));
  }
}

TEST_CASE("--inline-helpers: one function, the same machine code as the template kernel") {
  std::vector<spmvc::test::GoldenPlan> plans = plain_golden_plans();
  spmvc::test::GoldenPlan recursive{"f64_v4", "stencil27:n=5", {}};  // load_vector recursion
  recursive.options.csr = spmvc::test::csr_params(16, 2, true, false, 4);
  plans.push_back(recursive);
  spmvc::tooling::FlattenOptions inline_all;
  inline_all.inline_helpers = true;
  for (const auto& g : plans) {
    CAPTURE(g.name);
    const spmvc::KernelSource src = spmvc::test::generate_golden(g);
    const spmvc::KernelSource flat = spmvc::tooling::flatten(src, inline_all);
    CAPTURE(flat.source);
    // Only the entry point is left as a function; helper bodies sit at their call sites.
    CHECK(flat.source.find("__device__ __forceinline__") == std::string::npos);
    CHECK(flat.source.find("// csr_spmv_") != std::string::npos);
    CHECK(flat.source.find("// group_sum_") != std::string::npos);
    CHECK_FALSE(std::regex_search(flat.source, std::regex(R"(\btemplate\b)")));
    const spmvc::runtime::Cubin cubin = spmvc::runtime::compile_cubin(flat, "sm_90");
    CHECK(cubin.spill_store_bytes == 0);
    const std::string section = ".text." + src.kernel_name;
    const std::string text = elf_section(cubin.image, section);
    CHECK(text.size() > 64);
    CHECK(text == elf_section(spmvc::runtime::compile_cubin(src, "sm_90").image, section));
  }
}

TEST_CASE("flattened source matches the golden files") {
  const fs::path dir = fs::path(SPMVC_GOLDEN_DIR) / "flat";
  for (const auto& g : plain_golden_plans()) {
    if (g.name != "csr_auto_stencil27_f64" && g.name != "csr_t8_u2_o64_f64" &&
        g.name != "csr_t2_v4_u2_f32") {
      continue;
    }
    CAPTURE(g.name);
    const spmvc::KernelSource flat = spmvc::tooling::flatten(spmvc::test::generate_golden(g));
    spmvc::test::check_golden(dir / (g.name + ".cu"), flat.source);
  }
}

TEST_CASE("a source without the named entry point is an internal error") {
  spmvc::KernelSource src = spmvc::test::generate_golden(plain_golden_plans()[0]);
  src.kernel_name = "no_such_kernel";
  CHECK_THROWS_AS(spmvc::tooling::flatten(src), spmvc::InternalError);
  src.source += "\nthis does not parse;\n";
  CHECK_THROWS_WITH_AS(spmvc::tooling::flatten(src), doctest::Contains("clang could not parse"),
                       spmvc::InternalError);
}
