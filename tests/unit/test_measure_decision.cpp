// Measure mode's rules on the CPU (runtime/measure_decision.hpp): the decision record, where
// cuSPARSE's CSR SpMV is timed beside the generated candidates, and which timing is kept.
#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "measure_decision.hpp"
#include "spmvc/build.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"

using namespace spmvc;
using runtime::MeasuredDecision;
using runtime::MeasuredTime;

namespace {

// What compile() has in measure mode before timing: the pipeline run up to the plan.
struct Planned {
  Build build;
  compiler::PlanOptions plan_options;
};

Planned plan_for(const CsrMatrix& a, const Options& o) {
  BuildTarget target;
  target.gpu = "H100";
  target.until = BuildStage::plan;
  return {spmvc::build(a, o, target), compiler::plan_options(o, target)};
}

std::optional<std::string> refusal(const CsrMatrix& a, const Options& o) {
  const Planned p = plan_for(a, o);
  return runtime::measure_cusparse_refusal(o, p.build.plan, p.build.profile, p.plan_options);
}

const CsrMatrix& graph() {
  static const CsrMatrix a = gen::rmat(12, 8);
  return a;
}

}  // namespace

TEST_CASE("measure decision: the record round-trips kernel and cuSPARSE picks") {
  FormatParams csr = default_params("csr");
  set_params(csr, "threads_per_row=4,vector_width=2");
  FormatParams stream = default_params("csr_stream");
  set_params(stream, "values=1");
  for (const MeasuredDecision& d :
       {MeasuredDecision{csr, Engine::cusparse}, MeasuredDecision{csr, Engine::kernel},
        MeasuredDecision{stream, Engine::kernel}}) {
    const std::string text = runtime::decision_text(d);
    CAPTURE(text);
    CHECK(text.find(d.engine == Engine::cusparse ? "engine cusparse" : "engine kernel") !=
          std::string::npos);
    const std::optional<MeasuredDecision> back = runtime::parse_decision(text);
    REQUIRE(back);
    CHECK(back->engine == d.engine);
    CHECK(format_of(back->params) == format_of(d.params));
    CHECK(describe(back->params) == describe(d.params));
  }
}

TEST_CASE("measure decision: a damaged or foreign record is measured again, never trusted") {
  FormatParams csr = default_params("csr");
  const std::string good = runtime::decision_text({csr, Engine::cusparse});
  REQUIRE(runtime::parse_decision(good));
  // The first version's record (no engine line), a truncated one, an unknown engine, an
  // unknown format or parameter, and extra lines.
  CHECK_FALSE(runtime::parse_decision("csr\n" + to_assignments(csr) + "\n"));
  CHECK_FALSE(runtime::parse_decision(good.substr(0, good.size() / 2)));
  CHECK_FALSE(runtime::parse_decision("csr\n" + to_assignments(csr) + "\nengine magma\n"));
  CHECK_FALSE(runtime::parse_decision("toy\n\nengine kernel\n"));
  CHECK_FALSE(runtime::parse_decision("csr\nwarp_speed=9\nengine kernel\n"));
  CHECK_FALSE(runtime::parse_decision(good + "more\n"));
  CHECK_FALSE(runtime::parse_decision(""));
  // cuSPARSE reads plain CSR: a cuSPARSE record of another format or of coded values is
  // not trusted.
  CHECK_FALSE(runtime::parse_decision(
      runtime::decision_text({default_params("csr_stream"), Engine::cusparse})));
  FormatParams coded = csr;
  set_params(coded, "values=1");
  CHECK_FALSE(runtime::parse_decision(runtime::decision_text({coded, Engine::cusparse})));
  CHECK(runtime::parse_decision(runtime::decision_text({coded, Engine::kernel})));
}

TEST_CASE("measure decision: cuSPARSE is timed where the model planner would weigh it") {
  Options o;
  CHECK_FALSE(refusal(graph(), o));
  o.precision = Precision::f32;
  CHECK_FALSE(refusal(graph(), o));
  // Whatever the model planner picked, generated or cuSPARSE, cuSPARSE is timed.
  o.cusparse = "always";
  CHECK(plan_for(graph(), o).build.plan.engine == Engine::cusparse);
  CHECK_FALSE(refusal(graph(), o));
  // Deterministic: cuSPARSE's ALG2 is the one timed.
  o.deterministic = true;
  CHECK_FALSE(refusal(graph(), o));
  CHECK(plan_for(graph(), o).build.plan.cusparse_algorithm == CusparseAlgorithm::csr_alg2);
}

