// Flattening: every golden unit of every format prints back as one template-free CUDA file that
// NVRTC compiles to the same machine code, and a few are kept byte for byte under
// tests/golden/expected/flat/ (regenerate with SPMVC_UPDATE_GOLDEN=1 ctest -L tooling).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include "golden_plans.hpp"
#include "nvrtc_compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/tooling/flatten.hpp"
#include "tooling/golden_units.hpp"

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

// Every `.text.<function>` section of a CUBIN: each kernel's machine code, and that of any
// device function ptxas kept out of line.
std::map<std::string, std::string> text_sections(const std::vector<char>& elf) {
  const auto read = [&](std::size_t at, std::size_t bytes) {
    std::uint64_t v = 0;
    std::memcpy(&v, elf.data() + at, bytes);
    return static_cast<std::size_t>(v);
  };
  const std::size_t shoff = read(0x28, 8), shentsize = read(0x3A, 2), shnum = read(0x3C, 2);
  const std::size_t strtab = read(shoff + read(0x3E, 2) * shentsize + 0x18, 8);
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i < shnum; ++i) {
    const std::size_t sh = shoff + i * shentsize;
    const std::string name = elf.data() + strtab + read(sh, 4);
    if (name.rfind(".text.", 0) == 0)
      out[name.substr(6)] = std::string(elf.data() + read(sh + 0x18, 8), read(sh + 0x20, 8));
  }
  return out;
}

// ptxas's resource line ("Used 40 registers, used 1 barriers, ...") and frame line ("0 bytes
// stack frame, 0 bytes spill stores, ...") for each entry function of an NVRTC log.
std::map<std::string, std::string> ptxas_resources(const std::string& log) {
  std::map<std::string, std::string> out;
  std::istringstream in(log);
  std::string line, function;
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex props(R"(Function properties for (\S+))");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, entry) || std::regex_search(line, m, props)) {
      function = m[1].str();
    } else if (!function.empty() && (line.find("Used ") != std::string::npos ||
                                     line.find("stack frame") != std::string::npos)) {
      out[function] += line.substr(line.find_first_not_of(" \t")) + "\n";
    }
  }
  return out;
}

// Flattens `u` and checks that NVRTC compiles the result for sm_90 to the template unit's
// machine code: every kernel's `.text` byte for byte, the same registers, no spills.
void check_same_machine_code(const spmvc::test::GoldenUnit& u,
                             const spmvc::tooling::FlattenOptions& options,
                             const spmvc::runtime::Cubin& reference) {
  const spmvc::KernelSource flat = spmvc::tooling::flatten(u.source, options);
  CAPTURE(flat.source);
  CHECK(flat.headers.empty());
  CHECK(flat.kernel_name == u.source.kernel_name);
  CHECK_FALSE(std::regex_search(flat.source, std::regex(R"(\btemplate\b)")));
  CHECK(flat.source.find("spmvc::") == std::string::npos);
  CHECK(flat.source.find("#include") == std::string::npos);
  CHECK(flat.source.find("(enable)") == std::string::npos);
  CHECK(flat.source.find("if constexpr") == std::string::npos);
  for (const spmvc::KernelLaunch& launch : u.source.launches()) {
    CHECK(std::regex_search(flat.source,
                            std::regex(R"(extern "C" __global__ void __launch_bounds__\(\d+\)\s+)" +
                                       launch.entry + "\\(")));
  }
  const spmvc::runtime::Cubin cubin = spmvc::runtime::compile_cubin(flat, "sm_90");
  CHECK(cubin.spill_store_bytes == 0);
  CHECK(cubin.spill_load_bytes == 0);
  CHECK(cubin.registers == reference.registers);
  const auto expected = text_sections(reference.image);
  const auto text = text_sections(cubin.image);
  REQUIRE(expected.count(u.source.kernel_name) == 1);
  CHECK(expected.size() == text.size());
  // Known exceptions, both with --inline-helpers: ELL-R's T=2 u=4 f32acc64 kernel has
  // ell::pitch's expression at its call site, and NVVM places one shift (4 * stride) in another
  // block; csr_warp's main kernels, their helpers (the products' loads, the warp OR) written out
  // at the call sites, come out of NVRTC in another order. The same instructions and registers
  // in both. Every other unit is byte for byte equal.
  const bool reordered_by_nvvm = options.inline_helpers && (u.name == "ell_r_t2_u4_f32acc64" ||
                                                            u.name.rfind("csr_warp", 0) == 0);
  for (const auto& [function, code] : expected) {
    CAPTURE(function);
    REQUIRE(text.count(function) == 1);
    CHECK(code.size() > 64);
    if (reordered_by_nvvm) {
      CHECK(text.at(function).size() == code.size());
    } else {
      CHECK(text.at(function) == code);
    }
  }
  CHECK(ptxas_resources(cubin.log) == ptxas_resources(reference.log));
}

}  // namespace

