// BRO-ELL and BRO-COO on the GPU (device_bro.hpp): the column inspection and the encoders'
// passes, launched on the default stream. The host waits three times: for the width-table size
// (BRO-COO: the entry count), for the symbol count (and a baked pattern), and for the count of
// values the coding could not hold. A 16-bit table's codes are written per nonzero first
// (device_values.hpp), once for a plan, and the fill passes copy them into the value slots.
#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <variant>

#include <fmt/format.h>

#include "build_units.hpp"
#include "device_bro.hpp"
#include "device_values.hpp"
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

// counts[1..n] of a buffer of n + 1 counts (counts[0] = 0) turned into their prefix sums in
// place: the exclusive offsets of n items and, at n, their total.
void offsets_from_counts(DeviceBuffer& counts, std::int64_t n, const DeviceBroKernels& kernels) {
  scan_device(static_cast<std::int64_t*>(counts.get()) + 1, n, kernels.scans);
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

// The 16-bit codes of a plan's values (code_values16_device: one per nonzero, in CSR order),
// made once for both parts of bro_hyb, with the entries of their table and the padding's code.
struct Codes16 {
  DeviceValueCodes coded;
  std::int64_t entries = 0;
  int pad_code = 0;
};

std::optional<Codes16> codes16_for(const DeviceCsr& a, int coding, Precision precision,
                                   const DeviceValues16* values16) {
  if (coding != formats::kValuesTable16) return std::nullopt;
  if (values16 == nullptr || values16->kernels == nullptr)
    throw InternalError("BRO on the GPU: a 16-bit value table without its patterns");
  Codes16 c;
  c.coded = code_values16_device(a, precision, values16->patterns, *values16->kernels);
  // No stored value (no nonzeros): code_values16_device's table holds one entry, 0.
  c.entries = std::max<std::int64_t>(1, static_cast<std::int64_t>(values16->patterns.size()));
  c.pad_code = codegen::bro_padding_code(values16->patterns);
  return c;
}

// Where a fill pass stores the values (formats/values' coding of `coding`): the slot array, what
// the fill reads (the caller's values, or the 16-bit codes), for 8-bit codes the sorted patterns
// it searches, the kernel's table and the padding's code.
struct ValueSlots {
  int store = codegen::kBroStorePlain;
  const void* source = nullptr;  // value k of the fill's input: the caller's, or its 16-bit code
  DeviceBuffer values;
  DeviceBuffer lookup;  // the 8-bit table's patterns, sorted, for the fill's binary search
  DeviceBuffer table;   // the patterns as values of the precision's type: the kernel's values_table
  int ntable = 0;       // entries of `lookup` (the fill copies them to shared memory: <= 256)
  std::int64_t table_entries = 0;
  int pad_code = 0;
};

ValueSlots value_slots(const DeviceCsr& a, int coding, Precision precision,
                       const std::vector<std::uint64_t>& found_patterns, std::int64_t slots,
                       const Codes16* codes16) {
  ValueSlots vs;
  vs.source = a.values;
  std::size_t slot_bytes = static_cast<std::size_t>(value_bytes(precision));
  if (coding == formats::kValuesUnit) {
    vs.store = codegen::kBroStoreNone;
  } else if (coding == formats::kValuesTable8) {
    vs.store = codegen::kBroStoreCode8;
    slot_bytes = 1;
  } else if (coding == formats::kValuesTable16) {
    if (codes16 == nullptr) throw InternalError("BRO on the GPU: a 16-bit table without codes");
    vs.store = codegen::kBroStoreCode16;
    slot_bytes = 2;
    vs.source = codes16->coded.codes.get();
    // A copy: bro_hyb's two parts each name a table of their own.
    vs.table = DeviceBuffer(codes16->coded.table.bytes());
    vs.table.copy_from(codes16->coded.table.get(), codes16->coded.table.bytes());
    vs.table_entries = codes16->entries;
    vs.pad_code = codes16->pad_code;
  } else if (coding == formats::kValuesF32) {
    if (precision != Precision::f64)
      throw InternalError("BRO on the GPU: fp32 value storage of values already fp32");
    vs.store = codegen::kBroStoreF32;
    slot_bytes = 4;
  } else if (coding != formats::kValuesPlain) {
    throw InternalError(
        fmt::format("BRO on the GPU: value coding {} is built from host arrays only", coding));
  }
  if (vs.store == codegen::kBroStoreCode8) {
    // No stored value (no nonzeros): one entry, 0, keeps the table valid, as the host encoder
    // keeps it.
    const std::vector<std::uint64_t> patterns =
        found_patterns.empty() ? std::vector<std::uint64_t>{0} : found_patterns;
    if (patterns.size() > static_cast<std::size_t>(codegen::kDeviceValueCap))
      throw InternalError(
          fmt::format("BRO on the GPU: {} value patterns for an 8-bit table", patterns.size()));
    vs.ntable = static_cast<int>(patterns.size());
    vs.table_entries = vs.ntable;
    vs.lookup = elements(vs.ntable, 8);
    vs.lookup.upload(patterns.data(), patterns.size() * 8);
    const int vb = value_bytes(precision);
    vs.table = elements(vs.ntable, static_cast<std::size_t>(vb));
    if (vb == 8) {
      vs.table.upload(patterns.data(), patterns.size() * 8);
    } else {
      const std::vector<std::uint32_t> narrow(patterns.begin(), patterns.end());
      vs.table.upload(narrow.data(), narrow.size() * 4);
    }
    vs.pad_code = codegen::bro_padding_code(patterns);
  }
  if (vs.store != codegen::kBroStoreNone) vs.values = elements(slots, slot_bytes);
  return vs;
}

// The values' arrays, named as the host encoders name them.
void append_values(ValueSlots& vs, std::int64_t slots, const std::string& prefix,
                   std::vector<std::pair<std::string, DeviceBuffer>>& arrays,
                   std::vector<std::int64_t>& counts) {
  if (vs.store != codegen::kBroStoreNone) {
    arrays.emplace_back(prefix + "values", std::move(vs.values));
    counts.push_back(slots);
  }
  if (vs.store == codegen::kBroStoreCode8 || vs.store == codegen::kBroStoreCode16) {
    arrays.emplace_back(prefix + "values_table", std::move(vs.table));
    counts.push_back(vs.table_entries);
  }
}

// Waits for the fill and throws when some value did not fit the coding.
void check_values_fit(const DeviceBuffer& bad, int coding) {
  std::uint64_t missed = 0;
  bad.download(&missed, sizeof missed);  // synchronous: waits for the fill
  if (missed > 0)
    throw InputError(
        "DeviceCsr", 0,
        fmt::format("{} values do not fit the value coding the inspection chose ({}): the "
                    "values changed while compiling",
                    missed, coding == formats::kValuesF32 ? "fp32" : "8-bit table"));
}

}  // namespace

