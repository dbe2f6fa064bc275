// The unit that builds bcsr and bellpack on the GPU from a CSR matrix in device memory
// (templates/device_block.cuh), with the block inspection their models read
// (Profile::block_shapes, aligned shapes 1..8 x 1..8). Host C++ only: the runtime compiles the
// unit and launches its entry points (runtime/device_build_block.cpp); here are its source, the
// inspection's sampling and counts turned into block shapes, and the kernel of a plan built on
// the GPU.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "spmvc/blocks.hpp"
#include "spmvc/kernel.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"

namespace spmvc::codegen {

/// Threads per block of every entry point (the template static_asserts it agrees).
inline constexpr int kBlockBuildBlock = 256;
/// Largest block height and width inspected and built (the block formats' 1..8).
inline constexpr int kBlockMaxSide = 8;
/// block_inspect's counters: blocks per (r, c) at (r-1)*8 + c-1, then visited nonzeros per r.
inline constexpr int kBlockCounters = kBlockMaxSide * kBlockMaxSide + kBlockMaxSide;

/// Entry points of the unit.
inline constexpr const char* kBlockInspectEntry = "spmvc_block_inspect";
inline constexpr const char* kBlockOpenEntry = "spmvc_block_open";
inline constexpr const char* kBlockRowPtrEntry = "spmvc_block_row_ptr";
inline constexpr const char* kBcsrFillEntry = "spmvc_bcsr_fill";
inline constexpr const char* kBellpackIotaEntry = "spmvc_bellpack_iota";
inline constexpr const char* kBellpackSplitFlagsEntry = "spmvc_bellpack_split_flags";
inline constexpr const char* kBellpackSplitScatterEntry = "spmvc_bellpack_split_scatter";
inline constexpr const char* kBellpackWidthsEntry = "spmvc_bellpack_widths";
inline constexpr const char* kBellpackFillEntry = "spmvc_bellpack_fill";

/// The translation unit (every entry point above), the same text every time.
KernelSource device_block_source();

/// Whether `format` is one the block device build encodes (bcsr, bellpack).
bool device_block_family(std::string_view format);

/// The rows block_inspect visits, as inspect_blocks (inspector/blocks.cpp) chooses them with its
/// default BlockOptions: `windows` windows of `len` rows starting at rows i*nrows/windows, or
/// every row (windows 1, len nrows) when the matrix is small.
struct BlockSample {
  bool sampled = false;
  std::int64_t windows = 1, len = 0;
};
BlockSample block_sample(std::int64_t nrows, std::int64_t nnz);

/// The aligned shapes r x c (r, c = 1..8, inspect_blocks' order and fields) from block_inspect's
/// counters: sampled counts scaled by nonzeros as inspect_blocks scales them.
std::vector<BlockShape> block_shapes_from_counts(
    const std::array<std::uint64_t, kBlockCounters>& counts, std::int64_t nnz, bool sampled);

}  // namespace spmvc::codegen

namespace spmvc::compiler {

/// The kernel source of a bcsr or bellpack plan built on the GPU, from the sizes alone (the host
/// pipeline's unit for the same plan).
KernelSource generate_device_block(const Plan& plan, const Profile& profile, std::int64_t nrows,
                                   std::int64_t ncols, std::int64_t nnz);

}  // namespace spmvc::compiler
