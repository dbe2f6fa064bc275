// The host half of building from device arrays (compiler/codegen/device_csr): the row-statistic
// counters decode into the Profile inspect() gives, faults are named with the first row or
// nonzero at fault, and the unit's source is deterministic and names its entry points. The
// kernels themselves run in tests/gpu/test_device_csr_gpu.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "../../templates/device_csr.cuh"
#include "formats/csr_stream/csr_stream_format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_build.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

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

namespace {

namespace dc = spmvc::device_csr;

// The split-rows partition and lane descriptors as stream_count and stream_fill compute them
// (templates/device_csr.cuh: split_block_end), with the warp's steps run in turn on the host: a
// warp per group of kStreamGroupRows rows, each block's rows taken 32 at a time, each row placed
// with SplitWalk::take and its segments' descriptors written by split_descriptor.
std::vector<std::int32_t> device_split_blocks(const CsrMatrix& a, int tile, int block_size,
                                              int split, std::vector<std::uint32_t>& lanes) {
  std::vector<std::int32_t> starts;
  std::vector<std::vector<std::uint32_t>> blocks;
  const std::int64_t group = codegen::kStreamGroupRows;
  auto len = [&](std::int64_t r) { return std::int64_t{a.row_ptr[r + 1]} - a.row_ptr[r]; };
  for (std::int64_t first_row = 0; first_row < a.nrows; first_row += group) {
    const std::int64_t end = std::min(a.nrows, first_row + group);
    for (std::int64_t first = first_row; first < end;) {
      starts.push_back(static_cast<std::int32_t>(first));
      std::vector<std::uint32_t>& block = blocks.emplace_back(block_size, 0u);
      const std::int64_t start = a.row_ptr[first];
      std::int64_t next = first + 1;  // a row longer than the tile goes alone
      if (len(first) <= tile) {
        const std::int64_t limit = std::min(first + block_size, end);
        next = limit;
        dc::SplitWalk walk;
        bool ended = false;
        for (std::int64_t base = first; base < limit && !ended; base += 32) {
          for (std::int64_t r = base; r < std::min(base + 32, limit); ++r) {
            const dc::SplitSegments seg = dc::split_segments(len(r), split);
            int at = 0;
            if (!walk.take(len(r), seg.count, tile, block_size, at)) {
              next = r;
              ended = true;
              break;
            }
            for (int j = 0; j < seg.count; ++j)
              block[static_cast<std::size_t>(at + j)] = dc::split_descriptor(
                  a.row_ptr[r] - start, len(r), seg, j, static_cast<int>(r - first));
          }
        }
      }
      first = next;
    }
  }
  if (a.nrows == 0) {
    starts.push_back(0);
    blocks.emplace_back(block_size, 0u);
  }
  starts.push_back(static_cast<std::int32_t>(a.nrows));
  lanes.clear();
  for (const auto& b : blocks) lanes.insert(lanes.end(), b.begin(), b.end());
  return starts;
}

}  // namespace

TEST_CASE("device csr: split rows' segments are the host encoder's, row length by length") {
  for (int split : {8, 16, 24, 32}) {
    CAPTURE(split);
    for (std::int64_t n = 0; n <= 5000; ++n) {
      const dc::SplitSegments got = dc::split_segments(n, split);
      const formats::CsrStreamFormat::Segments want = formats::CsrStreamFormat::segments(n, split);
      if (got.length != want.length || got.count != want.count) {
        CAPTURE(n);
        CHECK(got.length == want.length);
        CHECK(got.count == want.count);
        break;
      }
      CHECK(got.count <= 32);
    }
    for (std::int64_t n : {65535LL, 65536LL, 1000001LL, 2147483647LL}) {
      CAPTURE(n);
      CHECK(dc::split_segments(n, split).length ==
            formats::CsrStreamFormat::segments(n, split).length);
      CHECK(dc::split_segments(n, split).count ==
            formats::CsrStreamFormat::segments(n, split).count);
    }
  }
}