DeviceBroKernels load_device_bro_kernels(KernelCache& cache, const DeviceInfo& device) {
  const auto t0 = std::chrono::steady_clock::now();
  const BuildUnitImage unit =
      obtain_build_unit(BuildUnit::device_bro, codegen::device_bro_source, cache, device);
  const CachedKernel& cached = *unit.image;
  DeviceBroKernels k;
  k.inspect = shared_kernel(cached, codegen::kBroInspectEntry, device.ordinal);
  k.columns = shared_kernel(cached, codegen::kBroEllColumnsEntry, device.ordinal);
  k.widths = shared_kernel(cached, codegen::kBroEllWidthsEntry, device.ordinal);
  k.slice = shared_kernel(cached, codegen::kBroEllSliceEntry, device.ordinal);
  k.fill32 = shared_kernel(cached, codegen::kBroEllFill32Entry, device.ordinal);
  k.fill64 = shared_kernel(cached, codegen::kBroEllFill64Entry, device.ordinal);
  k.coo_counts = shared_kernel(cached, codegen::kBroCooCountsEntry, device.ordinal);
  k.coo_select = shared_kernel(cached, codegen::kBroCooSelectEntry, device.ordinal);
  k.coo_widths = shared_kernel(cached, codegen::kBroCooWidthsEntry, device.ordinal);
  k.coo_fill32 = shared_kernel(cached, codegen::kBroCooFill32Entry, device.ordinal);
  k.coo_fill64 = shared_kernel(cached, codegen::kBroCooFill64Entry, device.ordinal);
  k.scans = load_device_ell_kernels(cache, device);
  k.nvcc = unit.nvcc && k.scans.nvcc;
  k.ordinal = device.ordinal;
  k.disk_note = cached.disk_note;
  k.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return k;
}

