// csr_from_arrays and validate: the caller-array entry point and the CSR invariants.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "spmvc/error.hpp"
#include "spmvc/matrix.hpp"

namespace {

using spmvc::CsrMatrix;
using I64 = std::vector<std::int64_t>;
using I32 = std::vector<std::int32_t>;
using F64 = std::vector<double>;

// Runs `fn`, requires an InputError from "<arrays>", and returns its message.
template <typename Fn>
std::string input_error(Fn fn) {
  try {
    fn();
  } catch (const spmvc::InputError& e) {
    CHECK(e.source() == "<arrays>");
    CHECK(e.line() == 0);
    return e.what();
  }
  FAIL("expected an InputError");
  return {};
}

}  // namespace

TEST_CASE("csr_from_arrays sorts rows and sums duplicates") {
  const I64 row_ptr{0, 4, 4, 6};
  const I32 col{3, 0, 3, 1, 2, 0};
  const F64 val{1, 2, 10, 4, 5, 6};
  const CsrMatrix a = spmvc::csr_from_arrays(3, 4, row_ptr, col, val);
  CHECK(a.nrows == 3);
  CHECK(a.ncols == 4);
  CHECK(a.row_ptr == I64{0, 3, 3, 5});
  CHECK(a.col_idx == I32{0, 1, 3, 0, 2});
  CHECK(a.values == F64{2, 4, 11, 6, 5});
  CHECK_NOTHROW(spmvc::validate(a));
}

TEST_CASE("csr_from_arrays with 32-bit offsets gives the same matrix") {
  const I32 row_ptr{0, 2, 3};
  const I32 col{1, 0, 1};
  const F64 val{0.5, 0.0, -1};
  const CsrMatrix a = spmvc::csr_from_arrays(2, 2, row_ptr, col, val);
  CHECK(a.row_ptr == I64{0, 2, 3});
  CHECK(a.col_idx == I32{0, 1, 1});
  CHECK(a.values == F64{0.0, 0.5, -1});  // the explicit zero stays an entry
}

TEST_CASE("csr_from_arrays sorts a long row stably, summing duplicates in input order") {
  // Longer than the insertion-sort cutoff, in descending order with every column twice.
  const int n = 100;
  I64 row_ptr{0, 2 * n};
  I32 col;
  F64 val;
  for (int j = n - 1; j >= 0; --j) {
    col.push_back(j);
    val.push_back(j);
    col.push_back(j);
    val.push_back(0.5);
  }
  const CsrMatrix a = spmvc::csr_from_arrays(1, n, row_ptr, col, val);
  REQUIRE(a.nnz() == n);
  for (int j = 0; j < n; ++j) {
    CHECK(a.col_idx[j] == j);
    CHECK(a.values[j] == j + 0.5);
  }
}

TEST_CASE("csr_from_arrays rejects bad arrays, naming the array and position") {
  const I32 col{0, 1};
  const F64 val{1, 2};
  CHECK(input_error([&] {
          spmvc::csr_from_arrays(2, 2, I64{0, 2}, col, val);
        }).find("row_ptr has 2 entries, expected nrows+1 = 3") != std::string::npos);
  CHECK(input_error([&] {
          spmvc::csr_from_arrays(2, 2, I64{1, 1, 2}, col, val);
        }).find("row_ptr[0] = 1, expected 0") != std::string::npos);
  CHECK(input_error([&] {
          spmvc::csr_from_arrays(2, 2, I64{0, 2, 1}, col, val);
        }).find("row_ptr[2] = 1 is less than row_ptr[1] = 2") != std::string::npos);
  CHECK(input_error([&] {
          spmvc::csr_from_arrays(2, 2, I64{0, 1, 3}, col, val);
        }).find("row_ptr[nrows] = row_ptr[2] = 3 but col_idx has 2 entries") != std::string::npos);
  CHECK(input_error([&] {
          spmvc::csr_from_arrays(2, 2, I64{0, 1, 2}, col, F64{1});
        }).find("values has 1 entries but col_idx has 2") != std::string::npos);
  CHECK(input_error([&] {
          spmvc::csr_from_arrays(2, 2, I64{0, 1, 2}, I32{0, 2}, val);
        }).find("col_idx[1] = 2 (row 1) is out of range [0, 2)") != std::string::npos);
  CHECK(input_error([&] {
          spmvc::csr_from_arrays(2, 2, I64{0, 1, 2}, I32{-1, 0}, val);
        }).find("col_idx[0] = -1 (row 0) is out of range") != std::string::npos);
  CHECK(input_error([&] {
          spmvc::csr_from_arrays(-1, 2, I64{0}, I32{}, F64{});
        }).find("nrows = -1 is negative") != std::string::npos);
  CHECK(input_error([&] {
          spmvc::csr_from_arrays(1, std::int64_t{1} << 31, I64{0, 0}, I32{}, F64{});
        }).find("column indices are 32-bit") != std::string::npos);
}

TEST_CASE("validate names the first broken invariant") {
  CsrMatrix good;
  good.nrows = 2;
  good.ncols = 3;
  good.row_ptr = {0, 2, 3};
  good.col_idx = {0, 2, 1};
  good.values = {1, 2, 3};
  CHECK_NOTHROW(spmvc::validate(good));

  auto message = [](const CsrMatrix& a) -> std::string {
    try {
      spmvc::validate(a, "mine");
    } catch (const spmvc::InputError& e) {
      CHECK(e.source() == "mine");
      return e.what();
    }
    return "(no error)";
  };
  CsrMatrix a = good;
  a.col_idx = {2, 0, 1};
  CHECK(message(a).find("strictly increasing") != std::string::npos);
  a = good;
  a.col_idx = {0, 0, 1};
  CHECK(message(a).find("col_idx[1] = 0 does not follow col_idx[0] = 0") != std::string::npos);
  a = good;
  a.col_idx = {0, 3, 1};
  CHECK(message(a).find("col_idx[1] = 3 (row 0) is out of range [0, 3)") != std::string::npos);
  a = good;
  a.row_ptr = {0, 2};
  CHECK(message(a).find("row_ptr has 2 entries, expected nrows+1 = 3") != std::string::npos);
  a = good;
  a.row_ptr = {0, 2, 2};
  CHECK(message(a).find("row_ptr[2] = 2 but there are 3 nonzeros") != std::string::npos);
  a = good;
  a.row_ptr = {0, 3, 2};
  CHECK(message(a).find("row_ptr[2] = 2 is less than row_ptr[1] = 3") != std::string::npos);
  a = good;
  a.values.pop_back();
  CHECK(message(a).find("values has 2 entries but col_idx has 3") != std::string::npos);
  CHECK(message(a).rfind("mine: ", 0) == 0);
}
