// Inspector on matrices small enough to check every Profile field by hand, plus the two
// renderings (JSON, text report).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "spmvc/profile.hpp"

namespace {

using spmvc::BlockFill;
using spmvc::CsrMatrix;
using spmvc::HistogramBin;
using spmvc::InspectDepth;
using spmvc::Profile;

using Row = std::vector<std::pair<std::int32_t, double>>;

// Rows given as (column, value) lists, columns increasing.
CsrMatrix from_rows(std::int64_t ncols, const std::vector<Row>& rows) {
  CsrMatrix a;
  a.nrows = static_cast<std::int64_t>(rows.size());
  a.ncols = ncols;
  for (const Row& row : rows) {
    for (const auto& [c, v] : row) {
      a.col_idx.push_back(c);
      a.values.push_back(v);
    }
    a.row_ptr.push_back(a.nnz());
  }
  return a;
}

BlockFill fill_of(const Profile& p, int r, int c) {
  for (const BlockFill& f : p.block_fill) {
    if (f.r == r && f.c == c) return f;
  }
  FAIL("no block fill for " << r << "x" << c);
  return {};
}

void check_bins(const Profile& p, std::initializer_list<HistogramBin> expected) {
  REQUIRE(p.row_histogram.size() == expected.size());
  std::size_t i = 0;
  for (const HistogramBin& e : expected) {
    CAPTURE(i);
    CHECK(p.row_histogram[i].lo == e.lo);
    CHECK(p.row_histogram[i].hi == e.hi);
    CHECK(p.row_histogram[i].count == e.count);
    ++i;
  }
}

// Only the listed bit counts are non-zero.
void check_bits(const std::array<std::int64_t, 33>& got,
                std::initializer_list<std::pair<int, std::int64_t>> expected) {
  std::array<std::int64_t, 33> want{};
  for (const auto& [b, n] : expected) want[b] = n;
  for (int b = 0; b <= 32; ++b) {
    CAPTURE(b);
    CHECK(got[b] == want[b]);
  }
}

//  [1 2 . 3]
//  [. . . .]
//  [4 . 1 .]
//  [. . 2 5]
CsrMatrix four_by_four() {
  return from_rows(
      4, {{{0, 1.0}, {1, 2.0}, {3, 3.0}}, {}, {{0, 4.0}, {2, 1.0}}, {{2, 2.0}, {3, 5.0}}});
}

}  // namespace

