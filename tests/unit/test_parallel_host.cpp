// The host-side work of compile() on several threads gives what it gives on one
// (spmvc/parallel.hpp): the inspector's Profile and block report, and every format's encoded
// arrays, compared field by field and byte by byte between 1 thread and 4 or 7. Tiny ranges are
// forced (HostParallelism::split_small), so the merging code runs on these small matrices: rows
// longer than a range, empty rows and ranges, matrices with fewer rows than threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "formats/arrays.hpp"
#include "formats/common/block_common.hpp"
#include "formats/format.hpp"
#include "spmvc/blocks.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/parallel.hpp"
#include "spmvc/profile.hpp"

namespace {

using spmvc::CsrMatrix;
using spmvc::Precision;
using spmvc::Profile;

// Sets the host threads for one scope, ranges cut however small.
class Threads {
 public:
  explicit Threads(int n) { spmvc::set_host_parallelism({.threads = n, .split_small = true}); }
  ~Threads() { spmvc::set_host_parallelism({}); }
  Threads(const Threads&) = delete;
  Threads& operator=(const Threads&) = delete;
};

// A small linear congruential generator: the matrices are the same on every platform.
struct Lcg {
  std::uint64_t s;
  std::uint64_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return s >> 33;
  }
  std::int64_t below(std::int64_t n) { return static_cast<std::int64_t>(next() % n); }
};

// Irregular rows: mostly short, many empty, a few very long (one holds over a third of the
// nonzeros, longer than any range), sorted distinct columns. `distinct` values, or every value
// different when 0; odd values (-0.0, 0.0, a NaN whose bits are all ones) sprinkled in.
CsrMatrix irregular(std::int64_t nrows, std::int64_t ncols, std::int64_t distinct,
                    std::uint64_t seed) {
  Lcg rng{seed};
  CsrMatrix a;
  a.nrows = nrows;
  a.ncols = ncols;
  for (std::int64_t r = 0; r < nrows; ++r) {
    std::int64_t len = rng.below(4) == 0 ? 0 : rng.below(12);
    if (r == nrows / 3) len = ncols * 2 / 3;  // the long row
    if (rng.below(50) == 0) len = rng.below(std::min<std::int64_t>(ncols, 200));
    len = std::min(len, ncols);
    std::set<std::int32_t> cols;
    // Near the diagonal mostly, so block shapes and the envelope see some structure.
    while (static_cast<std::int64_t>(cols.size()) < len) {
      const std::int64_t c =
          rng.below(3) == 0
              ? rng.below(ncols)
              : std::clamp<std::int64_t>(r * ncols / nrows + rng.below(9) - 4, 0, ncols - 1);
      cols.insert(static_cast<std::int32_t>(c));
    }
    for (const std::int32_t c : cols) {
      a.col_idx.push_back(c);
      const std::int64_t pick = rng.below(1000);
      double v = distinct > 0 ? static_cast<double>(rng.below(distinct)) - 3.0
                              : static_cast<double>(rng.next()) * 1e-7;
      if (pick == 0) v = -0.0;
      if (pick == 1) v = std::bit_cast<double>(~std::uint64_t{0});
      if (pick == 2) v = 1.0;
      a.values.push_back(v);
    }
    a.row_ptr.push_back(a.nnz());
  }
  return a;
}

// A symmetric pattern with symmetric values, then copies broken in one entry's value and in one
// entry's mirror (with as many entries above the diagonal as below).
CsrMatrix symmetric_band(std::int64_t n, std::uint64_t seed) {
  Lcg rng{seed};
  std::vector<std::set<std::int32_t>> rows(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    rows[i].insert(static_cast<std::int32_t>(i));
    for (int k = 0; k < 3; ++k) {
      const std::int64_t j = std::min(n - 1, i + 1 + rng.below(30));
      rows[i].insert(static_cast<std::int32_t>(j));
      rows[j].insert(static_cast<std::int32_t>(i));
    }
  }
  CsrMatrix a;
  a.nrows = a.ncols = n;
  for (std::int64_t i = 0; i < n; ++i) {
    for (const std::int32_t j : rows[i]) {
      a.col_idx.push_back(j);
      a.values.push_back(static_cast<double>((std::min<std::int64_t>(i, j) * 7 + j + i) % 13));
    }
    a.row_ptr.push_back(a.nnz());
  }
  return a;
}

