// Helpers shared by the test executables.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "spmvc/kernel.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/options.hpp"

namespace spmvc::test {

/// An encoded array's elements as T (T as wide as the array's element type).
template <typename T>
std::vector<T> array_as(const EncodedArray& arr) {
  std::vector<T> out(static_cast<std::size_t>(arr.count()));
  std::memcpy(out.data(), arr.bytes.data(), arr.bytes.size());
  return out;
}

/// The formats' small hand-checked matrix, 4 x 4 with an empty row:
///   [ 1 0 2 0 ]
///   [ 0 0 0 0 ]
///   [ 3 4 0 5 ]
///   [ 0 0 0 6 ]
inline CsrMatrix small_4x4() {
  CsrMatrix a;
  a.nrows = 4;
  a.ncols = 4;
  a.row_ptr = {0, 2, 2, 5, 6};
  a.col_idx = {0, 2, 0, 1, 3, 3};
  a.values = {1, 2, 3, 4, 5, 6};
  return a;
}

/// 1000 x 3000: row 0 dense, every third row empty, the rest sparse with lengths that vary.
inline CsrMatrix dense_row_rectangular() {
  CsrMatrix a;
  a.nrows = 1000;
  a.ncols = 3000;
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    if (r == 0) {
      for (int c = 0; c < 3000; ++c) {
        a.col_idx.push_back(c);
        a.values.push_back(1.0 / (c + 1));
      }
    } else if (r % 3 != 0) {
      for (std::int64_t c = r % 7; c < 3000; c += 97 + r % 13) {
        a.col_idx.push_back(static_cast<std::int32_t>(c));
        a.values.push_back(static_cast<double>(r - c) * 0.01);
      }
    }
    a.row_ptr.push_back(a.nnz());
  }
  return a;
}

/// Directory of small hand-written test inputs (tests/data).
inline std::filesystem::path data_dir() { return SPMVC_TEST_DATA; }

/// ../shared/matrices beside the project, or empty when absent (a user's clone has none).
inline std::filesystem::path shared_matrices() {
  std::filesystem::path p = SPMVC_SHARED_MATRICES;
  return std::filesystem::is_directory(p) ? p : std::filesystem::path{};
}

/// The public matrices (SPMVC_MATRIX_DIR, else shared_matrices()) with at least `min_nnz`
/// nonzeros after symmetric expansion (index.csv's full_nnz), complex ones left out, as
/// (name, path) in index order; empty when the matrices are absent.
inline std::vector<std::pair<std::string, std::filesystem::path>> public_matrices(
    std::int64_t min_nnz, std::int64_t max_nnz = std::numeric_limits<std::int64_t>::max()) {
  std::filesystem::path dir = shared_matrices();
  if (const char* env = std::getenv("SPMVC_MATRIX_DIR")) dir = env;
  std::vector<std::pair<std::string, std::filesystem::path>> out;
  if (dir.empty() || !std::filesystem::exists(dir / "index.csv")) return out;
  std::ifstream index(dir / "index.csv");
  std::string line;
  std::getline(index, line);  // header
  while (std::getline(index, line)) {
    std::stringstream ss(line);
    std::vector<std::string> f;
    for (std::string cell; std::getline(ss, cell, ',') && f.size() < 7;) f.push_back(cell);
    if (f.size() < 7 || f[6] == "complex") continue;
    const std::int64_t nnz = std::stoll(f[5]);
    if (nnz < min_nnz || nnz > max_nnz) continue;
    const std::filesystem::path file = dir / (f[0] + ".mtx.xz");
    if (std::filesystem::exists(file)) out.emplace_back(f[0], file);
  }
  return out;
}

/// A directory unique to this process and use, created empty and removed afterwards.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "tmp") {
    static std::atomic<int> counter{0};
    path_ =
        std::filesystem::temp_directory_path() /
        ("spmvc-test-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Sets (or unsets, with nullptr) an environment variable for one scope.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~EnvVar() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// Records that a GPU test found no device; test_main then exits 77 (skipped).
void mark_device_missing();
bool device_was_missing();

// `a` with `distinct` distinct values, 1 + (k % distinct) / 7 (distinct in fp32 too), and with
// `zeros` every 11th nonzero 0.0.
inline CsrMatrix with_distinct(CsrMatrix a, std::int64_t distinct, bool zeros) {
  for (std::size_t k = 0; k < a.values.size(); ++k)
    a.values[k] = zeros && k % 11 == 0
                      ? 0.0
                      : 1.0 + static_cast<double>(static_cast<std::int64_t>(k) % distinct) / 7.0;
  return a;
}

// The bit pattern of `v` stored in `single` (fp32, zero-extended) or fp64 precision.
inline std::uint64_t stored_pattern(double v, bool single) {
  if (!single) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, 8);
    return bits;
  }
  const auto f = static_cast<float>(v);
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