TEST_CASE("inspect: empty rows after the last row with an entry are counted apart") {
  // Rows 1, 3, 4 and 5 are empty; 3..5 come after the last row with an entry (row 2).
  const CsrMatrix a = from_rows(4, {{{0, 1.0}}, {}, {{1, 2.0}, {3, 1.0}}, {}, {}, {}});
  for (const InspectDepth depth :
       {InspectDepth::full, InspectDepth::rows, InspectDepth::row_lengths}) {
    const Profile p = spmvc::inspect(a, depth);
    CHECK(p.empty_rows == 4);
    CHECK(p.trailing_empty_rows == 3);
  }
  const std::string report = spmvc::to_report(spmvc::inspect(a));
  CHECK(report.find("empty rows 4 (3 after the last row with an entry)") != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(spmvc::to_json(spmvc::inspect(a)));
  CHECK(j["row_length"]["empty_rows"] == 4);
  CHECK(j["row_length"]["trailing_empty_rows"] == 3);
}

TEST_CASE("inspect: 4x4 with an empty row, every field") {
  const Profile p = spmvc::inspect(four_by_four());
  CHECK(p.nrows == 4);
  CHECK(p.ncols == 4);
  CHECK(p.nnz == 7);

  CHECK(p.row_mean == 1.75);
  // Deviations 1.25, -1.75, 0.25, 0.25: squares sum to 4.75 over 4 rows.
  CHECK(p.row_stddev == doctest::Approx(std::sqrt(1.1875)).epsilon(1e-15));
  CHECK(p.row_min == 0);
  CHECK(p.row_max == 3);
  CHECK(p.empty_rows == 1);
  CHECK(p.trailing_empty_rows == 0);  // row 1, before rows with entries
  check_bins(p, {{0, 0, 1}, {2, 2, 2}, {3, 3, 1}});

  CHECK(p.bandwidth == 3);  // (0, 3)
  CHECK(p.profile == 3);    // row 2 reaches back 2 columns, row 3 one
  // Deltas: row 0: 1, 2; row 2: 2; row 3: 1.
  check_bits(p.delta_bits, {{1, 2}, {2, 2}});
  // First columns 0, 0, 2 (the empty row has none).
  check_bits(p.first_col_bits, {{0, 2}, {2, 1}});
  CHECK(p.x_sectors == 3);  // every row lies within columns 0..3
  // Longest row per slice: single rows sum to nnz; pairs max(3, 0) + max(2, 2); then one slice.
  CHECK(p.slice_longest[0] == 7);
  CHECK(p.slice_longest[1] == 5);
  for (std::size_t k = 2; k < p.slice_longest.size(); ++k) CHECK(p.slice_longest[k] == 3);
  CHECK(p.narrow_slice_nnz == 7);  // one slice, columns 0..3

  REQUIRE(p.block_fill.size() == 10);
  const std::vector<std::pair<int, int>> shapes = {{1, 2}, {2, 1}, {2, 2}, {3, 3}, {4, 4},
                                                   {2, 4}, {4, 2}, {8, 8}, {1, 4}, {4, 1}};
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    CHECK(p.block_fill[i].r == shapes[i].first);
    CHECK(p.block_fill[i].c == shapes[i].second);
  }
  const std::vector<std::tuple<int, int, std::int64_t>> blocks = {
      {1, 2, 5},  // row 0: {0,1},{3}; row 2: {0},{2}; row 3: {2,3}
      {2, 1, 6},  // rows 0-1 use columns 0,1,3; rows 2-3 use 0,2,3
      {2, 2, 4}, {3, 3, 4}, {4, 4, 1}, {2, 4, 2},
      {4, 2, 2}, {8, 8, 1}, {1, 4, 3},  // one per non-empty row
      {4, 1, 4},                        // every column is used somewhere
  };
  for (const auto& [r, c, n] : blocks) {
    CAPTURE(r);
    CAPTURE(c);
    const BlockFill f = fill_of(p, r, c);
    CHECK(f.blocks == n);
    CHECK(f.fill == 7.0 / static_cast<double>(n * r * c));
  }

  CHECK(p.distinct_values == 5);  // 1 2 3 4 5
  CHECK(p.fp32_exact_values == 7);
  CHECK(p.square);
  CHECK_FALSE(p.structurally_symmetric);  // (0,1) has no (1,0)
  CHECK_FALSE(p.numerically_symmetric);
  CHECK(p.inspect_seconds >= 0.0);
  CHECK(p.inspect_seconds < 1.0);
}

TEST_CASE("inspect: block-diagonal 2x2 blocks are fully filled and symmetric") {
  //  [1 2 . .]
  //  [2 1 . .]
  //  [. . 3 -1]
  //  [. . -1 3]
  const CsrMatrix a = from_rows(
      4,
      {{{0, 1.0}, {1, 2.0}}, {{0, 2.0}, {1, 1.0}}, {{2, 3.0}, {3, -1.0}}, {{2, -1.0}, {3, 3.0}}});
  const Profile p = spmvc::inspect(a);
  CHECK(p.row_mean == 2.0);
  CHECK(p.row_stddev == 0.0);
  check_bins(p, {{2, 2, 4}});
  CHECK(p.bandwidth == 1);
  CHECK(p.profile == 2);
  check_bits(p.delta_bits, {{1, 4}});
  check_bits(p.first_col_bits, {{0, 2}, {2, 2}});

  CHECK(fill_of(p, 2, 2).blocks == 2);
  CHECK(fill_of(p, 2, 2).fill == 1.0);
  CHECK(fill_of(p, 2, 1).blocks == 4);
  CHECK(fill_of(p, 2, 1).fill == 1.0);
  CHECK(fill_of(p, 1, 2).fill == 1.0);
  CHECK(fill_of(p, 4, 4).fill == 0.5);
  CHECK(fill_of(p, 1, 4).fill == 0.5);
  CHECK(fill_of(p, 4, 1).fill == 0.5);
  CHECK(fill_of(p, 3, 3).blocks == 4);  // rows 0-2 straddle both 3-column blocks
  CHECK(fill_of(p, 3, 3).fill == 8.0 / 36.0);
  CHECK(fill_of(p, 8, 8).fill == 0.125);

  CHECK(p.distinct_values == 4);
  CHECK(p.square);
  CHECK(p.structurally_symmetric);
  CHECK(p.numerically_symmetric);
}

