// Matrices at the edges of what a format must handle: empty shapes, empty rows, one row holding
// every nonzero, explicit zeros, NaN and infinities among the values. Shared by the host test of
// every format's encoding and the GPU test of every format's kernel.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "spmvc/matrix.hpp"

namespace spmvc::test {

/// An empty nrows x ncols matrix (no nonzeros).
inline CsrMatrix empty_matrix(std::int64_t nrows, std::int64_t ncols) {
  CsrMatrix a;
  a.nrows = nrows;
  a.ncols = ncols;
  a.row_ptr.assign(static_cast<std::size_t>(nrows + 1), 0);
  return a;
}

/// Row `row` of an nrows x n matrix holds every column (values k%period+1); every other row is
/// empty.
inline CsrMatrix one_full_row(std::int64_t n, std::int64_t row, std::int64_t nrows,
                              int period = 7) {
  CsrMatrix a = empty_matrix(nrows, n);
  a.col_idx.reserve(static_cast<std::size_t>(n));
  a.values.reserve(static_cast<std::size_t>(n));
  for (std::int64_t c = 0; c < n; ++c) {
    a.col_idx.push_back(static_cast<std::int32_t>(c));
    a.values.push_back(static_cast<double>(c % period + 1));
  }
  for (std::int64_t r = row + 1; r <= nrows; ++r) a.row_ptr[static_cast<std::size_t>(r)] = n;
  return a;
}
inline CsrMatrix one_full_row(std::int64_t n, std::int64_t row) { return one_full_row(n, row, n); }

/// A tridiagonal n x n matrix whose values include explicit zeros, and, when `special`, NaN and
/// infinities in a few rows.
inline CsrMatrix tridiagonal(std::int64_t n, bool special) {
  CsrMatrix a = empty_matrix(n, n);
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t c = std::max<std::int64_t>(r - 1, 0); c <= std::min(r + 1, n - 1); ++c) {
      a.col_idx.push_back(static_cast<std::int32_t>(c));
      a.values.push_back(c == r ? 0.0 : (c < r ? -1.5 : 2.25));  // zeros on the diagonal
    }
    a.row_ptr[static_cast<std::size_t>(r + 1)] = static_cast<std::int64_t>(a.col_idx.size());
  }
  if (special && n > 10) {
    a.values[4] = std::numeric_limits<double>::quiet_NaN();
    a.values[10] = std::numeric_limits<double>::infinity();
    a.values[20] = -std::numeric_limits<double>::infinity();
  }
  return a;
}

/// The largest edge: row 2049 of a 4096 x 10^7 matrix holds all 10^7 nonzeros (rows before and
/// after it are empty; 4096 rows span several slices, block rows and thread blocks of every
/// format, without the cost of 10^7 mostly empty rows in each format's per-row arrays).
/// About 120 MB as CSR. Its values are 1 and 2: with x all ones every partial sum of the row is
/// an integer below 2^24 (the row sums to 1.5 * 10^7), exact in fp32 whatever the order of the
/// additions, so every format's product can be compared exactly in both precisions.
constexpr std::int64_t kLongRow = 10'000'000;
inline CsrMatrix long_row_matrix() { return one_full_row(kLongRow, 2049, 4096, 2); }

/// Every edge matrix, named.
inline std::vector<std::pair<std::string, CsrMatrix>> edge_matrices() {
  CsrMatrix one = empty_matrix(1, 1);
  one.col_idx = {0};
  one.values = {3.5};
  one.row_ptr = {0, 1};
  return {{"0x0", empty_matrix(0, 0)},
          {"0x5", empty_matrix(0, 5)},
          {"5x0", empty_matrix(5, 0)},
          {"1x1", one},
          {"all rows empty", empty_matrix(300, 200)},
          {"one full first row", one_full_row(5000, 0)},
          {"one full last row", one_full_row(5000, 4999)},
          {"explicit zeros", tridiagonal(1000, false)},
          {"NaN and infinities", tridiagonal(1000, true)}};
}

/// y and ref agree where both are finite (relative to ref's norm) and are NaN / the same
/// infinity in the same rows.
inline bool same_product(const std::vector<double>& y, const std::vector<double>& ref,
                         double tolerance) {
  if (y.size() != ref.size()) return false;
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (std::isnan(ref[i]) || std::isinf(ref[i])) {
      if (std::isnan(ref[i]) ? !std::isnan(y[i]) : y[i] != ref[i]) return false;
      continue;
    }
    if (!std::isfinite(y[i])) return false;
    diff += (y[i] - ref[i]) * (y[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(diff) <= tolerance * std::max(std::sqrt(norm), 1.0);
}

}  // namespace spmvc::test
