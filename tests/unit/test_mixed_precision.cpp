// Opt-in mixed precision (Options::mixed_precision): the rounding of stored values (fp64 to
// fp32, fp32 to bf16 round-to-nearest-even, checked against an independent reference
// conversion), the inspector's largest rounding error and the bound it puts on y, the planner
// taking the rounded codings only when asked (exact value codings still winning where values
// are few), the encoders storing exactly the rounded values, the plan's report, the options'
// plumbing and update_values' view of new values.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/format.hpp"
#include "formats/values/values.hpp"
#include "spmvc/build.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/value_update.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/value_rounding.hpp"

using namespace spmvc;
using namespace spmvc::formats;

namespace {

// bf16 rounding by another route than bit arithmetic: the two bf16 neighbours of f (its
// truncation and the next value away from zero), the nearer by exact fp64 distance, a tie to
// the one whose last kept bit is 0.
std::uint16_t reference_bf16(float f) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t lo = bits & 0xffff0000u;
  if (lo == bits) return static_cast<std::uint16_t>(bits >> 16);
  const std::uint32_t hi = lo + 0x10000u;  // next magnitude up (0x7f80: the infinity)
  const double v = f;
  const double dlo = std::fabs(v - static_cast<double>(std::bit_cast<float>(lo)));
  const double dhi = (hi & 0x7fffffffu) == 0x7f800000u
                         // Past the largest finite bf16: distance to 2^128, where it would be.
                         ? std::fabs(std::ldexp(std::copysign(1.0, v), 128) - v)
                         : std::fabs(static_cast<double>(std::bit_cast<float>(hi)) - v);
  if (dlo < dhi) return static_cast<std::uint16_t>(lo >> 16);
  if (dhi < dlo) return static_cast<std::uint16_t>(hi >> 16);
  return static_cast<std::uint16_t>(((lo >> 16) & 1u) == 0 ? lo >> 16 : hi >> 16);
}

// n x n, rows of 1..per_row nonzeros at scattered columns (sorted, distinct), values value(k).
template <typename Value>
CsrMatrix matrix(std::int64_t n, int per_row, Value&& value) {
  CsrMatrix a;
  a.nrows = a.ncols = n;
  a.row_ptr.push_back(0);
  for (std::int64_t r = 0; r < n; ++r) {
    const int len = 1 + static_cast<int>((r * 7) % per_row);
    std::vector<std::int32_t> cols;
    for (int j = 0; j < len; ++j) cols.push_back(static_cast<std::int32_t>((r * 31 + j * 97) % n));
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    for (const std::int32_t c : cols) {
      a.col_idx.push_back(c);
      a.values.push_back(value(static_cast<std::int64_t>(a.values.size())));
    }
    a.row_ptr.push_back(static_cast<std::int64_t>(a.col_idx.size()));
  }
  return a;
}

double inexact_value(std::int64_t k) { return 1.0 + std::sin(0.7 * static_cast<double>(k)) / 3; }

compiler::PlanOptions mixed_options(Precision p, MixedPrecision m) {
  compiler::PlanOptions o;
  o.precision = p;
  o.mixed_precision = m;
  return o;
}

}  // namespace

