// The host half of 16-bit value codes from device arrays: the table made from the GPU set's
// slots is the sorted distinct patterns (the all-ones pattern, a NaN, kept by its flag), the
// sketch of a sample estimates its distinct patterns (device_values.cuh's hash, on the host), and
// the planner offers 16-bit tables for csr, csr_stream, ell, hyb and the BRO formats from
// device arrays. The kernels run in tests/gpu/test_device_values_gpu.cpp (the BRO encoders' in
// tests/gpu/test_device_bro16_gpu.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "formats/values/values.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_values.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

#include "../../templates/device_values.cuh"

using namespace spmvc;

namespace {}  // namespace

TEST_CASE("device values: the table from the set's slots is the sorted distinct patterns") {
  constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  std::vector<std::uint64_t> slots(16, kEmpty);
  slots[3] = 42;
  slots[9] = 7;
  slots[10] = 0x4000000000000000ull;
  CHECK(codegen::patterns_from_slots(slots, false) ==
        std::vector<std::uint64_t>{7, 42, 0x4000000000000000ull});
  // The all-ones pattern cannot sit in a slot (it marks the empty ones): its flag adds it.
  CHECK(codegen::patterns_from_slots(slots, true) ==
        std::vector<std::uint64_t>{7, 42, 0x4000000000000000ull, kEmpty});
  CHECK(codegen::patterns_from_slots(std::vector<std::uint64_t>(8, kEmpty), false).empty());
  // A full table's worth: random patterns, some sharing their high bytes (one exponent), some
  // their low ones (short mantissas), in the set's slots with gaps; ascending, each once.
  std::vector<std::uint64_t> big(1 << 17, kEmpty);
  std::uint64_t x = 0x243F6A8885A308D3ull;
  for (std::size_t i = 0; i < big.size(); i += 2) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    big[i] = i % 6 == 0   ? 0x3ff0000000000000ull | (x >> 12)
             : i % 6 == 2 ? (x & 0xfff0000000000000ull) | (i << 20)
                          : x | 1;
  }
  std::vector<std::uint64_t> want;
  for (const std::uint64_t v : big)
    if (v != kEmpty) want.push_back(v);
  std::sort(want.begin(), want.end());
  REQUIRE(std::adjacent_find(want.begin(), want.end()) == want.end());
  CHECK(codegen::patterns_from_slots(big, false) == want);
  want.push_back(kEmpty);
  CHECK(codegen::patterns_from_slots(big, true) == want);
}

TEST_CASE("device values: 16-bit tables from device arrays for csr, csr_stream, ell, hyb, BRO") {
  // 3000 distinct values: past an 8-bit table, inside a 16-bit one.
  CsrMatrix a = gen::banded(20000, 4);
  for (std::size_t k = 0; k < a.values.size(); ++k)
    a.values[k] = 1.0 + static_cast<double>(k % 3000) / 7.0;
  const test::HostDeviceCsr d(a);
  const Profile profile = inspect(a, InspectDepth::rows);
  REQUIRE(profile.distinct_values == 3000);
  REQUIRE(formats::best_value_coding(profile, Precision::f64) == formats::kValuesTable16);
  BuildTarget target;
  Options o;
  o.disk_cache = false;
  const Plan plan = compiler::plan_device_csr(d.view, profile, o, target);
  for (const char* format : {"csr", "csr_stream", "ell", "hyb", "bro_ell", "bro_coo", "bro_hyb"}) {
    CAPTURE(format);
    CHECK(std::any_of(plan.candidates.begin(), plan.candidates.end(), [&](const Candidate& c) {
      return c.format == format && c.applicable &&
             formats::value_coding_of(c.params) == formats::kValuesTable16;
    }));
  }
  // Forced, each is planned as asked.
  CsrStreamParams s;
  s.values = formats::kValuesTable16;
  o.params = s;
  CHECK(formats::value_coding_of(compiler::plan_device_csr(d.view, profile, o, target).params) ==
        formats::kValuesTable16);
  // So are the BRO formats', whose GPU encoders write 16-bit codes too.
  BroCooParams b;
  b.values = formats::kValuesTable16;
  o.params = b;
  const Plan bro = compiler::plan_device_csr(d.view, profile, o, target);
  CHECK(bro.format == "bro_coo");
  CHECK(formats::value_coding_of(bro.params) == formats::kValuesTable16);
}

TEST_CASE("device values: the sketch of a sample estimates its distinct patterns") {
  // value_sketch's register and rank of each pattern (the same function the kernel calls), then
  // the host's estimate: within 5% (three standard errors of 4096 registers) from 100 to 2M
  // distinct patterns, whatever their repeats.
  auto estimate = [](std::int64_t distinct, std::int64_t repeats, std::uint64_t stride) {
    std::vector<std::uint32_t> registers(codegen::kValueSketchRegisters, 0);
    for (std::int64_t r = 0; r < repeats; ++r) {
      for (std::int64_t i = 0; i < distinct; ++i) {
        int index = 0;
        unsigned rank = 0;
        device_values::sketch_slot(0x3FF0000000000000ull + static_cast<std::uint64_t>(i) * stride,
                                   index, rank);
        REQUIRE(index >= 0);
        REQUIRE(index < codegen::kValueSketchRegisters);
        registers[static_cast<std::size_t>(index)] =
            std::max(registers[static_cast<std::size_t>(index)], rank);
      }
    }
    return codegen::estimate_distinct(registers);
  };
  for (const std::int64_t n : {100, 3000, 65536, 300000, 2000000}) {
    for (const std::uint64_t stride : {1ull, 1ull << 40}) {  // low or high bits differing
      CAPTURE(n);
      CAPTURE(stride);
      const double e = estimate(n, n < 100000 ? 3 : 1, stride);
      CHECK(e > 0.95 * static_cast<double>(n));
      CHECK(e < 1.05 * static_cast<double>(n));
    }
  }
  // A table's worth (the cap) is far below what settles "more than the cap".
  CHECK(estimate(65536, 1, 1) < codegen::kValueSketchDecides / 3);
  CHECK(codegen::estimate_distinct(std::vector<std::uint32_t>(4096, 0)) == 0.0);
}
