// When a one-time cost pays for itself: the number of multiplies after which spmvc (one-time
// cost plus N multiplies) is no slower than a baseline (its own one-time cost plus N of its
// multiplies).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace spmvc::bench {

/// One side's costs, in seconds: what it pays before the first multiply, and each multiply.
struct SetupCost {
  double once = 0;
  double per_multiply = 0;
};

/// The least N >= 0 with ours.once + N*ours.per_multiply <= base.once + N*base.per_multiply; 0
/// when ours is no dearer up front, nullopt when it never catches up (its multiply is no faster
/// and its setup dearer). InputError for a negative or non-finite cost.
std::optional<std::int64_t> break_even_multiplies(const SetupCost& ours, const SetupCost& base);

/// break_even_multiplies as text: "N", or "never".
std::string describe_break_even(const SetupCost& ours, const SetupCost& base);

}  // namespace spmvc::bench