/// n x n, rows of length 0..3 with runs of 300 empty rows and every 997th row 5000 long (longer
/// than any csr_stream tile); with `long_last_row` the last row is 1030 long, just over a 1024
/// tile. Values 0.5 + (k % 13) / 8.
inline CsrMatrix short_and_long_rows(std::int64_t n, bool long_last_row) {
  CsrMatrix a;
  a.nrows = n;
  a.ncols = n;
  for (std::int64_t r = 0; r < n; ++r) {
    std::int64_t len = r % 4;
    if (r % 997 == 5) len = 5000;
    if (r % 1500 < 300) len = 0;
    if (long_last_row && r == n - 1) len = 1030;
    for (std::int64_t j = 0; j < len; ++j)
      a.col_idx.push_back(static_cast<std::int32_t>((r + j * 3) % n));
    std::sort(a.col_idx.end() - len, a.col_idx.end());
    a.col_idx.erase(std::unique(a.col_idx.end() - len, a.col_idx.end()), a.col_idx.end());
    a.row_ptr.push_back(static_cast<std::int64_t>(a.col_idx.size()));
  }
  a.values.resize(a.col_idx.size());
  for (std::size_t i = 0; i < a.values.size(); ++i)
    a.values[i] = 0.5 + static_cast<double>(i % 13) * 0.125;
  validate(a);
  return a;
}

/// `r` as a directed graph that leaves parts of itself out: each entry's column moved down onto a
/// multiple of `read_every` (so that only that share of x is read) and, where `empty_every` > 0,
/// every row i with i % empty_every == empty_every - 1 emptied (a vertex with no out-edge).
inline CsrMatrix sparse_directed(const CsrMatrix& r, std::int32_t read_every, int empty_every) {
  std::vector<std::int64_t> ptr{0};
  std::vector<std::int32_t> cols;
  std::vector<double> vals;
  for (std::int64_t i = 0; i < r.nrows; ++i) {
    if (empty_every <= 0 || i % empty_every != empty_every - 1)
      for (std::int64_t k = r.row_ptr[i]; k < r.row_ptr[i + 1]; ++k) {
        cols.push_back(r.col_idx[k] - r.col_idx[k] % read_every);
        vals.push_back(r.values[k]);
      }
    ptr.push_back(static_cast<std::int64_t>(cols.size()));
  }
  return csr_from_arrays(r.nrows, r.ncols, ptr, cols, vals);
}

/// The hub order on the columns alone, as the planner takes it in the caller's order, with
/// `format` forced: dbg, the columns renumbered, the rows kept (hyb and csr_warp then read x in
/// two parts).
inline Options hub_order_columns(const char* format, Precision precision) {
  Options o;
  o.format = format;
  o.precision = precision;
  o.reorder = "dbg";
  o.renumber_columns = true;
  o.keep_row_order = true;
  return o;
}

/// 200000 x 200000: rows 0..99, 150000 and 199999 with 3 nonzeros, the others with 1. At hyb's
/// K = 1 the COO part holds 2 entries of each long row, 204 in all; in intervals of 32 the first
/// six reach 16 rows each, the seventh (entries 192..203) from row 96 to row 199999, past 2^16.
inline CsrMatrix rows_far_apart() {
  CsrMatrix a;
  a.nrows = 200000;
  a.ncols = 200000;
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    const int len = r < 100 || r == 150000 || r == 199999 ? 3 : 1;
    for (int j = 0; j < len; ++j) {
      a.col_idx.push_back(static_cast<std::int32_t>((r + 7 * j) % a.ncols));
      a.values.push_back(1.0 + static_cast<double>((r + j) % 5));
    }
    a.row_ptr.push_back(a.nnz());
  }
  return a;
}

// A DeviceCsr over host arrays (32-bit row offsets): what compile(DeviceCsr)'s planner reads is
// only the arrays' sizes and alignment, never their contents, so host memory stands in for the
// device's in CPU tests. Keep it alive while `view` is used.
struct HostDeviceCsr {
  std::vector<std::int32_t> row_ptr;
  std::vector<double> values;
  DeviceCsr view;
  explicit HostDeviceCsr(const CsrMatrix& a)
      : row_ptr(a.row_ptr.begin(), a.row_ptr.end()), values(a.values) {
    view = {a.nrows, a.ncols, a.nnz(), row_ptr.data(), a.col_idx.data(), values.data()};
  }
};

/// How many times `needle` occurs in `text`.
inline int occurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size()))
    ++n;
  return n;
}

}  // namespace spmvc::test
