// Input that states a size it does not hold: the size line, a generator spec or a replication
// factor must be checked against the memory budget before anything is allocated, a file that is
// not Matrix Market must fail on its first bytes, and decompression is capped. Every case here
// sets a small budget (SPMVC_MEMORY_BUDGET), so a broken check fails the test instead of
// allocating gigabytes.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "../../matrix/decompress.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/memory_budget.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

namespace {

const std::string kBanner = "%%MatrixMarket matrix coordinate real general\n";

// Sets SPMVC_MEMORY_BUDGET for its lifetime and restores what was there.
class BudgetGuard {
 public:
  explicit BudgetGuard(const char* value) {
    if (const char* old = std::getenv("SPMVC_MEMORY_BUDGET")) old_ = old;
    if (value) {
      setenv("SPMVC_MEMORY_BUDGET", value, 1);
    } else {
      unsetenv("SPMVC_MEMORY_BUDGET");
    }
  }
  ~BudgetGuard() {
    if (old_) {
      setenv("SPMVC_MEMORY_BUDGET", old_->c_str(), 1);
    } else {
      unsetenv("SPMVC_MEMORY_BUDGET");
    }
  }
  BudgetGuard(const BudgetGuard&) = delete;
  BudgetGuard& operator=(const BudgetGuard&) = delete;