TEST_CASE("inspect: pattern symmetric, values not") {
  const Profile p = spmvc::inspect(from_rows(2, {{{0, 1.0}, {1, 2.0}}, {{0, 3.0}, {1, 4.0}}}));
  CHECK(p.square);
  CHECK(p.structurally_symmetric);
  CHECK_FALSE(p.numerically_symmetric);
}

TEST_CASE("inspect: same column counts as row lengths but a different pattern") {
  // Row lengths 1,1,1 and column counts 1,1,1, yet (0,1),(1,2),(2,0) is a cycle, not symmetric.
  const Profile p = spmvc::inspect(from_rows(3, {{{1, 1.0}}, {{2, 1.0}}, {{0, 1.0}}}));
  CHECK(p.square);
  CHECK_FALSE(p.structurally_symmetric);
  CHECK_FALSE(p.numerically_symmetric);
  CHECK(p.distinct_values == 1);
  CHECK(p.bandwidth == 2);
  CHECK(p.profile == 2);  // row 2 starts at column 0
}

TEST_CASE("inspect: -0.0 equals 0.0 for distinct values and symmetry") {
  const Profile p = spmvc::inspect(from_rows(2, {{{0, 1.0}, {1, -0.0}}, {{0, 0.0}, {1, 1.0}}}));
  CHECK(p.distinct_values == 2);
  CHECK(p.structurally_symmetric);
  CHECK(p.numerically_symmetric);
}

TEST_CASE("inspect: rectangular matrix is not square and not symmetric") {
  //  [. . 7]
  //  [7 . .]
  const Profile p = spmvc::inspect(from_rows(3, {{{2, 7.0}}, {{0, 7.0}}}));
  CHECK(p.nrows == 2);
  CHECK(p.ncols == 3);
  CHECK_FALSE(p.square);
  CHECK_FALSE(p.structurally_symmetric);
  CHECK_FALSE(p.numerically_symmetric);
  CHECK(p.bandwidth == 2);
  CHECK(p.profile == 1);
  check_bits(p.delta_bits, {});
  check_bits(p.first_col_bits, {{0, 1}, {2, 1}});
  CHECK(fill_of(p, 2, 2).blocks == 2);  // (0,2) in block column 1, (1,0) in 0
  CHECK(fill_of(p, 1, 4).blocks == 2);
}

TEST_CASE("inspect: long rows land in power-of-two bins; wide deltas") {
  const std::int64_t ncols = 100000;
  std::vector<Row> rows;
  for (const int len : {40, 64, 65, 32, 33}) {
    Row r;
    for (int j = 0; j < len; ++j) r.push_back({j, 1.0});
    rows.push_back(r);
  }
  rows.push_back({{0, 1.0}, {1000, 2.0}, {70000, 3.0}});  // deltas 1000 (10 bits), 69000 (17)
  rows.push_back({{70000, 1.0}});                         // first column needs 17 bits
  const Profile p = spmvc::inspect(from_rows(ncols, rows));

  CHECK(p.row_min == 1);
  CHECK(p.row_max == 65);
  CHECK(p.empty_rows == 0);
  check_bins(p, {{1, 1, 1}, {3, 3, 1}, {32, 32, 1}, {33, 64, 3}, {65, 128, 1}});
  check_bits(p.delta_bits, {{1, 39 + 63 + 64 + 31 + 32}, {10, 1}, {17, 1}});
  check_bits(p.first_col_bits, {{0, 6}, {17, 1}});
  CHECK(p.bandwidth == 70000 - 5);  // row 5 reaches column 70000
  CHECK(p.distinct_values == 3);
  CHECK_FALSE(p.square);
}

TEST_CASE("inspect: x sectors count 4-column groups per row") {
  // Columns 0-3 share a sector, 4 starts the next, 8 and 9 share the third.
  const Profile p = spmvc::inspect(
      from_rows(16, {{{0, 1.0}, {1, 1.0}, {2, 1.0}, {3, 1.0}, {4, 1.0}, {8, 1.0}, {9, 1.0}},
                     {{3, 1.0}, {4, 1.0}},
                     {{15, 1.0}}}));
  CHECK(p.x_sectors == 3 + 2 + 1);
}

