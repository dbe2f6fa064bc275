// The deterministic input vector `spmvc run`, `spmvc bench` and the emitted harness all use, so
// their results can be compared bit for bit. Never zero (zeros hide unwritten outputs): values lie
// in [0.5, 1.5). The emitted harness repeats this formula in CUDA C++ (emit.cpp).
#pragma once

#include <cstdint>
#include <vector>

namespace spmvc::codegen {

inline double test_vector_value(std::uint64_t i) {
  const std::uint64_t h = (i * 0x9E3779B97F4A7C15ull) >> 40;  // 24 well-mixed bits
  return 0.5 + static_cast<double>(h) / 16777216.0;
}

inline std::vector<double> test_vector(std::int64_t n) {
  std::vector<double> x(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = test_vector_value(i);
  return x;
}

}  // namespace spmvc::codegen
