#include "spmvc/compiler/device_values.hpp"

#include <array>
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

KernelSource device_values_source() {
  KernelSource k = device_unit(kValueCode16Entry, "device_values", kValuesBlock,
                               "16-bit value codes on the GPU from a CSR matrix in device memory.");
  k.source += fmt::format(
      R"(namespace dv = spmvc::device_values;
static_assert(dv::kBlock == {} && dv::kCap == {} && dv::kSlots == {},
              "block size, cap or slots differ from the host's");

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
      kValuesBlock, kValues16Cap, kValueSetSlots, kValueSetEntry, kValueGatherEntry,
      kValueCode16Entry);
  return k;
}

}  // namespace spmvc::codegen
