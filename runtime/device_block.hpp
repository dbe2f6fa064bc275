// Building bcsr and bellpack on the GPU from a CSR matrix already in device memory (the unit of
// templates/device_block.cuh), and the block inspection that gives the Profile their shapes
// (Profile::block_shapes). The arrays are the host encoders' (compiler/formats/{bcsr,bellpack}),
// element for element, under the same names; values are stored as the precision stores them
// (the formats have no value coding).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "device.hpp"
#include "device_ell.hpp"
#include "kernel_cache.hpp"
#include "spmvc/blocks.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/spmvc.hpp"

namespace spmvc::runtime {

/// The block unit's entry points, loaded on the current device (shared, see shared_kernel).
struct DeviceBlockKernels {
  std::shared_ptr<const LoadedKernel> inspect, open, row_ptr, bcsr_fill, bellpack_iota,
      bellpack_split_flags, bellpack_split_scatter, bellpack_widths, bellpack_fill;
  int ordinal = 0;
  CacheOrigin origin = CacheOrigin::compiled;
  double seconds = 0;     ///< obtaining the CUBIN and loading it
  std::string disk_note;  ///< CachedKernel::disk_note of the CUBIN
};
DeviceBlockKernels load_device_block_kernels(KernelCache& cache, const DeviceInfo& device);

/// What the block inspection of `a` (offsets checked by inspect_device) found: whether every
/// row's columns strictly increase, and then the aligned shapes 1..8 x 1..8 as inspect_blocks
/// measures them (the same sampled windows, the same scaling); no shapes otherwise.
struct DeviceBlockInspection {
  bool sorted = true;
  std::vector<BlockShape> shapes;
};
DeviceBlockInspection inspect_blocks_device(const DeviceCsr& a, const DeviceBlockKernels& kernels);

/// The encoding of a bcsr or bellpack plan, built on the GPU from `a` (checked by
/// inspect_device; columns strictly increasing in every row, as inspect_blocks_device found
/// them): `arrays` in kernel-parameter order under the host encoder's names, each allocated at
/// the size the plan and the matrix fix. InternalError for another format.
struct DeviceBlockBuild {
  std::vector<std::pair<std::string, DeviceBuffer>> arrays;
  std::int64_t blocks = 0;  ///< blocks holding a nonzero
};
DeviceBlockBuild build_block_device(const DeviceCsr& a, const Plan& plan,
                                    const DeviceBlockKernels& kernels,
                                    const DeviceEllKernels& ell_kernels);

}  // namespace spmvc::runtime
