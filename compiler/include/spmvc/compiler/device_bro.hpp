// The unit that builds BRO-ELL and BRO-COO (and so BRO-HYB) on the GPU from a CSR matrix in device
// memory (templates/device_bro.cuh): the column inspection the BRO cost models read (delta-bit
// histograms, x sectors, slices' longest rows) and the encoders' passes. Host C++ only: the
// runtime compiles the unit and launches its entry points (runtime/device_build_bro.cpp); here
// are its source, the meaning of what the inspection returns, and the kernel of a plan built
// on the GPU.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "spmvc/kernel.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"
#include "spmvc/spmvc.hpp"

namespace spmvc::codegen {

/// Slots of bro_inspect's output; the generated unit static_asserts the template agrees.
struct BroInspectSlots {
  static constexpr int delta_bits = 0, first_col_bits = 33, x_sectors = 66, unsorted = 67,
                       first_unsorted = 68, slice_longest = 69, count = 78;
};
using BroInspection = std::array<std::uint64_t, BroInspectSlots::count>;

/// Threads per block of the passes (bro_inspect: a block per 256 rows). The prefix sums between
/// the passes are the ell unit's multi-block scan (runtime's scan_device).
inline constexpr int kBroInspectBlock = 256;
inline constexpr int kBroEncodeBlock = 256;
/// The fill passes' value storage (templates/device_bro.cuh kStore*): plain, none (all ones),
/// 8-bit codes (the fill searches the sorted patterns), fp32 of fp64, 16-bit codes (the fill
/// copies each nonzero's code from runtime's code_values16_device).
inline constexpr int kBroStorePlain = 0, kBroStoreNone = 1, kBroStoreCode8 = 2, kBroStoreF32 = 3,
                     kBroStoreCode16 = 4;

/// Entry points of the unit.
inline constexpr const char* kBroInspectEntry = "spmvc_bro_inspect";
inline constexpr const char* kBroEllColumnsEntry = "spmvc_bro_ell_columns";
inline constexpr const char* kBroEllWidthsEntry = "spmvc_bro_ell_widths";
inline constexpr const char* kBroEllSliceEntry = "spmvc_bro_ell_slice";
inline constexpr const char* kBroEllFill32Entry = "spmvc_bro_ell_fill_s32";
inline constexpr const char* kBroEllFill64Entry = "spmvc_bro_ell_fill_s64";
inline constexpr const char* kBroCooCountsEntry = "spmvc_bro_coo_counts";
inline constexpr const char* kBroCooSelectEntry = "spmvc_bro_coo_select";
inline constexpr const char* kBroCooWidthsEntry = "spmvc_bro_coo_widths";
inline constexpr const char* kBroCooFill32Entry = "spmvc_bro_coo_fill_s32";
inline constexpr const char* kBroCooFill64Entry = "spmvc_bro_coo_fill_s64";

/// The translation unit (every entry point above), the same text every time.
KernelSource device_bro_source();

/// The counters bro_inspect starts from: zero, the first unsorted nonzero at all ones.
BroInspection initial_bro_inspection();

/// The code the fill passes write in a padding slot for a value table that lists `patterns`
/// (ascending bit patterns, as the GPU's 8- and 16-bit tables do): the entry of 0.0 (the value
/// the host encoders store in padding) where the table has it, else 0. Kernels never accumulate
/// a padding slot, so any entry would do (formats/values/values.hpp).
int bro_padding_code(const std::vector<std::uint64_t>& patterns);

/// "" when every row's columns strictly increase, else what is wrong (how many nonzeros do not
/// exceed their predecessor in the row, and the first of them): BRO delta-codes sorted columns.
std::string bro_columns_problem(const BroInspection& stats);

/// Fills what the BRO models read from the column inspection into `profile`: delta_bits,
/// first_col_bits, x_sectors and slice_longest, as inspect() computes them. Nothing when the
/// columns are not sorted (bro_columns_problem), which the device planner reads as "no BRO".
void apply_bro_inspection(const BroInspection& stats, Profile& profile);

}  // namespace spmvc::codegen

namespace spmvc::compiler {

/// Whether `profile` (from device arrays) carries the column inspection BRO needs: the columns
/// were inspected and found sorted (apply_bro_inspection filled its first-column histogram; its
/// x_sectors the row pass counts too, so they say nothing of it).
bool has_bro_columns(const Profile& profile);

/// bro_ell's unit for `plan` built on the GPU from `a`: what the host pipeline generates from the
/// encoded matrix of the same plan. `widths` is what the kernel bakes: the whole width table
/// (tables 1), the one pattern (tables 2), nothing otherwise.
KernelSource generate_device_bro_ell(const Plan& plan, const Profile& profile, const DeviceCsr& a,
                                     const std::vector<std::uint8_t>& widths);

/// bro_coo's unit for `plan` built on the GPU from `a` (its `entries` encoded): what the host
/// pipeline generates from the encoded matrix of the same plan.
KernelSource generate_device_bro_coo(const Plan& plan, const Profile& profile, const DeviceCsr& a,
                                     std::int64_t entries);

/// bro_hyb's unit for `plan` built on the GPU from `a`: `widths` what its ELL part bakes (as
/// generate_device_bro_ell), `entries` its COO part's entries.
KernelSource generate_device_bro_hyb(const Plan& plan, const Profile& profile, const DeviceCsr& a,
                                     const std::vector<std::uint8_t>& widths, std::int64_t entries);

}  // namespace spmvc::compiler
