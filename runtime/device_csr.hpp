// Building on the GPU from a CSR matrix already in device memory: the row statistics (and input
// checks) of templates/device_csr.cuh turned into a Profile, and csr_stream's row blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "device.hpp"
#include "kernel_cache.hpp"
#include "spmvc/profile.hpp"
#include "spmvc/spmvc.hpp"

namespace spmvc::runtime {

/// The device-build unit's entry points, loaded on the current device (shared, see
/// shared_kernel), and where the unit came from.
struct DeviceCsrKernels {
  std::shared_ptr<const LoadedKernel> row_stats, stream_count, stream_scan, stream_fill;
  CacheOrigin origin = CacheOrigin::compiled;
  double seconds = 0;  ///< obtaining the CUBIN and loading it
};
DeviceCsrKernels load_device_csr_kernels(KernelCache& cache, const DeviceInfo& device);

/// The Profile (InspectDepth::row_lengths) of `a`, whose values have `precision`'s type, from
/// one pass on the GPU; InputError naming the first fault when the arrays do not form a CSR
/// matrix.
Profile inspect_device(const DeviceCsr& a, Precision precision, const DeviceCsrKernels& kernels);

/// csr_stream's row blocks (CsrStreamFormat::row_blocks, the same partition) cut on the GPU from
/// `row_ptr` (nrows+1 device offsets): nblocks+1 ints on the device.
struct DeviceRowBlocks {
  DeviceBuffer starts;
  std::int64_t nblocks = 0;
};
DeviceRowBlocks stream_row_blocks(const std::int32_t* row_ptr, std::int64_t nrows, int tile,
                                  int block_size, const DeviceCsrKernels& kernels);

}  // namespace spmvc::runtime
