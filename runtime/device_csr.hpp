// Building on the GPU from a CSR matrix already in device memory: the row statistics (and input
// checks) of templates/device_csr.cuh turned into a Profile, csr_stream's row blocks and 16-bit
// columns, and the 8-bit value codes.
//
// The passes keep their temporaries (the counters, csr_stream's per-group counts and offsets) in
// one scratch buffer per device, reused from call to call: a cudaMalloc/cudaFree pair costs
// more than the passes themselves. Calls are serialised on it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "device.hpp"
#include "kernel_cache.hpp"
#include "spmvc/profile.hpp"
#include "spmvc/spmvc.hpp"

namespace spmvc::runtime {

/// A CSR matrix uploaded to the device as compile(DeviceCsr) takes it: 32-bit offsets and
/// columns, values in `precision`'s type (double, else float). Owns the arrays; `view` points at
/// them. Nothing is checked: faulty arrays go up as they are.
struct ResidentCsr {
  DeviceBuffer row_ptr, col_idx, values;
  DeviceCsr view;
};
ResidentCsr upload_csr(const CsrMatrix& a, Precision precision);
/// `values` into `to` in `precision`'s type, as upload_csr stores them (double for f64, else
/// float).
void upload_values(DeviceBuffer& to, std::span<const double> values, Precision precision);
/// The DeviceCsr of `r`'s arrays, which hold `a`.
DeviceCsr view_of(const ResidentCsr& r, const CsrMatrix& a);

/// The device-build unit's entry points, loaded on the current device (shared, see
/// shared_kernel), and where the unit came from.
struct DeviceCsrKernels {
  std::shared_ptr<const LoadedKernel> row_stats, stream_count, stream_scan, stream_fill,
      code_values, narrow_values, narrow_slices, narrow_columns;
  int ordinal = 0;
  CacheOrigin origin = CacheOrigin::compiled;
  double seconds = 0;     ///< obtaining the CUBIN and loading it
  std::string disk_note;  ///< CachedKernel::disk_note of the CUBIN
  bool nvcc = false;      ///< from the fatbin nvcc built into the library (build_units.hpp)
};
DeviceCsrKernels load_device_csr_kernels(KernelCache& cache, const DeviceInfo& device);

/// Launches the row-statistics pass over `a` into `out` (codegen::RowStats, initialised with
/// codegen::initial_row_stats), without waiting for it.
void launch_row_stats(const DeviceCsr& a, Precision precision, void* out,
                      const DeviceCsrKernels& kernels);

/// What one pass over the arrays on the GPU tells: the Profile (InspectDepth::row_lengths, see
/// codegen::row_length_profile) and the values' distinct bit patterns, ascending (empty when
/// there are more than an 8-bit table holds).
struct DeviceInspection {
  Profile profile;
  std::vector<std::uint64_t> value_patterns;
};
/// Inspects `a`, whose values have `precision`'s type; InputError naming the first fault when
/// the arrays do not form a CSR matrix. Once they pass, a second pass measures
/// Profile::narrow_slice_nnz (it trusts the offsets the first has checked).
DeviceInspection inspect_device(const DeviceCsr& a, Precision precision,
                                const DeviceCsrKernels& kernels);

/// The 8-bit value coding (formats::kValuesTable8) of `a`'s values on the GPU: `codes` (a byte
/// per nonzero, padded to a multiple of 16 bytes) and `table` (`patterns`, from
/// inspect_device, as `precision`'s values).
struct DeviceValueCodes {
  DeviceBuffer codes, table;
};
DeviceValueCodes code_values_device(const DeviceCsr& a, Precision precision,
                                    const std::vector<std::uint64_t>& patterns,
                                    const DeviceCsrKernels& kernels);

/// The fp32 storage of `a`'s fp64 values (formats::kValuesF32) on the GPU: a float per nonzero,
/// padded to a multiple of 4. InputError when a value is not exact in fp32 (the inspection
/// found every one exact: the values changed while compiling).
DeviceBuffer narrow_values_device(const DeviceCsr& a, const DeviceCsrKernels& kernels);

/// csr_stream's 16-bit columns (templates/csr_stream.cuh, NarrowColumns) for the `nblocks` row
/// blocks at `row_blocks` (from stream_row_blocks): `base` (nblocks ints) and `col16` (an
/// unsigned short per nonzero). A block whose columns span more than
/// CsrStreamFormat::kNarrowSpan gets base -1 - (its first nonzero): its columns are read from
/// `a.col_idx` itself, passed as the kernel's wide-column array, so nothing is copied for it.
struct DeviceNarrowColumns {
  DeviceBuffer base, col16;
};
DeviceNarrowColumns narrow_columns_device(const DeviceCsr& a, const DeviceBuffer& row_blocks,
                                          std::int64_t nblocks, const DeviceCsrKernels& kernels);

/// csr_stream's row blocks cut on the GPU from `row_ptr` (nrows+1 device offsets): nblocks+1
/// ints on the device, the partition of CsrStreamFormat::row_blocks; with split rows (split > 0,
/// `block_size` threads a block, one row a lane) that of CsrStreamFormat::split_row_blocks, and
/// `lanes` its nblocks x block_size lane descriptors (templates/csr_stream.cuh, SplitRows).
struct DeviceRowBlocks {
  DeviceBuffer starts;
  DeviceBuffer lanes;  ///< split rows only
  std::int64_t nblocks = 0;
};
DeviceRowBlocks stream_row_blocks(const std::int32_t* row_ptr, std::int64_t nrows, int tile,
                                  int block_size, const DeviceCsrKernels& kernels, int split = 0);

}  // namespace spmvc::runtime
