// Opt-in mixed precision (Options::mixed_precision): how a stored value is rounded, and what
// that rounding bounds in y. The bf16 rounding is the kernels' own (templates/value_round.cuh),
// so the host's stored words, its error bound and a GPU update_values agree bit for bit.
#pragma once

#include <cstdint>
#include <span>

namespace spmvc {

/// A value `v` rounded to a narrower stored type.
struct RoundedValue {
  double stored = 0.0;          ///< the value the kernel reads, widened exactly to fp64
  double relative_error = 0.0;  ///< |stored - v| / |v|: 0 for v = 0, an infinity or a NaN
  bool overflow = false;        ///< v finite, stored an infinity
};

/// v rounded to fp32, to nearest (ties to even), as a static_cast<float> on the host and the
/// GPU rounds it; values past fp32's largest finite one but within half an ulp of it round to
/// it, the rest to an infinity.
RoundedValue round_to_f32(double v);
/// v rounded to fp32 (round_to_f32), then to bf16 (templates/value_round.cuh): what an fp32
/// operator's bf16 storage holds for an fp64 input value. The error is relative to v.
RoundedValue round_to_bf16(double v);
/// The fp32 value nearest `v` in bf16 (ties to even), widened back to fp32.
float bf16_round(float v);
/// The bf16 word (high 16 bits of the fp32 word) of bf16_round(v).
std::uint16_t bf16_word(float v);

/// What the inspector counts of a run of values in one pass (Profile's unit_values,
/// fp32_exact_values and the mixed-precision rounding fields): values equal to 1, values exact
/// in fp32, and the overflows and largest relative errors of round_to_f32 (over the values not
/// exact in fp32) and of round_to_bf16. In this unit so that the roundings inline into the loop.
struct ValueKinds {
  std::int64_t unit = 0, exact = 0, f32_overflow = 0, bf16_overflow = 0;
  double f32_error = 0.0, bf16_error = 0.0;
};
ValueKinds value_kinds(std::span<const double> values);

/// The bound on |y_i - (A x)_i| / (|A||x|)_i for y = alpha A x with alpha = 1 (beta = 0), when
/// every stored value has relative error at most `value_error` and row i has `row_length`
/// nonzeros: value_error for the stored values, plus gamma(row_length + 1) (Higham's
/// gamma_n = n u / (1 - n u)) for the products and sums at `accumulate_unit` (in any order,
/// atomics included) and the scaling by alpha, plus `output_unit` for the rounding of the sum
/// to y's type (0 when y has the accumulator's type):
///   e + (1 + e) g + (1 + e)(1 + g) u_out.
/// Infinite when the row is too long for the bound to hold (n u >= 1).
double y_error_bound(double value_error, std::int64_t row_length, double accumulate_unit,
                     double output_unit);

}  // namespace spmvc
