// Building blocks every format's encoder and host reference share: typed views of encoded
// arrays, one-pass conversion into an array's bytes, and the Bell–Garland ELL/COO split.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spmvc/error.hpp"
#include "spmvc/kernel.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/parallel.hpp"
#include "spmvc/profile.hpp"

namespace spmvc::formats {

// Host threads for encoding: parallel_for, map_ranges and split_rows (spmvc/parallel.hpp).

/// Elements below which a copy or fill is not worth a thread (about 100 us of memory traffic).
inline constexpr std::int64_t kCopyGrain = std::int64_t{1} << 18;

/// Work units (nonzeros plus rows, split_rows) below which an encoder's row loop stays on one
/// thread.
inline constexpr std::int64_t kRowGrain = std::int64_t{1} << 16;

/// p[0, n) = value, on the host threads.
template <typename T>
void parallel_fill(T* p, std::int64_t n, T value) {
  parallel_for(n, kCopyGrain,
               [&](std::int64_t begin, std::int64_t end) { std::fill(p + begin, p + end, value); });
}

/// Where each row's entries past its first `skip` land when the rows' tails are listed one after
/// another (a COO part): offsets[r] for row r, offsets[nrows] the total. Two passes over row
/// ranges (count, then running sums from each range's start), so the same for any thread count.
inline std::vector<std::int64_t> tail_offsets(const CsrMatrix& a, std::int64_t skip) {
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(a.nrows) + 1, 0);
  const auto tail = [&](std::int64_t r) {
    return std::max<std::int64_t>(0, a.row_length(r) - skip);
  };
  const std::vector<Range> ranges = split_rows(a, kRowGrain);
  const std::vector<std::int64_t> sums = map_ranges(ranges, [&](std::int64_t r0, std::int64_t r1) {
    std::int64_t n = 0;
    for (std::int64_t r = r0; r < r1; ++r) n += tail(r);
    return n;
  });
  run_ranges(ranges, [&](std::size_t i, std::int64_t r0, std::int64_t r1) {
    std::int64_t at = 0;
    for (std::size_t j = 0; j < i; ++j) at += sums[j];
    for (std::int64_t r = r0; r < r1; ++r) {
      offsets[static_cast<std::size_t>(r)] = at;
      at += tail(r);
    }
  });
  for (const std::int64_t n : sums) offsets.back() += n;
  return offsets;
}

/// Whether `nnz` nonzeros need 64-bit row offsets (more than a 32-bit offset holds).
inline bool needs_offsets64(std::int64_t nnz) {
  return nnz > std::numeric_limits<std::int32_t>::max();
}

/// The row_ptr array of a CSR-like encoding: nrows+1 offsets as i64 when `offsets64`, else i32
/// (InternalError naming `format` when nnz needs 64 bits).
inline EncodedArray row_offsets_array(const CsrMatrix& a, bool offsets64, std::string_view format);

/// Calls fn.template operator()<Offset, Value>() with Offset = int64 or int32 (`offsets64`) and
/// Value = double or float (`precision`): the dispatch a CSR-like host reference needs.
template <typename Fn>
void with_offset_and_value(bool offsets64, Precision precision, Fn&& fn) {
  const bool f64 = precision == Precision::f64;
  if (offsets64) {
    f64 ? fn.template operator()<std::int64_t, double>()
        : fn.template operator()<std::int64_t, float>();
  } else {
    f64 ? fn.template operator()<std::int32_t, double>()
        : fn.template operator()<std::int32_t, float>();
  }
}

/// An encoded array of `count` elements of Out: `src` converted element by element, then zeros.
template <typename Out, typename In>
EncodedArray make_array(std::string name, ElemType type, std::span<const In> src,
                        std::size_t count) {
  EncodedArray a{std::move(name), type, {}};
  a.bytes.resize(count * sizeof(Out));  // unwritten (ByteBuffer): every element is set below
  Out* out = reinterpret_cast<Out*>(a.bytes.data());
  const In* in = src.data();
  const auto n = static_cast<std::int64_t>(std::min(src.size(), count));
  parallel_for(static_cast<std::int64_t>(count), kCopyGrain,
               [&](std::int64_t begin, std::int64_t end) {
                 const std::int64_t copy_end = std::clamp(end, begin, n);
                 for (std::int64_t i = begin; i < copy_end; ++i) out[i] = static_cast<Out>(in[i]);
                 std::fill(out + copy_end, out + end, Out{});  // the padding
               });
  return a;
}
template <typename Out, typename In>
EncodedArray make_array(std::string name, ElemType type, const std::vector<In>& src,
                        std::size_t count) {
  return make_array<Out, In>(std::move(name), type, std::span<const In>(src), count);
}
template <typename Out, typename In>
EncodedArray make_array(std::string name, ElemType type, const std::vector<In>& src) {
  return make_array<Out, In>(std::move(name), type, std::span<const In>(src), src.size());
}