PendingBroInspection launch_bro_inspection(const DeviceCsr& a, const DeviceBroKernels& kernels) {
  PendingBroInspection pending;
  if (a.nrows == 0) return pending;
  const codegen::BroInspection stats = codegen::initial_bro_inspection();
  pending.out.emplace(sizeof stats);
  pending.out->upload(stats.data(), sizeof stats);
  const void* row_ptr = a.row_ptr;
  const void* col_idx = a.col_idx;
  long long nrows = a.nrows;
  void* out_ptr = pending.out->get();
  launch(*kernels.inspect, codegen::kBroInspectEntry,
         std::clamp<std::int64_t>(
             (a.nrows + codegen::kBroInspectBlock - 1) / codegen::kBroInspectBlock, 1, 4096),
         codegen::kBroInspectBlock, {&row_ptr, &col_idx, &nrows, &out_ptr});
  return pending;
}

std::string finish_bro_inspection(PendingBroInspection& pending, Profile& profile) {
  codegen::BroInspection stats = codegen::initial_bro_inspection();
  if (pending.out) pending.out->download(stats.data(), sizeof stats);  // waits for the pass
  pending.out.reset();
  std::string problem = codegen::bro_columns_problem(stats);
  codegen::apply_bro_inspection(stats, profile);
  return problem;
}

std::string inspect_bro_device(const DeviceCsr& a, const DeviceBroKernels& kernels,
                               Profile& profile) {
  PendingBroInspection pending = launch_bro_inspection(a, kernels);
  return finish_bro_inspection(pending, profile);
}

