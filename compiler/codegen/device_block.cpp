#include "spmvc/compiler/device_block.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/values/values.hpp"
#include "spmvc/error.hpp"

namespace spmvc::codegen {

bool device_block_family(std::string_view format) {
  return format == "bcsr" || format == "bellpack";
}

BlockSample block_sample(std::int64_t nrows, std::int64_t nnz) {
  // inspect_blocks' windows (inspector/blocks.cpp, windows_for) under the default options.
  const BlockOptions o;
  BlockSample s;
  const std::int64_t w = std::max(o.sample_windows, 1);
  s.sampled = nnz > o.exact_max_nnz && nrows > 8 * w;
  if (!s.sampled) {
    s.windows = 1;
    s.len = nrows;
    return s;
  }
  const double mean = static_cast<double>(nnz) / static_cast<double>(nrows);
  const auto len = static_cast<std::int64_t>(static_cast<double>(o.sample_nnz) /
                                             (static_cast<double>(w) * std::max(mean, 1.0)));
  s.windows = w;
  s.len = std::clamp<std::int64_t>(len, 24, nrows / w);
  return s;
}

std::vector<BlockShape> block_shapes_from_counts(
    const std::array<std::uint64_t, kBlockCounters>& counts, std::int64_t nnz, bool sampled) {
  std::vector<BlockShape> out;
  for (int r = 1; r <= kBlockMaxSide; ++r) {
    const auto visited = static_cast<std::int64_t>(counts[kBlockMaxSide * kBlockMaxSide + r - 1]);
    // Sampled counts stand for the whole matrix in proportion to nonzeros (inspect_blocks).
    const double scale =
        sampled && visited > 0 ? static_cast<double>(nnz) / static_cast<double>(visited) : 1.0;
    for (int c = 1; c <= kBlockMaxSide; ++c) {
      BlockShape s{r, c, BlockPlacement::aligned, c, 0, 0, 0};
      s.nnz = nnz;
      const auto n = static_cast<double>(counts[(r - 1) * kBlockMaxSide + c - 1]);
      s.blocks = static_cast<std::int64_t>(n * scale + 0.5);
      out.push_back(s);
    }
  }
  return out;
}

KernelSource device_block_source() {
  KernelSource k =
      device_unit(kBcsrFillEntry, "device_block", kBlockBuildBlock,
                  "builds bcsr and bellpack on the GPU from a CSR matrix in device memory.");
  k.source += fmt::format(
      R"(namespace db = spmvc::device_block;
static_assert(db::kBlock == {} && db::kMaxBlock == {} && db::kCounters == {},
              "block size, largest block or counters differ from the host's");

extern "C" __global__ void __launch_bounds__(db::kBlock)
{}(const int* __restrict__ row_ptr, const int* __restrict__ col_idx, long long nrows,
    long long windows, long long len, unsigned long long* __restrict__ counts,
    int* __restrict__ unsorted) {{
  db::block_inspect(row_ptr, col_idx, nrows, windows, len, counts, unsorted);
}}

extern "C" __global__ void __launch_bounds__(db::kBlock)
{}(const int* __restrict__ row_ptr, const int* __restrict__ col_idx, long long nrows,
    long long nnz, int r, int c, long long* __restrict__ flags) {{
  db::block_open(row_ptr, col_idx, nrows, nnz, r, c, flags);
}}

extern "C" __global__ void __launch_bounds__(db::kBlock)
{}(const int* __restrict__ row_ptr, long long nrows, int r, const long long* __restrict__ incl,
    long long* __restrict__ brow_ptr, unsigned long long* __restrict__ most) {{
  db::block_row_ptr(row_ptr, nrows, r, incl, brow_ptr, most);
}}

extern "C" __global__ void __launch_bounds__(db::kBlock)
{}(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const void* __restrict__ src, int elem_bytes, long long nrows, long long nnz, int r, int c,
    const long long* __restrict__ incl, int* __restrict__ bcol, void* __restrict__ values) {{
  db::bcsr_fill(row_ptr, col_idx, src, elem_bytes, nrows, nnz, r, c, incl, bcol, values);
}}

extern "C" __global__ void __launch_bounds__(db::kBlock)
{}(long long n, int* __restrict__ perm) {{
  db::bellpack_iota(n, perm);
}}

extern "C" __global__ void __launch_bounds__(db::kBlock)
{}(const long long* __restrict__ brow_ptr, const int* __restrict__ perm, long long n,
    long long most, int bit, long long* __restrict__ flags) {{
  db::bellpack_split_flags(brow_ptr, perm, n, most, bit, flags);
}}

extern "C" __global__ void __launch_bounds__(db::kBlock)
{}(const int* __restrict__ perm, long long n, const long long* __restrict__ incl,
    int* __restrict__ out) {{
  db::bellpack_split_scatter(perm, n, incl, out);
}}

extern "C" __global__ void __launch_bounds__(db::kBlock)
{}(const long long* __restrict__ brow_ptr, const int* __restrict__ perm, long long nbrows, int h,
    long long* __restrict__ slice_ptr, int* __restrict__ inverse) {{
  db::bellpack_widths(brow_ptr, perm, nbrows, h, slice_ptr, inverse);
}}

extern "C" __global__ void __launch_bounds__(db::kBlock)
{}(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const void* __restrict__ src, int elem_bytes, long long nrows, long long nnz, int r, int c,
    int h, const long long* __restrict__ incl, const int* __restrict__ inverse,
    const long long* __restrict__ slice_ptr, int* __restrict__ bcol, void* __restrict__ values) {{
  db::bellpack_fill(row_ptr, col_idx, src, elem_bytes, nrows, nnz, r, c, h, incl, inverse,
                    slice_ptr, bcol, values);
}}
)",
      kBlockBuildBlock, kBlockMaxSide, kBlockCounters, kBlockInspectEntry, kBlockOpenEntry,
      kBlockRowPtrEntry, kBcsrFillEntry, kBellpackIotaEntry, kBellpackSplitFlagsEntry,
      kBellpackSplitScatterEntry, kBellpackWidthsEntry, kBellpackFillEntry);
  return k;
}

}  // namespace spmvc::codegen

namespace spmvc::compiler {

KernelSource generate_device_block(const Plan& plan, const Profile& profile, std::int64_t nrows,
                                   std::int64_t ncols, std::int64_t nnz) {
  // The block kernels' entry points are declared from the encoded matrix's sizes and its arrays'
  // element types; the arrays stay empty (their contents are on the device).
  Encoded sizes;
  sizes.format = plan.format;
  sizes.precision = plan.precision;
  sizes.nrows = nrows;
  sizes.ncols = ncols;
  sizes.nnz = nnz;
  const ElemType value = formats::value_elem_type(plan.precision);
  if (plan.format == "bcsr") {
    sizes.arrays = {
        {"brow_ptr", ElemType::i64, {}}, {"bcol", ElemType::i32, {}}, {"values", value, {}}};
  } else if (plan.format == "bellpack") {
    sizes.arrays = {{"slice_ptr", ElemType::i64, {}},
                    {"bcol", ElemType::i32, {}},
                    {"values", value, {}},
                    {"perm", ElemType::i32, {}}};
  } else {
    throw InternalError("generate_device_block: plan format " + plan.format +
                        " is not built by the block device build");
  }
  return codegen::generate(plan, sizes, profile);
}

}  // namespace spmvc::compiler
