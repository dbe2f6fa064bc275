// Matrix Market reader and writer on hand-checkable files (tests/data/*.mtx, explained in each
// file's comments).
#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/profile.hpp"
#include "test_support.hpp"

namespace {

using spmvc::CsrMatrix;
using spmvc::MatrixMarketHeader;

CsrMatrix read(const std::string& name, MatrixMarketHeader* header = nullptr) {
  return spmvc::read_matrix_market(spmvc::test::data_dir() / name, header);
}

// Exact comparison, values bit-for-bit (so -0.0 != 0.0 and a 1-ulp difference both fail).
void check_same(const CsrMatrix& a, const CsrMatrix& b) {
  REQUIRE(a.nrows == b.nrows);
  REQUIRE(a.ncols == b.ncols);
  REQUIRE(a.row_ptr == b.row_ptr);
  REQUIRE(a.col_idx == b.col_idx);
  REQUIRE(a.values.size() == b.values.size());
  for (std::size_t k = 0; k < a.values.size(); ++k) {
    INFO("entry " << k);
    CHECK(std::bit_cast<std::uint64_t>(a.values[k]) == std::bit_cast<std::uint64_t>(b.values[k]));
  }
}

}  // namespace

TEST_CASE("general real file: sorted rows, duplicates summed, explicit zero kept") {
  MatrixMarketHeader h;
  const CsrMatrix a = read("general.mtx", &h);
  CHECK(a.nrows == 3);
  CHECK(a.ncols == 4);
  CHECK(a.row_ptr == std::vector<std::int64_t>{0, 2, 4, 6});
  CHECK(a.col_idx == std::vector<std::int32_t>{0, 3, 1, 2, 0, 3});
  CHECK(a.values == std::vector<double>{1.0, -0.2, 3.0, 2.5, 0.0, 4.25});
  CHECK(h.field == "real");
  CHECK(h.symmetry == "general");
  CHECK(h.nrows == 3);
  CHECK(h.ncols == 4);
  CHECK(h.stored_entries == 7);
  CHECK(h.duplicates_summed == 1);
  CHECK_NOTHROW(spmvc::validate(a));
}

TEST_CASE("symmetric file: off-diagonal entries mirrored, diagonal once") {
  MatrixMarketHeader h;
  const CsrMatrix a = read("symmetric.mtx", &h);
  CHECK(a.row_ptr == std::vector<std::int64_t>{0, 2, 5, 7});
  CHECK(a.col_idx == std::vector<std::int32_t>{0, 1, 0, 1, 2, 1, 2});
  CHECK(a.values == std::vector<double>{2, -1, -1, 2, -1, -1, 2});
  CHECK(h.symmetry == "symmetric");
  CHECK(h.stored_entries == 5);
  CHECK(h.duplicates_summed == 0);
}

TEST_CASE("skew-symmetric file: mirrored entries negated") {
  const CsrMatrix a = read("skew.mtx");
  CHECK(a.row_ptr == std::vector<std::int64_t>{0, 2, 4, 6});
  CHECK(a.col_idx == std::vector<std::int32_t>{1, 2, 0, 2, 0, 1});
  CHECK(a.values == std::vector<double>{-1, -2, 1, -3, 2, 3});
}

TEST_CASE("pattern symmetric file: every entry is 1, mirrored") {
  MatrixMarketHeader h;
  const CsrMatrix a = read("pattern_symmetric.mtx", &h);
  CHECK(h.field == "pattern");
  CHECK(a.row_ptr == std::vector<std::int64_t>{0, 2, 2, 4});
  CHECK(a.col_idx == std::vector<std::int32_t>{0, 2, 0, 2});
  CHECK(a.values == std::vector<double>{1, 1, 1, 1});
}

