// Opt-in mixed precision on the device (Options::mixed_precision): every format with a value
// coding, fp64 operators storing fp32 values (bf16: test_mixed_bf16_gpu.cpp), on every public
// matrix with at least 10k nonzeros: y within the bound the plan states against the
// fp64 host reference, and, where the values are inexact in the narrower type, not bitwise the
// full-precision plan's y (so an ignored option fails). update_values on a rounded plan gives
// bitwise what a fresh compile of the new values gives (the GPU's rounding is the encoder's).
// Skipped without a GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "mixed_support.hpp"
#include "spmvc/generators.hpp"

using namespace spmvc;
using namespace spmvc::test::mixed;
using test::have_device;

TEST_CASE("gpu: mixed precision f32, every coded format on the public matrices") {
  if (!have_device()) return;
  public_matrices_in(Precision::f64, MixedPrecision::f32);
}

TEST_CASE("gpu: mixed precision update_values rounds as the encoder does") {
  if (!have_device()) return;
  // Inexact values, then new inexact values (each times 1 + (k mod 3) / 4 and shifted).
  CsrMatrix a = gen::random_uniform(20000, 20000, 12, 3);
  for (std::size_t k = 0; k < a.values.size(); ++k)
    a.values[k] = 1.0 + std::sin(0.37 * static_cast<double>(k)) / 3;
  CsrMatrix b = a;
  for (std::size_t k = 0; k < b.values.size(); ++k)
    b.values[k] = a.values[k] * (1.0 + static_cast<double>(k % 3) / 4) + 0.01;
  int tested = 0;
  for (const char* format : kCodedFormats) {
    for (const auto& [p, mode] : {std::pair{Precision::f64, MixedPrecision::f32},
                                  std::pair{Precision::f32, MixedPrecision::bf16}}) {
      CAPTURE(format);
      CAPTURE(to_string(p));
      std::optional<Operator> op;
      try {
        op.emplace(compile(a, mixed_options(format, p, mode)));
      } catch (const InputError&) {
        continue;
      }
      const FormatParams params = op->plan().params;
      CAPTURE(describe(params));
      REQUIRE(formats::is_rounded_coding(formats::value_coding_of(params)));
      // From host values: no re-plan, and what a fresh compile of b gives.
      const ValueUpdate u = op->update_values(b.values);
      CHECK_FALSE(u.replanned);
      Options again = test::forced(p, params);
      again.mixed_precision = mode;
      const Operator fresh = compile(b, again);
      const std::vector<double> want = product(b, fresh);
      const std::vector<double> got = product(b, *op);
      const bool atomics = std::string(format) == "hyb" || std::string(format) == "bro_coo" ||
                           std::string(format) == "bro_hyb";
      if (atomics) {
        // Atomics may add in another order: within the bound, as the fresh compile is.
        check_within_bound(b, *op);
      } else {
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(double)) == 0);
      }
      // From device values (the precision's type): the GPU's rounding gather.
      const std::size_t vb = p == Precision::f64 ? 8 : 4;
      std::vector<unsigned char> bytes(b.values.size() * vb);
      if (p == Precision::f64) {
        std::memcpy(bytes.data(), b.values.data(), bytes.size());
      } else {
        const std::vector<float> f(b.values.begin(), b.values.end());
        std::memcpy(bytes.data(), f.data(), bytes.size());
      }
      op->update_values(a.values);  // back to the old values first
      const DeviceBytes d(bytes);
      CHECK_FALSE(op->update_values(d.get()).replanned);
      const std::vector<double> from_device = product(b, *op);
      if (atomics) {
        check_within_bound(b, *op);
      } else {
        CHECK(std::memcmp(from_device.data(), want.data(), want.size() * sizeof(double)) == 0);
      }
      ++tested;
    }
  }
  CHECK(tested >= 12);
}
