// The GPU build of bcsr and bellpack for compile(DeviceCsr), and their block inspection: the unit
// of templates/device_block.cuh launched pass by pass. The blocks are numbered by a scan of the
// nonzeros that open them (the ell unit's 64-bit scan); the host waits for the block count (and
// bellpack's widest block row, then its slot count) to size the arrays.
#include <algorithm>
#include <array>
#include <chrono>
#include <variant>

#include <fmt/format.h>

#include "device_block.hpp"
#include "spmvc/compiler/device_block.hpp"
#include "spmvc/compiler/device_ell.hpp"
#include "spmvc/error.hpp"

namespace spmvc::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Blocks for a grid-stride pass over n items: enough to fill the GPU, no more.
std::int64_t stride_grid(std::int64_t n) {
  const int block = codegen::kBlockBuildBlock;
  return std::clamp<std::int64_t>((n + block - 1) / block, 1, 4096);
}

void launch(const LoadedKernel& kernel, const char* entry, std::int64_t n,
            std::vector<void*> args) {
  kernel.launch(stride_grid(n), codegen::kBlockBuildBlock, 0, args.data(), nullptr);
  check_last_launch(entry);
}

// A device array of `bytes` bytes, every byte `fill` (ordered on the default stream).
DeviceBuffer cleared(std::size_t bytes, unsigned char fill) {
  DeviceBuffer b(bytes);
  if (bytes > 0) b.fill_bytes(fill, 0, bytes);
  return b;
}

std::int64_t download_i64(const DeviceBuffer& buffer, std::int64_t index) {
  std::int64_t v = 0;
  buffer.download(&v, sizeof v, static_cast<std::size_t>(index) * sizeof v);
  return v;
}

// The blocks of r x c: the open flags' inclusive scan (one per nonzero), the block-row offsets
// and the largest block count of a block row.
struct Numbered {
  DeviceBuffer incl, brow_ptr;
  std::int64_t nbrows = 0, blocks = 0, most = 0;
};

Numbered number_blocks(const DeviceCsr& a, int r, int c, const DeviceBlockKernels& k,
                       const DeviceEllKernels& ell) {
  Numbered n;
  n.nbrows = (a.nrows + r - 1) / r;
  n.incl = DeviceBuffer(static_cast<std::size_t>(a.nnz) * sizeof(std::int64_t));
  const void* row_ptr = a.row_ptr;
  const void* col_idx = a.col_idx;
  long long nrows = a.nrows, nnz = a.nnz;
  void* incl = n.incl.get();
  launch(*k.open, codegen::kBlockOpenEntry, a.nnz,
         {&row_ptr, &col_idx, &nrows, &nnz, &r, &c, &incl});
  scan_device(static_cast<std::int64_t*>(incl), a.nnz, ell);
  n.brow_ptr = DeviceBuffer(static_cast<std::size_t>(n.nbrows + 1) * sizeof(std::int64_t));
  DeviceBuffer most = cleared(sizeof(std::int64_t), 0);
  void* brow_ptr = n.brow_ptr.get();
  void* most_ptr = most.get();
  launch(*k.row_ptr, codegen::kBlockRowPtrEntry, n.nbrows + 1,
         {&row_ptr, &nrows, &r, &incl, &brow_ptr, &most_ptr});
  n.blocks = download_i64(n.brow_ptr, n.nbrows);
  n.most = download_i64(most, 0);
  return n;
}

// The bellpack sort: block rows by descending block count, stable, as a binary radix sort of
// most - count (one pass per bit of `most`).
DeviceBuffer sort_block_rows(const Numbered& n, const DeviceBlockKernels& k,
                             const DeviceEllKernels& ell) {
  const auto bytes = static_cast<std::size_t>(n.nbrows) * sizeof(std::int32_t);
  DeviceBuffer perm(bytes), spare(bytes);
  DeviceBuffer flags(static_cast<std::size_t>(n.nbrows) * sizeof(std::int64_t));
  long long count = n.nbrows, most = n.most;
  void* perm_ptr = perm.get();
  launch(*k.bellpack_iota, codegen::kBellpackIotaEntry, n.nbrows, {&count, &perm_ptr});
  int bits = 0;
  while (bits < 63 && (n.most >> bits) != 0) ++bits;
  const void* brow_ptr = n.brow_ptr.get();
  void* flags_ptr = flags.get();
  for (int bit = 0; bit < bits; ++bit) {
    void* in = perm.get();
    void* out = spare.get();
    launch(*k.bellpack_split_flags, codegen::kBellpackSplitFlagsEntry, n.nbrows,
           {&brow_ptr, &in, &count, &most, &bit, &flags_ptr});
    scan_device(static_cast<std::int64_t*>(flags_ptr), n.nbrows, ell);
    launch(*k.bellpack_split_scatter, codegen::kBellpackSplitScatterEntry, n.nbrows,
           {&in, &count, &flags_ptr, &out});
    std::swap(perm, spare);
  }
  return perm;
}

}  // namespace

