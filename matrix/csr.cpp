#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "decompress.hpp"
#include "spmvc/error.hpp"
#include "spmvc/matrix.hpp"

namespace spmvc {

namespace {

constexpr std::int64_t kMaxCols = std::numeric_limits<std::int32_t>::max();
const std::string kArraysSource = "<arrays>";

// Rows shorter than this are sorted by insertion sort in place: typical sparse rows are a few
// dozen entries, where insertion sort beats a general sort and needs no scratch buffer.
constexpr std::int64_t kInsertionSortMaxRow = 32;

void check_shape(std::int64_t nrows, std::int64_t ncols, const std::string& source) {
  if (nrows < 0) throw InputError(source, 0, fmt::format("nrows = {} is negative", nrows));
  if (ncols < 0) throw InputError(source, 0, fmt::format("ncols = {} is negative", ncols));
  if (ncols > kMaxCols) {
    throw InputError(source, 0,
                     fmt::format("ncols = {} exceeds 2^31-1: column indices are 32-bit", ncols));
  }
}

template <typename Offset>
CsrMatrix from_arrays(std::int64_t nrows, std::int64_t ncols, std::span<const Offset> row_ptr,
                      std::span<const std::int32_t> col_idx, std::span<const double> values) {
  const std::string& src = kArraysSource;
  check_shape(nrows, ncols, src);
  // Compared as size - 1: nrows + 1 overflows for nrows = 2^63-1.
  if (row_ptr.empty() || static_cast<std::int64_t>(row_ptr.size() - 1) != nrows) {
    throw InputError(src, 0,
                     fmt::format("row_ptr has {} entries, expected nrows+1 = {}", row_ptr.size(),
                                 static_cast<std::uint64_t>(nrows) + 1));
  }
  if (row_ptr[0] != 0) {
    throw InputError(src, 0, fmt::format("row_ptr[0] = {}, expected 0", row_ptr[0]));
  }
  for (std::int64_t i = 1; i <= nrows; ++i) {
    if (row_ptr[i] < row_ptr[i - 1]) {
      throw InputError(src, 0,
                       fmt::format("row_ptr[{}] = {} is less than row_ptr[{}] = {} (offsets must "
                                   "be non-decreasing)",
                                   i, row_ptr[i], i - 1, row_ptr[i - 1]));
    }
  }
  const auto last = static_cast<std::int64_t>(row_ptr[nrows]);
  if (last != static_cast<std::int64_t>(col_idx.size())) {
    throw InputError(src, 0,
                     fmt::format("row_ptr[nrows] = row_ptr[{}] = {} but col_idx has {} entries",
                                 nrows, last, col_idx.size()));
  }
  if (values.size() != col_idx.size()) {
    throw InputError(
        src, 0,
        fmt::format("values has {} entries but col_idx has {}", values.size(), col_idx.size()));
  }
  for (std::int64_t r = 0; r < nrows; ++r) {
    for (auto k = static_cast<std::int64_t>(row_ptr[r]);
         k < static_cast<std::int64_t>(row_ptr[r + 1]); ++k) {
      if (col_idx[k] < 0 || col_idx[k] >= ncols) {
        throw InputError(src, 0,
                         fmt::format("col_idx[{}] = {} (row {}) is out of range [0, {})", k,
                                     col_idx[k], r, ncols));
      }
    }
  }

  CsrMatrix a;
  a.nrows = nrows;
  a.ncols = ncols;
  a.row_ptr.assign(row_ptr.begin(), row_ptr.end());
  a.col_idx.assign(col_idx.begin(), col_idx.end());
  a.values.assign(values.begin(), values.end());
  detail::sort_rows_sum_duplicates(a, src, 0);
  return a;
}

}  // namespace

void validate(const CsrMatrix& a, const std::string& source) {
  check_shape(a.nrows, a.ncols, source);
  if (static_cast<std::int64_t>(a.row_ptr.size()) != a.nrows + 1) {
    throw InputError(source, 0,
                     fmt::format("row_ptr has {} entries, expected nrows+1 = {}", a.row_ptr.size(),
                                 a.nrows + 1));
  }
  if (a.row_ptr[0] != 0) {
    throw InputError(source, 0, fmt::format("row_ptr[0] = {}, expected 0", a.row_ptr[0]));
  }
  if (a.values.size() != a.col_idx.size()) {
    throw InputError(
        source, 0,
        fmt::format("values has {} entries but col_idx has {}", a.values.size(), a.col_idx.size()));
  }
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    if (a.row_ptr[r + 1] < a.row_ptr[r]) {
      throw InputError(source, 0,
                       fmt::format("row_ptr[{}] = {} is less than row_ptr[{}] = {}", r + 1,
                                   a.row_ptr[r + 1], r, a.row_ptr[r]));
    }
  }
  if (a.row_ptr[a.nrows] != a.nnz()) {
    throw InputError(source, 0,
                     fmt::format("row_ptr[{}] = {} but there are {} nonzeros", a.nrows,
                                 a.row_ptr[a.nrows], a.nnz()));
  }
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      const std::int32_t c = a.col_idx[k];
      if (c < 0 || c >= a.ncols) {
        throw InputError(
            source, 0,
            fmt::format("col_idx[{}] = {} (row {}) is out of range [0, {})", k, c, r, a.ncols));
      }
      if (k > a.row_ptr[r] && c <= a.col_idx[k - 1]) {
        throw InputError(source, 0,
                         fmt::format("row {}: col_idx[{}] = {} does not follow col_idx[{}] = {} "
                                     "(columns must be strictly increasing within a row)",
                                     r, k, c, k - 1, a.col_idx[k - 1]));
      }
    }
  }
}

