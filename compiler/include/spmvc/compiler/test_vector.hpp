// The deterministic input vector `spmvc run`, `spmvc bench` and the emitted harness all use, so
// their results can be compared bit for bit. Never zero (zeros hide unwritten outputs): values lie
// in [0.5, 1.5). The emitted harness repeats this formula in CUDA C++ (emit.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "spmvc/plan.hpp"

namespace spmvc::codegen {

inline double test_vector_value(std::uint64_t i) {
  const std::uint64_t h = (i * 0x9E3779B97F4A7C15ull) >> 40;  // 24 well-mixed bits
  return 0.5 + static_cast<double>(h) / 16777216.0;
}

/// The test vector as a plan of precision `p` sees it: fp32 plans get the values rounded to
/// float, so a host reference over them measures only the kernel's arithmetic.
inline std::vector<double> test_vector(std::int64_t n, Precision p = Precision::f64) {
  std::vector<double> x(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = test_vector_value(i);
    x[i] = p == Precision::f64 ? v : static_cast<double>(static_cast<float>(v));
  }
  return x;
}

}  // namespace spmvc::codegen
