#include "spmvc/bench/break_even.hpp"

#include <cmath>

#include <fmt/format.h>

#include "spmvc/error.hpp"

namespace spmvc::bench {

namespace {
void check_cost(double v, const char* side, const char* what) {
  if (!std::isfinite(v) || v < 0)
    throw InputError("<break-even>", 0, fmt::format("{} {} is {} seconds", side, what, v));
}
}  // namespace

std::optional<std::int64_t> break_even_multiplies(const SetupCost& ours, const SetupCost& base) {
  check_cost(ours.once, "our", "one-time cost");
  check_cost(ours.per_multiply, "our", "multiply time");
  check_cost(base.once, "the baseline's", "one-time cost");
  check_cost(base.per_multiply, "the baseline's", "multiply time");
  if (ours.once <= base.once) return 0;
  const double gain = base.per_multiply - ours.per_multiply;
  if (gain <= 0) return std::nullopt;
  auto n = static_cast<std::int64_t>(std::ceil((ours.once - base.once) / gain));
  // ceil of a rounded quotient can land one either side: settle on the least N that holds.
  const auto holds = [&](std::int64_t k) {
    return ours.once + static_cast<double>(k) * ours.per_multiply <=
           base.once + static_cast<double>(k) * base.per_multiply;
  };
  while (n > 0 && holds(n - 1)) --n;
  while (!holds(n)) ++n;
  return n;
}

std::string describe_break_even(const SetupCost& ours, const SetupCost& base) {
  const auto n = break_even_multiplies(ours, base);
  return n ? fmt::format("{}", *n) : std::string("never");
}

}  // namespace spmvc::bench