DeviceBlockKernels load_device_block_kernels(KernelCache& cache, const DeviceInfo& device) {
  const auto t0 = Clock::now();
  const CachedKernel cached = cache.get(codegen::device_block_source(), device.arch());
  DeviceBlockKernels k;
  k.inspect = shared_kernel(cached, codegen::kBlockInspectEntry, device.ordinal);
  k.open = shared_kernel(cached, codegen::kBlockOpenEntry, device.ordinal);
  k.row_ptr = shared_kernel(cached, codegen::kBlockRowPtrEntry, device.ordinal);
  k.bcsr_fill = shared_kernel(cached, codegen::kBcsrFillEntry, device.ordinal);
  k.bellpack_iota = shared_kernel(cached, codegen::kBellpackIotaEntry, device.ordinal);
  k.bellpack_split_flags = shared_kernel(cached, codegen::kBellpackSplitFlagsEntry, device.ordinal);
  k.bellpack_split_scatter =
      shared_kernel(cached, codegen::kBellpackSplitScatterEntry, device.ordinal);
  k.bellpack_widths = shared_kernel(cached, codegen::kBellpackWidthsEntry, device.ordinal);
  k.bellpack_fill = shared_kernel(cached, codegen::kBellpackFillEntry, device.ordinal);
  k.ordinal = device.ordinal;
  k.origin = cached.origin;
  k.disk_note = cached.disk_note;
  k.seconds = seconds_since(t0);
  return k;
}

DeviceBlockInspection inspect_blocks_device(const DeviceCsr& a, const DeviceBlockKernels& kernels) {
  DeviceBlockInspection out;
  const codegen::BlockSample sample = codegen::block_sample(a.nrows, a.nnz);
  std::array<std::uint64_t, codegen::kBlockCounters> counts{};
  if (a.nnz > 0) {
    DeviceBuffer counters = cleared(sizeof counts + sizeof(std::int32_t), 0);
    const void* row_ptr = a.row_ptr;
    const void* col_idx = a.col_idx;
    long long nrows = a.nrows, windows = sample.windows, len = sample.len;
    void* counts_ptr = counters.get();
    void* unsorted_ptr = static_cast<char*>(counters.get()) + sizeof counts;
    // A warp per row.
    launch(*kernels.inspect, codegen::kBlockInspectEntry, 32 * a.nrows,
           {&row_ptr, &col_idx, &nrows, &windows, &len, &counts_ptr, &unsorted_ptr});
    std::int32_t unsorted = 0;
    counters.download(counts.data(), sizeof counts);
    counters.download(&unsorted, sizeof unsorted, sizeof counts);
    out.sorted = unsorted == 0;
  }
  if (out.sorted) out.shapes = codegen::block_shapes_from_counts(counts, a.nnz, sample.sampled);
  return out;
}

