// The GPU build of ell, sell and hyb for compile(DeviceCsr): the unit of templates/device_ell.cuh
// launched pass by pass. Every array is allocated at the size the plan and the matrix fix (the
// padded slots, the slices' offsets, the COO part's entries once counted), cleared to the host
// encoder's padding, then filled.
#include <algorithm>
#include <chrono>
#include <variant>

#include <fmt/format.h>

#include "build_units.hpp"
#include "device_ell.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_build.hpp"
#include "spmvc/compiler/device_ell.hpp"
#include "spmvc/error.hpp"
#include "spmvc/params/values.hpp"

namespace spmvc::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Blocks for a grid-stride pass over n items: enough to fill the GPU, no more.
std::int64_t stride_grid(std::int64_t n, int block) {
  return std::clamp<std::int64_t>((n + block - 1) / block, 1, 4096);
}

// `width` rounded up to a multiple of t (EllFormat::padded_width).
std::int64_t padded_width(std::int64_t width, int t) { return (width + t - 1) / t * t; }

// A device array of `bytes` bytes, every byte `fill` (ordered on the default stream).
DeviceBuffer cleared(std::size_t bytes, unsigned char fill) {
  DeviceBuffer b(bytes);
  if (bytes > 0) b.fill_bytes(fill, 0, bytes);
  return b;
}

// Reads the 64-bit integer at index `i` of `buffer` (waits for the device).
std::int64_t read_i64(const DeviceBuffer& buffer, std::int64_t i) {
  std::int64_t v = 0;
  buffer.download(&v, sizeof v, static_cast<std::size_t>(i) * sizeof v);
  return v;
}

// The values the layout passes copy, one element per nonzero in CSR order: the caller's, or
// coded by device_csr's passes (`owned`), with the coding's table.
struct ValueSource {
  const void* ptr = nullptr;
  int elem_bytes = 0;  // 0: no values are stored (all ones)
  DeviceBuffer owned, table;
};

ValueSource value_source(const DeviceCsr& a, Precision precision, int coding,
                         const std::vector<std::uint64_t>& patterns,
                         const DeviceCsrKernels& csr_kernels, const DeviceValues16* values16) {
  ValueSource v;
  switch (coding) {
    case formats::kValuesPlain:
      v.ptr = a.values;
      v.elem_bytes = value_bytes(precision);
      break;
    case formats::kValuesUnit:
      break;
    case formats::kValuesF32:
      v.owned = narrow_values_device(a, csr_kernels);
      v.ptr = v.owned.get();
      v.elem_bytes = 4;
      break;
    case formats::kValuesTable8: {
      DeviceValueCodes coded = code_values_device(a, precision, patterns, csr_kernels);
      v.owned = std::move(coded.codes);
      v.table = std::move(coded.table);
      v.ptr = v.owned.get();
      v.elem_bytes = 1;
      break;
    }
    case formats::kValuesTable16: {
      if (values16 == nullptr || values16->kernels == nullptr)
        throw InternalError("the ell-family device build: a 16-bit table without its patterns");
      DeviceValueCodes coded =
          code_values16_device(a, precision, values16->patterns, *values16->kernels);
      v.owned = std::move(coded.codes);
      v.table = std::move(coded.table);
      v.ptr = v.owned.get();
      v.elem_bytes = 2;
      break;
    }
    default:
      throw InternalError(
          fmt::format("the ell-family device build has no value coding {} (the planner refuses "
                      "it for device arrays)",
                      coding));
  }
  return v;
}

// A copy of a value table, for a unit that reads one under two names (hyb's two parts).
DeviceBuffer copy_of(const DeviceBuffer& b) {
  DeviceBuffer out(b.bytes());
  if (b.bytes() > 0) out.copy_from(b.get(), b.bytes());
  return out;
}

