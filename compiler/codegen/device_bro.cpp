#include "spmvc/compiler/device_bro.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/values/values.hpp"
#include "spmvc/error.hpp"

namespace spmvc::codegen {

KernelSource device_bro_source() {
  using S = BroInspectSlots;
  KernelSource k = device_unit(kBroInspectEntry, "device_bro", kBroInspectBlock,
                               "builds BRO-ELL on the GPU from a CSR matrix in device memory.");
  k.source += fmt::format(
      R"(namespace db = spmvc::device_bro;
static_assert(db::kDeltaBits == {} && db::kFirstColBits == {} && db::kXSectors == {} &&
              db::kUnsorted == {} && db::kFirstUnsorted == {} && db::kSliceLongest == {} &&
              db::kInspectSlots == {}, "bro_inspect slots differ from the host's BroInspectSlots");
static_assert(db::kInspectRows == {} && db::kEncodeBlock == {},
              "block sizes differ from the host's");
static_assert(db::kStorePlain == {} && db::kStoreNone == {} && db::kStoreCode8 == {} &&
              db::kStoreF32 == {} && db::kStoreCode16 == {},
              "value storage codes differ from the host's");

extern "C" __global__ void __launch_bounds__(db::kInspectRows)
{}(const int* __restrict__ row_ptr, const int* __restrict__ col_idx, long long nrows,
    unsigned long long* __restrict__ out) {{
  db::bro_inspect(row_ptr, col_idx, nrows, out);
}}

extern "C" __global__ void __launch_bounds__(db::kEncodeBlock)
{}(const int* __restrict__ row_ptr, long long nrows, int h, int T, long long limit,
    long long* __restrict__ col_ptr) {{
  db::ell_columns(row_ptr, db::Shape{{nrows, h, T, limit}}, col_ptr);
}}

extern "C" __global__ void __launch_bounds__(db::kEncodeBlock)
{}(const int* __restrict__ row_ptr, const int* __restrict__ col_idx, long long nrows, int h,
    int T, long long limit, const long long* __restrict__ col_ptr,
    unsigned* __restrict__ widths32, unsigned* __restrict__ pattern32) {{
  db::ell_widths(row_ptr, col_idx, db::Shape{{nrows, h, T, limit}}, col_ptr, widths32, pattern32);
}}

extern "C" __global__ void __launch_bounds__(db::kEncodeBlock)
{}(long long nrows, int h, int T, int symbol_bits, const long long* __restrict__ col_ptr,
    const unsigned* __restrict__ widths32, const unsigned* __restrict__ pattern32,
    unsigned char* __restrict__ widths, long long* __restrict__ sym_ptr) {{
  db::ell_slice(db::Shape{{nrows, h, T, 0}}, symbol_bits, col_ptr, widths32, pattern32, widths,
                sym_ptr);
}}
)",
      S::delta_bits, S::first_col_bits, S::x_sectors, S::unsorted, S::first_unsorted,
      S::slice_longest, S::count, kBroInspectBlock, kBroEncodeBlock, kBroStorePlain, kBroStoreNone,
      kBroStoreCode8, kBroStoreF32, kBroStoreCode16, kBroInspectEntry, kBroEllColumnsEntry,
      kBroEllWidthsEntry, kBroEllSliceEntry);
  for (const auto& [entry, word] : {std::pair{kBroEllFill32Entry, "unsigned"},
                                    std::pair{kBroEllFill64Entry, "unsigned long long"}}) {
    k.source += fmt::format(
        R"(
extern "C" __global__ void __launch_bounds__(db::kEncodeBlock)
{}(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const void* __restrict__ values, int value_bytes, long long nrows, int h, int T,
    long long limit, const long long* __restrict__ col_ptr,
    const long long* __restrict__ sym_ptr, const unsigned char* __restrict__ widths,
    {}* __restrict__ symbols, int store, void* __restrict__ slots,
    const unsigned long long* __restrict__ table, int ntable, int pad_code,
    unsigned long long* __restrict__ bad) {{
  db::ell_fill<{}>(row_ptr, col_idx, values, value_bytes, db::Shape{{nrows, h, T, limit}},
                   col_ptr, sym_ptr, widths, symbols, store, slots, table, ntable, pad_code, bad);
}}
)",
        entry, word, word);
  }
  k.source += fmt::format(
      R"(
extern "C" __global__ void __launch_bounds__(db::kEncodeBlock)
{}(const int* __restrict__ row_ptr, long long nrows, long long skip,
    long long* __restrict__ counts) {{
  db::coo_counts(row_ptr, nrows, skip, counts);
}}

extern "C" __global__ void __launch_bounds__(db::kEncodeBlock)
{}(const int* __restrict__ row_ptr, long long nrows, long long skip,
    const long long* __restrict__ offsets, int* __restrict__ rows, long long* __restrict__ at) {{
  db::coo_select(row_ptr, nrows, skip, offsets, rows, at);
}}

extern "C" __global__ void __launch_bounds__(db::kEncodeBlock)
{}(const int* __restrict__ rows, long long n, int interval, int symbol_bits,
    int* __restrict__ row_base, unsigned char* __restrict__ widths,
    long long* __restrict__ sym_ptr) {{
  db::coo_widths(rows, n, interval, symbol_bits, row_base, widths, sym_ptr);
}}
)",
      kBroCooCountsEntry, kBroCooSelectEntry, kBroCooWidthsEntry);
  for (const auto& [entry, word] : {std::pair{kBroCooFill32Entry, "unsigned"},
                                    std::pair{kBroCooFill64Entry, "unsigned long long"}}) {
    k.source += fmt::format(
        R"(
extern "C" __global__ void __launch_bounds__(db::kEncodeBlock)
{}(const int* __restrict__ rows, const long long* __restrict__ at, long long n,
    const int* __restrict__ col_idx, const void* __restrict__ values, int value_bytes,
    int interval, const unsigned char* __restrict__ widths,
    const long long* __restrict__ sym_ptr, {}* __restrict__ symbols, int* __restrict__ cols,
    int store, void* __restrict__ slots, const unsigned long long* __restrict__ table,
    int ntable, int pad_code, unsigned long long* __restrict__ bad) {{
  db::coo_fill<{}>(rows, at, n, col_idx, values, value_bytes, interval, widths, sym_ptr, symbols,
                   cols, store, slots, table, ntable, pad_code, bad);
}}
)",
        entry, word, word);
  }
  return k;
}