TEST_CASE("integer file: values converted, duplicates summed") {
  MatrixMarketHeader h;
  const CsrMatrix a = read("integer.mtx", &h);
  CHECK(h.field == "integer");
  CHECK(a.nrows == 2);
  CHECK(a.ncols == 3);
  CHECK(a.row_ptr == std::vector<std::int64_t>{0, 1, 2});
  CHECK(a.col_idx == std::vector<std::int32_t>{2, 0});
  CHECK(a.values == std::vector<double>{5, -4});
  CHECK(h.duplicates_summed == 1);
}

TEST_CASE("CRLF line ends, trailing blanks and upper-case keywords are accepted") {
  const CsrMatrix a = read("crlf_upper.mtx");
  CHECK(a.row_ptr == std::vector<std::int64_t>{0, 1, 2});
  CHECK(a.col_idx == std::vector<std::int32_t>{0, 1});
  CHECK(a.values == std::vector<double>{1.0, 5.0});
}

TEST_CASE("gzip and xz files read identically to the plain file") {
  for (const char* base : {"general.mtx", "symmetric.mtx"}) {
    INFO(base);
    MatrixMarketHeader h_plain, h_gz, h_xz;
    const CsrMatrix plain = read(base, &h_plain);
    const CsrMatrix gz = read(std::string(base) + ".gz", &h_gz);
    const CsrMatrix xz = read(std::string(base) + ".xz", &h_xz);
    check_same(plain, gz);
    check_same(plain, xz);
    CHECK(h_gz.duplicates_summed == h_plain.duplicates_summed);
    CHECK(h_xz.stored_entries == h_plain.stored_entries);
  }
}