// The ell part of `width` nonzeros per row (hyb's with prefix "ell_"): row lengths (ELL-R),
// columns, values and their table, appended to `out`.
void build_ell_part(const DeviceCsr& a, std::int64_t width, int t, bool row_lengths,
                    const std::string& prefix, const ValueSource& values, DeviceBuffer table,
                    const DeviceEllKernels& kernels, DeviceEllBuild& out) {
  // The pitch: rows rounded up to 32 (EllFormat::kPitchAlign, which the unit asserts).
  const auto slots = static_cast<std::size_t>(padded_width(width, t) * ((a.nrows + 31) / 32 * 32));
  DeviceBuffer lens(row_lengths ? static_cast<std::size_t>(a.nrows) * 4 : 0);
  DeviceBuffer col = cleared(slots * 4, 0xff);  // column -1 in every padding slot
  DeviceBuffer val = cleared(slots * static_cast<std::size_t>(values.elem_bytes), 0);
  const void* row_ptr = a.row_ptr;
  const void* col_idx = a.col_idx;
  const void* src = values.ptr;
  int elem_bytes = values.elem_bytes;
  long long nrows = a.nrows, w = width;
  int lanes = t;
  void* lens_ptr = row_lengths ? lens.get() : nullptr;
  void* col_ptr = col.get();
  void* val_ptr = val.get();
  void* args[] = {&row_ptr, &col_idx, &src,      &elem_bytes, &nrows,
                  &w,       &lanes,   &lens_ptr, &col_ptr,    &val_ptr};
  kernels.ell_fill->launch(stride_grid(a.nrows, codegen::kEllFillBlock), codegen::kEllFillBlock, 0,
                           args, nullptr);
  check_last_launch(codegen::kEllFillEntry);
  if (row_lengths) out.arrays.emplace_back(prefix + "row_lengths", std::move(lens));
  out.arrays.emplace_back(prefix + "col_idx", std::move(col));
  if (values.elem_bytes > 0) out.arrays.emplace_back(prefix + "values", std::move(val));
  if (table.bytes() > 0) out.arrays.emplace_back(prefix + "values_table", std::move(table));
}

}  // namespace

DeviceEllKernels load_device_ell_kernels(KernelCache& cache, const DeviceInfo& device) {
  const auto t0 = Clock::now();
  const BuildUnitImage unit =
      obtain_build_unit(BuildUnit::device_ell, codegen::device_ell_source, cache, device);
  const CachedKernel& cached = *unit.image;
  DeviceEllKernels k;
  k.slice_longest = shared_kernel(cached, codegen::kSliceLongestEntry, device.ordinal);
  k.ell_fill = shared_kernel(cached, codegen::kEllFillEntry, device.ordinal);
  k.sell_sort = shared_kernel(cached, codegen::kSellSortEntry, device.ordinal);
  k.sell_widths = shared_kernel(cached, codegen::kSellWidthsEntry, device.ordinal);
  k.sell_fill = shared_kernel(cached, codegen::kSellFillEntry, device.ordinal);
  k.hyb_tails = shared_kernel(cached, codegen::kHybTailsEntry, device.ordinal);
  k.hyb_coo_fill = shared_kernel(cached, codegen::kHybCooFillEntry, device.ordinal);
  k.scan_partials = shared_kernel(cached, codegen::kScanPartialsEntry, device.ordinal);
  k.scan_top = shared_kernel(cached, codegen::kScanTopEntry, device.ordinal);
  k.scan_apply = shared_kernel(cached, codegen::kScanApplyEntry, device.ordinal);
  k.dia_offsets = shared_kernel(cached, codegen::kDiaOffsetsEntry, device.ordinal);
  k.dia_symmetry = shared_kernel(cached, codegen::kDiaSymmetryEntry, device.ordinal);
  k.dia_fill = shared_kernel(cached, codegen::kDiaFillEntry, device.ordinal);
  k.nvcc = unit.nvcc;
  k.ordinal = device.ordinal;
  k.origin = cached.origin;
  k.disk_note = cached.disk_note;
  k.seconds = seconds_since(t0);
  return k;
}

std::array<std::int64_t, 9> slice_longest_device(const DeviceCsr& a,
                                                 const DeviceEllKernels& kernels) {
  std::array<std::int64_t, 9> out{};
  if (a.nrows == 0) return out;
  DeviceBuffer sums = cleared(sizeof out, 0);
  const void* row_ptr = a.row_ptr;
  long long nrows = a.nrows;
  void* sums_ptr = sums.get();
  void* args[] = {&row_ptr, &nrows, &sums_ptr};
  const std::int64_t slices = (a.nrows + codegen::kEllLevelRows - 1) / codegen::kEllLevelRows;
  const int warps_per_block = codegen::kEllLevelBlock / 32;
  // A block sums its warps' slices before its global atomics: a few hundred blocks keep those
  // few while filling the GPU.
  const std::int64_t grid =
      std::clamp<std::int64_t>((slices + warps_per_block - 1) / warps_per_block, 1, 1024);
  kernels.slice_longest->launch(grid, codegen::kEllLevelBlock, 0, args, nullptr);
  check_last_launch(codegen::kSliceLongestEntry);
  sums.download(out.data(), sizeof out);
  return out;
}

