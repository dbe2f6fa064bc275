// Mixed precision weighed against full precision (Options::mixed_fallback): with mixed
// precision asked for, the model planner ranks the mixed-precision candidates beside the
// full-precision ones and cuSPARSE, keeps a full-precision plan predicted faster (no rounding,
// the plan saying why and by how much), keeps the mixed-precision pick where it is faster, and
// keeps it always where the caller insists; measure mode's rule for the same choice.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/values/values.hpp"
#include "measure_decision.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"

using namespace spmvc;
using namespace spmvc::formats;

namespace {

// A Kronecker graph in fp32: power-law rows, where the model predicts cuSPARSE's CSR SpMV
// faster than every generated candidate, the ones storing bf16 values too (by about 10% with
// the sm_90 calibration; the suite's Kronecker entries measured the same on the H100).
const Profile& kronecker() {
  static const Profile profile = inspect(gen::from_spec("rmat:scale=19,ef=8"), InspectDepth::rows);
  return profile;
}

// Values inexact in fp32 and bf16 (more distinct ones than a 16-bit table holds).
CsrMatrix with_inexact_values(CsrMatrix a, double scale = 1.0) {
  for (std::size_t k = 0; k < a.values.size(); ++k)
    a.values[k] = scale * (1.0 + std::sin(0.37 * static_cast<double>(k)) / 3);
  return a;
}

compiler::PlanOptions options(Precision p, MixedPrecision m) {
  compiler::PlanOptions o;
  o.precision = p;
  o.mixed_precision = m;
  o.cusparse = "auto";  // the library's default (compiler::PlanOptions' own is "never")
  return o;
}

// The best applicable mixed-precision candidate of a plan's ranked list.
const Candidate& best_mixed(const Plan& plan) {
  const auto it = std::find_if(
      plan.candidates.begin(), plan.candidates.end(),
      [](const Candidate& c) { return c.applicable && compiler::is_mixed_candidate(c.params); });
  REQUIRE(it != plan.candidates.end());
  return *it;
}

}  // namespace

TEST_CASE("mixed fallback: cuSPARSE predicted faster than every mixed candidate is kept") {
  {
    const Precision p = Precision::f32;
    const MixedPrecision mode = MixedPrecision::bf16;
    const Profile& profile = kronecker();
    const Plan full = compiler::make_plan(profile, options(p, MixedPrecision::off));
    REQUIRE(full.engine == Engine::cusparse);

    const Plan plan = compiler::make_plan(profile, options(p, mode));
    // The plan the planner makes without mixed precision: cuSPARSE on plain csr arrays.
    CHECK(plan.engine == Engine::cusparse);
    CHECK(plan.format == full.format);
    CHECK(describe(plan.params) == describe(full.params));
    CHECK(value_coding_of(plan.params) == kValuesPlain);
    CHECK(plan.predicted_seconds == full.predicted_seconds);
    CHECK_FALSE(plan.rounding.has_value());
    REQUIRE(plan.mixed_fallback.has_value());
    const MixedFallback& f = *plan.mixed_fallback;
    CHECK(f.asked == mode);
    CHECK_FALSE(f.measured);
    // Against the best mixed-precision candidate, which stores rounded values.
    const Candidate& m = best_mixed(plan);
    CHECK(is_rounded_coding(value_coding_of(m.params)));
    CHECK(f.mixed_best == fmt::format("{} [{}]", m.format, m.label));
    CHECK(f.mixed_seconds == m.predicted_seconds);
    CHECK(f.full_seconds == plan.predicted_seconds);
    CHECK(f.mixed_seconds > f.full_seconds);
    const std::string head = fmt::format(
        "mixed precision {} was asked for, but the full-precision plan is predicted {:.2f}x "
        "faster",
        to_string(mode), f.mixed_seconds / f.full_seconds);
    CHECK(plan.why.find(head) == 0);
    CHECK(plan.why.find(f.mixed_best) != std::string::npos);
    CHECK(plan.why.find("cuSPARSE's CSR SpMV is predicted") != std::string::npos);
    // The report and the JSON say which happened.
    const std::string report = to_report(plan);
    CHECK(report.find(fmt::format("mixed precision {} asked for; full precision kept, predicted",
                                  to_string(mode))) != std::string::npos);
    CHECK(report.find("values stored rounded") == std::string::npos);
    const nlohmann::json j = nlohmann::json::parse(to_json(plan));
    CHECK_FALSE(j.contains("mixed_precision"));
    CHECK(j.at("mixed_fallback").at("asked") == std::string(to_string(mode)));
    CHECK(j.at("mixed_fallback").at("basis") == "model");
    CHECK(j.at("mixed_fallback").at("mixed_best") == f.mixed_best);
    CHECK(j.at("mixed_fallback").at("mixed_seconds").get<double>() == f.mixed_seconds);
    CHECK(j.at("engine") == "cusparse");

    // Insisting keeps the best mixed-precision candidate, rounded, cuSPARSE refused.
    compiler::PlanOptions insist = options(p, mode);
    insist.mixed_fallback = false;
    const Plan insisted = compiler::make_plan(profile, insist);
    CHECK(insisted.engine == Engine::kernel);
    CHECK(fmt::format("{} [{}]", insisted.format, describe(insisted.params)) == f.mixed_best);
    REQUIRE(insisted.rounding.has_value());
    CHECK(insisted.rounding->value_error > 0);
    CHECK_FALSE(insisted.mixed_fallback.has_value());
    CHECK(compiler::cusparse_refusal(profile, insist).value().find("insisted on") !=
          std::string::npos);
    CHECK_FALSE(compiler::cusparse_refusal(profile, options(p, mode)).has_value());
  }
}