TEST_CASE("inspect: empty matrices") {
  SUBCASE("0x0") {
    const Profile p = spmvc::inspect(CsrMatrix{});
    CHECK(p.nnz == 0);
    CHECK(p.row_mean == 0.0);
    CHECK(p.row_min == 0);
    CHECK(p.row_histogram.empty());
    CHECK(p.distinct_values == 0);
    CHECK(p.square);
    CHECK(p.structurally_symmetric);
  }
  SUBCASE("3x3 with no nonzeros") {
    const Profile p = spmvc::inspect(from_rows(3, {{}, {}, {}}));
    CHECK(p.empty_rows == 3);
    CHECK(p.trailing_empty_rows == 3);
    CHECK(p.row_min == 0);
    CHECK(p.row_max == 0);
    check_bins(p, {{0, 0, 3}});
    CHECK(fill_of(p, 2, 2).blocks == 0);
    CHECK(fill_of(p, 2, 2).fill == 0.0);
    CHECK(p.bandwidth == 0);
    CHECK(p.structurally_symmetric);
    CHECK(p.numerically_symmetric);
  }
}

TEST_CASE("inspect: distinct values past the hash table's limit are counted exactly") {
  // 1000x1000 dense, 1e6 values with 700,000 distinct (k mod 700000) / 2, mixed with -0.0
  // standing in for the 0.0 already present: the radix-sort path.
  CsrMatrix a;
  a.nrows = a.ncols = 1000;
  for (std::int32_t i = 0; i < 1000; ++i) {
    for (std::int32_t j = 0; j < 1000; ++j) {
      const std::int64_t k = std::int64_t{i} * 1000 + j;
      a.col_idx.push_back(j);
      a.values.push_back(k % 1000 == 999 ? -0.0 : static_cast<double>(k % 700000) * 0.5);
    }
    a.row_ptr.push_back(a.nnz());
  }
  const Profile p = spmvc::inspect(a);
  // 1000 divides 700000, so every k holding residue r ≡ 999 (mod 1000) became -0.0: those 700
  // residues are gone, and -0.0 merges with the 0.0 at k = 0.
  CHECK(p.distinct_values == 700000 - 700);
  CHECK(p.structurally_symmetric);
  CHECK_FALSE(p.numerically_symmetric);
  CHECK(fill_of(p, 8, 8).fill == 1.0);
  CHECK(p.x_sectors == 1000 * 250);
}

TEST_CASE("inspect: distinct values through table growth, and the free-slot bit pattern") {
  std::vector<Row> rows;
  for (std::int32_t i = 0; i < 300; ++i) {
    Row r;
    for (std::int32_t j = 0; j < 300; ++j)
      r.push_back({j, static_cast<double>((i * 300 + j) % 5000)});
    rows.push_back(r);
  }
  // The hash table's free-slot marker is an all-ones NaN; a value with that pattern must count.
  rows[0][0].second = std::bit_cast<double>(~std::uint64_t{0});
  rows[1][0].second = std::bit_cast<double>(~std::uint64_t{0});
  const Profile p = spmvc::inspect(from_rows(300, rows));
  // The overwritten values still occur elsewhere (0 at k = 5000, 300 at k = 5300).
  CHECK(p.distinct_values == 5000 + 1);
  CHECK(p.fp32_exact_values == 300 * 300 - 2);
}

TEST_CASE("inspect: fp32-exact values") {
  const Profile p = spmvc::inspect(from_rows(4, {{{0, 0.5}, {1, 0.1}, {2, 1e300}, {3, 16777217.0}},
                                                 {{0, 16777216.0}, {1, -3.25}, {2, INFINITY}}}));
  // 0.1 rounds, 1e300 overflows, 2^24 + 1 needs 25 significant bits.
  CHECK(p.fp32_exact_values == 4);
}

