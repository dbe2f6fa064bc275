// The unit that builds on the GPU from a CSR matrix already in device memory
// (templates/device_csr.cuh): row statistics with input checks and the values' distinct bit
// patterns, the share of nonzeros 16-bit columns hold, csr_stream's row blocks and 16-bit
// columns, and 8-bit value codes.
// Host C++ only: the runtime compiles the unit and launches its entry points; here are its source
// and the meaning of the statistics it returns.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spmvc/kernel.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"

namespace spmvc::codegen {

/// Slots of row_stats' output; the generated unit static_asserts the template agrees.
struct RowStatSlots {
  static constexpr int row_max = 0, row_min = 1, sum_squares = 2, bad_rows = 3, first_bad_row = 4,
                       bad_columns = 5, first_bad_column = 6, first_offset = 7, last_offset = 8,
                       exact_bins = 9, pow2_bins = 9 + 33, values_full = 9 + 33 + 32,
                       value_count = values_full + 1, values_inexact = value_count + 1,
                       value_table = values_inexact + 1, value_slots = 1024,
                       narrow_slice_nnz = value_table + value_slots,
                       x_sectors = narrow_slice_nnz + 1, rows_used = x_sectors + 1,
                       count = rows_used + 1;
};
/// Distinct value bit patterns the GPU inspection tracks (an 8-bit table's); more reads as
/// "full", and the Profile's distinct_values as kDeviceValueCap + 1.
inline constexpr int kDeviceValueCap = 256;
/// A value-table slot that holds no pattern.
inline constexpr std::uint64_t kEmptyValueSlot = ~std::uint64_t{0};
using RowStats = std::array<std::uint64_t, RowStatSlots::count>;

/// Threads per block of row_stats, and of the single block of stream_scan.
inline constexpr int kRowStatsBlock = 256;
inline constexpr int kStreamScanBlock = 1024;
/// Threads per block of stream_count and stream_fill (a warp walks one group of rows).
inline constexpr int kStreamGroupBlock = 128;
/// Rows per group csr_stream's row blocks are cut from (CsrStreamFormat::kGroupRows; device_csr.cpp
/// asserts they agree).
inline constexpr int kStreamGroupRows = 2048;
/// Threads per block of code_values and narrow_values.
inline constexpr int kCodeValuesBlock = 256;
/// Threads per block of narrow_slices and narrow_columns (a warp per slice or row block).
inline constexpr int kNarrowBlock = 256;

/// Entry points of the unit.
inline constexpr const char* kRowStatsEntry = "spmvc_csr_row_stats";
inline constexpr const char* kStreamCountEntry = "spmvc_csr_stream_count";
inline constexpr const char* kStreamScanEntry = "spmvc_csr_stream_scan";
inline constexpr const char* kStreamFillEntry = "spmvc_csr_stream_fill";
inline constexpr const char* kCodeValuesEntry = "spmvc_csr_code_values";
inline constexpr const char* kNarrowValuesEntry = "spmvc_csr_narrow_values";
inline constexpr const char* kNarrowSlicesEntry = "spmvc_csr_narrow_slices";
inline constexpr const char* kNarrowColumnsEntry = "spmvc_csr_narrow_columns";

/// The translation unit (every entry point above). The same text every time, so it is compiled
/// once per GPU architecture and then served by the kernel cache.
KernelSource device_csr_source();

/// The counters row_stats starts from: zero, except the minima, the value table's slots and
/// narrow_slice_nnz (not counted yet) at all ones.
RowStats initial_row_stats();

/// What is wrong with the matrix the counters describe ("" when nothing): a negative row length,
/// row_ptr[0] != 0, row_ptr[nrows] != nnz, a column outside [0, ncols), each naming the first row
/// or nonzero at fault.
std::string row_stats_problem(const RowStats& stats, std::int64_t nrows, std::int64_t ncols,
                              std::int64_t nnz);

/// The Profile the counters give (InspectDepth::row_lengths): sizes, row-length statistics and
/// histogram as inspect() reports them, and of the values only what the table tells:
/// distinct_values counts distinct bit patterns of the stored type up to kDeviceValueCap (more
/// reads as kDeviceValueCap + 1), unit_values is nnz when every value is 1 and 0 otherwise (not
/// counted), fp32_exact_values in fp64 is nnz when every value is exact in fp32 and 0 otherwise
/// (in fp32 and f32_acc64, nnz). narrow_slice_nnz is the narrow_slices pass's count (-1 before
/// that pass has run: its slot holds all ones). Everything else the rows' columns would tell
/// (bandwidth, deltas, x sectors, blocks) is left empty.
Profile row_length_profile(const RowStats& stats, std::int64_t nrows, std::int64_t ncols,
                           std::int64_t nnz, Precision precision);

/// The distinct value bit patterns the counters hold, ascending (a float's zero-extended): the
/// table code_values codes against. Empty when there are more than kDeviceValueCap.
std::vector<std::uint64_t> value_patterns(const RowStats& stats);

}  // namespace spmvc::codegen
