#include "device_csr.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "build_units.hpp"
#include "spmvc/compiler/device_build.hpp"
#include "spmvc/error.hpp"
#include "upload.hpp"

namespace spmvc::runtime {

ResidentCsr upload_csr(const CsrMatrix& a, Precision precision) {
  ResidentCsr r;
  const auto nnz = a.col_idx.size();
  r.row_ptr = DeviceBuffer(a.row_ptr.size() * 4);
  r.col_idx = DeviceBuffer(std::max<std::size_t>(nnz * 4, 4));
  r.values = DeviceBuffer(
      std::max<std::size_t>(a.values.size() * static_cast<std::size_t>(value_bytes(precision)), 8));
  // Offsets narrow to 32 bits and f32 values to float in the staging buffers, on the way up.
  std::vector<UploadPart> parts{
      converting_part<std::int32_t>(r.row_ptr.get(), a.row_ptr.data(), a.row_ptr.size()),
      upload_part(r.col_idx.get(), a.col_idx.data(), nnz)};
  if (precision == Precision::f64) {
    parts.push_back(upload_part(r.values.get(), a.values.data(), a.values.size()));
  } else {
    parts.push_back(converting_part<float>(r.values.get(), a.values.data(), a.values.size()));
  }
  staged_upload(parts);
  r.view = view_of(r, a);
  return r;
}

void upload_values(DeviceBuffer& to, std::span<const double> values, Precision precision) {
  if (precision == Precision::f64) {
    to.upload(values.data(), values.size() * 8);
  } else {
    const std::vector<float> narrow(values.begin(), values.end());
    to.upload(narrow.data(), narrow.size() * 4);
  }
}

DeviceCsr view_of(const ResidentCsr& r, const CsrMatrix& a) {
  return {a.nrows,
          a.ncols,
          a.nnz(),
          static_cast<const std::int32_t*>(r.row_ptr.get()),
          static_cast<const std::int32_t*>(r.col_idx.get()),
          r.values.get()};
}

DeviceCsrKernels load_device_csr_kernels(KernelCache& cache, const DeviceInfo& device) {
  const auto t0 = std::chrono::steady_clock::now();
  const BuildUnitImage unit =
      obtain_build_unit(BuildUnit::device_csr, codegen::device_csr_source, cache, device);
  const CachedKernel& cached = *unit.image;
  DeviceCsrKernels k;
  k.row_stats = shared_kernel(cached, codegen::kRowStatsEntry, device.ordinal);
  k.stream_count = shared_kernel(cached, codegen::kStreamCountEntry, device.ordinal);
  k.stream_scan = shared_kernel(cached, codegen::kStreamScanEntry, device.ordinal);
  k.stream_fill = shared_kernel(cached, codegen::kStreamFillEntry, device.ordinal);
  k.code_values = shared_kernel(cached, codegen::kCodeValuesEntry, device.ordinal);
  k.narrow_values = shared_kernel(cached, codegen::kNarrowValuesEntry, device.ordinal);
  k.narrow_slices = shared_kernel(cached, codegen::kNarrowSlicesEntry, device.ordinal);
  k.narrow_columns = shared_kernel(cached, codegen::kNarrowColumnsEntry, device.ordinal);
  k.nvcc = unit.nvcc;
  k.ordinal = device.ordinal;
  k.origin = cached.origin;
  k.disk_note = cached.disk_note;
  k.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return k;
}

namespace {

// The per-device scratch buffer, grown as needed and never shrunk or freed (freeing at exit
// would race the CUDA runtime's own teardown). Whoever holds `lock` may use `reserve`'s memory
// until the work queued on it has finished.
struct Scratch {
  std::mutex lock;
  DeviceBuffer buffer;
  void* reserve(std::size_t bytes) {
    if (buffer.bytes() < bytes) buffer = DeviceBuffer(std::max(bytes, 2 * buffer.bytes()));
    return buffer.get();
  }
};

Scratch& scratch_for(int ordinal) {
  static std::mutex mutex;
  static auto* all = new std::map<int, Scratch*>();
  std::lock_guard guard(mutex);
  Scratch*& slot = (*all)[ordinal];
  if (slot == nullptr) slot = new Scratch();
  return *slot;
}

// Blocks for a grid-stride pass over n items: enough to fill the GPU, no more.
std::int64_t stride_grid(std::int64_t n, int block) {
  return std::clamp<std::int64_t>((n + block - 1) / block, 1, 4096);
}

// Runs a per-nonzero pass (code_values, narrow_values) over `nnz` values: `args`, then a 64-bit
// counter in the device's scratch buffer, zeroed first. Returns what the pass counted.
std::uint64_t counted_pass(const LoadedKernel& kernel, const char* entry, int ordinal,
                           std::int64_t nnz, std::vector<void*> args) {
  std::uint64_t count = 0;
  Scratch& scratch = scratch_for(ordinal);
  std::lock_guard guard(scratch.lock);
  void* counter = scratch.reserve(sizeof count);
  scratch.buffer.upload(&count, sizeof count);
  args.push_back(&counter);
  kernel.launch(stride_grid(std::max<std::int64_t>(nnz, 1), codegen::kCodeValuesBlock),
                codegen::kCodeValuesBlock, 0, args.data(), nullptr);
  check_last_launch(entry);
  scratch.buffer.download(&count, sizeof count);
  return count;
}

}  // namespace

void launch_row_stats(const DeviceCsr& a, Precision precision, void* out,
                      const DeviceCsrKernels& kernels) {
  const void* row_ptr = a.row_ptr;
  const void* col_idx = a.col_idx;
  const void* values = a.values;
  int value_bytes = spmvc::value_bytes(precision);
  long long nrows = a.nrows, ncols = a.ncols, nnz = a.nnz;
  void* args[] = {&row_ptr, &col_idx, &values, &value_bytes, &nrows, &ncols, &nnz, &out};
  kernels.row_stats->launch(stride_grid(std::max(a.nrows, a.nnz), codegen::kRowStatsBlock),
                            codegen::kRowStatsBlock, 0, args, nullptr);
  check_last_launch(codegen::kRowStatsEntry);
}

DeviceInspection inspect_device(const DeviceCsr& a, Precision precision,
                                const DeviceCsrKernels& kernels) {
  const auto t0 = std::chrono::steady_clock::now();
  codegen::RowStats stats = codegen::initial_row_stats();
  {
    Scratch& scratch = scratch_for(kernels.ordinal);
    std::lock_guard guard(scratch.lock);
    void* out = scratch.reserve(sizeof stats);
    // The narrow-slice count starts at 0 here: the pass below adds to it.
    constexpr std::size_t kSlot = codegen::RowStatSlots::narrow_slice_nnz;
    stats[kSlot] = 0;
    scratch.buffer.upload(stats.data(), sizeof stats);
    launch_row_stats(a, precision, out, kernels);
    scratch.buffer.download(stats.data(), sizeof stats);  // synchronous: waits for the kernel
    if (std::string why = codegen::row_stats_problem(stats, a.nrows, a.ncols, a.nnz); !why.empty())
      throw InputError("DeviceCsr", 0, why);
    // The offsets are sound: the slices' column spans can be read (a warp per slice).
    if (a.nnz > 0) {
      const void* row_ptr = a.row_ptr;
      const void* col_idx = a.col_idx;
      long long nrows = a.nrows;
      void* args[] = {&row_ptr, &col_idx, &nrows, &out};
      const std::int64_t slices = (a.nrows + kNarrowSliceRows - 1) / kNarrowSliceRows;
      kernels.narrow_slices->launch(stride_grid(32 * slices, codegen::kNarrowBlock),
                                    codegen::kNarrowBlock, 0, args, nullptr);
      check_last_launch(codegen::kNarrowSlicesEntry);
      scratch.buffer.download(&stats[kSlot], sizeof stats[kSlot], kSlot * sizeof stats[kSlot]);
    }
  }
  DeviceInspection out;
  out.profile = codegen::row_length_profile(stats, a.nrows, a.ncols, a.nnz, precision);
  out.value_patterns = codegen::value_patterns(stats);
  out.profile.inspect_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

DeviceValueCodes code_values_device(const DeviceCsr& a, Precision precision,
                                    const std::vector<std::uint64_t>& patterns,
                                    const DeviceCsrKernels& kernels) {
  if (patterns.empty() || patterns.size() > static_cast<std::size_t>(codegen::kDeviceValueCap))
    throw InternalError(
        fmt::format("code_values_device: {} value patterns for an 8-bit table", patterns.size()));
  const int vb = value_bytes(precision);
  DeviceValueCodes out;
  // Padded so that vector loads of codes stay inside the buffer.
  out.codes = DeviceBuffer(static_cast<std::size_t>((a.nnz + 15) / 16 * 16 + 16));
  // The padding holds code 0, as the host encoder writes it: defined bytes for the loads that
  // reach into it (and for a copy of the whole array).
  const auto coded = static_cast<std::size_t>(a.nnz);
  out.codes.fill_bytes(0, coded, out.codes.bytes() - coded);
  out.table = DeviceBuffer(patterns.size() * static_cast<std::size_t>(vb));
  if (vb == 8) {
    out.table.upload(patterns.data(), patterns.size() * 8);
  } else {
    std::vector<std::uint32_t> narrow(patterns.begin(), patterns.end());
    out.table.upload(narrow.data(), narrow.size() * 4);
  }
  const void* values = a.values;
  int value_bytes_arg = vb;
  long long nnz = a.nnz;
  const void* table = out.table.get();
  int ntable = static_cast<int>(patterns.size());
  void* codes = out.codes.get();
  const std::uint64_t misses =
      counted_pass(*kernels.code_values, codegen::kCodeValuesEntry, kernels.ordinal, a.nnz,
                   {&values, &value_bytes_arg, &nnz, &table, &ntable, &codes});
  if (misses > 0)
    throw InputError("DeviceCsr", 0,
                     fmt::format("{} values were not among those inspected: the values changed "
                                 "while compiling",
                                 misses));
  return out;
}

DeviceBuffer narrow_values_device(const DeviceCsr& a, const DeviceCsrKernels& kernels) {
  // Padded so that 16-byte vector loads stay inside the buffer.
  DeviceBuffer out(static_cast<std::size_t>((a.nnz + 3) / 4 * 4 + 4) * sizeof(float));
  // The padding holds zeros, as the host encoder writes it.
  const std::size_t used = static_cast<std::size_t>(a.nnz) * sizeof(float);
  out.fill_bytes(0, used, out.bytes() - used);
  const void* values = a.values;
  long long nnz = a.nnz;
  void* narrow = out.get();
  const std::uint64_t inexact = counted_pass(*kernels.narrow_values, codegen::kNarrowValuesEntry,
                                             kernels.ordinal, a.nnz, {&values, &nnz, &narrow});
  if (inexact > 0)
    throw InputError("DeviceCsr", 0,
                     fmt::format("{} values are not exact in fp32 though the inspection found "
                                 "every one exact: the values changed while compiling",
                                 inexact));
  return out;
}

DeviceNarrowColumns narrow_columns_device(const DeviceCsr& a, const DeviceBuffer& row_blocks,
                                          std::int64_t nblocks, const DeviceCsrKernels& kernels) {
  DeviceNarrowColumns out;
  out.base = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(nblocks, 1)) * 4);
  out.col16 = DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(a.nnz, 1)) * 2);
  // The slots of wide blocks are never read; zero, as in the host encoding, so the array is
  // defined byte for byte (compute-sanitizer's initcheck, comparisons with the host encoding).
  out.col16.fill_bytes(0);
  if (nblocks == 0) return out;
  const void* row_ptr = a.row_ptr;
  const void* col_idx = a.col_idx;
  const void* blocks = row_blocks.get();
  long long n = nblocks;
  void* base = out.base.get();
  void* col16 = out.col16.get();
  void* args[] = {&row_ptr, &col_idx, &blocks, &n, &base, &col16};
  // A warp per row block.
  kernels.narrow_columns->launch(stride_grid(32 * nblocks, codegen::kNarrowBlock),
                                 codegen::kNarrowBlock, 0, args, nullptr);
  check_last_launch(codegen::kNarrowColumnsEntry);
  return out;
}