namespace {

DeviceBroEll ell_part(const DeviceCsr& a, const DeviceEllShape& p, std::int64_t width,
                      const std::string& prefix, Precision precision,
                      const std::vector<std::uint64_t>& value_patterns, std::int64_t row_max,
                      const DeviceBroKernels& kernels, const Codes16* codes16) {
  const int h = p.slice_height, T = p.threads_per_row, L = p.symbol_bits;
  const std::int64_t S = static_cast<std::int64_t>(h) * T;
  DeviceBroEll out;
  out.nslices = (a.nrows + h - 1) / h;
  const void* row_ptr = a.row_ptr;
  const void* col_idx = a.col_idx;
  long long nrows = a.nrows;
  long long limit = width;
  int h_arg = h, T_arg = T, L_arg = L;
  const int block = codegen::kBroEncodeBlock;

  // numCol of every slice, and its prefix sums.
  DeviceBuffer col_ptr = elements(out.nslices + 1, 8);
  void* col_ptr_arg = col_ptr.get();
  // A warp per slice (templates/device_bro.cuh: ell_columns).
  launch(*kernels.columns, codegen::kBroEllColumnsEntry, stride_grid(32 * out.nslices, block),
         block, {&row_ptr, &nrows, &h_arg, &T_arg, &limit, &col_ptr_arg});
  offsets_from_counts(col_ptr, out.nslices, kernels);
  out.columns = download_i64(col_ptr, out.nslices);

  // The widest field of every slice column (and of every column position, baked).
  const std::int64_t longest = (std::clamp<std::int64_t>(row_max, 0, width) + T - 1) / T;
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
  offsets_from_counts(sym_ptr, out.nslices, kernels);
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
  ValueSlots vs = value_slots(a, p.values, precision, value_patterns, slots, codes16);
  DeviceBuffer bad(8);
  bad.fill_bytes(0);
  const void* values_in = vs.source;
  int value_bytes_arg = value_bytes(precision);
  void* symbols_arg = symbols.get();
  void* slots_arg = vs.values.get();
  const void* lookup_arg = vs.lookup.get();
  void* bad_arg = bad.get();
  const LoadedKernel& fill = L == 64 ? *kernels.fill64 : *kernels.fill32;
  launch(fill, L == 64 ? codegen::kBroEllFill64Entry : codegen::kBroEllFill32Entry,
         stride_grid(out.nslices * S, block), block,
         {&row_ptr, &col_idx, &values_in, &value_bytes_arg, &nrows, &h_arg, &T_arg, &limit,
          &col_ptr_arg, &sym_ptr_arg, &widths_arg, &symbols_arg, &vs.store, &slots_arg, &lookup_arg,
          &vs.ntable, &vs.pad_code, &bad_arg});
  check_values_fit(bad, p.values);
  if (p.tables == 1) {
    out.baked.resize(static_cast<std::size_t>(out.columns));
    if (out.columns > 0) widths.download(out.baked.data(), out.baked.size());
  }

  out.arrays.emplace_back(prefix + "col_ptr", std::move(col_ptr));
  out.counts.push_back(out.nslices + 1);
  out.arrays.emplace_back(prefix + "sym_ptr", std::move(sym_ptr));
  out.counts.push_back(out.nslices + 1);
  out.arrays.emplace_back(prefix + "widths", std::move(widths));
  out.counts.push_back(out.columns);
  out.arrays.emplace_back(prefix + "symbols", std::move(symbols));
  out.counts.push_back(symbol_count);
  append_values(vs, slots, prefix, out.arrays, out.counts);
  return out;
}

DeviceBroCoo coo_part(const DeviceCsr& a, int interval, int symbol_bits, int coding,
                      std::int64_t width, const std::string& prefix, Precision precision,
                      const std::vector<std::uint64_t>& value_patterns,
                      const DeviceBroKernels& kernels, const Codes16* codes16) {
  const int I = interval, L = symbol_bits;
  const int block = codegen::kBroEncodeBlock;
  DeviceBroCoo out;
  const void* row_ptr = a.row_ptr;
  const void* col_idx = a.col_idx;
  long long nrows = a.nrows, skip = width;

  // Each row's entries, their offsets, and each entry's row and nonzero.
  DeviceBuffer offsets = elements(a.nrows + 1, 8);
  void* offsets_arg = offsets.get();
  launch(*kernels.coo_counts, codegen::kBroCooCountsEntry, stride_grid(a.nrows, block), block,
         {&row_ptr, &nrows, &skip, &offsets_arg});
  offsets_from_counts(offsets, a.nrows, kernels);
  out.entries = download_i64(offsets, a.nrows);
  DeviceBuffer rows = elements(out.entries, 4);
  DeviceBuffer at = elements(out.entries, 8);
  void* rows_arg = rows.get();
  void* at_arg = at.get();
  launch(*kernels.coo_select, codegen::kBroCooSelectEntry, stride_grid(32 * a.nrows, block), block,
         {&row_ptr, &nrows, &skip, &offsets_arg, &rows_arg, &at_arg});

  // Each interval's first row, widths and symbols per lane, and their prefix sums.
  out.intervals = (out.entries + I - 1) / I;
  long long n = out.entries;
  int I_arg = I, L_arg = L;
  DeviceBuffer row_base = elements(out.intervals, 4);
  DeviceBuffer widths = elements(2 * out.intervals, 1);
  DeviceBuffer sym_ptr = elements(out.intervals + 1, 8);
  void* row_base_arg = row_base.get();
  void* widths_arg = widths.get();
  void* sym_ptr_arg = sym_ptr.get();
  launch(*kernels.coo_widths, codegen::kBroCooWidthsEntry, stride_grid(32 * out.intervals, block),
         block, {&rows_arg, &n, &I_arg, &L_arg, &row_base_arg, &widths_arg, &sym_ptr_arg});
  offsets_from_counts(sym_ptr, out.intervals, kernels);
  out.symbols = download_i64(sym_ptr, out.intervals);

  // The streams (one row of zero symbols after the last, as the host writes), columns and values.
  const auto word = static_cast<std::size_t>(L / 8);
  const std::int64_t symbol_count = (out.symbols + 1) * 32;
  DeviceBuffer symbols = elements(symbol_count, word);
  symbols.fill_bytes(0, static_cast<std::size_t>(out.symbols * 32) * word, 32 * word);
  const std::int64_t slots = out.intervals * I;
  DeviceBuffer cols = elements(slots, 4);
  ValueSlots vs = value_slots(a, coding, precision, value_patterns, slots, codes16);
  DeviceBuffer bad(8);
  bad.fill_bytes(0);
  const void* values_in = vs.source;
  int value_bytes_arg = value_bytes(precision);
  void* symbols_arg = symbols.get();
  void* cols_arg = cols.get();
  void* slots_arg = vs.values.get();
  const void* lookup_arg = vs.lookup.get();
  void* bad_arg = bad.get();
  const LoadedKernel& fill = L == 64 ? *kernels.coo_fill64 : *kernels.coo_fill32;
  launch(fill, L == 64 ? codegen::kBroCooFill64Entry : codegen::kBroCooFill32Entry,
         stride_grid(32 * out.intervals, block), block,
         {&rows_arg, &at_arg, &n, &col_idx, &values_in, &value_bytes_arg, &I_arg, &widths_arg,
          &sym_ptr_arg, &symbols_arg, &cols_arg, &vs.store, &slots_arg, &lookup_arg, &vs.ntable,
          &vs.pad_code, &bad_arg});
  check_values_fit(bad, coding);

  DeviceBuffer count(8);
  count.upload(&out.entries, sizeof out.entries);
  out.arrays.emplace_back(prefix + "count", std::move(count));
  out.counts.push_back(1);
  out.arrays.emplace_back(prefix + "row_base", std::move(row_base));
  out.counts.push_back(out.intervals);
  out.arrays.emplace_back(prefix + "widths", std::move(widths));
  out.counts.push_back(2 * out.intervals);
  out.arrays.emplace_back(prefix + "sym_ptr", std::move(sym_ptr));
  out.counts.push_back(out.intervals + 1);
  out.arrays.emplace_back(prefix + "symbols", std::move(symbols));
  out.counts.push_back(symbol_count);
  out.arrays.emplace_back(prefix + "col_idx", std::move(cols));
  out.counts.push_back(slots);
  append_values(vs, slots, prefix, out.arrays, out.counts);
  return out;
}

}  // namespace

