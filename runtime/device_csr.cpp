#include "device_csr.hpp"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "codegen/device_csr.hpp"
#include "formats/csr_stream/csr_stream_format.hpp"
#include "spmvc/error.hpp"

namespace spmvc::runtime {

DeviceCsrKernels load_device_csr_kernels(KernelCache& cache, const DeviceInfo& device) {
  const auto t0 = std::chrono::steady_clock::now();
  const CachedKernel cached = cache.get(codegen::device_csr_source(), device.arch());
  DeviceCsrKernels k;
  k.row_stats = shared_kernel(cached, codegen::kRowStatsEntry, device.ordinal);
  k.stream_count = shared_kernel(cached, codegen::kStreamCountEntry, device.ordinal);
  k.stream_scan = shared_kernel(cached, codegen::kStreamScanEntry, device.ordinal);
  k.stream_fill = shared_kernel(cached, codegen::kStreamFillEntry, device.ordinal);
  k.origin = cached.origin;
  k.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return k;
}

namespace {

// Blocks for a grid-stride pass over n items: enough to fill the GPU, no more.
std::int64_t stride_grid(std::int64_t n, int block) {
  return std::clamp<std::int64_t>((n + block - 1) / block, 1, 4096);
}

}  // namespace

Profile inspect_device(const DeviceCsr& a, Precision precision, const DeviceCsrKernels& kernels) {
  const auto t0 = std::chrono::steady_clock::now();
  codegen::RowStats stats = codegen::initial_row_stats();
  DeviceBuffer out(sizeof stats);
  out.upload(stats.data(), sizeof stats);
  const void* row_ptr = a.row_ptr;
  const void* col_idx = a.col_idx;
  const void* values = a.values;
  int value_bytes = spmvc::value_bytes(precision);
  long long nrows = a.nrows, ncols = a.ncols, nnz = a.nnz;
  void* out_ptr = out.get();
  void* args[] = {&row_ptr, &col_idx, &values, &value_bytes, &nrows, &ncols, &nnz, &out_ptr};
  kernels.row_stats->launch(stride_grid(std::max(a.nrows, a.nnz), codegen::kRowStatsBlock),
                            codegen::kRowStatsBlock, 0, args, nullptr);
  check_last_launch(codegen::kRowStatsEntry);
  out.download(stats.data(), sizeof stats);  // synchronous: waits for the kernel
  if (std::string why = codegen::row_stats_problem(stats, a.nrows, a.ncols, a.nnz); !why.empty())
    throw InputError("DeviceCsr", 0, why);
  Profile p = codegen::row_length_profile(stats, a.nrows, a.ncols, a.nnz);
  p.inspect_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

DeviceRowBlocks stream_row_blocks(const std::int32_t* row_ptr, std::int64_t nrows, int tile,
                                  int block_size, const DeviceCsrKernels& kernels) {
  DeviceRowBlocks blocks;
  if (nrows == 0) {  // one empty block keeps the launch valid, as on the host
    const std::int32_t none[2] = {0, 0};
    blocks.starts = DeviceBuffer(sizeof none);
    blocks.starts.upload(none, sizeof none);
    return blocks;
  }
  constexpr int kGroup = formats::CsrStreamFormat::kGroupRows;
  const std::int64_t ngroups = (nrows + kGroup - 1) / kGroup;
  DeviceBuffer counts(static_cast<std::size_t>(ngroups) * sizeof(std::int32_t));
  DeviceBuffer offsets(static_cast<std::size_t>(ngroups + 1) * sizeof(std::int32_t));
  const void* ptr = row_ptr;
  long long rows = nrows, groups = ngroups;
  int tile_arg = tile, block_rows = block_size, group = kGroup;
  void* counts_ptr = counts.get();
  void* offsets_ptr = offsets.get();
  const std::int64_t grid = (ngroups + codegen::kStreamGroupBlock - 1) / codegen::kStreamGroupBlock;
  {
    void* args[] = {&ptr, &rows, &tile_arg, &block_rows, &group, &groups, &counts_ptr};
    kernels.stream_count->launch(grid, codegen::kStreamGroupBlock, 0, args, nullptr);
    check_last_launch(codegen::kStreamCountEntry);
  }
  {
    void* args[] = {&counts_ptr, &groups, &offsets_ptr};
    kernels.stream_scan->launch(1, codegen::kStreamScanBlock, 0, args, nullptr);
    check_last_launch(codegen::kStreamScanEntry);
  }
  std::int32_t total = 0;
  offsets.download(&total, sizeof total, static_cast<std::size_t>(ngroups) * sizeof total);
  if (total <= 0 || total > nrows)
    throw InternalError(
        fmt::format("csr_stream on the GPU: {} row blocks for {} rows", total, nrows));
  blocks.nblocks = total;
  blocks.starts = DeviceBuffer(static_cast<std::size_t>(total + 1) * sizeof(std::int32_t));
  void* starts_ptr = blocks.starts.get();
  {
    void* args[] = {&ptr,   &rows,   &tile_arg,    &block_rows,
                    &group, &groups, &offsets_ptr, &starts_ptr};
    kernels.stream_fill->launch(grid, codegen::kStreamGroupBlock, 0, args, nullptr);
    check_last_launch(codegen::kStreamFillEntry);
  }
  return blocks;
}

}  // namespace spmvc::runtime
