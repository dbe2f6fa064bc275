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
/// value_sketch's registers and the nonzeros it samples (the template asserts both).
inline constexpr int kValueSketchRegisters = 1 << 12;
inline constexpr long long kValueSketchSample = 1 << 20;
/// A sample whose sketch estimates more distinct patterns than this settles "more than a 16-bit
/// table holds" without the exact set: four times the cap, some 190 standard errors of the
/// estimate (1.04 / sqrt(4096), 1.6%) above a count that would fit.
inline constexpr double kValueSketchDecides = 4.0 * kValues16Cap;

inline constexpr const char* kValueSketchEntry = "spmvc_value_sketch";
inline constexpr const char* kValueSetEntry = "spmvc_value_set";
inline constexpr const char* kValueGatherEntry = "spmvc_value_gather";
inline constexpr const char* kValueCode16Entry = "spmvc_value_code16";

/// The translation unit, the same text every time.
KernelSource device_values_source();

/// The distinct count a HyperLogLog sketch's registers estimate (value_sketch's: a register holds
/// the largest rank of the patterns hashed to it), with linear counting of the empty registers
/// where the estimate is below 2.5 times the register count.
double estimate_distinct(const std::vector<std::uint32_t>& registers);

/// The patterns value_set gathered, ascending: the slots that are not empty (all ones; the
/// runtime passes value_gather's packed patterns, the host tests whole sets), and the all-ones
/// pattern where `all_ones` says a value had it.
std::vector<std::uint64_t> patterns_from_slots(const std::vector<std::uint64_t>& slots,
                                               bool all_ones);

}  // namespace spmvc::codegen
