// The unit that codes values in 16 bits on the GPU from a CSR matrix in device memory
// (templates/device_values.cuh): the distinct bit patterns up to 65,536 and the codes. Host C++
// only: the runtime compiles the unit and launches it (runtime/device_values.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "spmvc/kernel.hpp"

namespace spmvc::codegen {

/// Threads per block of every entry point.
inline constexpr int kValuesBlock = 256;
/// Distinct patterns a 16-bit table names, and the set's slots (the template asserts both).
inline constexpr int kValues16Cap = 65536;
inline constexpr int kValueSetSlots = 1 << 17;

inline constexpr const char* kValueSetEntry = "spmvc_value_set";
inline constexpr const char* kValueGatherEntry = "spmvc_value_gather";
inline constexpr const char* kValueCode16Entry = "spmvc_value_code16";

/// The translation unit, the same text every time.
KernelSource device_values_source();

/// The patterns value_set gathered, ascending: the slots that are not empty (all ones; the
/// runtime passes value_gather's packed patterns, the host tests whole sets), and the all-ones
/// pattern where `all_ones` says a value had it.
std::vector<std::uint64_t> patterns_from_slots(const std::vector<std::uint64_t>& slots,
                                               bool all_ones);

}  // namespace spmvc::codegen
