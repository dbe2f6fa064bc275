// csr_from_arrays on arbitrary arrays. The input is read as: a flags byte (bit 0: 32-bit row
// offsets, else 64-bit; bit 1: nrows and ncols taken as raw 64-bit integers, else as small
// counts), nrows, ncols, nnz, then the offsets, column indices and values, each as many as the
// bytes left allow (the sizes need not agree: that is part of what is checked). A result must be
// valid and equal a plain reference: entries grouped by row, columns sorted, duplicates summed in
// input order.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <vector>

#include "fuzz_support.hpp"
#include "spmvc/error.hpp"
#include "spmvc/matrix.hpp"

using namespace spmvc;

namespace {

class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  template <typename T>
  T take() {
    T v{};
    const std::size_t n = std::min(sizeof v, size_ - pos_);
    std::memcpy(&v, data_ + pos_, n);
    pos_ += n;
    return v;
  }
  std::size_t left() const { return size_ - pos_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

template <typename Offset>
void check(std::int64_t nrows, std::int64_t ncols, const std::vector<Offset>& row_ptr,
           const std::vector<std::int32_t>& cols, const std::vector<double>& vals) {
  CsrMatrix a;
  try {
    a = csr_from_arrays(nrows, ncols, std::span<const Offset>(row_ptr),
                        std::span<const std::int32_t>(cols), std::span<const double>(vals));
  } catch (const InputError&) {
    return;
  }
  validate(a, "fuzz");
  // The reference: the arrays were accepted, so they are consistent.
  std::vector<std::map<std::int32_t, double>> rows(static_cast<std::size_t>(nrows));
  for (std::int64_t r = 0; r < nrows; ++r) {
    for (auto k = static_cast<std::int64_t>(row_ptr[r]);
         k < static_cast<std::int64_t>(row_ptr[r + 1]); ++k) {
      auto [it, fresh] = rows[r].try_emplace(cols[k], vals[k]);
      if (!fresh) it->second += vals[k];
    }
  }
  std::int64_t k = 0;
  for (std::int64_t r = 0; r < nrows; ++r) {
    if (a.row_ptr[r] != k) fuzz::finding("row offsets differ from the reference");
    for (const auto& [c, v] : rows[r]) {
      if (a.col_idx[k] != c || !fuzz::same_value(a.values[k], v)) {
        fuzz::finding("entries differ from the reference");
      }
      ++k;
    }
  }
  if (a.nnz() != k) fuzz::finding("nonzero count differs from the reference");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::set_budget();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader in(data, size);
  const auto flags = in.take<std::uint8_t>();
  std::int64_t nrows, ncols;
  if (flags & 2) {
    nrows = in.take<std::int64_t>();
    ncols = in.take<std::int64_t>();
  } else {
    nrows = in.take<std::uint8_t>();
    ncols = in.take<std::uint8_t>();
  }
  const std::size_t nnz = in.take<std::uint8_t>();
  // Offsets: nrows+1 of them when the bytes allow (a count that does not fit is an error case
  // too), each a running sum of small steps so that valid arrays are common.
  const std::size_t want_offsets =
      nrows >= 0 && nrows < 4096 ? static_cast<std::size_t>(nrows) + 1 : 1;
  std::vector<std::int64_t> offsets;
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < want_offsets && in.left() > 0; ++i) {
    const auto step = in.take<std::uint8_t>();
    // 0xff: a raw offset (negative, huge or decreasing).
    sum =
        step == 0xff
            ? in.take<std::int64_t>()
            : (i == 0 ? 0 : static_cast<std::int64_t>(static_cast<std::uint64_t>(sum) + step % 4));
    offsets.push_back(sum);
  }
  std::vector<std::int32_t> cols;
  std::vector<double> vals;
  for (std::size_t k = 0; k < nnz && in.left() > 0; ++k) {
    const auto c = in.take<std::uint8_t>();
    cols.push_back(c == 0xff ? in.take<std::int32_t>() : c % 16);
  }
  for (std::size_t k = 0; k < nnz && in.left() > 0; ++k) {
    const auto v = in.take<std::uint8_t>();
    // 0xff: raw bits (NaN, infinities, 1e308 that overflow when summed).
    vals.push_back(v == 0xff ? in.take<double>() : static_cast<double>(v) - 100.0);
  }
  if (flags & 1) {
    std::vector<std::int32_t> narrow(offsets.begin(), offsets.end());
    check(nrows, ncols, narrow, cols, vals);
  } else {
    check(nrows, ncols, offsets, cols, vals);
  }
  return 0;
}
