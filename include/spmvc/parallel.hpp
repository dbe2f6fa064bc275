// Host threads for the one-time work of compile(): inspecting the matrix and encoding it.
//
// Every loop here cuts its index range into contiguous ranges, one thread each. Results never
// depend on the cut: callers either write only what their range owns, or keep one partial result
// per range and merge the partials in range order with an operation whose result does not depend
// on where the cuts fall (integer sums, maxima, set unions). So 1 thread and N threads give the
// same bytes, which tests/unit/test_parallel_host.cpp checks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>
#include <type_traits>
#include <vector>

#include "spmvc/matrix.hpp"

namespace spmvc {

/// How many threads the host-side loops use, and whether small ranges are split at all.
struct HostParallelism {
  /// 0: $SPMVC_THREADS when it is a positive integer, else std::thread::hardware_concurrency().
  int threads = 0;
  /// Cut ranges however small (down to one item per thread). Normally a loop with fewer items
  /// than its grain per thread stays on one thread, where starting threads would cost more than
  /// the loop; tests set this to run the merging code on tiny matrices.
  bool split_small = false;
};

/// Overrides the process-wide setting (thread-safe; takes effect for loops started later).
/// HostParallelism{} restores the default.
void set_host_parallelism(const HostParallelism& parallelism);
/// The current setting, with threads resolved (>= 1).
HostParallelism host_parallelism();
/// Shorthand for host_parallelism().threads.
int host_threads();

/// Contiguous ranges [begin, end) that cover [0, n) in order.
struct Range {
  std::int64_t begin = 0, end = 0;
};

/// [0, n) cut into at most host_threads() ranges of at least `grain` items each (one range when
/// n < 2·grain), of about equal size.
std::vector<Range> split_range(std::int64_t n, std::int64_t grain);

/// Rows of `a` cut into at most host_threads() ranges of about equal work, counting a row as
/// its nonzeros plus one, so one long row does not leave the other threads idle; at least
/// `grain` work units per range. A row is never split: a row longer than a range's share makes
/// its range longer.
std::vector<Range> split_rows(const CsrMatrix& a, std::int64_t grain);

/// Runs fn(range_index, begin, end) for every range, one thread per range (the caller's thread
/// takes the first). Once all finish, the exception of the first range (in range order) that
/// threw is rethrown: a loop that throws at its first bad item throws what one thread would.
template <typename Fn>
void run_ranges(const std::vector<Range>& ranges, Fn&& fn) {
  if (ranges.empty()) return;
  if (ranges.size() == 1) {
    fn(std::size_t{0}, ranges[0].begin, ranges[0].end);
    return;
  }
  std::vector<std::exception_ptr> errors(ranges.size());
  auto run = [&](std::size_t p) {
    try {
      fn(p, ranges[p].begin, ranges[p].end);
    } catch (...) {
      errors[p] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(ranges.size() - 1);
  for (std::size_t p = 1; p < ranges.size(); ++p) threads.emplace_back(run, p);
  run(0);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

/// Runs fn(begin, end) over [0, n) cut by split_range(n, grain). fn must only write what its
/// range owns.
template <typename Fn>
void parallel_for(std::int64_t n, std::int64_t grain, Fn&& fn) {
  run_ranges(split_range(n, grain),
             [&](std::size_t, std::int64_t begin, std::int64_t end) { fn(begin, end); });
}

/// One partial result per range: out[i] = fn(ranges[i].begin, ranges[i].end), in range order,
/// for the caller to merge.
template <typename Fn>
auto map_ranges(const std::vector<Range>& ranges, Fn&& fn)
    -> std::vector<std::invoke_result_t<Fn&, std::int64_t, std::int64_t>> {
  std::vector<std::invoke_result_t<Fn&, std::int64_t, std::int64_t>> out(ranges.size());
  run_ranges(ranges,
             [&](std::size_t p, std::int64_t begin, std::int64_t end) { out[p] = fn(begin, end); });
  return out;
}

/// The number of i in [0, n) with pred(i), counted in parallel.
template <typename Pred>
std::int64_t parallel_count(std::int64_t n, std::int64_t grain, Pred&& pred) {
  std::int64_t total = 0;
  for (const std::int64_t c :
       map_ranges(split_range(n, grain), [&](std::int64_t b, std::int64_t e) {
         std::int64_t k = 0;
         for (std::int64_t i = b; i < e; ++i) k += pred(i) ? 1 : 0;
         return k;
       }))
    total += c;
  return total;
}

}  // namespace spmvc
