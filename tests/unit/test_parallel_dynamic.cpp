// reorder_detail::parallel_dynamic, which permute and the locality measures use: every item is
// handed out exactly once, in ranges of at most the grain, on any thread count, and a worker's
// exception reaches the caller.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "reorder_internal.hpp"

using spmvc::reorder_detail::parallel_dynamic;

TEST_CASE("parallel_dynamic hands out every item once, in ranges of at most the grain") {
  for (const std::int64_t n : {0, 1, 5, 4096, 10007}) {
    for (const std::int64_t grain : {1, 7, 128}) {
      for (const int threads : {1, 2, 5}) {
        CAPTURE(n);
        CAPTURE(grain);
        CAPTURE(threads);
        std::vector<std::atomic<int>> taken(static_cast<std::size_t>(n));
        std::atomic<int> bad_ranges{0}, workers{0};
        parallel_dynamic(n, threads, grain, [&](const auto& take) {
          ++workers;
          std::int64_t begin = 0, end = 0;
          while (take(begin, end)) {
            if (begin < 0 || end > n || end <= begin || end - begin > grain) ++bad_ranges;
            for (std::int64_t i = begin; i < end; ++i) ++taken[static_cast<std::size_t>(i)];
          }
        });
        CHECK(bad_ranges == 0);
        // One worker per thread at most, and never more than there are ranges.
        CHECK(workers >= 1);
        CHECK(workers <= threads);
        CHECK(workers <= std::max<std::int64_t>(1, (n + grain - 1) / grain));
        int wrong = 0;
        for (const auto& t : taken) wrong += t != 1;
        CHECK(wrong == 0);
      }
    }
  }
}

TEST_CASE("parallel_dynamic rethrows a worker's exception") {
  CHECK_THROWS_AS(parallel_dynamic(1000, 4, 10,
                                   [](const auto& take) {
                                     std::int64_t begin = 0, end = 0;
                                     while (take(begin, end)) {
                                       if (begin <= 500 && 500 < end)
                                         throw std::runtime_error("item 500");
                                     }
                                   }),
                  std::runtime_error);
}