TEST_CASE("measure decision: cuSPARSE is not timed where the model planner refuses it") {
  const auto refused = [](const Options& o, const char* says) {
    const std::optional<std::string> why = refusal(graph(), o);
    REQUIRE(why);
    CHECK(why->find(says) != std::string::npos);
  };
  Options o;
  o.cusparse = "never";
  refused(o, "never");
  o = Options{};
  o.precision = Precision::f32_acc64;
  refused(o, "f32acc64");
  // Mixed precision insisted on: nothing full-precision is timed. Weighed against full
  // precision (the default), cuSPARSE is the full-precision plan measure mode times.
  o = Options{};
  o.mixed_precision = MixedPrecision::f32;
  o.mixed_fallback = false;
  refused(o, "mixed precision insisted on");
  o.mixed_fallback = true;
  CHECK_FALSE(refusal(graph(), o));
  o = Options{};
  o.format = "csr_stream";
  refused(o, "format was forced (csr_stream)");
  o = Options{};
  o.reorder = "rcm";
  refused(o, "caller asked for an ordering (rcm)");
  o = Options{};
  o.ordering = compute_ordering(graph(), "rcm", {});
  refused(o, "caller asked for an ordering");
  // Plain csr arrays are what cuSPARSE reads: a model plan without such a candidate has none.
  Planned p = plan_for(graph(), Options{});
  for (Candidate& c : p.build.plan.candidates)
    if (c.format == "csr") c.applicable = false;
  const std::optional<std::string> why =
      runtime::measure_cusparse_refusal(Options{}, p.build.plan, p.build.profile, p.plan_options);
  REQUIRE(why);
  CHECK(why->find("no plain-valued csr candidate") != std::string::npos);
}

TEST_CASE("measure decision: the fastest is kept, cuSPARSE where nothing beats it") {
  const std::vector<MeasuredTime> generated_faster = {
      {Engine::kernel, 12.0}, {Engine::kernel, 9.5}, {Engine::cusparse, 10.0}};
  CHECK(runtime::measured_winner(generated_faster) == 1);
  const std::vector<MeasuredTime> cusparse_faster = {
      {Engine::kernel, 12.0}, {Engine::kernel, 10.5}, {Engine::cusparse, 10.0}};
  CHECK(runtime::measured_winner(cusparse_faster) == 2);
  // A tie: a generated kernel must beat cuSPARSE to be kept, wherever cuSPARSE was timed.
  const std::vector<MeasuredTime> tie_after = {{Engine::kernel, 10.0}, {Engine::cusparse, 10.0}};
  CHECK(runtime::measured_winner(tie_after) == 1);
  const std::vector<MeasuredTime> tie_before = {{Engine::cusparse, 10.0}, {Engine::kernel, 10.0}};
  CHECK(runtime::measured_winner(tie_before) == 0);
  // Among generated kernels a tie keeps the model's order.
  const std::vector<MeasuredTime> kernels = {{Engine::kernel, 8.0}, {Engine::kernel, 8.0}};
  CHECK(runtime::measured_winner(kernels) == 0);
  // The rule measure mode applies as it goes (the newest timing replaces the kept one only
  // where it wins over everything so far) ends where the whole list's winner is.
  std::vector<MeasuredTime> so_far;
  std::size_t kept = 0;
  for (const MeasuredTime& t : cusparse_faster) {
    so_far.push_back(t);
    if (runtime::measured_winner(so_far) == so_far.size() - 1) kept = so_far.size() - 1;
  }
  CHECK(kept == runtime::measured_winner(cusparse_faster));
}

TEST_CASE("measure decision: no timing, or a time that is not one, is an error naming it") {
  CHECK_THROWS_WITH_AS(runtime::measured_winner({}), doctest::Contains("no candidate was timed"),
                       InputError);
  const std::vector<MeasuredTime> bad = {{Engine::kernel, 5.0}, {Engine::cusparse, NAN}};
  CHECK_THROWS_WITH_AS(runtime::measured_winner(bad),
                       doctest::Contains("candidate 1 (cusparse) has time nan us"), InputError);
  const std::vector<MeasuredTime> zero = {{Engine::kernel, 0.0}};
  CHECK_THROWS_WITH_AS(runtime::measured_winner(zero), doctest::Contains("candidate 0 (kernel)"),
                       InputError);
}