CsrMatrix csr_from_arrays(std::int64_t nrows, std::int64_t ncols,
                          std::span<const std::int64_t> row_ptr,
                          std::span<const std::int32_t> col_idx, std::span<const double> values) {
  return from_arrays<std::int64_t>(nrows, ncols, row_ptr, col_idx, values);
}

CsrMatrix csr_from_arrays(std::int64_t nrows, std::int64_t ncols,
                          std::span<const std::int32_t> row_ptr,
                          std::span<const std::int32_t> col_idx, std::span<const double> values) {
  return from_arrays<std::int32_t>(nrows, ncols, row_ptr, col_idx, values);
}

namespace detail {

std::int64_t sort_rows_sum_duplicates(CsrMatrix& a, const std::string& source, int index_base) {
  std::int32_t* col = a.col_idx.data();
  double* val = a.values.data();
  std::vector<std::pair<std::int32_t, double>> scratch;
  std::int64_t write = 0;
  std::int64_t merged = 0;
  std::int64_t row_begin = 0;  // row_ptr[r] before it is overwritten with the compacted offset
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    const std::int64_t begin = row_begin;
    const std::int64_t end = a.row_ptr[r + 1];
    row_begin = end;
    bool sorted = true;
    for (std::int64_t k = begin + 1; k < end; ++k) {
      if (col[k] <= col[k - 1]) {
        sorted = false;
        break;
      }
    }
    if (!sorted) {
      if (end - begin <= kInsertionSortMaxRow) {
        for (std::int64_t k = begin + 1; k < end; ++k) {
          const std::int32_t c = col[k];
          const double v = val[k];
          std::int64_t j = k;
          for (; j > begin && col[j - 1] > c; --j) {
            col[j] = col[j - 1];
            val[j] = val[j - 1];
          }
          col[j] = c;
          val[j] = v;
        }
      } else {
        scratch.clear();
        for (std::int64_t k = begin; k < end; ++k) scratch.emplace_back(col[k], val[k]);
        std::stable_sort(scratch.begin(), scratch.end(),
                         [](const auto& x, const auto& y) { return x.first < y.first; });
        for (std::int64_t k = begin; k < end; ++k) {
          col[k] = scratch[k - begin].first;
          val[k] = scratch[k - begin].second;
        }
      }
    }
    const std::int64_t row_start = write;
    for (std::int64_t k = begin; k < end; ++k) {
      if (write > row_start && col[write - 1] == col[k]) {
        val[write - 1] += val[k];
        ++merged;
        // Every input value is finite (the reader rejects inf and nan), so an infinite sum is
        // an fp64 overflow of the duplicates: data that would otherwise be lost silently.
        if (!std::isfinite(val[write - 1])) {
          throw InputError(source, 0,
                           fmt::format("duplicate entries at row {}, column {} sum to {}: the sum "
                                       "of their values overflows fp64",
                                       r + index_base, col[k] + index_base, val[write - 1]));
        }
      } else {
        col[write] = col[k];
        val[write] = val[k];
        ++write;
      }
    }
    a.row_ptr[r + 1] = write;
  }
  if (merged > 0) {
    a.col_idx.resize(write);
    a.values.resize(write);
  }
  return merged;
}

}  // namespace detail

}  // namespace spmvc
