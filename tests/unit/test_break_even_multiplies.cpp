// bench/support's break-even count: the least N at which spmvc's one-time cost plus N
// multiplies is no more than the baseline's, 0 when spmvc is cheaper up front, never when its
// multiply is no faster; bad costs are named.
#include <doctest/doctest.h>

#include <limits>

#include "spmvc/bench/break_even.hpp"
#include "spmvc/error.hpp"

using spmvc::bench::break_even_multiplies;
using spmvc::bench::describe_break_even;
using spmvc::bench::SetupCost;

TEST_CASE("break-even multiplies") {
  // (Units exact in binary.) 40 vs 10 up front, 1 vs 2 a multiply: 30 to make up at 1 each,
  // equal at 30.
  CHECK(break_even_multiplies({40, 1}, {10, 2}) == 30);
  // 30.5 to make up at 1: 31 (30 leaves ours 0.5 behind).
  CHECK(break_even_multiplies({40.5, 1}, {10, 2}) == 31);
  CHECK(break_even_multiplies({5, 3}, {10, 2}) == 0);
  CHECK(break_even_multiplies({20, 2}, {10, 2}) == std::nullopt);
  CHECK(break_even_multiplies({20, 3}, {10, 2}) == std::nullopt);
  CHECK(describe_break_even({20, 3}, {10, 2}) == "never");
  CHECK(describe_break_even({40, 1}, {10, 2}) == "30");
  // The answer holds and one fewer does not, for awkward ratios.
  for (int k = 1; k < 200; ++k) {
    const SetupCost ours{0.1 + 1e-4 * k, 1e-3 / 3};
    const SetupCost base{0.01, 1e-3 / (1.0 + 0.01 * k)};
    const auto n = break_even_multiplies(ours, base);
    if (!n) {
      CHECK(base.per_multiply <= ours.per_multiply);
      continue;
    }
    const auto cost = [](const SetupCost& c, std::int64_t m) {
      return c.once + static_cast<double>(m) * c.per_multiply;
    };
    CHECK(cost(ours, *n) <= cost(base, *n));
    CHECK(cost(ours, *n - 1) > cost(base, *n - 1));
  }
}

TEST_CASE("break-even: bad costs are input errors naming the side") {
  CHECK_THROWS_WITH_AS(break_even_multiplies({-1, 0.001}, {0, 0}),
                       doctest::Contains("our one-time cost is -1"), spmvc::InputError);
  CHECK_THROWS_WITH_AS(
      break_even_multiplies({0, 0.001}, {0, std::numeric_limits<double>::quiet_NaN()}),
      doctest::Contains("the baseline's multiply time"), spmvc::InputError);
}
