// Building ell, sell, hyb and dia on the GPU from a CSR matrix already in device memory (the unit
// of templates/device_ell.cuh), and the passes that give the Profile its per-slice padding
// (Profile::slice_longest) and its diagonals (Profile::diagonals, with the symmetry dia needs). The
// arrays are the host encoders' (compiler/formats/{ell,sell,hyb}), element for element, under the
// same names; values are coded by device_csr's passes first (8-bit codes against the sorted table
// of the inspection's patterns, fp32 copies), then laid out like the columns.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "device.hpp"
#include "device_csr.hpp"
#include "device_values.hpp"
#include "kernel_cache.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"
#include "spmvc/spmvc.hpp"

namespace spmvc::runtime {

/// The ell-family unit's entry points, loaded on the current device (shared, see shared_kernel).
struct DeviceEllKernels {
  std::shared_ptr<const LoadedKernel> slice_longest, ell_fill, sell_sort, sell_widths, sell_fill,
      hyb_tails, hyb_coo_fill, scan_partials, scan_top, scan_apply, dia_offsets, dia_symmetry,
      dia_fill;
  int ordinal = 0;
  CacheOrigin origin = CacheOrigin::compiled;
  double seconds = 0;     ///< obtaining the CUBIN and loading it
  std::string disk_note;  ///< CachedKernel::disk_note of the CUBIN
  bool nvcc = false;      ///< from the fatbin nvcc built into the library (build_units.hpp)
};
DeviceEllKernels load_device_ell_kernels(KernelCache& cache, const DeviceInfo& device);

/// Profile::slice_longest of `a` (whose offsets inspect_device has checked), measured on the
/// GPU: for each height 2^k, k = 0..8, the sum over aligned slices of their longest row.
std::array<std::int64_t, 9> slice_longest_device(const DeviceCsr& a,
                                                 const DeviceEllKernels& kernels);

/// An inclusive scan of `n` 64-bit integers at `data` (device memory), in place.
void scan_device(std::int64_t* data, std::int64_t n, const DeviceEllKernels& kernels);

/// Seconds of the GPU build's stages, each ending with the device idle.
struct DeviceEllTimings {
  double values = 0;  ///< value coding (8-bit codes, fp32 copies) in CSR order
  double layout = 0;  ///< sell's sort and slice offsets, hyb's COO offsets, arrays allocated
  double fill = 0;    ///< padding cleared, nonzeros scattered into their slots
};

/// The encoding of an ell, sell or hyb plan, built on the GPU from `a` (checked by
/// inspect_device, which gave `profile` and the value patterns `patterns`): `arrays` in
/// kernel-parameter order under the host encoder's names, `width` the ell part's stored (padded)
/// width (ell, hyb), `coo` hyb's COO entries. A value table ("values_table", hyb's
/// "ell_values_table" and "coo_values_table") is the sorted patterns, and padding slots hold code 0
/// (the host's table lists values in the order they first occur, padding zeros included; the
/// kernels read no padding slot's value). A 16-bit table (ell, hyb) is coded with `values16`.
/// InternalError for another format, or a 16-bit table without `values16`.
struct DeviceEllBuild {
  std::vector<std::pair<std::string, DeviceBuffer>> arrays;
  std::int64_t width = 0;
  std::int64_t coo = 0;
  DeviceEllTimings timings;
};
DeviceEllBuild build_ell_family_device(const DeviceCsr& a, const Plan& plan, const Profile& profile,
                                       const std::vector<std::uint64_t>& patterns,
                                       const DeviceCsrKernels& csr_kernels,
                                       const DeviceEllKernels& kernels,
                                       const DeviceValues16* values16 = nullptr);

/// The diagonals of `a` (checked by inspect_device), found on the GPU: Profile::diagonals
/// (`count`: -1 past kMaxDiagonals, 0 without nonzeros), the occupied ones' offsets ascending,
/// and, for a square matrix on at most kMaxDiagonals diagonals whose offsets come in pairs o and
/// -o, whether it equals its transpose (its columns sorted within rows; values compared as
/// `precision` stores them), which dia's symmetric half needs.
struct DeviceDiagonals {
  std::int64_t count = 0;
  std::vector<std::int32_t> occupied;
  bool structural = false;  ///< Profile::structurally_symmetric
  bool numerical = false;   ///< Profile::numerically_symmetric
};
DeviceDiagonals inspect_diagonals_device(const DeviceCsr& a, Precision precision,
                                         const DeviceEllKernels& kernels);

/// A dia plan's encoding built on the GPU from `a` and its occupied diagonals: "values", the host
/// encoder's array element for element, and the stored offsets it was laid out by.
struct DeviceDiaBuild {
  std::vector<std::pair<std::string, DeviceBuffer>> arrays;
  std::vector<std::int32_t> offsets;
};
DeviceDiaBuild build_dia_device(const DeviceCsr& a, const Plan& plan,
                                const std::vector<std::int32_t>& occupied,
                                const DeviceEllKernels& kernels);

}  // namespace spmvc::runtime