std::vector<std::pair<std::string, CsrMatrix>> matrices() {
  std::vector<std::pair<std::string, CsrMatrix>> out;
  out.emplace_back("irregular 300x250, 5 values", irregular(300, 250, 5, 1));
  out.emplace_back("irregular 2000x1500, 300 values", irregular(2000, 1500, 300, 2));
  out.emplace_back("irregular 600x400, all values differ", irregular(600, 400, 0, 3));
  out.emplace_back("irregular 3x4 (fewer rows than threads)", irregular(3, 4, 2, 4));
  out.emplace_back("1x1", irregular(1, 1, 1, 5));
  CsrMatrix empty_rows;
  empty_rows.nrows = 9;
  empty_rows.ncols = 5;
  empty_rows.row_ptr.assign(10, 0);
  out.emplace_back("9x5 with no nonzeros", empty_rows);
  out.emplace_back("stencil27 n=6", spmvc::gen::from_spec("stencil27:n=6"));
  out.emplace_back("rmat scale 10", spmvc::gen::from_spec("rmat:scale=10,ef=8"));
  CsrMatrix sym = symmetric_band(500, 6);
  out.emplace_back("symmetric 500", sym);
  CsrMatrix values_differ = sym;
  values_differ.values[values_differ.row_ptr[251] - 1] += 0.5;  // above the diagonal
  out.emplace_back("symmetric pattern, one value differs", values_differ);
  // Move the last entry of row 400 above the diagonal one column right where it is free: the
  // counts above and below stay equal, one mirror goes missing.
  CsrMatrix pattern_differs = sym;
  {
    const std::int64_t last = pattern_differs.row_ptr[401] - 1;
    std::int32_t& c = pattern_differs.col_idx[last];
    if (c + 1 < pattern_differs.ncols) ++c;
  }
  spmvc::validate(pattern_differs);
  out.emplace_back("pattern one off symmetric", pattern_differs);
  return out;
}

void check_same_blocks(const std::vector<spmvc::BlockShape>& x,
                       const std::vector<spmvc::BlockShape>& y) {
  REQUIRE(x.size() == y.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    CAPTURE(i);
    CHECK(x[i].r == y[i].r);
    CHECK(x[i].c == y[i].c);
    CHECK(x[i].placement == y[i].placement);
    CHECK(x[i].col_align == y[i].col_align);
    CHECK(x[i].blocks == y[i].blocks);
    CHECK(x[i].nnz == y[i].nnz);
    CHECK(x[i].stored_row_padded == y[i].stored_row_padded);
  }
}

// Every field but the time taken; doubles compared bit for bit.
void check_same(const Profile& x, const Profile& y) {
  CHECK(x.nrows == y.nrows);
  CHECK(x.ncols == y.ncols);
  CHECK(x.nnz == y.nnz);
  CHECK(std::bit_cast<std::uint64_t>(x.row_mean) == std::bit_cast<std::uint64_t>(y.row_mean));
  CHECK(std::bit_cast<std::uint64_t>(x.row_stddev) == std::bit_cast<std::uint64_t>(y.row_stddev));
  CHECK(x.row_min == y.row_min);
  CHECK(x.row_max == y.row_max);
  CHECK(x.empty_rows == y.empty_rows);
  REQUIRE(x.row_histogram.size() == y.row_histogram.size());
  for (std::size_t i = 0; i < x.row_histogram.size(); ++i) {
    CHECK(x.row_histogram[i].lo == y.row_histogram[i].lo);
    CHECK(x.row_histogram[i].hi == y.row_histogram[i].hi);
    CHECK(x.row_histogram[i].count == y.row_histogram[i].count);
  }
  CHECK(x.bandwidth == y.bandwidth);
  CHECK(x.profile == y.profile);
  CHECK(x.delta_bits == y.delta_bits);
  CHECK(x.first_col_bits == y.first_col_bits);
  REQUIRE(x.block_fill.size() == y.block_fill.size());
  for (std::size_t i = 0; i < x.block_fill.size(); ++i) {
    CHECK(x.block_fill[i].r == y.block_fill[i].r);
    CHECK(x.block_fill[i].c == y.block_fill[i].c);
    CHECK(x.block_fill[i].blocks == y.block_fill[i].blocks);
    CHECK(std::bit_cast<std::uint64_t>(x.block_fill[i].fill) ==
          std::bit_cast<std::uint64_t>(y.block_fill[i].fill));
  }
  CHECK(x.x_sectors == y.x_sectors);
  CHECK(x.distinct_values == y.distinct_values);
  CHECK(x.unit_values == y.unit_values);
  CHECK(x.fp32_exact_values == y.fp32_exact_values);
  CHECK(x.square == y.square);
  CHECK(x.structurally_symmetric == y.structurally_symmetric);
  CHECK(x.numerically_symmetric == y.numerically_symmetric);
  CHECK(x.depth == y.depth);
  check_same_blocks(x.block_shapes, y.block_shapes);
}

