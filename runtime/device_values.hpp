// 16-bit value codes (formats::kValuesTable16) on the GPU for a CSR matrix in device memory
// (the unit of templates/device_values.cuh): the values' distinct bit patterns up to 65,536,
// sorted, and a code per nonzero, for csr, csr_stream and (through device_build_ell's value
// source) ell and hyb. The table lists the patterns ascending (the host's lists values in the
// order they first occur): the codes differ, the values they name do not.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device.hpp"
#include "device_csr.hpp"
#include "kernel_cache.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/spmvc.hpp"

namespace spmvc::runtime {

struct DeviceValueKernels {
  std::shared_ptr<const LoadedKernel> sketch, set, gather, code16;
  int ordinal = 0;
  CacheOrigin origin = CacheOrigin::compiled;
  double seconds = 0;     ///< obtaining the CUBIN and loading it
  std::string disk_note;  ///< CachedKernel::disk_note of the CUBIN
};
DeviceValueKernels load_device_value_kernels(KernelCache& cache, const DeviceInfo& device);

/// What a 16-bit coding needs beside the matrix: the unit and the sorted patterns.
struct DeviceValues16 {
  const DeviceValueKernels* kernels = nullptr;
  std::vector<std::uint64_t> patterns;
};

/// The distinct bit patterns of `a`'s values (of `precision`'s type; a float's zero-extended),
/// ascending, when there are at most 65,536; nullopt when there are more. A sketch of a sample
/// (value_sketch) settles "more" where the sample alone holds far more (codegen::
/// kValueSketchDecides); otherwise the exact set decides.
std::optional<std::vector<std::uint64_t>> value_patterns16_device(
    const DeviceCsr& a, Precision precision, const DeviceValueKernels& kernels);

/// The 16-bit coding of `a`'s values: `codes` (an unsigned short per nonzero, padded with code 0
/// to a multiple of 8 and 8 more) and `table` (`patterns` as `precision`'s values). InputError
/// when a value is not among `patterns` (the values changed while compiling).
DeviceValueCodes code_values16_device(const DeviceCsr& a, Precision precision,
                                      const std::vector<std::uint64_t>& patterns,
                                      const DeviceValueKernels& kernels);

}  // namespace spmvc::runtime
