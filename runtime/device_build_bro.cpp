// BRO-ELL on the GPU (device_bro.hpp): the column inspection and the encoder's passes, launched
// on the default stream. The host waits three times: for the width-table size, for the symbol
// count (and a baked pattern), and for the count of values the coding could not hold.
#include <algorithm>
#include <chrono>
#include <limits>

#include <fmt/format.h>

#include "device_bro.hpp"
#include "spmvc/compiler/device_bro.hpp"
#include "spmvc/compiler/device_build.hpp"
#include "spmvc/error.hpp"
#include "spmvc/params/values.hpp"

namespace spmvc::runtime {

namespace {

// Blocks for a grid-stride pass over n items: enough to fill the GPU, no more.
std::int64_t stride_grid(std::int64_t n, int block) {
  return std::clamp<std::int64_t>((n + block - 1) / block, 1, 4096);
}

std::int64_t download_i64(const DeviceBuffer& buffer, std::int64_t index) {
  std::int64_t v = 0;
  buffer.download(&v, sizeof v, static_cast<std::size_t>(index) * sizeof v);
  return v;
}

// A buffer of n elements of `size` bytes (at least one, so every pointer is valid).
DeviceBuffer elements(std::int64_t n, std::size_t size) {
  return DeviceBuffer(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)) * size);
}

void launch(const LoadedKernel& kernel, const char* entry, std::int64_t grid, int block,
            std::vector<void*> args) {
  kernel.launch(grid, block, 0, args.data(), nullptr);
  check_last_launch(entry);
}

}  // namespace

DeviceBroKernels load_device_bro_kernels(KernelCache& cache, const DeviceInfo& device) {
  const auto t0 = std::chrono::steady_clock::now();
  const CachedKernel cached = cache.get(codegen::device_bro_source(), device.arch());
  DeviceBroKernels k;
  k.inspect = shared_kernel(cached, codegen::kBroInspectEntry, device.ordinal);
  k.columns = shared_kernel(cached, codegen::kBroEllColumnsEntry, device.ordinal);
  k.scan = shared_kernel(cached, codegen::kBroScanEntry, device.ordinal);
  k.widths = shared_kernel(cached, codegen::kBroEllWidthsEntry, device.ordinal);
  k.slice = shared_kernel(cached, codegen::kBroEllSliceEntry, device.ordinal);
  k.fill32 = shared_kernel(cached, codegen::kBroEllFill32Entry, device.ordinal);
  k.fill64 = shared_kernel(cached, codegen::kBroEllFill64Entry, device.ordinal);
  k.ordinal = device.ordinal;
  k.disk_note = cached.disk_note;
  k.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return k;
}

std::string inspect_bro_device(const DeviceCsr& a, const DeviceBroKernels& kernels,
                               Profile& profile) {
  codegen::BroInspection stats = codegen::initial_bro_inspection();
  if (a.nrows > 0) {
    DeviceBuffer out(sizeof stats);
    out.upload(stats.data(), sizeof stats);
    const void* row_ptr = a.row_ptr;
    const void* col_idx = a.col_idx;
    long long nrows = a.nrows;
    void* out_ptr = out.get();
    launch(*kernels.inspect, codegen::kBroInspectEntry,
           std::clamp<std::int64_t>(
               (a.nrows + codegen::kBroInspectBlock - 1) / codegen::kBroInspectBlock, 1, 4096),
           codegen::kBroInspectBlock, {&row_ptr, &col_idx, &nrows, &out_ptr});
    out.download(stats.data(), sizeof stats);  // synchronous: waits for the kernel
  }
  std::string problem = codegen::bro_columns_problem(stats);
  codegen::apply_bro_inspection(stats, profile);
  return problem;
}