// The definition, by brute force: distinct values comparing as doubles except that -0.0 is 0.0
// and NaNs compare by bit pattern.
std::int64_t distinct_by_set(const CsrMatrix& a) {
  std::set<std::uint64_t> keys;
  for (const double v : a.values) keys.insert(v == 0.0 ? 0 : std::bit_cast<std::uint64_t>(v));
  return static_cast<std::int64_t>(keys.size());
}

}  // namespace

TEST_CASE("parallel host: the Profile is the same on 1, 4 and 7 threads") {
  for (const auto& [name, a] : matrices()) {
    CAPTURE(name);
    for (const spmvc::InspectDepth depth : {spmvc::InspectDepth::full, spmvc::InspectDepth::rows}) {
      Profile serial;
      {
        const Threads one(1);
        serial = spmvc::inspect(a, depth);
      }
      if (depth == spmvc::InspectDepth::full) CHECK(serial.distinct_values == distinct_by_set(a));
      for (const int n : {4, 7}) {
        CAPTURE(n);
        const Threads many(n);
        check_same(serial, spmvc::inspect(a, depth));
      }
    }
  }
}

TEST_CASE("parallel host: the symmetry checks see one broken value and one broken mirror") {
  const auto all = matrices();
  const Threads many(7);
  for (const auto& [name, a] : all) {
    CAPTURE(name);
    const Profile p = spmvc::inspect(a);
    if (name == "symmetric 500") {
      CHECK(p.structurally_symmetric);
      CHECK(p.numerically_symmetric);
    } else if (name == "symmetric pattern, one value differs") {
      CHECK(p.structurally_symmetric);
      CHECK_FALSE(p.numerically_symmetric);
    } else if (name == "pattern one off symmetric") {
      CHECK_FALSE(p.structurally_symmetric);
    }
  }
}

TEST_CASE("parallel host: distinct values past the cap and the hash-set limit") {
  // 200K different values: past kDistinctValuesCap (rows depth) and the 64K at which the full
  // count moves from hash sets to bucketed counting.
  CsrMatrix a = spmvc::gen::from_spec("random:n=20000,per_row=10,seed=3");
  for (std::size_t k = 0; k < a.values.size(); ++k) a.values[k] = static_cast<double>(k % 150001);
  a.values[17] = -0.0;
  a.values[18] = std::bit_cast<double>(~std::uint64_t{0});
  const std::int64_t exact = distinct_by_set(a);
  for (const int n : {1, 4, 7}) {
    CAPTURE(n);
    const Threads threads(n);
    CHECK(spmvc::inspect(a).distinct_values == exact);
    CHECK(spmvc::inspect(a, spmvc::InspectDepth::rows).distinct_values ==
          spmvc::kDistinctValuesCap + 1);
  }
  // Exactly at the cap, and one past it, wherever the ranges are cut.
  for (const std::int64_t d : {spmvc::kDistinctValuesCap, spmvc::kDistinctValuesCap + 1}) {
    for (std::size_t k = 0; k < a.values.size(); ++k)
      a.values[k] = static_cast<double>(static_cast<std::int64_t>(k * 7919) % d);
    for (const int n : {1, 4, 7}) {
      CAPTURE(n);
      const Threads threads(n);
      CHECK(spmvc::inspect(a, spmvc::InspectDepth::rows).distinct_values == d);
    }
  }
}