void scan_device(std::int64_t* data, std::int64_t n, const DeviceEllKernels& kernels) {
  if (n <= 0) return;
  const std::int64_t chunks = (n + codegen::kEllScanChunk - 1) / codegen::kEllScanChunk;
  DeviceBuffer partials(static_cast<std::size_t>(chunks) * sizeof(std::int64_t));
  void* data_ptr = data;
  void* partials_ptr = partials.get();
  long long count = n, nchunks = chunks;
  {
    void* args[] = {&data_ptr, &count, &partials_ptr};
    kernels.scan_partials->launch(chunks, codegen::kEllScanBlock, 0, args, nullptr);
    check_last_launch(codegen::kScanPartialsEntry);
  }
  {
    void* args[] = {&partials_ptr, &nchunks};
    kernels.scan_top->launch(1, codegen::kEllScanTopBlock, 0, args, nullptr);
    check_last_launch(codegen::kScanTopEntry);
  }
  {
    void* args[] = {&data_ptr, &count, &partials_ptr};
    kernels.scan_apply->launch(chunks, codegen::kEllScanBlock, 0, args, nullptr);
    check_last_launch(codegen::kScanApplyEntry);
  }
}

DeviceEllBuild build_ell_family_device(const DeviceCsr& a, const Plan& plan, const Profile& profile,
                                       const std::vector<std::uint64_t>& patterns,
                                       const DeviceCsrKernels& csr_kernels,
                                       const DeviceEllKernels& kernels,
                                       const DeviceValues16* values16) {
  DeviceEllBuild out;
  auto t0 = Clock::now();
  const int coding = compiler::value_coding(plan);
  ValueSource values = value_source(a, plan.precision, coding, patterns, csr_kernels, values16);
  synchronize();
  out.timings.values = seconds_since(t0);

  const void* row_ptr = a.row_ptr;
  const void* col_idx = a.col_idx;
  long long nrows = a.nrows;
  if (const auto* p = std::get_if<EllParams>(&plan.params)) {
    const std::int64_t width = p->width == 0 ? profile.row_max : p->width;
    if (width < profile.row_max)
      throw InternalError(
          fmt::format("ell: width {} is less than the longest row {}", width, profile.row_max));
    t0 = Clock::now();
    build_ell_part(a, width, p->threads_per_row, p->row_lengths, "", values,
                   std::move(values.table), kernels, out);
    synchronize();
    out.timings.fill = seconds_since(t0);
    out.width = padded_width(width, p->threads_per_row);
    return out;
  }

  if (const auto* p = std::get_if<HybParams>(&plan.params)) {
    t0 = Clock::now();
    long long width = p->width;
    DeviceBuffer offsets(static_cast<std::size_t>(a.nrows + 1) * sizeof(std::int64_t));
    void* offsets_ptr = offsets.get();
    {
      void* args[] = {&row_ptr, &nrows, &width, &offsets_ptr};
      kernels.hyb_tails->launch(stride_grid(a.nrows + 1, codegen::kEllFillBlock),
                                codegen::kEllFillBlock, 0, args, nullptr);
      check_last_launch(codegen::kHybTailsEntry);
    }
    scan_device(static_cast<std::int64_t*>(offsets_ptr), a.nrows + 1, kernels);
    out.coo = read_i64(offsets, a.nrows);
    if (out.coo < 0 || out.coo > a.nnz)
      throw InternalError(
          fmt::format("hyb on the GPU: {} COO entries of {} nonzeros", out.coo, a.nnz));
    const auto coo = static_cast<std::size_t>(out.coo);
    DeviceBuffer coo_row(coo * 4), coo_col(coo * 4);
    DeviceBuffer coo_val(coo * static_cast<std::size_t>(values.elem_bytes));
    out.timings.layout = seconds_since(t0);

    t0 = Clock::now();
    DeviceBuffer coo_table = copy_of(values.table);
    build_ell_part(a, p->width, p->threads_per_row, p->row_lengths, "ell_", values,
                   std::move(values.table), kernels, out);
    {
      const void* src = values.ptr;
      int elem_bytes = values.elem_bytes;
      void* row_out = coo_row.get();
      void* col_out = coo_col.get();
      void* val_out = coo_val.get();
      void* args[] = {&row_ptr, &col_idx,     &src,     &elem_bytes, &nrows,
                      &width,   &offsets_ptr, &row_out, &col_out,    &val_out};
      // A warp per row.
      kernels.hyb_coo_fill->launch(stride_grid(32 * a.nrows, codegen::kEllFillBlock),
                                   codegen::kEllFillBlock, 0, args, nullptr);
      check_last_launch(codegen::kHybCooFillEntry);
    }
    out.arrays.emplace_back("coo_row", std::move(coo_row));
    out.arrays.emplace_back("coo_col", std::move(coo_col));
    if (values.elem_bytes > 0) out.arrays.emplace_back("coo_values", std::move(coo_val));
    if (coo_table.bytes() > 0) out.arrays.emplace_back("coo_values_table", std::move(coo_table));
    synchronize();
    out.timings.fill = seconds_since(t0);
    out.width = padded_width(p->width, p->threads_per_row);
    return out;
  }

  if (const auto* p = std::get_if<SellParams>(&plan.params)) {
    if (p->sigma > codegen::kDeviceSortWindow)
      throw InternalError(fmt::format("sell on the GPU: sorting window {} over {}", p->sigma,
                                      codegen::kDeviceSortWindow));
    t0 = Clock::now();
    int c = p->slice_height, t = p->threads_per_row, sigma = p->sigma;
    const bool permuted = sigma > 1;
    DeviceBuffer perm(permuted ? static_cast<std::size_t>(a.nrows) * 4 : 0);
    void* perm_ptr = permuted ? perm.get() : nullptr;
    if (permuted && a.nrows > 0) {
      void* args[] = {&row_ptr, &nrows, &sigma, &perm_ptr};
      const std::int64_t windows = (a.nrows + sigma - 1) / sigma;
      kernels.sell_sort->launch(std::clamp<std::int64_t>(windows, 1, 4096), codegen::kEllSortBlock,
                                0, args, nullptr);
      check_last_launch(codegen::kSellSortEntry);
    }
    const std::int64_t slices = (a.nrows + c - 1) / c;
    DeviceBuffer slice_ptr(static_cast<std::size_t>(slices + 1) * sizeof(std::int64_t));
    void* slice_ptr_ptr = slice_ptr.get();
    {
      void* args[] = {&row_ptr, &perm_ptr, &nrows, &c, &t, &slice_ptr_ptr};
      kernels.sell_widths->launch(stride_grid(slices + 1, codegen::kEllFillBlock),
                                  codegen::kEllFillBlock, 0, args, nullptr);
      check_last_launch(codegen::kSellWidthsEntry);
    }
    scan_device(static_cast<std::int64_t*>(slice_ptr_ptr), slices + 1, kernels);
    const auto slots = static_cast<std::size_t>(read_i64(slice_ptr, slices));
    out.timings.layout = seconds_since(t0);

    t0 = Clock::now();
    DeviceBuffer col = cleared(slots * 4, 0xff);  // column -1 in every padding slot
    DeviceBuffer val = cleared(slots * static_cast<std::size_t>(values.elem_bytes), 0);
    {
      const void* src = values.ptr;
      int elem_bytes = values.elem_bytes;
      void* col_out = col.get();
      void* val_out = val.get();
      void* args[] = {&row_ptr, &col_idx, &src,           &elem_bytes, &perm_ptr, &nrows,
                      &c,       &t,       &slice_ptr_ptr, &col_out,    &val_out};
      kernels.sell_fill->launch(stride_grid(a.nrows, codegen::kEllFillBlock),
                                codegen::kEllFillBlock, 0, args, nullptr);
      check_last_launch(codegen::kSellFillEntry);
    }
    out.arrays.emplace_back("slice_ptr", std::move(slice_ptr));
    if (permuted) out.arrays.emplace_back("perm", std::move(perm));
    out.arrays.emplace_back("col_idx", std::move(col));
    out.arrays.emplace_back("values", std::move(val));
    synchronize();
    out.timings.fill = seconds_since(t0);
    return out;
  }
  throw InternalError("build_ell_family_device: plan format " + plan.format +
                      " is not ell, sell or hyb");
}