 private:
  std::optional<std::string> old_;
};

template <typename Fn>
spmvc::InputError input_error(Fn fn) {
  try {
    fn();
  } catch (const spmvc::InputError& e) {
    return e;
  }
  FAIL("expected an InputError");
  return spmvc::InputError("", 0, "");
}

bool has(const spmvc::InputError& e, const std::string& phrase) {
  return std::string(e.what()).find(phrase) != std::string::npos;
}

// A file in the temp directory, removed at the end of the test.
struct TempFile {
  std::filesystem::path path;
  TempFile(const std::string& name, const std::string& bytes)
      : path(std::filesystem::temp_directory_path() / name) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  ~TempFile() { std::filesystem::remove(path); }
};

std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("the memory budget comes from SPMVC_MEMORY_BUDGET, else from physical memory") {
  {
    BudgetGuard g("123456");
    CHECK(spmvc::memory_budget() == 123456);
  }
  {
    BudgetGuard g(nullptr);
    CHECK(spmvc::memory_budget() > (std::uint64_t{1} << 20));
  }
  for (const char* bad : {"lots", "-5", "0", "12k"}) {
    BudgetGuard g(bad);
    const spmvc::InputError e = input_error([] { spmvc::memory_budget(); });
    CHECK(e.source() == "SPMVC_MEMORY_BUDGET");
    CHECK(has(e, "is not a positive number of bytes"));
  }
}

TEST_CASE("the size line alone does not drive allocations") {
  BudgetGuard g("1000000");
  // 2^31-1 rows would need a 16 GiB row_ptr from a 60-byte file.
  const spmvc::InputError rows =
      input_error([] { spmvc::parse_matrix_market(kBanner + "2147483647 1 0\n", "big.mtx"); });
  INFO(rows.what());
  CHECK(rows.source() == "big.mtx");
  CHECK(rows.line() == 2);
  CHECK(has(rows, "the size line declares 2147483647 x 1 with 0 entries"));
  CHECK(has(rows, "needs about 17179869184 bytes"));
  CHECK(has(rows, "over the memory budget of 1000000 bytes"));

  const spmvc::InputError square = input_error(
      [] { spmvc::parse_matrix_market(kBanner + "100000000 100000000 1\n1 1 1\n", "b.mtx"); });
  CHECK(has(square, "declares 100000000 x 100000000 with 1 entries"));

  // A declared entry count beyond what the text can hold is not allocated for: the file is
  // reported as truncated, not as too large.
  const spmvc::InputError truncated = input_error(
      [] { spmvc::parse_matrix_market(kBanner + "3 3 1000000000000\n1 1 1\n", "t.mtx"); });
  CHECK(has(truncated, "file ends early"));

  // Within the budget, a wide empty matrix reads as one.
  const spmvc::CsrMatrix a = spmvc::parse_matrix_market(kBanner + "1000 2000000000 0\n", "w.mtx");
  CHECK(a.nrows == 1000);
  CHECK(a.ncols == 2000000000);
  CHECK(a.nnz() == 0);
  CHECK(a.row_ptr.size() == 1001);
}

TEST_CASE("a file that is not Matrix Market fails on its first bytes") {
  BudgetGuard g("1000000");
  // /dev/zero never ends: only a check of the first bytes can stop the read.
  if (std::filesystem::exists("/dev/zero")) {
    const spmvc::InputError z = input_error([] { spmvc::read_matrix_market("/dev/zero"); });
    CHECK(z.source() == "/dev/zero");
    CHECK(z.line() == 1);
    CHECK(has(z, "missing Matrix Market banner"));
  }
  // Larger than the budget, but the banner check comes first.
  const TempFile junk("spmvc_test_junk.txt", std::string(2000000, 'x'));
  CHECK(has(input_error([&] { spmvc::read_matrix_market(junk.path); }),
            "missing Matrix Market banner: the first line must start with '%%MatrixMarket', "
            "found 'xxxxxxxxxxxxxxxxxxxx'"));
  // Compressed text is checked on its first decompressed bytes (xz's default dictionary needs
  // 8 MiB to decode, which the budget must allow).
  BudgetGuard decoder("20000000");
  for (const char* name : {"not_matrix_market.txt.gz", "not_matrix_market.txt.xz"}) {
    const spmvc::InputError e =
        input_error([&] { spmvc::read_matrix_market(spmvc::test::data_dir() / name); });
    INFO(e.what());
    CHECK(e.line() == 1);
    CHECK(has(e, "missing Matrix Market banner"));
    CHECK(has(e, "found 'this is not a Matrix'"));
  }
}

TEST_CASE("files and their decompressed text are capped by the budget") {
  const std::string big = kBanner + std::string(5000, '%') + "\n1 1 0\n";
  const TempFile file("spmvc_test_big.mtx", big);
  {
    BudgetGuard g("1000");
    const spmvc::InputError e = input_error([&] { spmvc::read_matrix_market(file.path); });
    CHECK(has(e, "file size exceeds the memory budget of 1000 bytes"));
  }
  {
    BudgetGuard g("100000");
    CHECK(spmvc::read_matrix_market(file.path).nnz() == 0);
  }
  // general.mtx is 296 bytes decompressed.
  const std::string gz = file_bytes(spmvc::test::data_dir() / "general.mtx.gz");
  const std::string xz = file_bytes(spmvc::test::data_dir() / "general.mtx.xz");
  CHECK(spmvc::detail::gunzip(gz, "g", 296).size() == 296);
  CHECK(spmvc::detail::unxz(xz, "x", 296).size() == 296);
  CHECK(has(input_error([&] { spmvc::detail::gunzip(gz, "g", 295); }),
            "decompressed gzip data exceeds the memory budget of 295 bytes"));
  CHECK(has(input_error([&] { spmvc::detail::unxz(xz, "x", 100); }),
            "decompressed xz data exceeds the memory budget of 100 bytes"));
}

TEST_CASE("xz: padding and concatenated streams are read, trailing garbage is named") {
  const std::string xz = file_bytes(spmvc::test::data_dir() / "general.mtx.xz");
  const std::string text = file_bytes(spmvc::test::data_dir() / "general.mtx");
  CHECK(spmvc::detail::unxz(xz + std::string(8, '\0'), "x") == text);
  CHECK(spmvc::detail::unxz(xz + xz, "x") == text + text);
  for (const std::string& junk :
       {std::string("junk"), std::string(40, 'j'), std::string(3, '\0')}) {
    const spmvc::InputError e = input_error([&] { spmvc::detail::unxz(xz + junk, "x"); });
    INFO(e.what());
    CHECK(
        has(e, fmt::format("{} bytes of trailing garbage after the compressed data", junk.size())));
    CHECK(!has(e, "truncated"));
  }
  const TempFile file("spmvc_test_garbage.mtx.xz", xz + "junk");
  CHECK(has(input_error([&] { spmvc::read_matrix_market(file.path); }), "trailing garbage"));
  // A stream cut short is still "truncated".
  CHECK(has(input_error([&] { spmvc::detail::unxz(xz.substr(0, xz.size() - 10), "x"); }),
            "truncated xz stream"));
}

TEST_CASE("duplicates that sum past fp64's range are an error naming the entry") {
  const spmvc::InputError pos = input_error([] {
    spmvc::parse_matrix_market(kBanner + "2 2 3\n2 2 1\n1 1 1e308\n1 1 1e308\n", "dup.mtx");
  });
  INFO(pos.what());
  CHECK(pos.source() == "dup.mtx");
  CHECK(has(pos, "duplicate entries at row 1, column 1 sum to inf"));
  const spmvc::InputError neg = input_error(
      [] { spmvc::parse_matrix_market(kBanner + "2 2 2\n2 1 -1.7e308\n2 1 -1e308\n", "dup.mtx"); });
  CHECK(has(neg, "duplicate entries at row 2, column 1 sum to -inf"));
  // Duplicates that stay finite are summed, as before.
  CHECK(
      spmvc::parse_matrix_market(kBanner + "1 1 2\n1 1 1e308\n1 1 -1e308\n", "ok.mtx").values[0] ==
      0.0);
  // csr_from_arrays sums duplicates too, and names the entry 0-based like its arrays.
  const std::vector<std::int64_t> row_ptr{0, 2};
  const std::vector<std::int32_t> cols{0, 0};
  const std::vector<double> vals{1e308, 1e308};
  CHECK(has(input_error([&] { spmvc::csr_from_arrays(1, 1, row_ptr, cols, vals); }),
            "duplicate entries at row 0, column 0 sum to inf"));
}

TEST_CASE("generators and replication estimate their size before allocating") {
  BudgetGuard g("100000000");
  const spmvc::InputError rmat = input_error([] { spmvc::gen::from_spec("rmat:scale=26"); });
  INFO(rmat.what());
  CHECK(rmat.source() == "rmat:scale=26");
  CHECK(has(rmat, "2^26 vertices and 1073741824 edges"));
  CHECK(has(rmat, "over the memory budget of 100000000 bytes"));

  const spmvc::InputError random =
      input_error([] { spmvc::gen::from_spec("random:n=1000000000,per_row=16"); });
  CHECK(has(random, "1000000000 rows with 16 nonzeros each"));
  // nrows * per_row overflows int64 here; the estimate must not.
  CHECK(has(input_error([] {
              spmvc::gen::from_spec("random:nrows=4000000000000000000,ncols=16,per_row=16");
            }),
            "4000000000000000000 rows with 16 nonzeros each"));
  CHECK(has(input_error([] { spmvc::gen::from_spec("banded:n=100000000,hbw=8"); }),
            "n = 100000000 with half bandwidth 8"));
  CHECK(has(input_error([] { spmvc::gen::from_spec("stencil27:n=1000"); }),
            "1000x1000x1000 grid with 1 unknowns per point"));

  const spmvc::CsrMatrix a = spmvc::gen::from_spec("stencil2d:n=8");
  const spmvc::InputError rep = input_error([&] { spmvc::gen::replicate(a, 10416667); });
  CHECK(has(rep, "10416667 copies of a 64 x 64 matrix with 288 nonzeros"));
  // Small requests still work under the budget.
  CHECK(spmvc::gen::replicate(a, 3).nnz() == 3 * a.nnz());
}

TEST_CASE("replication factors never overflow") {
  const spmvc::CsrMatrix a = spmvc::gen::from_spec("stencil2d:n=2");
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  for (const std::int64_t k : {kMax, kMax / 2 + 1, std::int64_t{1} << 62}) {
    const spmvc::InputError e = input_error([&] { spmvc::gen::replicate(a, k); });
    CHECK(has(e, fmt::format("{} copies of a matrix with 4 columns need more than 2^31-1", k)));
  }
  CHECK(has(input_error([] { spmvc::gen::from_spec("stencil2d:n=2,rep=9223372036854775807"); }),
            "need more than 2^31-1 columns"));
  for (const std::int64_t k : {std::int64_t{0}, std::int64_t{-5}}) {
    CHECK(has(input_error([&] { spmvc::gen::replicate(a, k); }), "k must be at least 1"));
  }
}

TEST_CASE("csr_from_arrays: nrows = 2^63-1 is refused without overflowing nrows + 1") {
  // Found by fuzz/csr_arrays.cpp (UBSan: signed overflow in the size check).
  const std::vector<std::int64_t> row_ptr{0, 0};
  const spmvc::InputError e = input_error([&] {
    spmvc::csr_from_arrays(std::numeric_limits<std::int64_t>::max(), 1, row_ptr, {}, {});
  });
  CHECK(has(e, "row_ptr has 2 entries, expected nrows+1 = 9223372036854775808"));
}

TEST_CASE("compile(CsrMatrix): arrays whose sizes disagree are refused before any work") {
  spmvc::CsrMatrix a;  // row_ptr starts as {0}
  a.nrows = a.ncols = 2;
  a.row_ptr.push_back(0);  // a second leading 0: three offsets, then one more below
  a.row_ptr.push_back(1);
  a.row_ptr.push_back(2);
  a.col_idx = {0, 1};
  a.values = {1.0, 2.0};
  // Four offsets for two rows: refused whether or not a GPU is present (the check comes first).
  CHECK_THROWS_WITH_AS(spmvc::compile(a), doctest::Contains("2 rows need 3 row offsets (has 4)"),
                       spmvc::InputError);
  a.row_ptr = {0, 1, 2};
  a.values = {1.0};
  CHECK_THROWS_WITH_AS(spmvc::compile(a), doctest::Contains("the 1 values must be as many"),
                       spmvc::InputError);
  a.values = {1.0, 2.0};
  a.row_ptr = {0, 1, 3};  // the last offset past the 2 columns
  CHECK_THROWS_WITH_AS(spmvc::compile(a), doctest::Contains("(it is 3)"), spmvc::InputError);
}