TEST_CASE("parallel host: the sampled block report is the same on 1 and 7 threads") {
  const CsrMatrix a = irregular(4000, 3000, 3, 9);
  spmvc::BlockOptions sampled;
  sampled.exact_max_nnz = 1000;
  sampled.sample_windows = 16;
  sampled.sample_nnz = 4000;
  spmvc::BlockReport serial;
  {
    const Threads one(1);
    serial = spmvc::inspect_blocks(a, sampled);
  }
  REQUIRE(serial.sampled);
  const Threads many(7);
  const spmvc::BlockReport parallel = spmvc::inspect_blocks(a, sampled);
  check_same_blocks(serial.shapes, parallel.shapes);
  CHECK(serial.groups.rows_in == parallel.groups.rows_in);
  CHECK(serial.structure == parallel.structure);
}

TEST_CASE("parallel host: every format's encoded arrays are the same on 1, 4 and 7 threads") {
  int encoded = 0;
  for (const auto& [name, a] : matrices()) {
    if (a.nnz() == 0) continue;
    Profile profile;
    {
      const Threads one(1);
      profile = spmvc::inspect(a, spmvc::InspectDepth::rows);
    }
    for (const Precision precision : {Precision::f64, Precision::f32}) {
      for (const spmvc::formats::FormatUnit* format : spmvc::formats::registry()) {
        for (const spmvc::Candidate& c : format->propose(profile, precision)) {
          if (!c.applicable) continue;
          CAPTURE(name);
          CAPTURE(c.format);
          CAPTURE(c.label);
          spmvc::Encoded serial;
          {
            const Threads one(1);
            serial = format->encode(a, c.params, precision);
          }
          ++encoded;
          for (const int n : {4, 7}) {
            CAPTURE(n);
            const Threads many(n);
            const spmvc::Encoded parallel = format->encode(a, c.params, precision);
            REQUIRE(parallel.arrays.size() == serial.arrays.size());
            for (std::size_t i = 0; i < serial.arrays.size(); ++i) {
              CAPTURE(serial.arrays[i].name);
              CHECK(parallel.arrays[i].name == serial.arrays[i].name);
              CHECK(parallel.arrays[i].type == serial.arrays[i].type);
              CHECK(parallel.arrays[i].bytes == serial.arrays[i].bytes);
            }
          }
        }
      }
    }
  }
  CHECK(encoded > 100);  // the matrices reach most formats, value-coded twins included
}

TEST_CASE("parallel host: block rows are the same on 1, 3 and 7 threads, any column order") {
  // Columns out of order within rows and one column repeated (its last value is kept), beside
  // generated matrices; ragged last block rows and columns for r, c = 3.
  CsrMatrix shuffled = irregular(301, 250, 0, 6);
  for (std::int64_t i = 0; i < shuffled.nrows; ++i) {
    const std::int64_t b = shuffled.row_ptr[i], e = shuffled.row_ptr[i + 1];
    std::reverse(shuffled.col_idx.begin() + b, shuffled.col_idx.begin() + e);
    std::reverse(shuffled.values.begin() + b, shuffled.values.begin() + e);
  }
  const std::int64_t row = shuffled.nrows / 3, first = shuffled.row_ptr[row];  // the long row
  REQUIRE(shuffled.row_ptr[row + 1] - first >= 2);
  shuffled.col_idx[static_cast<std::size_t>(first) + 1] = shuffled.col_idx[first];
  const double kept = shuffled.values[static_cast<std::size_t>(first) + 1];
  int compared = 0;
  for (const CsrMatrix& a : {shuffled, spmvc::gen::from_spec("elasticity:n=6"),
                             spmvc::gen::from_spec("rmat:scale=10,ef=8")}) {
    for (const auto& [r, c] : {std::pair{3, 3}, std::pair{2, 4}, std::pair{1, 1}}) {
      CAPTURE(r);
      CAPTURE(c);
      spmvc::formats::blocks::BlockRows serial;
      {
        const Threads one(1);
        serial = spmvc::formats::blocks::build_block_rows(a, r, c);
      }
      for (const int n : {3, 7}) {
        const Threads many(n);
        const auto parallel = spmvc::formats::blocks::build_block_rows(a, r, c);
        CHECK(parallel.ptr == serial.ptr);
        CHECK(parallel.col == serial.col);
        // Bit for bit: the generated values include NaNs and -0.0.
        REQUIRE(parallel.val.size() == serial.val.size());
        CHECK(std::memcmp(parallel.val.data(), serial.val.data(),
                          serial.val.size() * sizeof(double)) == 0);
      }
      ++compared;
      if (&a != &shuffled || r != 1) continue;
      // 1x1 blocks: the repeated column holds the row's later value.
      const auto at = std::find(serial.col.begin() + serial.ptr[row],
                                serial.col.begin() + serial.ptr[row + 1], shuffled.col_idx[first]);
      REQUIRE(at != serial.col.begin() + serial.ptr[row + 1]);
      CHECK(std::bit_cast<std::uint64_t>(
                serial.val[static_cast<std::size_t>(at - serial.col.begin())]) ==
            std::bit_cast<std::uint64_t>(kept));
    }
  }
  CHECK(compared == 9);
}