TEST_CASE("to_json: round-trips the fields with stable shapes") {
  const Profile p = spmvc::inspect(four_by_four());
  const nlohmann::json j = nlohmann::json::parse(spmvc::to_json(p));
  CHECK(j.at("schema_version") == 1);
  CHECK(j.at("nrows") == 4);
  CHECK(j.at("ncols") == 4);
  CHECK(j.at("nnz") == 7);
  const auto& rl = j.at("row_length");
  CHECK(rl.at("mean") == 1.75);
  CHECK(rl.at("stddev").get<double>() == p.row_stddev);
  CHECK(rl.at("min") == 0);
  CHECK(rl.at("max") == 3);
  CHECK(rl.at("empty_rows") == 1);
  REQUIRE(rl.at("histogram").size() == 3);
  CHECK(rl.at("histogram")[1] == nlohmann::json{{"lo", 2}, {"hi", 2}, {"count", 2}});
  CHECK(j.at("bandwidth") == 3);
  CHECK(j.at("profile") == 3);
  CHECK(j.at("delta_bits") ==
        nlohmann::json::array({{{"bits", 1}, {"count", 2}}, {{"bits", 2}, {"count", 2}}}));
  CHECK(j.at("first_col_bits") ==
        nlohmann::json::array({{{"bits", 0}, {"count", 2}}, {{"bits", 2}, {"count", 1}}}));
  CHECK(j.at("x_sectors") == 3);
  REQUIRE(j.at("block_fill").size() == 10);
  CHECK(j.at("block_fill")[0].at("r") == 1);
  CHECK(j.at("block_fill")[0].at("c") == 2);
  CHECK(j.at("block_fill")[0].at("blocks") == 5);
  CHECK(j.at("block_fill")[0].at("fill") == 0.7);
  CHECK(j.at("distinct_values") == 5);
  CHECK(j.at("unit_values") == p.unit_values);
  CHECK(j.at("fp32_exact_values") == 7);
  CHECK(j.at("symmetry") ==
        nlohmann::json{{"square", true}, {"structural", false}, {"numerical", false}});
  CHECK(j.at("inspect_seconds").get<double>() == p.inspect_seconds);
  CHECK(j.at("depth") == "full");
  CHECK(j.at("narrow_slice_nnz") == 7);
  // Every value is exact in fp32: no rounding error there (mixed precision).
  CHECK(j.at("value_rounding").at("f32_error") == 0.0);
  CHECK(j.at("value_rounding").at("bf16_error").get<double>() == p.bf16_rounding_error);
  CHECK(j.at("value_rounding").at("f32_overflow") == 0);
  CHECK(j.size() == 20);
  CHECK(j.at("diagonals") == p.diagonals);
}

TEST_CASE("to_json: bit counts stay in numeric order past 9") {
  Profile p;
  p.delta_bits[2] = 5;
  p.delta_bits[10] = 7;
  const nlohmann::json j = nlohmann::json::parse(spmvc::to_json(p));
  REQUIRE(j.at("delta_bits").size() == 2);
  CHECK(j.at("delta_bits")[0].at("bits") == 2);
  CHECK(j.at("delta_bits")[1].at("bits") == 10);
}

TEST_CASE("to_report: readable summary with grouped numbers") {
  SUBCASE("big counts get thousands separators") {
    Profile p;
    p.nrows = p.ncols = 1234567;
    p.nnz = 7660826;
    p.row_histogram = {{5, 5, 1000000}, {33, 64, 234567}};
    p.delta_bits[1] = 100;
    p.delta_bits[3] = 100;
    const std::string r = spmvc::to_report(p);
    CAPTURE(r);
    CHECK(r.find("7,660,826 nonzeros") != std::string::npos);
    CHECK(r.find("1,234,567 x 1,234,567") != std::string::npos);
    CHECK(r.find("33..64") != std::string::npos);
    CHECK(r.find(std::string(40, '#')) != std::string::npos);  // the biggest bin's full bar
    // Half the deltas fit in 1 bit, all of them in 4.
    CHECK(r.find("1 bit 50.0%, 2 bits 50.0%, 4 bits 100.0%") != std::string::npos);
  }
  SUBCASE("the inspected 4x4") {
    const std::string r = spmvc::to_report(spmvc::inspect(four_by_four()));
    CAPTURE(r);
    CHECK(r.find("Matrix 4 x 4, 7 nonzeros") != std::string::npos);
    CHECK(r.find("empty rows 1") != std::string::npos);
    CHECK(r.find("Bandwidth 3, profile 3") != std::string::npos);
    CHECK(r.find("Distinct values: 5") != std::string::npos);
    CHECK(r.find("not symmetric") != std::string::npos);
    // Best block fill first: 1x2 at 0.7.
    CHECK(r.find("Block fill (best first): 1x2 0.700 (5 blocks)") != std::string::npos);
  }
}