TEST_CASE("mixed fallback: the plan is the faster of the full-precision and mixed picks") {
  // Whatever the calibration predicts: the plan made without mixed precision (full) and the one
  // insisting on it (mixed) decide which the planner keeps; a tie keeps mixed precision.
  struct Case {
    const char* spec;
    Precision precision;
    MixedPrecision mode;
    std::optional<std::int64_t> multiplies;
  };
  const Case cases[] = {{"rmat:scale=19,ef=8", Precision::f32, MixedPrecision::bf16, {}},
                        {"rmat:scale=19,ef=8", Precision::f64, MixedPrecision::f32, {}},
                        {"rmat:scale=19,ef=8", Precision::f32, MixedPrecision::bf16, 10},
                        {"stencil27:n=40", Precision::f64, MixedPrecision::f32, {}},
                        {"stencil27:n=40", Precision::f32, MixedPrecision::bf16, {}},
                        {"elasticity:n=16", Precision::f64, MixedPrecision::f32, {}},
                        {"random:n=100000,per_row=4", Precision::f32, MixedPrecision::bf16, {}}};
  int kept_full = 0, kept_mixed = 0;
  for (const Case& k : cases) {
    CAPTURE(k.spec);
    CAPTURE(to_string(k.precision));
    const Profile profile =
        std::string(k.spec).rfind("rmat:", 0) == 0
            ? kronecker()
            : inspect(with_inexact_values(gen::from_spec(k.spec)), InspectDepth::rows);
    compiler::PlanOptions o = options(k.precision, k.mode);
    o.multiplies = k.multiplies;
    compiler::PlanOptions off = o;
    off.mixed_precision = MixedPrecision::off;
    compiler::PlanOptions insist = o;
    insist.mixed_fallback = false;
    const Plan full = compiler::make_plan(profile, off);
    const Plan mixed = compiler::make_plan(profile, insist);
    const Plan plan = compiler::make_plan(profile, o);
    const auto ranked = [](const Plan& q) {
      return q.multiplies ? q.predicted_build_seconds +
                                static_cast<double>(*q.multiplies) * q.predicted_seconds
                          : q.predicted_seconds;
    };
    const Plan& want = ranked(full) < ranked(mixed) ? full : mixed;
    CHECK(plan.engine == want.engine);
    CHECK(describe(plan.params) == describe(want.params));
    CHECK(plan.predicted_seconds == want.predicted_seconds);
    if (&want == &full) {
      ++kept_full;
      CHECK_FALSE(plan.rounding.has_value());
      REQUIRE(plan.mixed_fallback.has_value());
      CHECK(plan.mixed_fallback->full_seconds == doctest::Approx(ranked(full)));
      CHECK(plan.mixed_fallback->mixed_seconds == doctest::Approx(ranked(mixed)));
      CHECK(plan.mixed_fallback->mixed_best ==
            fmt::format("{} [{}]", mixed.format, describe(mixed.params)));
    } else {
      ++kept_mixed;
      CHECK_FALSE(plan.mixed_fallback.has_value());
      REQUIRE(plan.rounding.has_value());
      CHECK(plan.rounding->y_error_bound == mixed.rounding.value().y_error_bound);
    }
  }
  // The Kronecker graph in fp32 is kept full precision (above); the stencils stay mixed.
  CHECK(kept_full > 0);
  CHECK(kept_mixed > 0);
}