DeviceBroEll encode_ell_part(const DeviceCsr& a, const DeviceEllShape& shape, std::int64_t width,
                             const std::string& prefix, Precision precision,
                             const std::vector<std::uint64_t>& value_patterns, std::int64_t row_max,
                             const DeviceBroKernels& kernels, const DeviceValues16* values16) {
  const std::optional<Codes16> codes16 = codes16_for(a, shape.values, precision, values16);
  return ell_part(a, shape, width, prefix, precision, value_patterns, row_max, kernels,
                  codes16 ? &*codes16 : nullptr);
}

DeviceBroEll encode_bro_ell_device(const DeviceCsr& a, const BroEllParams& p, Precision precision,
                                   const std::vector<std::uint64_t>& value_patterns,
                                   std::int64_t row_max, const DeviceBroKernels& kernels,
                                   const DeviceValues16* values16) {
  return encode_ell_part(a, {p.slice_height, p.symbol_bits, p.threads_per_row, p.tables, p.values},
                         std::numeric_limits<long long>::max(), "", precision, value_patterns,
                         row_max, kernels, values16);
}

DeviceBroCoo encode_coo_part(const DeviceCsr& a, int interval, int symbol_bits, int coding,
                             std::int64_t width, const std::string& prefix, Precision precision,
                             const std::vector<std::uint64_t>& value_patterns,
                             const DeviceBroKernels& kernels, const DeviceValues16* values16) {
  const std::optional<Codes16> codes16 = codes16_for(a, coding, precision, values16);
  return coo_part(a, interval, symbol_bits, coding, width, prefix, precision, value_patterns,
                  kernels, codes16 ? &*codes16 : nullptr);
}

