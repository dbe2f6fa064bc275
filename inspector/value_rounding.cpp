#include "spmvc/value_rounding.hpp"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>

#include "spmvc/profile.hpp"
#include "value_round.cuh"

namespace spmvc {

namespace {

// The least magnitude fp32 rounds to an infinity: FLT_MAX plus half its ulp (2^104 at the top
// binade), where the tie goes to the even neighbour, the infinity.
constexpr double kF32Overflow = 0x1.ffffffp127;

double relative_error(double v, double stored) {
  if (v == 0.0 || std::isinf(v) || std::isnan(v)) return 0.0;
  return std::fabs(stored - v) / std::fabs(v);
}

[[gnu::always_inline]] inline float bf16_nearest(float v) {
  return std::bit_cast<float>(bf16_widen_bits(bf16_round_bits(std::bit_cast<std::uint32_t>(v))));
}

// The roundings, inlined where value_kinds calls them per value.
[[gnu::always_inline]] inline RoundedValue f32_of(double v) {
  RoundedValue r;
  if (std::isnan(v) || std::isinf(v)) {
    r.stored = v;
    return r;
  }
  if (std::fabs(v) >= kF32Overflow) {
    r.stored = std::copysign(std::numeric_limits<double>::infinity(), v);
    r.overflow = true;
    return r;
  }
  // Converting a finite double beyond FLT_MAX is undefined: those below kF32Overflow round to it.
  r.stored = std::fabs(v) > FLT_MAX ? std::copysign(static_cast<double>(FLT_MAX), v)
                                    : static_cast<double>(static_cast<float>(v));
  r.relative_error = relative_error(v, r.stored);
  return r;
}

// bf16's rounding of v from its fp32 rounding `r` (f32_of(v)).
[[gnu::always_inline]] inline RoundedValue bf16_from(double v, RoundedValue r) {
  if (r.overflow || std::isnan(v) || std::isinf(v)) return r;
  r.stored = static_cast<double>(bf16_nearest(static_cast<float>(r.stored)));
  r.overflow = std::isinf(r.stored);
  r.relative_error = r.overflow ? 0.0 : relative_error(v, r.stored);
  return r;
}

}  // namespace

RoundedValue round_to_f32(double v) { return f32_of(v); }

RoundedValue round_to_bf16(double v) { return bf16_from(v, f32_of(v)); }

float bf16_round(float v) { return bf16_nearest(v); }

std::uint16_t bf16_word(float v) { return bf16_round_bits(std::bit_cast<std::uint32_t>(v)); }

ValueKinds value_kinds(std::span<const double> values) {
  ValueKinds c;
  for (const double v : values) {
    c.unit += v == 1.0 ? 1 : 0;
    const bool exact = exact_in_fp32(v);
    c.exact += exact ? 1 : 0;
    const RoundedValue f32 = f32_of(v);  // bf16 rounds from it too
    if (!exact) {
      c.f32_overflow += f32.overflow ? 1 : 0;
      if (!f32.overflow) c.f32_error = std::max(c.f32_error, f32.relative_error);
    }
    const RoundedValue r = bf16_from(v, f32);
    c.bf16_overflow += r.overflow ? 1 : 0;
    if (!r.overflow) c.bf16_error = std::max(c.bf16_error, r.relative_error);
  }
  return c;
}

double y_error_bound(double value_error, std::int64_t row_length, double accumulate_unit,
                     double output_unit) {
  const double nu = static_cast<double>(row_length + 1) * accumulate_unit;
  if (nu >= 1.0) return std::numeric_limits<double>::infinity();
  const double gamma = nu / (1.0 - nu);
  const double e = value_error;
  return e + (1.0 + e) * gamma + (1.0 + e) * (1.0 + gamma) * output_unit;
}

}  // namespace spmvc