BroInspection initial_bro_inspection() {
  BroInspection s{};
  s[BroInspectSlots::first_unsorted] = ~std::uint64_t{0};
  return s;
}

std::string bro_columns_problem(const BroInspection& s) {
  using S = BroInspectSlots;
  if (s[S::unsorted] == 0) return "";
  return fmt::format(
      "columns are not strictly increasing within rows: {} nonzeros do not exceed the one before "
      "them in their row, the first at nonzero {}",
      s[S::unsorted], s[S::first_unsorted]);
}

int bro_padding_code(const std::vector<std::uint64_t>& patterns) {
  const auto zero = std::lower_bound(patterns.begin(), patterns.end(), std::uint64_t{0});
  return zero != patterns.end() && *zero == 0 ? static_cast<int>(zero - patterns.begin()) : 0;
}

void apply_bro_inspection(const BroInspection& s, Profile& p) {
  using S = BroInspectSlots;
  if (!bro_columns_problem(s).empty()) return;
  for (std::size_t b = 0; b < p.delta_bits.size(); ++b) {
    p.delta_bits[b] = static_cast<std::int64_t>(s[S::delta_bits + b]);
    p.first_col_bits[b] = static_cast<std::int64_t>(s[S::first_col_bits + b]);
  }
  p.x_sectors = static_cast<std::int64_t>(s[S::x_sectors]);
  for (std::size_t k = 0; k < p.slice_longest.size(); ++k)
    p.slice_longest[k] = static_cast<std::int64_t>(s[S::slice_longest + k]);
}

}  // namespace spmvc::codegen