DeviceBroCoo encode_bro_coo_device(const DeviceCsr& a, const BroCooParams& p, Precision precision,
                                   const std::vector<std::uint64_t>& value_patterns,
                                   const DeviceBroKernels& kernels,
                                   const DeviceValues16* values16) {
  return encode_coo_part(a, p.interval, p.symbol_bits, p.values, 0, "", precision, value_patterns,
                         kernels, values16);
}

DeviceBroHyb encode_bro_hyb_device(const DeviceCsr& a, const BroHybParams& p, Precision precision,
                                   const std::vector<std::uint64_t>& value_patterns,
                                   std::int64_t row_max, const DeviceBroKernels& kernels,
                                   const DeviceValues16* values16) {
  // One code pass serves both parts.
  const std::optional<Codes16> codes16 = codes16_for(a, p.values, precision, values16);
  const Codes16* c = codes16 ? &*codes16 : nullptr;
  DeviceBroHyb out;
  out.ell = ell_part(a, {p.slice_height, p.symbol_bits, p.threads_per_row, p.tables, p.values},
                     p.width, "ell_", precision, value_patterns, row_max, kernels, c);
  out.coo = coo_part(a, p.interval, p.symbol_bits, p.values, p.width, "coo_", precision,
                     value_patterns, kernels, c);
  return out;
}

std::optional<BroBuilt> encode_bro_plan(Operator::Impl& im, const DeviceCsr& a,
                                        const std::vector<std::uint64_t>& value_patterns,
                                        const DeviceBroKernels* kernels,
                                        const DeviceValues16* values16) {
  const auto* ell = std::get_if<BroEllParams>(&im.plan.params);
  const auto* coo = std::get_if<BroCooParams>(&im.plan.params);
  const auto* hyb = std::get_if<BroHybParams>(&im.plan.params);
  if (ell == nullptr && coo == nullptr && hyb == nullptr) return std::nullopt;
  if (kernels == nullptr)
    throw InternalError(im.plan.format + " planned from device arrays without its unit");
  const Precision precision = im.plan.precision;
  BroBuilt built;
  std::vector<std::pair<std::string, DeviceBuffer>> arrays;
  if (ell != nullptr) {
    DeviceBroEll e = encode_bro_ell_device(a, *ell, precision, value_patterns, im.profile.row_max,
                                           *kernels, values16);
    built.baked = std::move(e.baked);
    arrays = std::move(e.arrays);
  } else if (coo != nullptr) {
    DeviceBroCoo c = encode_bro_coo_device(a, *coo, precision, value_patterns, *kernels, values16);
    built.entries = c.entries;
    arrays = std::move(c.arrays);
  } else {
    DeviceBroHyb h = encode_bro_hyb_device(a, *hyb, precision, value_patterns, im.profile.row_max,
                                           *kernels, values16);
    built.baked = std::move(h.ell.baked);
    built.entries = h.coo.entries;
    arrays = std::move(h.ell.arrays);
    for (auto& array : h.coo.arrays) arrays.push_back(std::move(array));
  }
  for (auto& [name, buffer] : arrays) {
    im.device_bytes += static_cast<std::int64_t>(buffer.bytes());
    im.arrays.emplace_back(name, std::move(buffer));
  }
  return built;
}

KernelSource generate_bro_plan(const Operator::Impl& im, const DeviceCsr& a,
                               const BroBuilt& built) {
  if (std::holds_alternative<BroEllParams>(im.plan.params))
    return compiler::generate_device_bro_ell(im.plan, im.profile, a, built.baked);
  if (std::holds_alternative<BroCooParams>(im.plan.params))
    return compiler::generate_device_bro_coo(im.plan, im.profile, a, built.entries);
  return compiler::generate_device_bro_hyb(im.plan, im.profile, a, built.baked, built.entries);
}

}  // namespace spmvc::runtime