TEST_CASE("mixed precision: bf16 rounds to nearest even, as a reference conversion does") {
  // Known words: exact values, ties to even in both directions, rounding up, overflow, NaN.
  CHECK(bf16_word(1.0f) == 0x3f80);
  CHECK(bf16_word(-2.0f) == 0xc000);
  CHECK(bf16_word(1.0f + 0x1p-8f) == 0x3f80);             // tie between 0x3f80 and 0x3f81: even
  CHECK(bf16_word(1.0f + 3 * 0x1p-8f) == 0x3f82);         // tie between 0x3f81 and 0x3f82: even
  CHECK(bf16_word(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);  // past the tie: up
  CHECK(bf16_word(3.14159265f) == 0x4049);
  CHECK(bf16_word(FLT_MAX) == 0x7f80);  // rounds past bf16's largest: infinity
  CHECK(bf16_word(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(bf16_word(std::numeric_limits<float>::denorm_min()) == 0x0000);  // tie below: 0
  const std::uint16_t nan = bf16_word(std::bit_cast<float>(0x7f800001u));
  CHECK((nan & 0x7f80) == 0x7f80);
  CHECK((nan & 0x007f) != 0);  // still a NaN, not the infinity its truncation would be
  CHECK(bf16_round(1.0f + 0x1p-8f + 0x1p-20f) == 1.0f + 0x1p-7f);

  // Every 65521st bit pattern (a prime stride: every exponent, both signs, all low halves)
  // and the low halves around the tie of a few words.
  int checked = 0;
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 65521) {
    const auto bits = static_cast<std::uint32_t>(b);
    if ((bits & 0x7fffffffu) > 0x7f800000u) continue;  // NaNs: above
    const float f = std::bit_cast<float>(bits);
    CAPTURE(bits);
    REQUIRE(bf16_word(f) == reference_bf16(f));
    ++checked;
  }
  for (std::uint32_t word : {0x3f80u, 0x3f81u, 0x0001u, 0x807fu, 0x7f7fu, 0xff7eu}) {
    for (std::uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
      const float f = std::bit_cast<float>(word << 16 | low);
      CAPTURE(word);
      CAPTURE(low);
      CHECK(bf16_word(f) == reference_bf16(f));
      ++checked;
    }
  }
  CHECK(checked > 65000);
}

TEST_CASE("mixed precision: the rounding of one value and its relative error") {
  // Exact in fp32 and in bf16: no error.
  for (double v : {0.0, -0.0, 1.0, -2.5, 0.75, 1024.0}) {
    CHECK(round_to_f32(v).relative_error == 0.0);
    CHECK(round_to_bf16(v).relative_error == 0.0);
    CHECK(round_to_f32(v).stored == v);
  }
  // 0.1: fp32's nearest is 13421773 * 2^-27.
  const RoundedValue tenth = round_to_f32(0.1);
  CHECK(tenth.stored == 13421773.0 * 0x1p-27);
  CHECK(tenth.relative_error == std::fabs(13421773.0 * 0x1p-27 - 0.1) / 0.1);
  CHECK(tenth.relative_error < 0x1p-24);
  // 1 + 2^-30 is an fp32 rounding of 2^-30 relative; 1 + 2^-8 + 2^-12 rounds up in bf16.
  CHECK(round_to_f32(1.0 + 0x1p-30).relative_error == 0x1p-30 / (1.0 + 0x1p-30));
  const RoundedValue up = round_to_bf16(1.0 + 0x1p-8 + 0x1p-12);
  CHECK(up.stored == 1.0 + 0x1p-7);
  CHECK(up.relative_error == (0x1p-7 - 0x1p-8 - 0x1p-12) / (1.0 + 0x1p-8 + 0x1p-12));
  // Below fp32's least subnormal: rounded to 0, the whole value lost.
  CHECK(round_to_f32(1e-50).stored == 0.0);
  CHECK(round_to_f32(1e-50).relative_error == 1.0);
  // fp32's range: FLT_MAX plus less than half its ulp rounds to FLT_MAX; half an ulp and more
  // (the tie goes to the even neighbour, the infinity) overflows.
  const double half_ulp = 0x1p103;
  CHECK_FALSE(round_to_f32(static_cast<double>(FLT_MAX) + half_ulp / 2).overflow);
  CHECK(round_to_f32(static_cast<double>(FLT_MAX) + half_ulp / 2).stored == FLT_MAX);
  CHECK(round_to_f32(static_cast<double>(FLT_MAX) + half_ulp).overflow);
  CHECK(round_to_f32(-1e300).overflow);
  CHECK(round_to_bf16(static_cast<double>(FLT_MAX)).overflow);  // past bf16's largest
  CHECK_FALSE(round_to_f32(std::numeric_limits<double>::infinity()).overflow);
}

TEST_CASE("mixed precision: the bound on y's error") {
  CHECK(y_error_bound(0.0, 0, 0.0, 0.0) == 0.0);
  CHECK(y_error_bound(0x1p-9, 0, 0.0, 0.0) == 0x1p-9);
  // gamma(n + 1) = (n + 1) u / (1 - (n + 1) u).
  const double u = 0x1p-24;
  CHECK(y_error_bound(0.0, 9, u, 0.0) == 10 * u / (1 - 10 * u));
  const double e = 0x1p-8, g = 10 * u / (1 - 10 * u);
  CHECK(y_error_bound(e, 9, u, 0.0) == e + (1 + e) * g);
  CHECK(y_error_bound(e, 9, 0x1p-53, u) ==
        e + (1 + e) * (10 * 0x1p-53 / (1 - 10 * 0x1p-53)) +
            (1 + e) * (1 + 10 * 0x1p-53 / (1 - 10 * 0x1p-53)) * u);
  CHECK(std::isinf(y_error_bound(0.0, std::int64_t{1} << 30, u, 0.0)));
}

TEST_CASE("mixed precision: the inspector's largest rounding error of the values") {
  // Values already in fp32 (and bf16): bound 0.
  const CsrMatrix exact =
      matrix(200, 6, [](std::int64_t k) { return 0.5 * static_cast<double>(k % 7 + 1); });
  const Profile pe = inspect(exact, InspectDepth::rows);
  CHECK(pe.f32_rounding_error == 0.0);
  CHECK(pe.bf16_rounding_error == 0.0);
  // Known roundings: 0.1 and 1/3 among exact values.
  CsrMatrix known = exact;
  known.values[3] = 0.1;
  known.values[10] = 1.0 / 3;
  const Profile pk = inspect(known, InspectDepth::rows);
  const double third_err = round_to_f32(1.0 / 3).relative_error;
  CHECK(pk.f32_rounding_error == std::max(round_to_f32(0.1).relative_error, third_err));
  CHECK(pk.bf16_rounding_error ==
        std::max(round_to_bf16(0.1).relative_error, round_to_bf16(1.0 / 3).relative_error));
  CHECK(pk.bf16_rounding_error <= 0x1p-8);
  CHECK(pk.bf16_rounding_error > 0x1p-12);
  CHECK(pk.f32_overflow == 0);
  // A value beyond fp32's range is counted apart, not as an error.
  known.values[20] = 1e300;
  const Profile po = inspect(known, InspectDepth::rows);
  CHECK(po.f32_overflow == 1);
  CHECK(po.bf16_overflow == 1);
  CHECK(po.f32_rounding_error == pk.f32_rounding_error);
  // The same at every depth and in the JSON report.
  const Profile full = inspect(known, InspectDepth::full);
  CHECK(full.f32_rounding_error == po.f32_rounding_error);
  const nlohmann::json j = nlohmann::json::parse(to_json(full));
  CHECK(j.at("value_rounding").at("f32_overflow") == 1);
  CHECK(j.at("value_rounding").at("bf16_error").get<double>() == full.bf16_rounding_error);
}

TEST_CASE("mixed precision: planned only when asked, exact codings first, the bound stated") {
  // More distinct values than a 16-bit table holds: no exact coding applies.
  const CsrMatrix a = matrix(12000, 12, inexact_value);
  const Profile profile = inspect(a, InspectDepth::rows);
  REQUIRE(best_value_coding(profile, Precision::f64) == kValuesPlain);

  // Not asked: no candidate stores rounded values, and the plan states no rounding.
  for (Precision p : {Precision::f64, Precision::f32}) {
    const Plan plain = compiler::make_plan(profile, mixed_options(p, MixedPrecision::off));
    CHECK_FALSE(plain.rounding.has_value());
    for (const Candidate& c : plain.candidates)
      CHECK_FALSE(is_rounded_coding(value_coding_of(c.params)));
  }

  // f32 for fp64, bf16 for fp32 and f32acc64, insisted on (no full-precision candidate ranked
  // beside them: test_mixed_fallback.cpp): every applicable candidate stores its values
  // rounded, formats without a value coding are rejected saying why.
  for (const auto& [p, mode] : {std::pair{Precision::f64, MixedPrecision::f32},
                                std::pair{Precision::f32, MixedPrecision::bf16},
                                std::pair{Precision::f32_acc64, MixedPrecision::bf16}}) {
    CAPTURE(to_string(p));
    compiler::PlanOptions insist = mixed_options(p, mode);
    insist.mixed_fallback = false;
    const Plan plan = compiler::make_plan(profile, insist);
    CHECK(value_coding_of(plan.params) == mixed_value_coding(mode));
    int rounded = 0;
    for (const Candidate& c : plan.candidates) {
      CAPTURE(c.format);
      CAPTURE(c.label);
      if (!has_value_coding(c.params)) {
        CHECK_FALSE(c.applicable);
        // Rejected for storing full-precision values, unless it cannot hold the matrix at any
        // precision (dia's symmetric form here: the values are not symmetric), which it says.
        const bool unusable =
            formats::find_format(c.format).cannot_implement(profile, c.params, p).has_value();
        CHECK((c.reason.find("no value coding") != std::string::npos || unusable));
      } else if (c.applicable) {
        CHECK(value_coding_of(c.params) == mixed_value_coding(mode));
        ++rounded;
      }
    }
    CHECK(rounded >= 5);
    REQUIRE(plan.rounding.has_value());
    const ValueRounding& r = *plan.rounding;
    CHECK(r.mode == mode);
    CHECK(r.value_error ==
          (mode == MixedPrecision::f32 ? profile.f32_rounding_error : profile.bf16_rounding_error));
    CHECK(r.value_error > 0);
    CHECK(r.longest_row == profile.row_max);
    const double acc = p == Precision::f32 ? 0x1p-24 : 0x1p-53;
    const double out = p == Precision::f32_acc64 ? 0x1p-24 : 0.0;
    CHECK(r.y_error_bound == y_error_bound(r.value_error, profile.row_max, acc, out));
    // The report and the JSON state it.
    CHECK(to_report(plan).find(fmt::format("mixed precision {}: values stored rounded",
                                           to_string(mode))) != std::string::npos);
    const nlohmann::json j = nlohmann::json::parse(to_json(plan));
    CHECK(j.at("mixed_precision").at("y_error_bound").get<double>() == r.y_error_bound);
    CHECK(j.at("mixed_precision").at("mode") == std::string(to_string(mode)));
  }

  // A mode that does not fit the precision, and a forced format without a value coding.
  CHECK_THROWS_WITH_AS(
      (void)compiler::make_plan(profile, mixed_options(Precision::f64, MixedPrecision::bf16)),
      doctest::Contains("this operator is f64"), InputError);
  CHECK_THROWS_WITH_AS(
      (void)compiler::make_plan(profile, mixed_options(Precision::f32, MixedPrecision::f32)),
      doctest::Contains("this operator is f32"), InputError);
  compiler::PlanOptions sell = mixed_options(Precision::f64, MixedPrecision::f32);
  sell.params = default_params("sell");
  CHECK_THROWS_WITH_AS((void)compiler::make_plan(profile, sell),
                       doctest::Contains("sell stores full-precision values only"), InputError);
  // A forced plain csr takes the rounded coding.
  compiler::PlanOptions csr = mixed_options(Precision::f64, MixedPrecision::f32);
  csr.params = default_params("csr");
  CHECK(value_coding_of(compiler::make_plan(profile, csr).params) == kValuesF32Rounded);
}

TEST_CASE("mixed precision: exact value codings still win where values are few") {
  // A pattern matrix stores no values; two distinct values take an 8-bit table; values all
  // exact in fp32 are stored as fp32 exactly: no rounding error in any of them.
  const CsrMatrix ones = matrix(2000, 8, [](std::int64_t) { return 1.0; });
  const CsrMatrix two = matrix(2000, 8, [](std::int64_t k) { return k % 2 ? 0.1 : 0.3; });
  const CsrMatrix f32 = matrix(2000, 8, [](std::int64_t k) {
    return static_cast<double>(static_cast<float>(inexact_value(k)));
  });
  const auto coding = [](const CsrMatrix& a, Precision p, MixedPrecision m) {
    const Plan plan = compiler::make_plan(inspect(a, InspectDepth::rows), mixed_options(p, m));
    REQUIRE(plan.rounding.has_value());
    if (p == Precision::f64) CHECK(plan.rounding->value_error == 0.0);  // stored exactly
    return value_coding_of(plan.params);
  };
  CHECK(coding(ones, Precision::f64, MixedPrecision::f32) == kValuesUnit);
  CHECK(coding(ones, Precision::f32, MixedPrecision::bf16) == kValuesUnit);
  CHECK(coding(two, Precision::f64, MixedPrecision::f32) == kValuesTable8);
  CHECK(coding(two, Precision::f32, MixedPrecision::bf16) == kValuesTable8);
  CHECK(coding(f32, Precision::f64, MixedPrecision::f32) == kValuesF32);
  const Plan exact = compiler::make_plan(inspect(f32, InspectDepth::rows),
                                         mixed_options(Precision::f64, MixedPrecision::f32));
  CHECK(exact.rounding->value_error == 0.0);
  CHECK(to_report(exact).find("values stored exactly") != std::string::npos);
}

TEST_CASE("mixed precision: the encoders store exactly the rounded values") {
  const CsrMatrix a = matrix(500, 9, inexact_value);
  for (const char* format : {"csr", "ell", "hyb", "bro_ell", "bro_coo", "bro_hyb", "csr_stream"}) {
    for (const auto& [p, mode] : {std::pair{Precision::f64, MixedPrecision::f32},
                                  std::pair{Precision::f32, MixedPrecision::bf16}}) {
      Options o;
      o.format = format;
      o.precision = p;
      o.mixed_precision = mode;
      o.value_coding = false;  // no 16-bit table beside the rounded values
      CAPTURE(format);
      CAPTURE(to_string(p));
      const Build b = build(a, o);
      const int coding = value_coding_of(b.plan.params);
      REQUIRE(coding == mixed_value_coding(mode));
      // The host reference over the encoding is A x with every value replaced by its rounding.
      CsrMatrix rounded = a;
      for (double& v : rounded.values)
        v = mode == MixedPrecision::f32 ? round_to_f32(v).stored : round_to_bf16(v).stored;
      std::vector<double> x(static_cast<std::size_t>(a.ncols));
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0 + static_cast<double>(i % 5) / 8;
      std::vector<double> y(static_cast<std::size_t>(a.nrows)), want(y.size()), full(y.size());
      compiler::reference_spmv(b.plan, b.encoded, x, y);
      compiler::csr_reference_spmv(rounded, x, want);
      compiler::csr_reference_spmv(a, x, full);
      CHECK(compiler::relative_error(y, want) <= 1e-15);
      // ... which is not A x: the rounding is there, and within the plan's bound.
      CHECK(compiler::relative_error(y, full) > 1e-12);
      CHECK(compiler::mixed_error(a, x, y, full).componentwise <=
            compiler::mixed_error_tolerance(b.plan));
      // The kernel declares the narrow array.
      CHECK(b.source.source.find(mode == MixedPrecision::f32
                                     ? "NarrowValues<Value, float>"
                                     : "Bf16Values<Value>") != std::string::npos);
    }
  }
  // Rounding to a type whose range a value exceeds is refused, naming the nonzero.
  CsrMatrix huge = a;
  huge.values[7] = 1e300;
  std::vector<EncodedArray> arrays;
  CHECK_THROWS_WITH_AS(append_values(arrays, "values", Precision::f64, huge.values,
                                     huge.values.size(), kValuesF32Rounded, huge),
                       doctest::Contains("nonzero 7"), InputError);
}

TEST_CASE("mixed precision: new values fit a rounded plan, rounded the same way") {
  const std::vector<double> tenths = {0.1, 0.2, -0.3, 1.0 / 3};
  CHECK_FALSE(compiler::value_update_problem(kValuesF32Rounded, tenths, Precision::f64));
  CHECK_FALSE(compiler::value_update_problem(kValuesBf16, tenths, Precision::f32));
  // The exact coding re-plans for the same values.
  CHECK(compiler::value_update_problem(kValuesF32, tenths, Precision::f64).has_value());
  const std::vector<double> huge = {1.0, 1e300};
  CHECK(compiler::value_update_problem(kValuesF32Rounded, huge, Precision::f64)
            .value()
            .find("nonzero 1") != std::string::npos);
  // A re-plan keeps the option: the options compile() was given.
  Options o;
  o.mixed_precision = MixedPrecision::f32;
  std::string note;
  CHECK(compiler::replan_options(o, &note).mixed_precision == MixedPrecision::f32);
  // The GPU gathers that round are in the update unit.
  const KernelSource k = compiler::value_gather_source();
  CHECK(k.source.find(compiler::value_round_entry(ElemType::i32, ElemType::f32, ElemType::u16)) !=
        std::string::npos);
}

TEST_CASE("mixed precision: the option's values and their errors") {
  CHECK(parse_mixed_precision("f32") == MixedPrecision::f32);
  CHECK(parse_mixed_precision("bf16") == MixedPrecision::bf16);
  CHECK(parse_mixed_precision("off") == MixedPrecision::off);
  CHECK_THROWS_WITH_AS((void)parse_mixed_precision("fp16"), doctest::Contains("'fp16'"),
                       InputError);
  // A bad value for the CLI's --mixed-precision and the C API's "mixed_precision" alike (both
  // parse with parse_mixed_precision; tests/capi and the cli_* tests cover their plumbing).
  CHECK_THROWS_WITH_AS((void)parse_mixed_precision(""), doctest::Contains("expected f32"),
                       InputError);
}
