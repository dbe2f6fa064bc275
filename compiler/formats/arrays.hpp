// Building blocks every format's encoder and host reference share: typed views of encoded
// arrays, one-pass conversion into an array's bytes, and the Bell–Garland ELL/COO split.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "spmvc/kernel.hpp"
#include "spmvc/profile.hpp"

namespace spmvc::formats {

/// Runs fn(begin, end) over [0, n) cut into one contiguous range per core (at least `grain`
/// items each): host-side encoding of large matrices. fn must only write what its range owns.
/// The first exception thrown in any range is rethrown here.
template <typename Fn>
void parallel_for(std::int64_t n, std::int64_t grain, Fn&& fn) {
  const std::int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  const std::int64_t parts = std::min(cores, (n + grain - 1) / std::max<std::int64_t>(grain, 1));
  if (parts <= 1) {
    fn(std::int64_t{0}, n);
    return;
  }
  std::exception_ptr error;
  std::mutex guard;
  std::vector<std::thread> threads;
  for (std::int64_t p = 0; p < parts; ++p) {
    threads.emplace_back([&, p] {
      try {
        fn(n * p / parts, n * (p + 1) / parts);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(guard);
        if (!error) error = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

/// An encoded array of `count` elements of Out: `src` converted element by element, then zeros.
template <typename Out, typename In>
EncodedArray make_array(std::string name, ElemType type, std::span<const In> src,
                        std::size_t count) {
  EncodedArray a{std::move(name), type, {}};
  a.bytes.resize(count * sizeof(Out));  // value-initialised: the padding is zero
  Out* out = reinterpret_cast<Out*>(a.bytes.data());
  for (std::size_t i = 0; i < src.size(); ++i) out[i] = static_cast<Out>(src[i]);
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

/// A zero-filled array of `count` elements of T, to be written element by element with
/// typed_mut().
template <typename T>
EncodedArray zero_array(std::string name, ElemType type, std::size_t count) {
  EncodedArray a{std::move(name), type, {}};
  a.bytes.resize(count * sizeof(T));
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
                                const std::vector<double>& values, std::size_t count) {
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