DeviceBroEll encode_bro_ell_device(const DeviceCsr& a, const BroEllParams& p, Precision precision,
                                   const std::vector<std::uint64_t>& value_patterns,
                                   std::int64_t row_max, const DeviceBroKernels& kernels) {
  const int h = p.slice_height, T = p.threads_per_row, L = p.symbol_bits;
  const std::int64_t S = static_cast<std::int64_t>(h) * T;
  DeviceBroEll out;
  out.nslices = (a.nrows + h - 1) / h;
  const void* row_ptr = a.row_ptr;
  const void* col_idx = a.col_idx;
  long long nrows = a.nrows, nslices = out.nslices;
  long long limit = std::numeric_limits<long long>::max();  // bro_ell encodes whole rows
  int h_arg = h, T_arg = T, L_arg = L;
  const int block = codegen::kBroEncodeBlock;

  // numCol of every slice, and its prefix sums.
  DeviceBuffer col_ptr = elements(out.nslices + 1, 8);
  void* col_ptr_arg = col_ptr.get();
  launch(*kernels.columns, codegen::kBroEllColumnsEntry, stride_grid(out.nslices, block), block,
         {&row_ptr, &nrows, &h_arg, &T_arg, &limit, &col_ptr_arg});
  launch(*kernels.scan, codegen::kBroScanEntry, 1, codegen::kBroScanBlock,
         {&col_ptr_arg, &nslices});
  out.columns = download_i64(col_ptr, out.nslices);

  // The widest field of every slice column (and of every column position, baked).
  const std::int64_t longest = T > 0 ? (std::max<std::int64_t>(row_max, 0) + T - 1) / T : 0;
  DeviceBuffer widths32 = elements(out.columns, 4);
  widths32.fill_bytes(0);
  DeviceBuffer pattern32;
  void* pattern_arg = nullptr;
  if (p.tables == 2) {
    pattern32 = elements(longest, 4);
    pattern32.fill_bytes(0);
    pattern_arg = pattern32.get();
  }
  void* widths32_arg = widths32.get();
  launch(*kernels.widths, codegen::kBroEllWidthsEntry, stride_grid(out.nslices * S, block), block,
         {&row_ptr, &col_idx, &nrows, &h_arg, &T_arg, &limit, &col_ptr_arg, &widths32_arg,
          &pattern_arg});

  // The width table, each slice's symbols per lane, and their prefix sums.
  DeviceBuffer widths = elements(out.columns, 1);
  DeviceBuffer sym_ptr = elements(out.nslices + 1, 8);
  void* widths_arg = widths.get();
  void* sym_ptr_arg = sym_ptr.get();
  launch(*kernels.slice, codegen::kBroEllSliceEntry, stride_grid(out.nslices, block), block,
         {&nrows, &h_arg, &T_arg, &L_arg, &col_ptr_arg, &widths32_arg, &pattern_arg, &widths_arg,
          &sym_ptr_arg});
  launch(*kernels.scan, codegen::kBroScanEntry, 1, codegen::kBroScanBlock,
         {&sym_ptr_arg, &nslices});
  out.symbols = download_i64(sym_ptr, out.nslices);
  out.pad_rows = 1;
  if (p.tables == 2) {
    std::vector<std::uint32_t> pattern(static_cast<std::size_t>(longest));
    if (longest > 0) pattern32.download(pattern.data(), pattern.size() * 4);
    std::int64_t bits = 0;
    for (const std::uint32_t b : pattern) {
      bits += b;
      out.baked.push_back(static_cast<std::uint8_t>(b));
    }
    out.pad_rows = std::max<std::int64_t>(1, (bits + L - 1) / L);
  }

  // The symbols (the padding after the last slice zeroed here, the rest written by the lanes)
  // and the value slots.
  const std::int64_t symbol_count = (out.symbols + out.pad_rows) * S;
  const auto word = static_cast<std::size_t>(L / 8);
  DeviceBuffer symbols = elements(symbol_count, word);
  symbols.fill_bytes(0, static_cast<std::size_t>(out.symbols * S) * word,
                     static_cast<std::size_t>(out.pad_rows * S) * word);
  const std::int64_t slots = out.columns * S;
  int store = codegen::kBroStorePlain;
  std::size_t slot_bytes = static_cast<std::size_t>(value_bytes(precision));
  if (p.values == formats::kValuesUnit) {
    store = codegen::kBroStoreNone;
  } else if (p.values == formats::kValuesTable8) {
    store = codegen::kBroStoreCode8;
    slot_bytes = 1;
  } else if (p.values == formats::kValuesF32) {
    if (precision != Precision::f64)
      throw InternalError("bro_ell on the GPU: fp32 value storage of values already fp32");
    store = codegen::kBroStoreF32;
    slot_bytes = 4;
  } else if (p.values != formats::kValuesPlain) {
    throw InternalError(fmt::format(
        "bro_ell on the GPU: value coding {} is built from host arrays only", p.values));
  }
  DeviceBuffer values;
  DeviceBuffer lookup;  // the 8-bit table's patterns, sorted, for the fill's binary search
  DeviceBuffer table;   // the same as values of `precision`'s type: the kernel's values_table
  int ntable = 0, pad_code = 0;
  if (store == codegen::kBroStoreCode8) {
    if (value_patterns.empty() ||
        value_patterns.size() > static_cast<std::size_t>(codegen::kDeviceValueCap))
      throw InternalError(fmt::format("bro_ell on the GPU: {} value patterns for an 8-bit table",
                                      value_patterns.size()));
    ntable = static_cast<int>(value_patterns.size());
    lookup = elements(ntable, 8);
    lookup.upload(value_patterns.data(), value_patterns.size() * 8);
    const int vb = value_bytes(precision);
    table = elements(ntable, static_cast<std::size_t>(vb));
    if (vb == 8) {
      table.upload(value_patterns.data(), value_patterns.size() * 8);
    } else {
      const std::vector<std::uint32_t> narrow(value_patterns.begin(), value_patterns.end());
      table.upload(narrow.data(), narrow.size() * 4);
    }
    // Padding slots hold 0.0, as the host encoder writes them, where the table has it (a
    // padding code may name any entry: the kernels mask padding by its delta).
    const auto zero = std::find(value_patterns.begin(), value_patterns.end(), 0u);
    if (zero != value_patterns.end()) pad_code = static_cast<int>(zero - value_patterns.begin());
  }
  if (store != codegen::kBroStoreNone) values = elements(slots, slot_bytes);
  DeviceBuffer bad(8);
  bad.fill_bytes(0);
  const void* values_in = a.values;
  int value_bytes_arg = value_bytes(precision);
  void* symbols_arg = symbols.get();
  void* slots_arg = values.get();
  const void* lookup_arg = lookup.get();
  void* bad_arg = bad.get();
  const LoadedKernel& fill = L == 64 ? *kernels.fill64 : *kernels.fill32;
  launch(fill, L == 64 ? codegen::kBroEllFill64Entry : codegen::kBroEllFill32Entry,
         stride_grid(out.nslices * S, block), block,
         {&row_ptr, &col_idx, &values_in, &value_bytes_arg, &nrows, &h_arg, &T_arg, &limit,
          &col_ptr_arg, &sym_ptr_arg, &widths_arg, &symbols_arg, &store, &slots_arg, &lookup_arg,
          &ntable, &pad_code, &bad_arg});
  std::uint64_t missed = 0;
  bad.download(&missed, sizeof missed);  // synchronous: waits for the fill
  if (missed > 0)
    throw InputError(
        "DeviceCsr", 0,
        fmt::format("{} values do not fit the value coding the inspection chose ({}): the "
                    "values changed while compiling",
                    missed, p.values == formats::kValuesF32 ? "fp32" : "8-bit table"));
  if (p.tables == 1) {
    out.baked.resize(static_cast<std::size_t>(out.columns));
    if (out.columns > 0) widths.download(out.baked.data(), out.baked.size());
  }

  out.arrays.emplace_back("col_ptr", std::move(col_ptr));
  out.counts.push_back(out.nslices + 1);
  out.arrays.emplace_back("sym_ptr", std::move(sym_ptr));
  out.counts.push_back(out.nslices + 1);
  out.arrays.emplace_back("widths", std::move(widths));
  out.counts.push_back(out.columns);
  out.arrays.emplace_back("symbols", std::move(symbols));
  out.counts.push_back(symbol_count);
  if (store != codegen::kBroStoreNone) {
    out.arrays.emplace_back("values", std::move(values));
    out.counts.push_back(slots);
  }
  if (store == codegen::kBroStoreCode8) {
    out.arrays.emplace_back("values_table", std::move(table));
    out.counts.push_back(ntable);
  }
  return out;
}

}  // namespace spmvc::runtime
