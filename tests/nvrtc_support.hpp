// What the NVRTC compile tests share: one generated unit compiled to an sm_90 CUBIN, checked for
// an ELF image, registers, no spills and every entry point of its launches; and a unit's PTX, for
// tests of the loads it issues.
#pragma once

#include <doctest/doctest.h>
#include <nvrtc.h>

#include <cstring>
#include <string>
#include <vector>

#include "nvrtc_compiler.hpp"
#include "spmvc/kernel.hpp"
#include "test_support.hpp"  // occurrences

namespace spmvc::test {

inline void check_compiles(const KernelSource& src) {
  CAPTURE(src.kernel_name);
  const runtime::Cubin cubin = runtime::compile_cubin(src, "sm_90");
  REQUIRE(cubin.image.size() > 4);
  CHECK(std::memcmp(cubin.image.data(),
                    "\x7f"
                    "ELF",
                    4) == 0);
  CHECK(cubin.registers > 0);
  CHECK(cubin.spill_store_bytes == 0);
  CHECK(cubin.spill_load_bytes == 0);
  for (const KernelLaunch& launch : src.launches()) {
    CAPTURE(launch.entry);
    CHECK(cubin.log.find(launch.entry) != std::string::npos);
  }
}

/// The unit's PTX for `arch` (NVRTC without a GPU), with the options it compiles with.
inline std::string ptx_of(const KernelSource& src, const std::string& arch = "compute_90") {
  std::vector<const char*> texts, names;
  for (const auto& [name, text] : src.headers) {
    names.push_back(name.c_str());
    texts.push_back(text.c_str());
  }
  nvrtcProgram prog = nullptr;
  REQUIRE(nvrtcCreateProgram(&prog, src.source.c_str(), "unit.cu", static_cast<int>(texts.size()),
                             texts.data(), names.data()) == NVRTC_SUCCESS);
  std::vector<std::string> options = src.options;
  options.push_back("-arch=" + arch);
  std::vector<const char*> ptrs;
  for (const auto& o : options) ptrs.push_back(o.c_str());
  const nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(ptrs.size()), ptrs.data());
  std::size_t size = 0;
  std::string ptx;
  if (r == NVRTC_SUCCESS && nvrtcGetPTXSize(prog, &size) == NVRTC_SUCCESS) {
    ptx.resize(size);
    if (nvrtcGetPTX(prog, ptx.data()) != NVRTC_SUCCESS) ptx.clear();
  }
  nvrtcDestroyProgram(&prog);
  REQUIRE_MESSAGE(!ptx.empty(), src.kernel_name, " did not compile to PTX");
  return ptx;
}

}  // namespace spmvc::test
