// The unit that builds ell, sell and hyb on the GPU from a CSR matrix already in device memory
// (templates/device_ell.cuh), and the per-slice padding pass that fills Profile::slice_longest.
// Host C++ only: the runtime compiles the unit and launches its entry points
// (runtime/device_build_ell.cpp); here are its source, its constants, and the kernel source of
// an ell-family plan generated from the sizes the device build found.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "spmvc/kernel.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"

namespace spmvc::codegen {

/// Threads per block of the unit's entry points (the template static_asserts they agree).
inline constexpr int kEllLevelBlock = 256;
inline constexpr int kEllFillBlock = 256;
inline constexpr int kEllSortBlock = 256;
inline constexpr int kEllScanBlock = 256;
/// Elements scan_partials and scan_apply take per block (kEllScanBlock threads, 8 each).
inline constexpr int kEllScanChunk = 2048;
inline constexpr int kEllScanTopBlock = 1024;
/// Rows one warp of slice_longest covers.
inline constexpr int kEllLevelRows = 256;
/// The longest sorting window (sell's sigma) the GPU sorts: one block ranks a window's rows in
/// shared memory, each row against every other (16 KiB of row lengths; sigma^2 compares).
inline constexpr int kDeviceSortWindow = 4096;

/// Entry points of the unit.
inline constexpr const char* kSliceLongestEntry = "spmvc_ell_slice_longest";
inline constexpr const char* kEllFillEntry = "spmvc_ell_fill";
inline constexpr const char* kSellSortEntry = "spmvc_sell_sort";
inline constexpr const char* kSellWidthsEntry = "spmvc_sell_widths";
inline constexpr const char* kSellFillEntry = "spmvc_sell_fill";
inline constexpr const char* kHybTailsEntry = "spmvc_hyb_tails";
inline constexpr const char* kHybCooFillEntry = "spmvc_hyb_coo_fill";
inline constexpr const char* kScanPartialsEntry = "spmvc_ell_scan_partials";
inline constexpr const char* kScanTopEntry = "spmvc_ell_scan_top";
inline constexpr const char* kScanApplyEntry = "spmvc_ell_scan_apply";
/// dia's passes (the same unit): the occupied diagonals, the symmetry check, the fill.
inline constexpr const char* kDiaOffsetsEntry = "spmvc_dia_offsets";
inline constexpr const char* kDiaSymmetryEntry = "spmvc_dia_symmetry";
inline constexpr const char* kDiaFillEntry = "spmvc_dia_fill";
inline constexpr int kDiaBlock = 256;
/// Slots of the diagonal pass's hash set (at least 2 x kMaxDiagonals + 2, a power of two).
inline constexpr int kDiaSlots = 256;

/// The translation unit (every entry point above); the same text every time, so it is compiled
/// once per GPU architecture and then served by the kernel cache.
KernelSource device_ell_source();

/// Whether `format` is one the ell-family device build encodes (ell, sell, hyb; dia is built by
/// the same unit's passes, apart).
bool device_ell_family(std::string_view format);

}  // namespace spmvc::codegen

namespace spmvc::compiler {

/// The kernel source of an ell, sell or hyb plan built on the GPU: the unit the host pipeline
/// generates from the encoded matrix, from the sizes alone: `width` the ell part's stored
/// (padded) width for ell and hyb, `coo_entries` hyb's COO nonzeros.
KernelSource generate_device_ell(const Plan& plan, const Profile& profile, std::int64_t width,
                                 std::int64_t coo_entries);

/// The offsets a dia plan stores (formats::DiaFormat::stored_offsets) from the occupied
/// diagonals' `occupied`, ascending; InternalError for another format.
std::vector<std::int32_t> dia_stored_offsets(const Plan& plan,
                                             const std::vector<std::int32_t>& occupied);
/// The kernel source of a dia plan built on the GPU, from its stored offsets: the unit the host
/// pipeline generates from the encoded matrix.
KernelSource generate_device_dia(const Plan& plan, const Profile& profile,
                                 const std::vector<std::int32_t>& offsets);

}  // namespace spmvc::compiler
