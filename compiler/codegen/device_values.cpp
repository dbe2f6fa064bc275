#include "spmvc/compiler/device_values.hpp"

#include <array>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "codegen/codegen.hpp"

namespace spmvc::codegen {

std::vector<std::uint64_t> patterns_from_slots(const std::vector<std::uint64_t>& slots,
                                               bool all_ones) {
  constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  std::vector<std::uint64_t> out;
  for (const std::uint64_t s : slots)
    if (s != kEmpty) out.push_back(s);
  // Ascending by a least-significant-digit radix sort, a byte a pass (up to 65,536 patterns: a
  // few passes over a small array, where a comparison sort took milliseconds); a byte every
  // pattern shares orders nothing and is skipped.
  std::array<std::array<std::size_t, 256>, 8> counts{};
  for (const std::uint64_t v : out)
    for (int d = 0; d < 8; ++d) ++counts[d][(v >> (8 * d)) & 0xff];
  std::vector<std::uint64_t> next(out.size());
  for (int d = 0; d < 8 && !out.empty(); ++d) {
    std::array<std::size_t, 256>& c = counts[d];
    if (c[(out[0] >> (8 * d)) & 0xff] == out.size()) continue;
    std::size_t at = 0;
    for (std::size_t& n : c) at += std::exchange(n, at);
    for (const std::uint64_t v : out) next[c[(v >> (8 * d)) & 0xff]++] = v;
    out.swap(next);
  }
  if (all_ones) out.push_back(kEmpty);  // the largest pattern: the order holds
  return out;
}

double estimate_distinct(const std::vector<std::uint32_t>& registers) {
  // HyperLogLog (Flajolet, Fusy, Gandouet and Meunier, 2007): the registers' harmonic mean of
  // 2^rank, scaled by alpha_m m^2.
  const auto m = static_cast<double>(registers.size());
  if (registers.empty()) return 0.0;
  double sum = 0.0;
  std::size_t empty = 0;
  for (const std::uint32_t r : registers) {
    sum += std::ldexp(1.0, -static_cast<int>(r));
    if (r == 0) ++empty;
  }
  const double alpha = 0.7213 / (1.0 + 1.079 / m);
  const double raw = alpha * m * m / sum;
  if (raw <= 2.5 * m && empty > 0) return m * std::log(m / static_cast<double>(empty));
  return raw;
}

KernelSource device_values_source() {
  KernelSource k = device_unit(kValueCode16Entry, "device_values", kValuesBlock,
                               "16-bit value codes on the GPU from a CSR matrix in device memory.");
  k.source += fmt::format(
      R"(namespace dv = spmvc::device_values;
static_assert(dv::kBlock == {} && dv::kCap == {} && dv::kSlots == {},
              "block size, cap or slots differ from the host's");
static_assert(dv::kSketchRegisters == {} && dv::kSketchSample == {}ll,
              "the sketch's registers or sample differ from the host's");

extern "C" __global__ void __launch_bounds__(dv::kBlock)
{}(const void* __restrict__ values, int value_bytes, long long nnz, long long sample,
    unsigned* __restrict__ registers) {{
  dv::value_sketch(values, value_bytes, nnz, sample, registers);
}}

extern "C" __global__ void __launch_bounds__(dv::kBlock)
{}(const void* __restrict__ values, int value_bytes, long long nnz,
    unsigned long long* __restrict__ slots, unsigned long long* __restrict__ out) {{
  dv::value_set(values, value_bytes, nnz, slots, out);
}}

extern "C" __global__ void __launch_bounds__(dv::kBlock)
{}(const unsigned long long* __restrict__ slots, unsigned long long n,
    unsigned long long* __restrict__ out) {{
  dv::value_gather(slots, n, out);
}}

extern "C" __global__ void __launch_bounds__(dv::kBlock)
{}(const void* __restrict__ values, int value_bytes, long long nnz,
    const unsigned long long* __restrict__ table, int n, unsigned short* __restrict__ codes,
    unsigned long long* __restrict__ out) {{
  dv::value_code16(values, value_bytes, nnz, table, n, codes, out);
}}
)",
      kValuesBlock, kValues16Cap, kValueSetSlots, kValueSketchRegisters, kValueSketchSample,
      kValueSketchEntry, kValueSetEntry, kValueGatherEntry, kValueCode16Entry);
  return k;
}

}  // namespace spmvc::codegen
