#include "spmvc/compiler/device_values.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "codegen/codegen.hpp"

namespace spmvc::codegen {

std::vector<std::uint64_t> patterns_from_slots(const std::vector<std::uint64_t>& slots,
                                               bool all_ones) {
  constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  std::vector<std::uint64_t> out;
  for (const std::uint64_t s : slots)
    if (s != kEmpty) out.push_back(s);
  if (all_ones) out.push_back(kEmpty);
  std::sort(out.begin(), out.end());
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
{}(const void* __restrict__ values, int value_bytes, long long nnz,
    const unsigned long long* __restrict__ table, int n, unsigned short* __restrict__ codes,
    unsigned long long* __restrict__ out) {{
  dv::value_code16(values, value_bytes, nnz, table, n, codes, out);
}}
)",
      kValuesBlock, kValues16Cap, kValueSetSlots, kValueSetEntry, kValueCode16Entry);
  return k;
}

}  // namespace spmvc::codegen
