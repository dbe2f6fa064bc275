// BRO-ELL, BRO-COO and BRO-HYB built on the GPU from a CSR matrix already in device memory
// (compile(DeviceCsr)): the column inspection the BRO models read, and the encoders, whose
// arrays are the host codecs' (compiler/formats/bro_ell/bro_ell_codec.hpp,
// bro_coo/bro_coo_codec.hpp) for the same plan. The unit is
// templates/device_bro.cuh (source from compiler/codegen/device_bro.cpp), cached and loaded
// like the device-csr unit. Each pass's temporaries are pool allocations freed at the end.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "device.hpp"
#include "device_ell.hpp"
#include "device_values.hpp"
#include "kernel_cache.hpp"
#include "operator_impl.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"
#include "spmvc/spmvc.hpp"

namespace spmvc::runtime {

/// The unit's entry points, loaded on the current device (shared, see shared_kernel), and the ell
/// unit's, whose multi-block scan makes the encoders' offsets (a slice's columns and symbols, a
/// row's COO entries).
struct DeviceBroKernels {
  std::shared_ptr<const LoadedKernel> inspect, columns, widths, slice, fill32, fill64, coo_counts,
      coo_select, coo_widths, coo_fill32, coo_fill64;
  DeviceEllKernels scans;
  int ordinal = 0;
  double seconds = 0;     ///< obtaining the CUBIN and loading it
  std::string disk_note;  ///< CachedKernel::disk_note of the CUBIN
  bool nvcc = false;      ///< from the fatbin nvcc built into the library (build_units.hpp)
};
DeviceBroKernels load_device_bro_kernels(KernelCache& cache, const DeviceInfo& device);

/// Inspects `a`'s columns on the GPU (the arrays must have passed inspect_device's checks) and
/// fills the Profile fields the BRO models read (codegen::apply_bro_inspection). Returns "" or
/// why the columns cannot be delta-coded (not strictly increasing in some row, the first
/// such nonzero named); the profile is then left without them.
std::string inspect_bro_device(const DeviceCsr& a, const DeviceBroKernels& kernels,
                               Profile& profile);

/// inspect_bro_device in two steps, so the host can work while the GPU inspects:
/// launch_bro_inspection queues the column pass and returns at once; finish_bro_inspection
/// waits for it and fills `profile` as inspect_bro_device does.
struct PendingBroInspection {
  std::optional<DeviceBuffer> out;  ///< the pass's counters; none for a matrix without rows
};
PendingBroInspection launch_bro_inspection(const DeviceCsr& a, const DeviceBroKernels& kernels);
std::string finish_bro_inspection(PendingBroInspection& pending, Profile& profile);

/// A BRO-ELL encoding on the device: the arrays named and ordered as the host codec's
/// (col_ptr, sym_ptr, widths, symbols, then the values as the plan's coding stores them), the
/// counts each holds, and what the kernel bakes (the width table for tables 1, the pattern for
/// tables 2).
struct DeviceBroEll {
  std::vector<std::pair<std::string, DeviceBuffer>> arrays;
  std::vector<std::int64_t> counts;  ///< elements of each array the encoding defines
  std::int64_t nslices = 0, columns = 0, symbols = 0, pad_rows = 0;
  std::vector<std::uint8_t> baked;
};

/// BRO-ELL's layout (as formats::bro::EllShape).
struct DeviceEllShape {
  int slice_height = 32, symbol_bits = 32, threads_per_row = 1, tables = 0, values = 0;
};

/// Encodes the first min(length, width) nonzeros of every row of `a` in BRO-ELL on the GPU, the
/// arrays named with `prefix` (as formats::bro::encode_ell).
DeviceBroEll encode_ell_part(const DeviceCsr& a, const DeviceEllShape& shape, std::int64_t width,
                             const std::string& prefix, Precision precision,
                             const std::vector<std::uint64_t>& value_patterns, std::int64_t row_max,
                             const DeviceBroKernels& kernels,
                             const DeviceValues16* values16 = nullptr);

/// Encodes `a` (values of `precision`'s type) as bro_ell with `params` on the GPU.
/// `value_patterns`: inspect_device's distinct value patterns (8-bit codes); `values16`: the
/// sorted patterns and the unit of a 16-bit table (code_values16_device codes every nonzero,
/// the fill copies the codes into the value slots; InternalError when the coding is a 16-bit
/// table and it is null); `row_max`: the longest row (Profile::row_max). InputError when a
/// value does not fit the coding (the values changed since they were inspected). A table lists
/// the patterns ascending (the host codec's in order of first occurrence): the codes differ from
/// the host codec's, the values they name do not; a padding slot names 0.0 where the table has
/// it (codegen::bro_padding_code).
DeviceBroEll encode_bro_ell_device(const DeviceCsr& a, const BroEllParams& params,
                                   Precision precision,
                                   const std::vector<std::uint64_t>& value_patterns,
                                   std::int64_t row_max, const DeviceBroKernels& kernels,
                                   const DeviceValues16* values16 = nullptr);

/// A BRO-COO encoding on the device: the arrays named and ordered as the host codec's (count,
/// row_base, widths, sym_ptr, symbols, col_idx, then the values as the plan's coding stores
/// them) and the counts each holds.
struct DeviceBroCoo {
  std::vector<std::pair<std::string, DeviceBuffer>> arrays;
  std::vector<std::int64_t> counts;
  std::int64_t entries = 0, intervals = 0, symbols = 0;
};

/// Encodes `a` as bro_coo with `params` on the GPU (as encode_bro_ell_device; BRO-COO's rows are
/// delta-coded, its columns kept as they are, so any column order encodes).
DeviceBroCoo encode_bro_coo_device(const DeviceCsr& a, const BroCooParams& params,
                                   Precision precision,
                                   const std::vector<std::uint64_t>& value_patterns,
                                   const DeviceBroKernels& kernels,
                                   const DeviceValues16* values16 = nullptr);

/// Encodes every row's nonzeros from position `width` on in BRO-COO on the GPU, the arrays named
/// with `prefix` (as formats::bro::encode_coo).
DeviceBroCoo encode_coo_part(const DeviceCsr& a, int interval, int symbol_bits, int coding,
                             std::int64_t width, const std::string& prefix, Precision precision,
                             const std::vector<std::uint64_t>& value_patterns,
                             const DeviceBroKernels& kernels,
                             const DeviceValues16* values16 = nullptr);

/// bro_hyb on the GPU: the ELL part's arrays ("ell_" ...), then the COO part's ("coo_" ...);
/// a 16-bit table's codes are made once for both parts.
struct DeviceBroHyb {
  DeviceBroEll ell;
  DeviceBroCoo coo;
};
DeviceBroHyb encode_bro_hyb_device(const DeviceCsr& a, const BroHybParams& params,
                                   Precision precision,
                                   const std::vector<std::uint64_t>& value_patterns,
                                   std::int64_t row_max, const DeviceBroKernels& kernels,
                                   const DeviceValues16* values16 = nullptr);

/// What a BRO plan's GPU build hands its code generator: the width table or pattern the ELL part
/// bakes (bro_ell, bro_hyb) and the COO part's entry count (bro_coo, bro_hyb).
struct BroBuilt {
  std::vector<std::uint8_t> baked;
  std::int64_t entries = 0;
};

/// compile(DeviceCsr)'s encode step for a BRO plan (bro_ell, bro_coo, bro_hyb): the whole
/// encoding built on the GPU from `a` into `im.arrays` (their bytes counted in im.device_bytes),
/// with `kernels` (InternalError when null) and, for a 16-bit table, `values16`. nullopt,
/// nothing done, for other formats.
std::optional<BroBuilt> encode_bro_plan(Operator::Impl& im, const DeviceCsr& a,
                                        const std::vector<std::uint64_t>& value_patterns,
                                        const DeviceBroKernels* kernels,
                                        const DeviceValues16* values16 = nullptr);
/// The unit of a BRO plan encode_bro_plan built.
KernelSource generate_bro_plan(const Operator::Impl& im, const DeviceCsr& a, const BroBuilt& built);

}  // namespace spmvc::runtime
