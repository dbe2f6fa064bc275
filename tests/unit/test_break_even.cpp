// Break-even-aware planning: each candidate's one-time build cost (calibration/<gpu>_build.inc)
// and the ranking by one-time cost + N x multiply time when the caller gives N
// (Options::multiplies), on the host path and from device arrays.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "calibration.hpp"
#include "spmvc/build.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;

namespace {

// A 27-point stencil of 1.7M nonzeros with one coefficient: large enough that encoding and
// upload are not lost beside the compile, and a matrix where value-coded BRO and ELL forms move
// far fewer bytes than csr per multiply but cost more to build.
const CsrMatrix& stencil() {
  static const CsrMatrix a = gen::from_spec("stencil27:n=40");
  return a;
}

const Profile& stencil_profile() {
  static const Profile p = inspect(stencil(), InspectDepth::rows);
  return p;
}

Plan plan_for(std::optional<std::int64_t> multiplies, bool cached = false) {
  compiler::PlanOptions o;
  o.gpu = "H100";
  o.multiplies = multiplies;
  o.cached_kernels = cached;
  return compiler::make_plan(stencil_profile(), o);
}

const Candidate& best_of(const Plan& plan, const std::string& format) {
  const auto it =
      std::find_if(plan.candidates.begin(), plan.candidates.end(),
                   [&](const Candidate& c) { return c.applicable && c.format == format; });
  REQUIRE(it != plan.candidates.end());
  return *it;
}

}  // namespace

TEST_CASE("build cost: each stage from the GPU's calibration, compile only when not cached") {
  const compiler::GpuCalibration* h100 = compiler::find_calibration("sm_90", "H100");
  REQUIRE(h100 != nullptr);
  const Profile& profile = stencil_profile();
  compiler::PlanOptions o;
  o.gpu = "H100";
  const Plan plan = compiler::make_plan(profile, o);
  const compiler::Prediction p = compiler::predict(profile, plan.params, o);
  const double nnz = static_cast<double>(profile.nnz);

  const compiler::BuildFactor* inspect_row = compiler::build_factor(h100, "inspect");
  REQUIRE(inspect_row != nullptr);
  CHECK(p.build.inspect == doctest::Approx(inspect_row->seconds_per_unit * nnz));
  const compiler::BuildFactor* upload_row = compiler::build_factor(h100, "upload");
  REQUIRE(upload_row != nullptr);
  CHECK(upload_row->basis == "byte");
  CHECK(p.build.upload > 0);
  const compiler::BuildFactor* compile_row = compiler::build_factor(h100, "compile", plan.format);
  REQUIRE(compile_row != nullptr);
  CHECK(p.build.compile == doctest::Approx(compile_row->seconds_per_unit));
  CHECK(p.build.encode > 0);
  CHECK(plan.predicted_build_seconds == doctest::Approx(p.build.total()));
  CHECK(plan.candidates.front().build_seconds == doctest::Approx(p.build.total()));

  // A format the suites did not time takes the pooled row.
  const compiler::BuildFactor* pooled = compiler::build_factor(h100, "encode", "no_such_format");
  REQUIRE(pooled != nullptr);
  CHECK(pooled->format == "*");
  CHECK(compiler::build_factor(nullptr, "encode", "csr") == nullptr);

  o.cached_kernels = true;
  const compiler::Prediction cached = compiler::predict(profile, plan.params, o);
  CHECK(cached.build.compile == 0);
  CHECK(cached.build.total() == doctest::Approx(p.build.total() - p.build.compile));

  // From device arrays nothing is uploaded and the GPU's row scan is far cheaper than the host's.
  o.cached_kernels = false;
  o.build_path = compiler::BuildPath::device;
  const compiler::Prediction device = compiler::predict(profile, plan.params, o);
  CHECK(device.build.upload == 0);
  CHECK(device.build.inspect < p.build.inspect / 10);
  CHECK(device.build.compile == p.build.compile);
}

