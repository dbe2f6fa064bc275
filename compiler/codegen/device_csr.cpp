#include "spmvc/compiler/device_build.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/csr_stream/csr_stream_format.hpp"

namespace spmvc::codegen {

static_assert(kStreamGroupRows == formats::CsrStreamFormat::kGroupRows,
              "the device build cuts csr_stream's row blocks in the host encoder's groups");

KernelSource device_csr_source() {
  using S = RowStatSlots;
  KernelSource k = device_unit(kRowStatsEntry, "device_csr", kRowStatsBlock,
                               "builds on the GPU from a CSR matrix in device memory.");
  k.source += fmt::format(
      R"(namespace dc = spmvc::device_csr;
static_assert(dc::kRowMax == {} && dc::kRowMin == {} && dc::kSumSquares == {} &&
              dc::kBadRows == {} && dc::kFirstBadRow == {} && dc::kBadColumns == {} &&
              dc::kFirstBadColumn == {} && dc::kFirstOffset == {} && dc::kLastOffset == {} &&
              dc::kExactBins == {} && dc::kPow2Bins == {} && dc::kValuesFull == {} &&
              dc::kValueCount == {} && dc::kValuesInexact == {} && dc::kValueTable == {} &&
              dc::kValueSlots == {} && dc::kNarrowSliceNnz == {} && dc::kXSectors == {} &&
              dc::kRowsUsed == {} && dc::kStatSlots == {} && dc::kValueCap == {} && dc::kEmptySlot == {}ull,
              "row_stats slots differ from the host's RowStatSlots");
static_assert(dc::kStatsBlock == {} && dc::kScanBlock == {} && dc::kCodeBlock == {} &&
              dc::kNarrowBlock == {}, "block sizes differ from the host's");
static_assert(dc::kSliceRows == {} && dc::kNarrowSpan == {},
              "the narrow slices or span differ from the host's");

extern "C" __global__ void __launch_bounds__(dc::kStatsBlock)
{}(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const void* __restrict__ values, int value_bytes, long long nrows, long long ncols,
    long long nnz, unsigned long long* __restrict__ out) {{
  dc::row_stats(row_ptr, col_idx, values, value_bytes, nrows, ncols, nnz, out);
}}

extern "C" __global__ void __launch_bounds__({})
{}(const int* __restrict__ row_ptr, long long nrows, int tile, int block_rows, int split,
    int group, long long ngroups, int* __restrict__ counts) {{
  dc::stream_count(row_ptr, nrows, tile, block_rows, split, group, ngroups, counts);
}}

extern "C" __global__ void __launch_bounds__(dc::kScanBlock)
{}(const int* __restrict__ counts, long long n, int* __restrict__ offsets) {{
  dc::stream_scan(counts, n, offsets);
}}

extern "C" __global__ void __launch_bounds__({})
{}(const int* __restrict__ row_ptr, long long nrows, int tile, int block_rows, int split,
    int group, long long ngroups, const int* __restrict__ offsets, int* __restrict__ row_blocks,
    unsigned* __restrict__ lanes) {{
  dc::stream_fill(row_ptr, nrows, tile, block_rows, split, group, ngroups, offsets, row_blocks,
                  lanes);
}}

extern "C" __global__ void __launch_bounds__(dc::kCodeBlock)
{}(const void* __restrict__ values, int value_bytes, long long nnz,
    const void* __restrict__ table, int ntable, unsigned char* __restrict__ codes,
    unsigned long long* __restrict__ misses) {{
  dc::code_values(values, value_bytes, nnz, table, ntable, codes, misses);
}}

extern "C" __global__ void __launch_bounds__(dc::kCodeBlock)
{}(const double* __restrict__ values, long long nnz, float* __restrict__ out,
    unsigned long long* __restrict__ inexact) {{
  dc::narrow_values(values, nnz, out, inexact);
}}

extern "C" __global__ void __launch_bounds__(dc::kNarrowBlock)
{}(const int* __restrict__ row_ptr, const int* __restrict__ col_idx, long long nrows,
    unsigned long long* __restrict__ out) {{
  dc::narrow_slices(row_ptr, col_idx, nrows, out);
}}

extern "C" __global__ void __launch_bounds__(dc::kNarrowBlock)
{}(const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const int* __restrict__ row_blocks, long long nblocks, int* __restrict__ base,
    unsigned short* __restrict__ col16) {{
  dc::narrow_columns(row_ptr, col_idx, row_blocks, nblocks, base, col16);
}}
)",
      S::row_max, S::row_min, S::sum_squares, S::bad_rows, S::first_bad_row, S::bad_columns,
      S::first_bad_column, S::first_offset, S::last_offset, S::exact_bins, S::pow2_bins,
      S::values_full, S::value_count, S::values_inexact, S::value_table, S::value_slots,
      S::narrow_slice_nnz, S::x_sectors, S::rows_used, S::count, kDeviceValueCap, kEmptyValueSlot,
      kRowStatsBlock, kStreamScanBlock, kCodeValuesBlock, kNarrowBlock, kNarrowSliceRows,
      kNarrowColumnSpan, kRowStatsEntry, kStreamGroupBlock, kStreamCountEntry, kStreamScanEntry,
      kStreamGroupBlock, kStreamFillEntry, kCodeValuesEntry, kNarrowValuesEntry, kNarrowSlicesEntry,
      kNarrowColumnsEntry);
  return k;
}