TEST_CASE("mixed fallback: ranked by one-time cost + multiplies where the caller gave a count") {
  const Profile& profile = kronecker();
  compiler::PlanOptions o = options(Precision::f32, MixedPrecision::bf16);
  o.multiplies = 100000;
  const Plan plan = compiler::make_plan(profile, o);
  REQUIRE(plan.mixed_fallback.has_value());
  const MixedFallback& f = *plan.mixed_fallback;
  CHECK(f.full_seconds ==
        doctest::Approx(plan.predicted_build_seconds + 1e5 * plan.predicted_seconds));
  CHECK(f.mixed_seconds == best_mixed(plan).total_seconds);
  CHECK(plan.why.find(" ms against ") != std::string::npos);
}

TEST_CASE("mixed fallback: the mixed pick is kept where it is predicted faster") {
  // A 27-point stencil with a coefficient per point: short regular rows, where rounded values
  // save a third of csr's bytes and no full-precision plan comes close.
  const CsrMatrix a = with_inexact_values(gen::from_spec("stencil27:n=40"));
  const Profile profile = inspect(a, InspectDepth::rows);
  REQUIRE(best_value_coding(profile, Precision::f64) == kValuesPlain);
  const Plan plan = compiler::make_plan(profile, options(Precision::f64, MixedPrecision::f32));
  CHECK(plan.engine == Engine::kernel);
  CHECK(value_coding_of(plan.params) == kValuesF32Rounded);
  CHECK_FALSE(plan.mixed_fallback.has_value());
  REQUIRE(plan.rounding.has_value());
  CHECK(plan.rounding->value_error == profile.f32_rounding_error);
  CHECK(plan.rounding->y_error_bound > plan.rounding->value_error);
  CHECK(plan.why.find("mixed precision f32 was asked for") == std::string::npos);
  // The full-precision candidates were ranked beside it, slower: the plan's plain twin and the
  // formats without a value coding, each saying it is full precision.
  bool twin = false, uncoded = false;
  for (const Candidate& c : plan.candidates) {
    if (!c.applicable || compiler::is_mixed_candidate(c.params)) continue;
    CAPTURE(c.format);
    CAPTURE(c.label);
    CHECK(c.reason.find("full precision") == 0);
    CHECK(c.predicted_seconds >= plan.predicted_seconds);
    twin =
        twin || (c.format == plan.format &&
                 describe(with_value_coding(c.params, kValuesF32Rounded)) == describe(plan.params));
    uncoded = uncoded || !has_value_coding(c.params);
  }
  CHECK(twin);
  CHECK(uncoded);
  // The same plan as when insisting.
  compiler::PlanOptions insist = options(Precision::f64, MixedPrecision::f32);
  insist.mixed_fallback = false;
  const Plan insisted = compiler::make_plan(profile, insist);
  CHECK(describe(insisted.params) == describe(plan.params));
  CHECK(insisted.rounding->y_error_bound == plan.rounding->y_error_bound);
  // A forced format takes mixed precision whatever is faster (today's rule).
  compiler::PlanOptions forced = options(Precision::f64, MixedPrecision::f32);
  forced.format = "csr";
  const Plan csr = compiler::make_plan(profile, forced);
  CHECK(value_coding_of(csr.params) == kValuesF32Rounded);
  CHECK_FALSE(csr.mixed_fallback.has_value());
}

TEST_CASE("mixed fallback: where no mixed-precision candidate applies, full precision") {
  // Values past fp32's range: no rounded coding holds them, and too many for a table.
  const CsrMatrix a = with_inexact_values(gen::from_spec("stencil27:n=30"), 1e300);
  const Profile profile = inspect(a, InspectDepth::rows);
  const Plan plan = compiler::make_plan(profile, options(Precision::f64, MixedPrecision::f32));
  CHECK_FALSE(compiler::is_mixed_candidate(plan.params));
  CHECK_FALSE(plan.rounding.has_value());
  REQUIRE(plan.mixed_fallback.has_value());
  CHECK(plan.mixed_fallback->mixed_best.empty());
  CHECK(plan.why.find("no mixed-precision candidate applies") != std::string::npos);
  CHECK(to_report(plan).find("full precision kept: no mixed-precision candidate applied") !=
        std::string::npos);
  // Insisting: nothing to plan, and the error says why each candidate was rejected.
  compiler::PlanOptions insist = options(Precision::f64, MixedPrecision::f32);
  insist.mixed_fallback = false;
  CHECK_THROWS_WITH_AS((void)compiler::make_plan(profile, insist),
                       doctest::Contains("no format can implement this matrix"), InputError);
}