TEST_CASE("parallel host: replicate gives the same copies on 1 and 7 threads") {
  for (const auto& [name, a] : matrices()) {
    CAPTURE(name);
    CsrMatrix serial;
    {
      const Threads one(1);
      serial = spmvc::gen::replicate(a, 5);
    }
    const Threads many(7);
    const CsrMatrix parallel = spmvc::gen::replicate(a, 5);
    CHECK(parallel.nrows == serial.nrows);
    CHECK(parallel.ncols == serial.ncols);
    CHECK(parallel.row_ptr == serial.row_ptr);
    CHECK(parallel.col_idx == serial.col_idx);
    CHECK(std::equal(parallel.values.begin(), parallel.values.end(), serial.values.begin(),
                     serial.values.end(), [](double x, double y) {
                       return std::bit_cast<std::uint64_t>(x) == std::bit_cast<std::uint64_t>(y);
                     }));
    // The last copy is the matrix shifted down and right.
    if (a.nnz() > 0) {
      const std::int64_t last = 4 * a.nnz();
      CHECK(parallel.col_idx[static_cast<std::size_t>(last)] == a.col_idx[0] + 4 * a.ncols);
      CHECK(parallel.row_ptr[static_cast<std::size_t>(4 * a.nrows)] == last);
    }
  }
}

TEST_CASE("parallel host: ranges cover their index space in order") {
  const CsrMatrix a = irregular(300, 250, 5, 1);
  for (const int n : {1, 3, 7, 64}) {
    CAPTURE(n);
    const Threads threads(n);
    for (const std::int64_t len : {0, 1, 5, 1000}) {
      const std::vector<spmvc::Range> r = spmvc::split_range(len, 1);
      REQUIRE(!r.empty());
      CHECK(static_cast<int>(r.size()) <= n);
      CHECK(r.front().begin == 0);
      CHECK(r.back().end == len);
      for (std::size_t i = 1; i < r.size(); ++i) CHECK(r[i].begin == r[i - 1].end);
    }
    const std::vector<spmvc::Range> rows = spmvc::split_rows(a, 1);
    CHECK(rows.front().begin == 0);
    CHECK(rows.back().end == a.nrows);
    for (std::size_t i = 1; i < rows.size(); ++i) {
      CHECK(rows[i].begin == rows[i - 1].end);
      CHECK(rows[i].begin <= rows[i].end);
    }
  }
  // Without split_small, a loop below its grain stays on one thread.
  spmvc::set_host_parallelism({.threads = 8});
  CHECK(spmvc::split_range(1000, 1 << 16).size() == 1);
  CHECK(spmvc::split_range(std::int64_t{1} << 20, 1 << 16).size() == 8);
  spmvc::set_host_parallelism({});
  CHECK(spmvc::host_threads() >= 1);
}
