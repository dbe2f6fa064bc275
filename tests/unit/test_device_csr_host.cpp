// The host half of building from device arrays (compiler/codegen/device_csr): the row-statistic
// counters decode into the Profile inspect() gives, faults are named with the first row or
// nonzero at fault, and the unit's source is deterministic and names its entry points. The
// kernels themselves run in tests/gpu/test_device_csr_gpu.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "spmvc/compiler/device_build.hpp"
#include "spmvc/generators.hpp"

using namespace spmvc;
using codegen::RowStats;
using S = codegen::RowStatSlots;

namespace {

// The counters row_stats computes, computed here on the host from the same definition (values
// as doubles; their patterns fill the table's first slots, where the kernel hashes them).
RowStats host_row_stats(const CsrMatrix& a) {
  RowStats s = codegen::initial_row_stats();
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    const std::int64_t begin = a.row_ptr[r], end = a.row_ptr[r + 1];
    const std::int64_t len = end - begin;
    if (len < 0) {
      ++s[S::bad_rows];
      s[S::first_bad_row] = std::min<std::uint64_t>(s[S::first_bad_row], r);
      continue;
    }
    const auto u = static_cast<std::uint64_t>(len);
    if (len > 0) s[S::rows_used] = static_cast<std::uint64_t>(r) + 1;
    s[S::row_max] = std::max(s[S::row_max], u);
    s[S::row_min] = std::min(s[S::row_min], u);
    s[S::sum_squares] += u * u;
    if (len <= 32) {
      ++s[S::exact_bins + len];
    } else {
      ++s[S::pow2_bins + std::countr_zero(std::bit_ceil(u))];
    }
  }
  for (std::size_t k = 0; k < a.col_idx.size(); ++k) {
    if (a.col_idx[k] < 0 || a.col_idx[k] >= a.ncols) {
      ++s[S::bad_columns];
      s[S::first_bad_column] = std::min<std::uint64_t>(s[S::first_bad_column], k);
    }
  }
  for (double v : a.values) {
    if (!exact_in_fp32(v)) s[S::values_inexact] = 1;
  }
  std::vector<std::uint64_t> seen;
  for (double v : a.values) {
    const auto bits = std::bit_cast<std::uint64_t>(v);
    if (std::find(seen.begin(), seen.end(), bits) != seen.end()) continue;
    seen.push_back(bits);
    if (seen.size() > static_cast<std::size_t>(codegen::kDeviceValueCap)) {
      s[S::values_full] = 1;
      break;
    }
    s[static_cast<std::size_t>(S::value_table) + seen.size() - 1] = bits;
    ++s[S::value_count];
  }
  s[S::first_offset] = static_cast<std::uint64_t>(a.row_ptr.front());
  s[S::last_offset] = static_cast<std::uint64_t>(a.row_ptr.back());
  return s;
}

}  // namespace

TEST_CASE("device csr: row statistics decode into inspect()'s row-length Profile") {
  CsrMatrix pattern = gen::rmat(10, 8);
  std::fill(pattern.values.begin(), pattern.values.end(), 1.0);
  CsrMatrix trailing = gen::banded(300, 40);  // then 57 empty rows
  trailing.nrows += 57;
  trailing.row_ptr.resize(static_cast<std::size_t>(trailing.nrows) + 1, trailing.row_ptr.back());
  for (const CsrMatrix& a :
       {gen::rmat(12, 16), gen::stencil_2d_5pt(40, 30), gen::random_uniform(500, 700, 9, 3),
        gen::banded(300, 40), pattern, trailing}) {
    CAPTURE(a.nrows);
    const Profile want = inspect(a, InspectDepth::rows);
    const Profile got =
        codegen::row_length_profile(host_row_stats(a), a.nrows, a.ncols, a.nnz(), Precision::f64);
    CHECK(codegen::row_stats_problem(host_row_stats(a), a.nrows, a.ncols, a.nnz()).empty());
    CHECK(got.depth == InspectDepth::row_lengths);
    CHECK(got.nrows == want.nrows);
    CHECK(got.ncols == want.ncols);
    CHECK(got.nnz == want.nnz);
    CHECK(got.square == want.square);
    CHECK(got.row_min == want.row_min);
    CHECK(got.row_max == want.row_max);
    CHECK(got.empty_rows == want.empty_rows);
    CHECK(got.trailing_empty_rows == want.trailing_empty_rows);
    CHECK(got.row_mean == doctest::Approx(want.row_mean).epsilon(1e-12));
    CHECK(got.row_stddev == doctest::Approx(want.row_stddev).epsilon(1e-9));
    REQUIRE(got.row_histogram.size() == want.row_histogram.size());
    for (std::size_t b = 0; b < got.row_histogram.size(); ++b) {
      CHECK(got.row_histogram[b].lo == want.row_histogram[b].lo);
      CHECK(got.row_histogram[b].hi == want.row_histogram[b].hi);
      CHECK(got.row_histogram[b].count == want.row_histogram[b].count);
    }
    // Values: all ones or not (not counted), distinct ones up to an 8-bit table's 256.
    CHECK(got.unit_values == (want.unit_values == want.nnz ? want.nnz : 0));
    CHECK(got.fp32_exact_values == (want.fp32_exact_values == want.nnz ? want.nnz : 0));
    CHECK(codegen::row_length_profile(host_row_stats(a), a.nrows, a.ncols, a.nnz(), Precision::f32)
              .fp32_exact_values == want.nnz);
    CHECK(got.distinct_values == std::min<std::int64_t>(want.distinct_values, 257));
    const std::vector<std::uint64_t> patterns = codegen::value_patterns(host_row_stats(a));
    CHECK(patterns.size() == (want.distinct_values <= 256 ? want.distinct_values : 0));
    CHECK(std::is_sorted(patterns.begin(), patterns.end()));
    CHECK(std::adjacent_find(patterns.begin(), patterns.end()) == patterns.end());
    for (const std::uint64_t bits : patterns)
      CHECK(std::find(a.values.begin(), a.values.end(), std::bit_cast<double>(bits)) !=
            a.values.end());
    // What the rows' columns would tell is not there; the narrow slices only once their pass
    // has counted them.
    CHECK(got.bandwidth == 0);
    CHECK(got.x_sectors == 0);
    CHECK(got.narrow_slice_nnz == -1);
    RowStats counted = host_row_stats(a);
    counted[S::narrow_slice_nnz] = static_cast<std::uint64_t>(want.narrow_slice_nnz);
    CHECK(codegen::row_length_profile(counted, a.nrows, a.ncols, a.nnz(), Precision::f64)
              .narrow_slice_nnz == want.narrow_slice_nnz);
  }
}