TEST_CASE("mixed fallback: a plan's rounding follows its values and engine") {
  const Profile profile =
      inspect(with_inexact_values(gen::from_spec("stencil2d:n=100")), InspectDepth::rows);
  const compiler::PlanOptions o = options(Precision::f64, MixedPrecision::f32);
  const FormatParams rounded = with_value_coding(default_params("csr"), kValuesF32Rounded);
  const FormatParams plain = default_params("csr");
  REQUIRE(compiler::is_mixed_candidate(rounded));
  CHECK_FALSE(compiler::is_mixed_candidate(plain));
  CHECK_FALSE(compiler::is_mixed_candidate(default_params("sell")));  // no value coding
  const std::optional<ValueRounding> r =
      compiler::plan_rounding(profile, o, rounded, Engine::kernel);
  REQUIRE(r.has_value());
  CHECK(r->value_error == profile.f32_rounding_error);
  CHECK_FALSE(compiler::plan_rounding(profile, o, plain, Engine::kernel).has_value());
  CHECK_FALSE(compiler::plan_rounding(profile, o, plain, Engine::cusparse).has_value());
  CHECK_FALSE(compiler::plan_rounding(profile, options(Precision::f64, MixedPrecision::off),
                                      rounded, Engine::kernel)
                  .has_value());
  // cuSPARSE "always" with mixed precision asks for two things that exclude each other.
  compiler::PlanOptions always = o;
  always.cusparse = "always";
  CHECK_THROWS_WITH_AS((void)compiler::make_plan(profile, always),
                       doctest::Contains("not \"always\" with mixed precision"), InputError);
}

TEST_CASE("mixed fallback: measure mode keeps a full-precision timing only when faster") {
  using runtime::MeasuredTime;
  // Mixed-precision timings first (the model's order), then the full-precision best and cuSPARSE.
  const std::vector<MeasuredTime> mixed_faster = {{Engine::kernel, 9.0, true},
                                                  {Engine::kernel, 9.5, true},
                                                  {Engine::kernel, 10.0, false},
                                                  {Engine::cusparse, 9.2, false}};
  CHECK(runtime::measured_winner(mixed_faster) == 0);
  const std::vector<MeasuredTime> cusparse_faster = {
      {Engine::kernel, 9.0, true}, {Engine::kernel, 10.0, false}, {Engine::cusparse, 8.5, false}};
  CHECK(runtime::measured_winner(cusparse_faster) == 2);
  const std::vector<MeasuredTime> full_kernel_faster = {
      {Engine::kernel, 9.0, true}, {Engine::kernel, 8.0, false}, {Engine::cusparse, 8.5, false}};
  CHECK(runtime::measured_winner(full_kernel_faster) == 1);
  // A tie goes to the mixed-precision candidate the caller asked for, cuSPARSE included.
  const std::vector<MeasuredTime> tie = {
      {Engine::kernel, 9.0, true}, {Engine::kernel, 9.0, false}, {Engine::cusparse, 9.0, false}};
  CHECK(runtime::measured_winner(tie) == 0);
  const std::vector<MeasuredTime> tie_first = {{Engine::cusparse, 9.0, false},
                                               {Engine::kernel, 9.0, true}};
  CHECK(runtime::measured_winner(tie_first) == 1);
  // Kept as measure mode keeps it, one timing at a time: the same winner.
  for (const auto* times : {&mixed_faster, &cusparse_faster, &full_kernel_faster, &tie}) {
    std::vector<MeasuredTime> so_far;
    std::size_t kept = 0;
    for (const MeasuredTime& t : *times) {
      so_far.push_back(t);
      if (runtime::measured_winner(so_far) == so_far.size() - 1) kept = so_far.size() - 1;
    }
    CHECK(kept == runtime::measured_winner(*times));
  }
}