RowStats initial_row_stats() {
  RowStats s{};
  s[RowStatSlots::row_min] = ~std::uint64_t{0};
  s[RowStatSlots::first_bad_row] = ~std::uint64_t{0};
  s[RowStatSlots::first_bad_column] = ~std::uint64_t{0};
  for (int i = 0; i < RowStatSlots::value_slots; ++i)
    s[static_cast<std::size_t>(RowStatSlots::value_table + i)] = kEmptyValueSlot;
  s[RowStatSlots::narrow_slice_nnz] = ~std::uint64_t{0};
  return s;
}

std::string row_stats_problem(const RowStats& s, std::int64_t nrows, std::int64_t ncols,
                              std::int64_t nnz) {
  using S = RowStatSlots;
  const auto first = static_cast<std::int64_t>(s[S::first_offset]);
  const auto last = static_cast<std::int64_t>(s[S::last_offset]);
  if (first != 0) return fmt::format("row_ptr[0] is {} (must be 0)", first);
  if (s[S::bad_rows] > 0)
    return fmt::format("{} rows end before they start (row_ptr decreases), the first at row {}",
                       s[S::bad_rows], s[S::first_bad_row]);
  if (last != nnz)
    return fmt::format("row_ptr[{}] is {} but the matrix has {} nonzeros", nrows, last, nnz);
  if (s[S::bad_columns] > 0)
    return fmt::format("{} column indices are outside 0..{}, the first at nonzero {}",
                       s[S::bad_columns], ncols - 1, s[S::first_bad_column]);
  return "";
}

std::vector<std::uint64_t> value_patterns(const RowStats& s) {
  using S = RowStatSlots;
  std::vector<std::uint64_t> out;
  if (s[S::values_full] != 0) return out;
  for (int i = 0; i < S::value_slots; ++i) {
    const std::uint64_t bits = s[static_cast<std::size_t>(S::value_table + i)];
    if (bits != kEmptyValueSlot) out.push_back(bits);
  }
  if (out.size() > static_cast<std::size_t>(kDeviceValueCap)) out.clear();
  std::sort(out.begin(), out.end());
  return out;
}

Profile row_length_profile(const RowStats& s, std::int64_t nrows, std::int64_t ncols,
                           std::int64_t nnz, Precision precision) {
  using S = RowStatSlots;
  Profile p;
  p.depth = InspectDepth::row_lengths;
  p.nrows = nrows;
  p.ncols = ncols;
  p.nnz = nnz;
  p.square = nrows == ncols;
  p.row_max = static_cast<std::int64_t>(s[S::row_max]);
  p.row_min = nrows > 0 ? static_cast<std::int64_t>(s[S::row_min]) : 0;
  p.empty_rows = static_cast<std::int64_t>(s[S::exact_bins]);
  p.trailing_empty_rows = nrows - static_cast<std::int64_t>(s[S::rows_used]);
  const std::vector<std::uint64_t> patterns = value_patterns(s);
  p.distinct_values = nnz == 0           ? 0
                      : patterns.empty() ? kDeviceValueCap + 1
                                         : static_cast<std::int64_t>(patterns.size());
  const std::uint64_t one = precision == Precision::f64 ? std::bit_cast<std::uint64_t>(1.0)
                                                        : std::bit_cast<std::uint32_t>(1.0f);
  p.unit_values = nnz > 0 && patterns.size() == 1 && patterns.front() == one ? nnz : 0;
  p.fp32_exact_values = precision != Precision::f64 || s[S::values_inexact] == 0 ? nnz : 0;
  p.narrow_slice_nnz = static_cast<std::int64_t>(s[S::narrow_slice_nnz]);  // ~0 reads as -1
  p.x_sectors = static_cast<std::int64_t>(s[S::x_sectors]);
  for (int len = 0; len <= 32; ++len) {
    const auto count = static_cast<std::int64_t>(s[S::exact_bins + len]);
    if (count > 0) p.row_histogram.push_back({len, len, count});
  }
  for (int k = 6; k < 32; ++k) {
    const auto count = static_cast<std::int64_t>(s[S::pow2_bins + k]);
    if (count == 0) continue;
    const std::int64_t hi = std::int64_t{1} << k;
    p.row_histogram.push_back({hi / 2 + 1, hi, count});
  }
  if (nrows > 0) {
    const double n = static_cast<double>(nrows);
    p.row_mean = static_cast<double>(nnz) / n;
    // sum (len - mean)^2 = sum len^2 - nnz^2 / n, from exact integers: long double keeps the
    // cancellation small for the sizes 32-bit offsets allow.
    const long double nz = static_cast<long double>(nnz);
    const long double var =
        (static_cast<long double>(s[S::sum_squares]) - nz * nz / static_cast<long double>(n)) /
        static_cast<long double>(n);
    p.row_stddev = std::sqrt(static_cast<double>(var > 0 ? var : 0));
  }
  return p;
}

}  // namespace spmvc::codegen
