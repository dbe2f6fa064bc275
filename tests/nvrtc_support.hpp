// What the NVRTC compile tests share: one generated unit compiled to an sm_90 CUBIN, checked for
// an ELF image, registers, no spills and every entry point of its launches.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "nvrtc_compiler.hpp"
#include "spmvc/kernel.hpp"

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

}  // namespace spmvc::test