/// A host vector whose elements start unwritten (DefaultInitAllocator), for scratch arrays an
/// encoder fills on the host threads.
template <typename T>
using HostVector = std::vector<T, DefaultInitAllocator<T>>;

/// `n` zeros, written on the host threads.
template <typename T>
HostVector<T> zeroed(std::size_t n) {
  HostVector<T> v(n);
  parallel_fill(v.data(), static_cast<std::int64_t>(n), T{});
  return v;
}

/// An array of `count` elements of T left unwritten, for a caller that writes every element
/// (with typed_mut()).
template <typename T>
EncodedArray uninitialized_array(std::string name, ElemType type, std::size_t count) {
  EncodedArray a{std::move(name), type, {}};
  a.bytes.resize(count * sizeof(T));
  return a;
}

inline EncodedArray row_offsets_array(const CsrMatrix& a, bool offsets64, std::string_view format) {
  const std::size_t rows = a.row_ptr.size();
  if (offsets64) return make_array<std::int64_t>("row_ptr", ElemType::i64, a.row_ptr, rows);
  if (needs_offsets64(a.nnz()))
    throw InternalError(std::string(format) + ": 32-bit offsets for a matrix that needs 64");
  return make_array<std::int32_t>("row_ptr", ElemType::i32, a.row_ptr, rows);
}

/// A zero-filled array of `count` elements of T, to be written element by element with
/// typed_mut().
template <typename T>
EncodedArray zero_array(std::string name, ElemType type, std::size_t count) {
  EncodedArray a{std::move(name), type, {}};
  a.bytes.resize(count * sizeof(T));  // unwritten (ByteBuffer): zeroed on the host threads
  std::byte* bytes = a.bytes.data();
  parallel_for(static_cast<std::int64_t>(a.bytes.size()), kCopyGrain * 8,
               [&](std::int64_t begin, std::int64_t end) {
                 std::fill(bytes + begin, bytes + end, std::byte{0});
               });
  return a;
}

template <typename T>
const T* typed(const EncodedArray& a) {
  return reinterpret_cast<const T*>(a.bytes.data());
}
template <typename T>
T* typed_mut(EncodedArray& a) {
  return reinterpret_cast<T*>(a.bytes.data());
}

/// The value array of `precision` (double for f64, float otherwise) from fp64 values.
inline EncodedArray value_array(std::string name, Precision precision,
                                std::span<const double> values, std::size_t count) {
  return precision == Precision::f64
             ? make_array<double>(std::move(name), ElemType::f64, values, count)
             : make_array<float>(std::move(name), ElemType::f32, values, count);
}

/// Bell & Garland's HYB split (cited by the BRO paper, section 2): the ELL width K is the
/// largest such that at least max(4096, nrows/3) rows have K or more nonzeros, so the ELL part
/// stays mostly full and the long-row tail goes to COO. Computed from the row-length histogram
/// (bins above 32 are ranges: K is then their lower end).
inline std::int64_t hyb_split_width(const Profile& profile) {
  const std::int64_t threshold = std::max<std::int64_t>(4096, profile.nrows / 3);
  // Rows with length >= bin.lo, scanning bins from the longest down.
  std::int64_t at_least = 0;
  for (auto it = profile.row_histogram.rbegin(); it != profile.row_histogram.rend(); ++it) {
    at_least += it->count;
    if (at_least >= threshold) return std::max<std::int64_t>(it->lo, 0);
  }
  // Fewer rows than the threshold in all: the whole matrix is small; ELL takes every row.
  return profile.row_max;
}

}  // namespace spmvc::formats