TEST_CASE("device csr: a value table of 256 patterns is the most the counters hold") {
  CsrMatrix a = gen::random_uniform(40, 40, 8, 5);  // 320 nonzeros
  for (std::size_t k = 0; k < a.values.size(); ++k) a.values[k] = static_cast<double>(k % 256);
  RowStats s = host_row_stats(a);
  CHECK(codegen::row_length_profile(s, a.nrows, a.ncols, a.nnz(), Precision::f64).distinct_values ==
        256);
  CHECK(codegen::value_patterns(s).size() == 256);
  a.values[7] = 1000.5;  // the 257th
  s = host_row_stats(a);
  CHECK(codegen::row_length_profile(s, a.nrows, a.ncols, a.nnz(), Precision::f64).distinct_values ==
        257);
  CHECK(codegen::value_patterns(s).empty());
  // A float's pattern is its own 32 bits: 1.0f makes a unit matrix in f32.
  CsrMatrix ones = gen::stencil_2d_5pt(6, 6);
  std::fill(ones.values.begin(), ones.values.end(), 1.0);
  RowStats f = host_row_stats(ones);
  f[S::value_table] = std::bit_cast<std::uint32_t>(1.0f);
  CHECK(codegen::row_length_profile(f, ones.nrows, ones.ncols, ones.nnz(), Precision::f32)
            .unit_values == ones.nnz());
  CHECK(codegen::row_length_profile(f, ones.nrows, ones.ncols, ones.nnz(), Precision::f64)
            .unit_values == 0);
}

TEST_CASE("device csr: faults in the arrays are named with the first row or nonzero") {
  CsrMatrix a = gen::stencil_2d_5pt(10, 10);
  const std::int64_t nnz = a.nnz();
  SUBCASE("row_ptr decreases") {
    a.row_ptr[7] = a.row_ptr[8] + 3;  // row 6 too long, row 7 negative
    const std::string why = codegen::row_stats_problem(host_row_stats(a), a.nrows, a.ncols, nnz);
    CHECK(why.find("first at row 7") != std::string::npos);
  }
  SUBCASE("row_ptr[0] is not 0") {
    a.row_ptr[0] = 1;
    CHECK(codegen::row_stats_problem(host_row_stats(a), a.nrows, a.ncols, nnz) ==
          "row_ptr[0] is 1 (must be 0)");
  }
  SUBCASE("row_ptr[nrows] is not nnz") {
    CHECK(codegen::row_stats_problem(host_row_stats(a), a.nrows, a.ncols, nnz + 5) ==
          fmt::format("row_ptr[100] is {} but the matrix has {} nonzeros", nnz, nnz + 5));
  }
  SUBCASE("a column out of range") {
    a.col_idx[31] = 100;
    a.col_idx[40] = -2;
    CHECK(codegen::row_stats_problem(host_row_stats(a), a.nrows, a.ncols, nnz) ==
          "2 column indices are outside 0..99, the first at nonzero 31");
  }
}

TEST_CASE("device csr: the build unit is deterministic and declares every entry point") {
  const KernelSource k = codegen::device_csr_source();
  CHECK(k.source == codegen::device_csr_source().source);
  for (const char* entry :
       {codegen::kRowStatsEntry, codegen::kStreamCountEntry, codegen::kStreamScanEntry,
        codegen::kStreamFillEntry, codegen::kCodeValuesEntry, codegen::kNarrowValuesEntry,
        codegen::kNarrowSlicesEntry, codegen::kNarrowColumnsEntry}) {
    CAPTURE(entry);
    CHECK(k.source.find(std::string("extern \"C\" __global__ void __launch_bounds__")) !=
          std::string::npos);
    CHECK(k.source.find(std::string(entry) + "(") != std::string::npos);
  }
  CHECK(std::any_of(k.headers.begin(), k.headers.end(),
                    [](const auto& h) { return h.first == "spmvc/device_csr.cuh"; }));
}