DeviceRowBlocks stream_row_blocks(const std::int32_t* row_ptr, std::int64_t nrows, int tile,
                                  int block_size, const DeviceCsrKernels& kernels, int split) {
  DeviceRowBlocks blocks;
  if (nrows == 0) {  // one empty block keeps the launch valid, as on the host
    const std::int32_t none[2] = {0, 0};
    blocks.starts = DeviceBuffer(sizeof none);
    blocks.starts.upload(none, sizeof none);
    if (split > 0) {  // and its idle lanes
      blocks.lanes = DeviceBuffer(static_cast<std::size_t>(block_size) * sizeof(std::uint32_t));
      blocks.lanes.fill_bytes(0);
    }
    return blocks;
  }
  constexpr int kGroup = codegen::kStreamGroupRows;
  const std::int64_t ngroups = (nrows + kGroup - 1) / kGroup;
  Scratch& scratch = scratch_for(kernels.ordinal);
  std::lock_guard guard(scratch.lock);
  auto* counts_ptr = static_cast<std::int32_t*>(
      scratch.reserve(static_cast<std::size_t>(2 * ngroups + 1) * sizeof(std::int32_t)));
  void* offsets_ptr = counts_ptr + ngroups;
  void* counts_arg = counts_ptr;
  const void* ptr = row_ptr;
  long long rows = nrows, groups = ngroups;
  int tile_arg = tile, block_rows = block_size, split_arg = split, group = kGroup;
  // A warp per group (templates/device_csr.cuh: stream_count, stream_fill).
  const std::int64_t grid =
      (32 * ngroups + codegen::kStreamGroupBlock - 1) / codegen::kStreamGroupBlock;
  {
    void* args[] = {&ptr, &rows, &tile_arg, &block_rows, &split_arg, &group, &groups, &counts_arg};
    kernels.stream_count->launch(grid, codegen::kStreamGroupBlock, 0, args, nullptr);
    check_last_launch(codegen::kStreamCountEntry);
  }
  {
    void* args[] = {&counts_arg, &groups, &offsets_ptr};
    kernels.stream_scan->launch(1, codegen::kStreamScanBlock, 0, args, nullptr);
    check_last_launch(codegen::kStreamScanEntry);
  }
  std::int32_t total = 0;
  scratch.buffer.download(&total, sizeof total,
                          static_cast<std::size_t>(2 * ngroups) * sizeof total);
  if (total <= 0 || total > nrows)
    throw InternalError(
        fmt::format("csr_stream on the GPU: {} row blocks for {} rows", total, nrows));
  blocks.nblocks = total;
  blocks.starts = DeviceBuffer(static_cast<std::size_t>(total + 1) * sizeof(std::int32_t));
  void* starts_ptr = blocks.starts.get();
  void* lanes_ptr = nullptr;
  if (split > 0) {
    // A descriptor a thread of every block; lanes no row takes stay zero (idle), as on the host.
    blocks.lanes = DeviceBuffer(static_cast<std::size_t>(total) *
                                static_cast<std::size_t>(block_size) * sizeof(std::uint32_t));
    blocks.lanes.fill_bytes(0);
    lanes_ptr = blocks.lanes.get();
  }
  {
    void* args[] = {&ptr,   &rows,   &tile_arg,    &block_rows, &split_arg,
                    &group, &groups, &offsets_ptr, &starts_ptr, &lanes_ptr};
    kernels.stream_fill->launch(grid, codegen::kStreamGroupBlock, 0, args, nullptr);
    check_last_launch(codegen::kStreamFillEntry);
  }
  synchronize();  // the offsets live in the scratch buffer
  return blocks;
}

}  // namespace spmvc::runtime