namespace spmvc::compiler {

bool has_bro_columns(const Profile& p) {
  // Every non-empty row has a first column: an empty histogram with nonzeros means "not
  // inspected" (or unsorted columns, which apply_bro_inspection leaves out).
  return p.nnz == 0 || std::any_of(p.first_col_bits.begin(), p.first_col_bits.end(),
                                   [](std::int64_t n) { return n > 0; });
}

namespace {

ByteBuffer bytes_of(const void* data, std::size_t n) {
  ByteBuffer out(n);
  if (n > 0) std::memcpy(out.data(), data, n);
  return out;
}

Encoded sizes_of(const Plan& plan, const DeviceCsr& a) {
  Encoded e;
  e.format = plan.format;
  e.precision = plan.precision;
  e.nrows = a.nrows;
  e.ncols = a.ncols;
  e.nnz = a.nnz;
  return e;
}

// The arrays of a value coding, named with `prefix`, contents on the device.
void value_arrays(Encoded& e, const std::string& prefix, int coding, Precision precision) {
  if (coding != formats::kValuesUnit)
    e.arrays.push_back({prefix + "values", formats::value_code_type(coding, precision), {}});
  if (coding == formats::kValuesTable8 || coding == formats::kValuesTable16)
    e.arrays.push_back({prefix + "values_table", formats::value_elem_type(precision), {}});
}

// BRO-ELL's arrays as the kernel needs them: their element types and what it bakes: the width
// table (tables 1) or the pattern (tables 2, read by formats::bro::baked_pattern as the widths of
// the slice with the most columns: one slice holding the pattern says the same). The arrays'
// contents are on the device.
void ell_arrays(Encoded& e, const std::string& prefix, int tables, int symbol_bits, int coding,
                Precision precision, const std::vector<std::uint8_t>& widths) {
  std::vector<std::int64_t> col_ptr;
  if (tables == 2) col_ptr = {0, static_cast<std::int64_t>(widths.size())};
  e.arrays.push_back(
      {prefix + "col_ptr", ElemType::i64, bytes_of(col_ptr.data(), col_ptr.size() * 8)});
  e.arrays.push_back({prefix + "sym_ptr", ElemType::i64, {}});
  e.arrays.push_back({prefix + "widths", ElemType::u8, bytes_of(widths.data(), widths.size())});
  e.arrays.push_back({prefix + "symbols", symbol_bits == 64 ? ElemType::u64 : ElemType::u32, {}});
  value_arrays(e, prefix, coding, precision);
}

// BRO-COO's arrays as the kernel needs them: their element types and the entry count (its grid
// and its bound).
void coo_arrays(Encoded& e, const std::string& prefix, int symbol_bits, int coding,
                Precision precision, std::int64_t entries) {
  e.arrays.push_back({prefix + "count", ElemType::i64, bytes_of(&entries, sizeof entries)});
  e.arrays.push_back({prefix + "row_base", ElemType::i32, {}});
  e.arrays.push_back({prefix + "widths", ElemType::u8, {}});
  e.arrays.push_back({prefix + "sym_ptr", ElemType::i64, {}});
  e.arrays.push_back({prefix + "symbols", symbol_bits == 64 ? ElemType::u64 : ElemType::u32, {}});
  e.arrays.push_back({prefix + "col_idx", ElemType::i32, {}});
  value_arrays(e, prefix, coding, precision);
}

}  // namespace

KernelSource generate_device_bro_ell(const Plan& plan, const Profile& profile, const DeviceCsr& a,
                                     const std::vector<std::uint8_t>& widths) {
  const auto& p = std::get<BroEllParams>(plan.params);
  Encoded e = sizes_of(plan, a);
  ell_arrays(e, "", p.tables, p.symbol_bits, p.values, plan.precision, widths);
  return codegen::generate(plan, e, profile);
}

KernelSource generate_device_bro_coo(const Plan& plan, const Profile& profile, const DeviceCsr& a,
                                     std::int64_t entries) {
  const auto& p = std::get<BroCooParams>(plan.params);
  Encoded e = sizes_of(plan, a);
  coo_arrays(e, "", p.symbol_bits, p.values, plan.precision, entries);
  return codegen::generate(plan, e, profile);
}

KernelSource generate_device_bro_hyb(const Plan& plan, const Profile& profile, const DeviceCsr& a,
                                     const std::vector<std::uint8_t>& widths,
                                     std::int64_t entries) {
  const auto& p = std::get<BroHybParams>(plan.params);
  Encoded e = sizes_of(plan, a);
  ell_arrays(e, "ell_", p.tables, p.symbol_bits, p.values, plan.precision, widths);
  coo_arrays(e, "coo_", p.symbol_bits, p.values, plan.precision, entries);
  return codegen::generate(plan, e, profile);
}

}  // namespace spmvc::compiler