TEST_CASE("the row-scan depth gives the planner's fields and marks the rest as not inspected") {
  spmvc::CsrMatrix a;
  a.nrows = 3;
  a.ncols = 3;
  a.row_ptr = {0, 2, 3, 5};
  a.col_idx = {0, 2, 1, 0, 2};
  a.values = {1, 2, 3, 2, 5};
  const spmvc::Profile full = spmvc::inspect(a);
  const spmvc::Profile rows = spmvc::inspect(a, spmvc::InspectDepth::rows);
  CHECK(rows.depth == spmvc::InspectDepth::rows);
  CHECK(rows.nnz == full.nnz);
  CHECK(rows.row_mean == full.row_mean);
  CHECK(rows.row_stddev == full.row_stddev);
  CHECK(rows.row_max == full.row_max);
  CHECK(rows.bandwidth == full.bandwidth);
  CHECK(rows.delta_bits == full.delta_bits);
  CHECK(rows.square);
  CHECK(full.distinct_values == 4);
  // Distinct values are counted at both depths (the value codings need them; row depth stops
  // counting past kDistinctValuesCap), and so are values equal to 1.
  CHECK(rows.distinct_values == 4);
  CHECK(rows.unit_values == 1);
  CHECK(full.unit_values == 1);
  CHECK(rows.block_fill.empty());
  CHECK_FALSE(full.block_fill.empty());
  CHECK(full.numerically_symmetric);
  // Rows depth checks symmetry only for a matrix on at most kMaxDiagonals diagonals (dia's
  // symmetric form needs it).
  CHECK(rows.numerically_symmetric == (rows.diagonals > 0));
  CHECK(spmvc::to_report(rows).find("not inspected") != std::string::npos);
  CHECK(spmvc::to_json(rows).find("\"depth\": \"rows\"") != std::string::npos);
}

namespace {

// Block fill counted the obvious way: the set of (row / r, column / c) tiles with a nonzero.
std::int64_t tiles_by_set(const spmvc::CsrMatrix& a, int r, int c) {
  std::vector<std::pair<std::int64_t, std::int64_t>> tiles;
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k)
      tiles.emplace_back(i / r, a.col_idx[k] / c);
  std::sort(tiles.begin(), tiles.end());
  return std::unique(tiles.begin(), tiles.end()) - tiles.begin();
}

}  // namespace

TEST_CASE("inspect: block fill of a nearly empty wide matrix follows its nonzeros") {
  // 2^31-1 columns and a handful of nonzeros: one stamp per block column would be 8 GB for 1x2
  // tiles. The count must equal the set of tiles whichever way block_fill takes.
  spmvc::CsrMatrix wide;
  wide.nrows = 9;
  wide.ncols = 2147483647;
  wide.row_ptr = {0, 2, 2, 3, 5, 5, 5, 5, 6, 8};
  wide.col_idx = {0, 2147483646, 5, 1, 1000000000, 7, 6, 2147483600};
  wide.values.assign(wide.col_idx.size(), 1.0);
  // A denser one of modest width takes the stamp path; both must agree with the sets.
  spmvc::CsrMatrix dense;
  dense.nrows = 6;
  dense.ncols = 6;
  dense.row_ptr = {0, 3, 5, 6, 8, 10, 12};
  dense.col_idx = {0, 1, 5, 2, 3, 4, 0, 5, 1, 2, 3, 4};
  dense.values.assign(dense.col_idx.size(), 2.0);
  for (const spmvc::CsrMatrix* a : {&wide, &dense}) {
    const spmvc::Profile p = spmvc::inspect(*a);
    REQUIRE(p.block_fill.size() == 10);
    for (const spmvc::BlockFill& f : p.block_fill) {
      INFO("r = " << f.r << ", c = " << f.c << ", ncols = " << a->ncols);
      CHECK(f.blocks == tiles_by_set(*a, f.r, f.c));
    }
  }
  // Hand-checked: 1x2 tiles of the wide matrix are the 8 nonzeros' distinct (row, col/2) pairs,
  // and no two share one.
  CHECK(spmvc::inspect(wide).block_fill[0].blocks == 8);
}
