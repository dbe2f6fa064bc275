// Pieces shared by the orderings in reorder/: the pattern type the graph orderings consume, a
// small parallel loop, and the BRO delta bit width. Not installed; include/spmvc/reorder.hpp is
// the public face.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <exception>
#include <span>
#include <thread>
#include <vector>

#include "spmvc/kernel.hpp"  // DefaultInitAllocator
#include "spmvc/matrix.hpp"
#include "spmvc/reorder.hpp"

namespace spmvc::reorder_detail {

/// An index array whose resize(n) leaves the elements unwritten (DefaultInitAllocator): the
/// builders below write each one on their threads, so the pages are first touched there rather
/// than zeroed by one thread (for A + A^T of a 16M-nonzero graph, over 100 MB).
using IndexArray = std::vector<std::int32_t, DefaultInitAllocator<std::int32_t>>;

/// A square sparsity pattern in CSR (no values), columns sorted within rows.
struct Pattern {
  std::int64_t n = 0;
  std::vector<std::int64_t> ptr{0};
  IndexArray idx;
};

/// The graph of A + A^T without the diagonal, and whether A's pattern was already symmetric
/// (ignoring the diagonal). `a` must be square.
struct SymmetrisedPattern {
  Pattern graph;
  bool was_symmetric = true;
};
SymmetrisedPattern symmetrised_pattern(const CsrMatrix& a, int threads);

/// The graph orderings; each returns perm with "new i is old perm[i]".
/// rcm_ordering orders the connected components on up to `threads` threads; its result does not
/// depend on them.
std::vector<std::int32_t> rcm_ordering(const Pattern& g, int threads = 1);
std::vector<std::int32_t> amd_ordering(const Pattern& g);
std::vector<std::int32_t> metis_ordering(const Pattern& g);

/// Pichel et al.'s greedy chain over the rows of a (rows x ncols) pattern given as CSR arrays.
std::vector<std::int32_t> distance_chain(std::span<const std::int64_t> ptr,
                                         std::span<const std::int32_t> idx, std::int64_t ncols);
/// D_set: the chain over sets of `set_rows` consecutive rows, expanded back to rows.
std::vector<std::int32_t> distance_set_ordering(const CsrMatrix& a, int set_rows, int threads);

/// BRO-aware reordering (Algorithm 2 of the BRO paper), see bar_ordering.cpp.
std::vector<std::int32_t> bar_ordering(const CsrMatrix& a, const ReorderOptions& options);

/// The degree orderings (degree_orderings.cpp): vertices by decreasing column count, and in
/// groups of column count against the mean with the input order kept inside each group.
std::vector<std::int32_t> degree_ordering(const CsrMatrix& a);
/// dbg also sets `*hubs` (when given) to the vertices in its groups at or above the mean count,
/// which lead its order.
std::vector<std::int32_t> dbg_ordering(const CsrMatrix& a, std::int64_t* hubs = nullptr);

/// spmvc::bro_ell_index_bits of the matrix whose row i is row order[i] of `a` (`a` itself when
/// `order` is empty), without building it.
std::int64_t bro_ell_index_bits(const CsrMatrix& a, std::span<const std::int32_t> order,
                                std::int64_t slice_height, std::int64_t symbol_bits, int threads);

/// Bits BRO spends on a column delta d >= 0: its bit length, at least 1 (a zero delta, a first
/// column 0, still takes a bit).
inline int delta_bits(std::int64_t d) {
  return d <= 0 ? 1 : static_cast<int>(std::bit_width(static_cast<std::uint64_t>(d)));
}

/// `requested` threads, or the hardware's count when 0, never less than 1.
inline int worker_count(int requested) {
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

/// Rows below which a thread costs more than it saves (a thread start is tens of microseconds, a
/// row of a sparse matrix a few nanoseconds).
inline constexpr std::int64_t kMinRowsPerThread = 4096;

/// Calls fn(begin, end) on up to `threads` contiguous chunks of [0, n) in parallel, each of at
/// least `min_items` items (the calling thread takes the first chunk), and rethrows the first
/// exception. Chunks never depend on timing, so results written per index are deterministic.
template <class Fn>
void parallel_chunks(std::int64_t n, int threads, Fn&& fn,
                     std::int64_t min_items = kMinRowsPerThread) {
  const std::int64_t t =
      std::clamp<std::int64_t>(n / std::max<std::int64_t>(min_items, 1), 1, std::max(threads, 1));
  if (t <= 1) {
    fn(std::int64_t{0}, n);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(t));
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(t - 1));
  auto run = [&](std::int64_t k) {
    try {
      fn(n * k / t, n * (k + 1) / t);
    } catch (...) {
      errors[static_cast<std::size_t>(k)] = std::current_exception();
    }
  };
  for (std::int64_t k = 1; k < t; ++k) workers.emplace_back(run, k);
  run(0);
  for (auto& w : workers) w.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

/// Runs work(take) once on each of up to `threads` threads (the calling thread among them);
/// take(begin, end) hands out the next range of up to `grain` items of [0, n) and returns false
/// once none is left. For items of uneven cost (rows reordered by degree put the long ones
/// together): a thread that drew cheap ranges takes more. Which thread gets a range depends on
/// timing, so a caller writes results per index or combines them in an order-free way (sums).
template <class Work>
void parallel_dynamic(std::int64_t n, int threads, std::int64_t grain, Work&& work) {
  grain = std::max<std::int64_t>(grain, 1);
  std::atomic<std::int64_t> next{0};
  const auto take = [&](std::int64_t& begin, std::int64_t& end) {
    begin = next.fetch_add(grain);
    if (begin >= n) return false;
    end = std::min(n, begin + grain);
    return true;
  };
  const std::int64_t workers =
      std::clamp<std::int64_t>((n + grain - 1) / grain, 1, std::max(threads, 1));
  parallel_chunks(
      workers, static_cast<int>(workers), [&](std::int64_t, std::int64_t) { work(take); }, 1);
}

}  // namespace spmvc::reorder_detail