DeviceBlockBuild build_block_device(const DeviceCsr& a, const Plan& plan,
                                    const DeviceBlockKernels& kernels,
                                    const DeviceEllKernels& ell_kernels) {
  DeviceBlockBuild out;
  int r = 0, c = 0, h = 0;
  if (const auto* p = std::get_if<BcsrParams>(&plan.params)) {
    if (p->symmetric)
      throw InternalError("build_block_device: bcsr's symmetric half is built on the host only");
    r = p->block_rows;
    c = p->block_cols;
  } else if (const auto* q = std::get_if<BellpackParams>(&plan.params)) {
    r = q->block_rows;
    c = q->block_cols;
    h = q->slice_height;
  } else {
    throw InternalError("build_block_device: plan format " + plan.format +
                        " is not bcsr or bellpack");
  }
  if (r < 1 || r > codegen::kBlockMaxSide || c < 1 || c > codegen::kBlockMaxSide ||
      (h < 1 && std::holds_alternative<BellpackParams>(plan.params)))
    throw InternalError(fmt::format("{} on the GPU: parameters out of range ({}x{}, slice {})",
                                    plan.format, r, c, h));
  Numbered n = number_blocks(a, r, c, kernels, ell_kernels);
  out.blocks = n.blocks;
  if (n.blocks < 0 || n.blocks > a.nnz)
    throw InternalError(
        fmt::format("{} on the GPU: {} blocks of {} nonzeros", plan.format, n.blocks, a.nnz));
  const auto eb = static_cast<std::size_t>(value_bytes(plan.precision));
  const auto area = static_cast<std::size_t>(r) * static_cast<std::size_t>(c);
  const void* row_ptr = a.row_ptr;
  const void* col_idx = a.col_idx;
  const void* src = a.values;
  int elem_bytes = static_cast<int>(eb);
  long long nrows = a.nrows, nnz = a.nnz;
  const void* incl = n.incl.get();

  if (h == 0) {  // bcsr: every block is written, fill zero
    DeviceBuffer bcol(static_cast<std::size_t>(n.blocks) * sizeof(std::int32_t));
    DeviceBuffer values = cleared(static_cast<std::size_t>(n.blocks) * area * eb, 0);
    void* bcol_ptr = bcol.get();
    void* values_ptr = values.get();
    launch(*kernels.bcsr_fill, codegen::kBcsrFillEntry, a.nnz,
           {&row_ptr, &col_idx, &src, &elem_bytes, &nrows, &nnz, &r, &c, &incl, &bcol_ptr,
            &values_ptr});
    out.arrays.emplace_back("brow_ptr", std::move(n.brow_ptr));
    out.arrays.emplace_back("bcol", std::move(bcol));
    out.arrays.emplace_back("values", std::move(values));
    synchronize();
    return out;
  }

  DeviceBuffer perm = sort_block_rows(n, kernels, ell_kernels);
  const std::int64_t nslices = (n.nbrows + h - 1) / h;
  DeviceBuffer slice_ptr(static_cast<std::size_t>(nslices + 1) * sizeof(std::int64_t));
  DeviceBuffer inverse(static_cast<std::size_t>(n.nbrows) * sizeof(std::int32_t));
  {
    const void* brow_ptr = n.brow_ptr.get();
    const void* perm_ptr = perm.get();
    long long nbrows = n.nbrows;
    void* slice_out = slice_ptr.get();
    void* inverse_out = inverse.get();
    launch(*kernels.bellpack_widths, codegen::kBellpackWidthsEntry, std::max(n.nbrows, nslices + 1),
           {&brow_ptr, &perm_ptr, &nbrows, &h, &slice_out, &inverse_out});
  }
  scan_device(static_cast<std::int64_t*>(slice_ptr.get()), nslices + 1, ell_kernels);
  const std::int64_t slots = download_i64(slice_ptr, nslices);
  if (slots < n.blocks)
    throw InternalError(
        fmt::format("bellpack on the GPU: {} slots for {} blocks", slots, n.blocks));
  DeviceBuffer bcol = cleared(static_cast<std::size_t>(slots) * sizeof(std::int32_t), 0xff);
  DeviceBuffer values = cleared(static_cast<std::size_t>(slots) * area * eb, 0);
  {
    const void* inverse_ptr = inverse.get();
    const void* slice_in = slice_ptr.get();
    void* bcol_ptr = bcol.get();
    void* values_ptr = values.get();
    launch(*kernels.bellpack_fill, codegen::kBellpackFillEntry, a.nnz,
           {&row_ptr, &col_idx, &src, &elem_bytes, &nrows, &nnz, &r, &c, &h, &incl, &inverse_ptr,
            &slice_in, &bcol_ptr, &values_ptr});
  }
  out.arrays.emplace_back("slice_ptr", std::move(slice_ptr));
  out.arrays.emplace_back("bcol", std::move(bcol));
  out.arrays.emplace_back("values", std::move(values));
  out.arrays.emplace_back("perm", std::move(perm));
  synchronize();
  return out;
}

}  // namespace spmvc::runtime