TEST_CASE("compression is detected from magic bytes, not the file name") {
  const auto dir = std::filesystem::temp_directory_path() / "spmvc_test_magic";
  std::filesystem::create_directories(dir);
  const auto renamed = dir / "looks_plain.mtx";
  std::filesystem::copy_file(spmvc::test::data_dir() / "general.mtx.xz", renamed,
                             std::filesystem::copy_options::overwrite_existing);
  check_same(spmvc::read_matrix_market(renamed), read("general.mtx"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("comments and blank lines are allowed between header, size line and entries") {
  const std::string text =
      "%%MatrixMarket matrix coordinate real general\n"
      "%\n"
      "\n"
      "   \t\n"
      "% size follows\n"
      "2 2 2\n"
      "\n"
      "%between\n"
      "2 1 7\n"
      "  1\t2   8  \n"
      "\n"
      "% trailing comment\n";
  const CsrMatrix a = spmvc::parse_matrix_market(text, "inline.mtx");
  CHECK(a.row_ptr == std::vector<std::int64_t>{0, 1, 2});
  CHECK(a.col_idx == std::vector<std::int32_t>{1, 0});
  CHECK(a.values == std::vector<double>{8, 7});
}

TEST_CASE("last line without a newline, exponents and subnormals parse exactly") {
  const std::string text =
      "%%MatrixMarket matrix coordinate real general\n1 3 3\n"
      "1 1 1e-05\n1 2 -1.5E+3\n1 3 4.9406564584124654e-324";
  const CsrMatrix a = spmvc::parse_matrix_market(text, "inline.mtx");
  CHECK(a.values == std::vector<double>{1e-05, -1500.0, 4.9406564584124654e-324});
}

TEST_CASE("an empty matrix (zero entries) is valid") {
  const CsrMatrix a =
      spmvc::parse_matrix_market("%%MatrixMarket matrix coordinate real general\n4 5 0\n", "e");
  CHECK(a.nrows == 4);
  CHECK(a.ncols == 5);
  CHECK(a.nnz() == 0);
  CHECK(a.row_ptr == std::vector<std::int64_t>{0, 0, 0, 0, 0});
}

TEST_CASE("write then read gives the same matrix, values bit-exact") {
  CsrMatrix a;
  a.nrows = 3;
  a.ncols = 5;
  a.row_ptr = {0, 3, 3, 5};
  a.col_idx = {0, 2, 4, 1, 3};
  // Values chosen to need all 17 significant digits, plus extremes and an explicit zero.
  a.values = {0.1 + 0.2, -1.0 / 3.0, 1.7976931348623157e308, 0.0, 4.9406564584124654e-324};
  const std::string text = spmvc::to_matrix_market(a);
  CHECK(text.rfind("%%MatrixMarket matrix coordinate real general\n3 5 5\n", 0) == 0);
  check_same(spmvc::parse_matrix_market(text, "roundtrip"), a);

  const auto path = std::filesystem::temp_directory_path() / "spmvc_test_roundtrip.mtx";
  spmvc::write_matrix_market(a, path);
  check_same(spmvc::read_matrix_market(path), a);
  std::filesystem::remove(path);
}

TEST_CASE("round trip of a generated matrix with random values") {
  const CsrMatrix a = spmvc::gen::random_uniform(50, 70, 9, 3);
  check_same(spmvc::parse_matrix_market(spmvc::to_matrix_market(a), "rt"), a);
}

TEST_CASE("writing a non-finite value is refused (the reader would reject the file)") {
  CsrMatrix a;
  a.nrows = 1;
  a.ncols = 1;
  a.row_ptr = {0, 1};
  a.col_idx = {0};
  a.values = {std::numeric_limits<double>::infinity()};
  CHECK_THROWS_AS(spmvc::to_matrix_market(a), spmvc::InputError);
}

TEST_CASE("real matrix G3_circuit reads with the published sizes") {
  const auto dir = spmvc::test::shared_matrices();
  if (dir.empty()) {
    MESSAGE("shared matrices not present; skipping");
    return;
  }
  MatrixMarketHeader h;
  const CsrMatrix a = spmvc::read_matrix_market(dir / "G3_circuit.mtx.xz", &h);
  CHECK(a.nrows == 1585478);
  CHECK(a.ncols == 1585478);
  CHECK(h.stored_entries == 4623152);
  CHECK(a.nnz() == 7660826);
  CHECK_NOTHROW(spmvc::validate(a));
}

TEST_CASE("a duplicated off-diagonal entry of a symmetric file is summed in both triangles") {
  const std::string text =
      "%%MatrixMarket matrix coordinate integer symmetric\n2 2 3\n2 1 3\n1 1 5\n2 1 4\n";
  MatrixMarketHeader h;
  const CsrMatrix a = spmvc::parse_matrix_market(text, "inline.mtx", &h);
  CHECK(a.row_ptr == std::vector<std::int64_t>{0, 2, 3});
  CHECK(a.col_idx == std::vector<std::int32_t>{0, 1, 0});
  CHECK(a.values == std::vector<double>{5, 7, 7});
  CHECK(h.duplicates_summed == 2);
}

TEST_CASE("inspecting G3_circuit gives its published sizes and the row-length histogram") {
  const auto dir = spmvc::test::shared_matrices();
  if (dir.empty()) {
    MESSAGE("shared matrices not present; skipping");
    return;
  }
  const CsrMatrix a = spmvc::read_matrix_market(dir / "G3_circuit.mtx.xz");
  const spmvc::Profile p = spmvc::inspect(a);
  CHECK(p.nrows == 1585478);
  CHECK(p.nnz == 7660826);
  CHECK(p.row_max == 6);  // index.csv: row_max 6, no empty rows
  CHECK(p.empty_rows == 0);
  CHECK(p.row_mean == doctest::Approx(4.831871523918969));
  // Every bin against a direct count over row_ptr.
  std::vector<std::int64_t> count(7, 0);
  for (std::int64_t r = 0; r < a.nrows; ++r) ++count[static_cast<std::size_t>(a.row_length(r))];
  std::int64_t total = 0;
  for (const spmvc::HistogramBin& bin : p.row_histogram) {
    CAPTURE(bin.lo);
    REQUIRE(bin.lo == bin.hi);
    REQUIRE(bin.lo <= 6);
    CHECK(bin.count == count[static_cast<std::size_t>(bin.lo)]);
    total += bin.count;
  }
  CHECK(total == p.nrows);
  CHECK(p.structurally_symmetric);
}