TEST_CASE("device csr: the GPU's split-rows walk gives the host's blocks and lanes bit for bit") {
  CsrMatrix pattern = gen::rmat(14, 16);  // power-law rows: long rows cut, warps crossed
  std::fill(pattern.values.begin(), pattern.values.end(), 1.0);
  CsrMatrix trailing = gen::rmat(12, 8);  // then 3,000 empty rows
  trailing.nrows += 3000;
  trailing.row_ptr.resize(static_cast<std::size_t>(trailing.nrows) + 1, trailing.row_ptr.back());
  CsrMatrix empty;
  empty.nrows = 0;
  empty.ncols = 10;
  empty.row_ptr.assign(1, 0);
  CsrMatrix no_nonzeros;
  no_nonzeros.nrows = 700;
  no_nonzeros.ncols = 50;
  no_nonzeros.row_ptr.assign(701, 0);
  // Rows longer than the tile among short ones, and ones of 33 products (two lanes' worth).
  const CsrMatrix awkward = test::short_and_long_rows(9000, true);
  // Every row length from 0 to 2,112 in turn: segments of every count from 1 to 32, rows that
  // straddle warps, blocks and the 1,024 products past which the root no longer sets the length.
  CsrMatrix lengths;
  lengths.nrows = 6000;
  lengths.ncols = 70000;
  for (std::int64_t r = 0; r < lengths.nrows; ++r) {
    const std::int64_t n = (r % 3 == 0 ? (r * 37) % 2101 : 0) + r % 13;
    for (std::int64_t j = 0; j < n; ++j)
      lengths.col_idx.push_back(static_cast<std::int32_t>(33 * j));
    lengths.row_ptr.push_back(static_cast<std::int64_t>(lengths.col_idx.size()));
  }
  lengths.values.assign(lengths.col_idx.size(), 1.0);
  validate(lengths);
  for (const CsrMatrix& a : {pattern, trailing, empty, no_nonzeros, awkward, lengths,
                             gen::random_uniform(5000, 4000, 40), gen::stencil_2d_5pt(70, 60)}) {
    for (const auto& [block, tile, split] : {std::tuple{256, 2048, 16},
                                             {256, 1024, 8},
                                             {128, 2048, 24},
                                             {64, 512, 32},
                                             {256, 2048, 32}}) {
      CAPTURE(a.nrows);
      CAPTURE(block);
      CAPTURE(tile);
      CAPTURE(split);
      std::vector<std::uint32_t> want_lanes, got_lanes;
      const std::vector<std::int32_t> want =
          formats::CsrStreamFormat::split_row_blocks(a, tile, block, split, want_lanes);
      const std::vector<std::int32_t> got = device_split_blocks(a, tile, block, split, got_lanes);
      CHECK(got == want);
      REQUIRE(got_lanes.size() == want_lanes.size());
      CHECK(got_lanes == want_lanes);
    }
  }
}

TEST_CASE("device plan: split rows are built on the GPU where the model picks them") {
  // wiki-Vote x16M fp32, unit values (suite v13's G entry): the host pipeline picks split rows
  // in the caller's order on the H100 and the H200 (test_stream_gather.cpp). The GPU build now
  // writes the lane descriptors (stream_fill), so a plan from device arrays may take them too.
  const auto dir = test::shared_matrices();
  if (dir.empty() || !std::filesystem::exists(dir / "wiki-Vote.mtx.xz")) {
    MESSAGE("the public matrices are absent: skipped");
    return;
  }
  CsrMatrix a = read_matrix_market(dir / "wiki-Vote.mtx.xz");
  a = gen::replicate(a, (16000000 + a.nnz() - 1) / a.nnz());
  // The planner reads the arrays' sizes and alignments only: host arrays stand in for device
  // ones. The Profile is what the GPU's row pass gives (its counters, decoded), with the x
  // sectors it counts as well.
  const test::HostDeviceCsr arrays(a);
  RowStats stats = host_row_stats(a);
  REQUIRE(stats[S::value_count] == 1);  // every value 1, as an fp32 pattern on the GPU
  stats[S::value_table] = std::bit_cast<std::uint32_t>(1.0f);
  Profile profile = codegen::row_length_profile(stats, a.nrows, a.ncols, a.nnz(), Precision::f32);
  REQUIRE(profile.unit_values == a.nnz());
  profile.x_sectors = inspect(a, InspectDepth::rows).x_sectors;
  Options o;
  o.precision = Precision::f32;
  for (const char* gpu : {"H100", "H200"}) {
    CAPTURE(std::string(gpu));
    BuildTarget target;
    target.gpu = gpu;
    const Plan plan = compiler::plan_device_csr(arrays.view, profile, o, target);
    REQUIRE(plan.format == "csr_stream");
    CHECK(std::get<CsrStreamParams>(plan.params).split == 16);
    CHECK(plan.predicted_seconds < plan.cusparse_seconds);
  }
}