DeviceDiagonals inspect_diagonals_device(const DeviceCsr& a, Precision precision,
                                         const DeviceEllKernels& kernels) {
  DeviceDiagonals out;
  if (a.nnz == 0 || a.nrows == 0) return out;
  DeviceBuffer keys = cleared(sizeof(std::uint64_t) * codegen::kDiaSlots, 0);
  DeviceBuffer count = cleared(sizeof(int), 0);
  {
    const void* row_ptr = a.row_ptr;
    const void* col_idx = a.col_idx;
    long long nrows = a.nrows;
    void* keys_ptr = keys.get();
    void* count_ptr = count.get();
    void* args[] = {&row_ptr, &col_idx, &nrows, &keys_ptr, &count_ptr};
    // A few blocks per SM's worth, each walking rows grid-stride: its shared set then filters
    // most repeats before the global one.
    const std::int64_t grid =
        std::clamp<std::int64_t>((a.nrows + codegen::kDiaBlock - 1) / codegen::kDiaBlock, 1, 1024);
    kernels.dia_offsets->launch(grid, codegen::kDiaBlock, 0, args, nullptr);
    check_last_launch(codegen::kDiaOffsetsEntry);
  }
  int n = 0;
  count.download(&n, sizeof n);
  if (n > kMaxDiagonals) {
    out.count = -1;
    return out;
  }
  std::vector<std::uint64_t> found(codegen::kDiaSlots);
  keys.download(found.data(), found.size() * sizeof(std::uint64_t));
  for (const std::uint64_t key : found) {
    if (key != 0)
      out.occupied.push_back(
          static_cast<std::int32_t>(static_cast<std::int64_t>(key) - (std::int64_t{1} << 32)));
  }
  std::sort(out.occupied.begin(), out.occupied.end());
  out.count = static_cast<std::int64_t>(out.occupied.size());
  if (out.count != n) throw InternalError("dia: the diagonal set and its count disagree");
  // Symmetry only where it can hold: square, and every diagonal's mirror occupied.
  if (a.nrows != a.ncols) return out;
  for (const std::int32_t o : out.occupied) {
    if (!std::binary_search(out.occupied.begin(), out.occupied.end(), -o)) return out;
  }
  DeviceBuffer flags = cleared(2 * sizeof(int), 0);
  DeviceBuffer counts = cleared(2 * sizeof(std::uint64_t), 0);
  {
    const void* row_ptr = a.row_ptr;
    const void* col_idx = a.col_idx;
    const void* values = a.values;
    int elem_bytes = value_bytes(precision);
    long long nrows = a.nrows;
    void* flags_ptr = flags.get();
    void* counts_ptr = counts.get();
    void* args[] = {&row_ptr, &col_idx, &values, &elem_bytes, &nrows, &flags_ptr, &counts_ptr};
    kernels.dia_symmetry->launch((a.nrows + codegen::kDiaBlock - 1) / codegen::kDiaBlock,
                                 codegen::kDiaBlock, 0, args, nullptr);
    check_last_launch(codegen::kDiaSymmetryEntry);
  }
  std::array<int, 2> f{};
  std::array<std::uint64_t, 2> c{};
  flags.download(f.data(), sizeof f);
  counts.download(c.data(), sizeof c);
  out.structural = f[0] == 0 && c[0] == c[1];
  out.numerical = out.structural && f[1] == 0;
  return out;
}