TEST_CASE("break-even: csr, cheap to build, wins a short horizon and loses a long one") {
  const Plan today = plan_for(std::nullopt);
  const Plan short_run = plan_for(10);
  const Plan long_run = plan_for(100000);

  // No multiply count: ranked by multiply time alone, as before the option existed.
  CHECK_FALSE(today.multiplies.has_value());
  for (std::size_t i = 1; i < today.candidates.size(); ++i) {
    if (!today.candidates[i].applicable) break;
    CHECK(today.candidates[i - 1].predicted_seconds <= today.candidates[i].predicted_seconds);
    CHECK(today.candidates[i].total_seconds == 0);
  }

  REQUIRE(short_run.multiplies == 10);
  CHECK(short_run.format == "csr");
  CHECK(long_run.format != "csr");
  CHECK(long_run.format == today.format);
  const Candidate& csr = best_of(long_run, "csr");
  const Candidate& winner = long_run.candidates.front();
  // What makes it so by the model: the winner builds slower and multiplies faster.
  CHECK(winner.build_seconds > csr.build_seconds);
  CHECK(winner.predicted_seconds < csr.predicted_seconds);
  for (const Plan* plan : {&short_run, &long_run}) {
    const double n = static_cast<double>(*plan->multiplies);
    for (std::size_t i = 0; i < plan->candidates.size(); ++i) {
      const Candidate& c = plan->candidates[i];
      if (!c.applicable) break;
      CHECK(c.total_seconds == doctest::Approx(c.build_seconds + n * c.predicted_seconds));
      if (i > 0) CHECK(plan->candidates[i - 1].total_seconds <= c.total_seconds);
    }
  }

  // The crossover: below the multiplies at which the winner's saving repays its extra build,
  // csr stays ahead of it; above, the winner does.
  const Candidate& csr_short = best_of(short_run, "csr");
  const double crossover = (winner.build_seconds - csr_short.build_seconds) /
                           (csr_short.predicted_seconds - winner.predicted_seconds);
  REQUIRE(crossover > 10);
  REQUIRE(crossover < 100000);
  auto rank_of = [](const Plan& plan, const Candidate& which) {
    for (std::size_t i = 0; i < plan.candidates.size(); ++i)
      if (plan.candidates[i].format == which.format && plan.candidates[i].label == which.label)
        return i;
    FAIL("candidate missing");
    return plan.candidates.size();
  };
  const Plan before = plan_for(static_cast<std::int64_t>(std::floor(crossover * 0.9)));
  const Plan after = plan_for(static_cast<std::int64_t>(std::ceil(crossover * 1.1)));
  CHECK(rank_of(before, csr_short) < rank_of(before, winner));
  CHECK(rank_of(after, winner) < rank_of(after, csr_short));
}

TEST_CASE("break-even: cached kernels move the crossover, the report shows both terms") {
  const Plan cold = plan_for(1000);
  const Plan warm = plan_for(1000, true);
  const compiler::GpuCalibration* h100 = compiler::find_calibration("sm_90", "H100");
  int compared = 0;
  for (const Candidate& w : warm.candidates) {
    if (!w.applicable) continue;
    for (const Candidate& c : cold.candidates) {
      if (c.format != w.format || c.label != w.label) continue;
      CAPTURE(c.label);
      // The same candidate, less its format's cold compile.
      const compiler::BuildFactor* compile = compiler::build_factor(h100, "compile", c.format);
      REQUIRE(compile != nullptr);
      CHECK(w.build_seconds == doctest::Approx(c.build_seconds - compile->seconds_per_unit));
      ++compared;
    }
  }
  CHECK(compared > 10);
  const std::string report = to_report(cold);
  CHECK(report.find("for 1000 multiplies: ") != std::string::npos);
  CHECK(report.find("total ms") != std::string::npos);
  CHECK(to_report(plan_for(std::nullopt)).find("total ms") == std::string::npos);
  const std::string json = to_json(cold);
  CHECK(json.find("\"multiplies\": 1000") != std::string::npos);
  CHECK(json.find("\"predicted_total_seconds\"") != std::string::npos);
  CHECK(json.find("\"build_seconds\"") != std::string::npos);
}

TEST_CASE("break-even: a multiply count below 1 is refused, naming the option") {
  Options o;
  o.multiplies = 0;
  CHECK_THROWS_WITH_AS(compiler::plan_options(o, BuildTarget{}), doctest::Contains("multiplies"),
                       InputError);
  o.multiplies = -7;
  CHECK_THROWS_WITH_AS(build(gen::from_spec("stencil2d:n=8"), o), doctest::Contains("got -7"),
                       InputError);
}

TEST_CASE("break-even: device arrays use the same rule with the device build's costs") {
  const CsrMatrix& a = stencil();
  // The planner reads the arrays' sizes and alignments only, never their contents: host
  // arrays stand in for device ones.
  const test::HostDeviceCsr arrays(a);
  const DeviceCsr& d = arrays.view;
  const Profile profile = inspect(a, InspectDepth::row_lengths);
  BuildTarget target;
  target.gpu = "H100";
  Options o;
  o.multiplies = 50;
  const Plan plan = compiler::plan_device_csr(d, profile, o, target);
  REQUIRE(plan.multiplies == 50);
  CHECK(plan.why.find("one-time cost + 50 x multiply time") != std::string::npos);
  compiler::PlanOptions po = compiler::plan_options(o, target);
  po.build_path = compiler::BuildPath::device;
  for (std::size_t i = 0; i < plan.candidates.size(); ++i) {
    const Candidate& c = plan.candidates[i];
    if (!c.applicable) break;
    CAPTURE(c.label);
    const compiler::Prediction p = compiler::predict(profile, c.params, po);
    CHECK(p.build.upload == 0);
    CHECK(c.build_seconds == doctest::Approx(p.build.total()));
    CHECK(c.total_seconds == doctest::Approx(c.build_seconds + 50 * c.predicted_seconds));
    if (i > 0) CHECK(plan.candidates[i - 1].total_seconds <= c.total_seconds);
  }
}