TEST_CASE("every golden unit of every format flattens to the template unit's machine code") {
  // Value-coded, reordered and multi-launch units included; with and without --inline-helpers.
  spmvc::tooling::FlattenOptions inline_all;
  inline_all.inline_helpers = true;
  std::set<std::string> formats;
  for (const auto& u : spmvc::test::every_golden_unit()) {
    CAPTURE(u.name);
    formats.insert(u.plan.format);
    const spmvc::runtime::Cubin reference = spmvc::runtime::compile_cubin(u.source, "sm_90");
    REQUIRE(!ptxas_resources(reference.log).empty());
    check_same_machine_code(u, {}, reference);
    check_same_machine_code(u, inline_all, reference);
  }
  // Every format the planner knows has a golden unit here.
  for (const std::string& name : spmvc::compiler::format_names()) {
    CAPTURE(name);
    CHECK(formats.count(name) == 1);
  }
}

TEST_CASE("a multi-launch unit keeps every kernel, in launch order") {
  for (const auto& u : spmvc::test::every_golden_unit()) {
    if (u.name != "amb_seg16_c32_cb2_det_f32acc64" && u.name != "hyb_k3_t2_i64_r_f32acc64" &&
        u.name != "reordered_hyb_rows_cols_f32acc64") {
      continue;
    }
    CAPTURE(u.name);
    const auto launches = u.source.launches();
    REQUIRE(launches.size() >= 2);
    const std::string flat = spmvc::tooling::flatten(u.source).source;
    std::size_t at = 0;
    for (const auto& launch : launches) {
      const std::size_t found = flat.find(launch.entry + "(", at);
      CHECK(found != std::string::npos);
      at = found == std::string::npos ? at : found;
    }
  }
}

TEST_CASE("a construct flatten cannot print is an error naming it") {
  spmvc::KernelSource src;
  src.kernel_name = "spmv_lambda";
  src.file_name = "spmv_lambda.cu";
  src.source = R"(
template <int kScale>
__device__ __forceinline__ double scaled(double v) {
  const auto times = [](double a) { return a * kScale; };
  return times(v);
}
extern "C" __global__ void spmv_lambda(const double* __restrict__ x, double* __restrict__ y) {
  y[threadIdx.x] = scaled<2>(x[threadIdx.x]);
}
)";
  CHECK_THROWS_WITH_AS(spmvc::tooling::flatten(src),
                       doctest::Contains("cannot print a lambda expression (spmv_lambda.cu:4)"),
                       spmvc::InternalError);
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

TEST_CASE("--inline-helpers: csr is one function with every helper's body at its call site") {
  std::vector<spmvc::test::GoldenPlan> plans = spmvc::test::golden_plans();
  spmvc::test::GoldenPlan recursive{"f64_v4", "stencil27:n=5", {}};  // load_vector recursion
  recursive.options.csr = spmvc::test::csr_params(16, 2, true, false, 4);
  plans.push_back(recursive);
  spmvc::tooling::FlattenOptions inline_all;
  inline_all.inline_helpers = true;
  for (auto g : plans) {
    g.options.value_coding = false;
    CAPTURE(g.name);
    const spmvc::KernelSource src = spmvc::test::generate_golden(g);
    const spmvc::KernelSource flat = spmvc::tooling::flatten(src, inline_all);
    CAPTURE(flat.source);
    // Only the entry point is left as a function; helper bodies sit at their call sites.
    CHECK(flat.source.find("__device__ __forceinline__") == std::string::npos);
    CHECK(flat.source.find("// csr_spmv_") != std::string::npos);
    CHECK(flat.source.find("// group_sum_") != std::string::npos);
    const std::string section = ".text." + src.kernel_name;
    const std::string text =
        elf_section(spmvc::runtime::compile_cubin(flat, "sm_90").image, section);
    CHECK(text.size() > 64);
    CHECK(text == elf_section(spmvc::runtime::compile_cubin(src, "sm_90").image, section));
  }
}

TEST_CASE("flattened source matches the golden files") {
  const fs::path dir = fs::path(SPMVC_GOLDEN_DIR) / "flat";
  for (auto g : spmvc::test::golden_plans()) {
    g.options.value_coding = false;
    if (g.name != "csr_auto_stencil27_f64" && g.name != "csr_t8_u2_o64_f64" &&
        g.name != "csr_t2_v4_u2_f32") {
      continue;
    }
    CAPTURE(g.name);
    const spmvc::KernelSource flat = spmvc::tooling::flatten(spmvc::test::generate_golden(g));
    spmvc::test::check_golden(dir / (g.name + ".cu"), flat.source);
  }
  // Structs (csr_stream's column readers, a value table's accessor, BRO's symbol stream) and a
  // two-kernel unit.
  for (const auto& p : spmvc::test::pinned_units()) {
    if (p.name != "coded_csr_stream_c16_val3_f32" && p.name != "coded_bro_hyb_val2_f64") continue;
    CAPTURE(p.name);
    const spmvc::KernelSource flat = spmvc::tooling::flatten(spmvc::test::golden_unit(p).source);
    spmvc::test::check_golden(dir / (p.name + ".cu"), flat.source);
  }
}

TEST_CASE("a source without the named entry point is an internal error") {
  spmvc::KernelSource src = spmvc::test::generate_golden(spmvc::test::golden_plans()[0]);
  src.kernel_name = "no_such_kernel";
  CHECK_THROWS_AS(spmvc::tooling::flatten(src), spmvc::InternalError);
  src.source += "\nthis does not parse;\n";
  CHECK_THROWS_WITH_AS(spmvc::tooling::flatten(src), doctest::Contains("clang could not parse"),
                       spmvc::InternalError);
}