DeviceDiaBuild build_dia_device(const DeviceCsr& a, const Plan& plan,
                                const std::vector<std::int32_t>& occupied,
                                const DeviceEllKernels& kernels) {
  const auto* p = std::get_if<DiaParams>(&plan.params);
  if (p == nullptr) throw InternalError("build_dia_device: plan format " + plan.format);
  DeviceDiaBuild out;
  out.offsets = compiler::dia_stored_offsets(plan, occupied);
  const int vb = value_bytes(plan.precision);
  const std::size_t bytes =
      out.offsets.size() * static_cast<std::size_t>(a.nrows) * static_cast<std::size_t>(vb);
  DeviceBuffer values = cleared(std::max<std::size_t>(bytes, 1), 0);
  if (a.nnz > 0 && !out.offsets.empty()) {
    DeviceBuffer offsets(out.offsets.size() * sizeof(std::int32_t));
    offsets.upload(out.offsets.data(), out.offsets.size() * sizeof(std::int32_t));
    const void* row_ptr = a.row_ptr;
    const void* col_idx = a.col_idx;
    const void* src = a.values;
    int elem_bytes = vb;
    long long nrows = a.nrows;
    const void* offsets_ptr = offsets.get();
    int noffsets = static_cast<int>(out.offsets.size());
    int symmetric = p->symmetric ? 1 : 0;
    void* values_ptr = values.get();
    void* args[] = {&row_ptr,     &col_idx,  &src,       &elem_bytes, &nrows,
                    &offsets_ptr, &noffsets, &symmetric, &values_ptr};
    kernels.dia_fill->launch((a.nrows + codegen::kDiaBlock - 1) / codegen::kDiaBlock,
                             codegen::kDiaBlock, 0, args, nullptr);
    check_last_launch(codegen::kDiaFillEntry);
    synchronize();  // `offsets` is freed on return
  }
  out.arrays.emplace_back("values", std::move(values));
  return out;
}

}  // namespace spmvc::runtime
