// cuSPARSE as a plan's engine (Engine::cusparse), on the CPU: when the planner hands the
// multiply to it, what the plan says, the caller's opt-out, and where it is refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "calibration.hpp"
#include "heuristics.hpp"
#include "spmvc/build.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/reorder.hpp"
#include "test_support.hpp"

using namespace spmvc;

namespace {

compiler::PlanOptions with_cusparse(Precision p, const char* use) {
  compiler::PlanOptions o;
  o.precision = p;
  o.gpu = "H100";
  o.cusparse = use;
  return o;
}

const Profile& graph() {
  static const Profile p = inspect(gen::rmat(16, 16), InspectDepth::rows);
  return p;
}

}  // namespace

TEST_CASE("cusparse: its prediction is the plain CSR bytes at the GPU's bandwidth, calibrated") {
  for (Precision p : {Precision::f64, Precision::f32}) {
    CAPTURE(std::string(to_string(p)));
    compiler::PlanOptions o = with_cusparse(p, "auto");
    const double calibrated = compiler::predict_cusparse(graph(), o);
    // Twice the bandwidth: the bytes' share halves, the launch stays.
    o.read_bandwidth = 2 * 3.06e12;
    const double faster = compiler::predict_cusparse(graph(), o);
    CHECK(faster < calibrated);
    CHECK(faster > 0.5 * calibrated);
    // Every multiply reads at least the values and columns once.
    const double bytes = static_cast<double>(graph().nnz) * (4 + value_bytes(p));
    CHECK(calibrated > bytes / 3.06e12);
  }
}

TEST_CASE("cusparse: each row costs its offset, its y value and kCusparseRowBytes of reading") {
  // ALG1's fixed cost a row (its bounds, its sum's reduction and store) beside the CSR bytes.
  CHECK(heuristics::kCusparseRowBytes > 0);
  for (Precision p : {Precision::f64, Precision::f32}) {
    CAPTURE(std::string(to_string(p)));
    compiler::PlanOptions o = with_cusparse(p, "auto");
    o.read_bandwidth = 3e12;
    Profile more_rows = graph();
    more_rows.nrows += 1'000'000;
    const double per_row =
        (compiler::predict_cusparse(more_rows, o) - compiler::predict_cusparse(graph(), o)) / 1e6;
    const double factor =
        compiler::time_factor(compiler::find_calibration(o.arch, o.gpu), "cusparse", p);
    CHECK(per_row ==
          doctest::Approx((4 + value_bytes(p) + heuristics::kCusparseRowBytes) / 3e12 * factor)
              .epsilon(1e-9));
  }
}

TEST_CASE("cusparse: never leaves the plan to the generated kernels; always takes it") {
  for (Precision p : {Precision::f64, Precision::f32}) {
    CAPTURE(std::string(to_string(p)));
    const Plan never = compiler::make_plan(graph(), with_cusparse(p, "never"));
    CHECK(never.engine == Engine::kernel);
    CHECK(never.cusparse_seconds == 0);
    CHECK(to_report(never).find("cusparse") == std::string::npos);

    const Plan always = compiler::make_plan(graph(), with_cusparse(p, "always"));
    REQUIRE(always.engine == Engine::cusparse);
    // It runs on a csr candidate's plain arrays (32-bit offsets, plain values).
    CHECK(always.format == "csr");
    const auto& csr = std::get<CsrParams>(always.params);
    CHECK(csr.values == 0);
    CHECK_FALSE(csr.offsets64);
    CHECK(always.predicted_seconds == doctest::Approx(always.cusparse_seconds));
    CHECK(always.why.find("cuSPARSE asked for") != std::string::npos);
    CHECK(to_report(always).find("engine: cusparse") != std::string::npos);
    CHECK(to_json(always).find("\"engine\": \"cusparse\"") != std::string::npos);

    // auto: cuSPARSE exactly where no generated candidate is predicted faster.
    const Plan chosen = compiler::make_plan(graph(), with_cusparse(p, "auto"));
    CHECK(chosen.cusparse_seconds == doctest::Approx(always.cusparse_seconds));
    const double best_generated = never.predicted_seconds;
    CHECK((chosen.engine == Engine::cusparse) == (chosen.cusparse_seconds < best_generated));
    if (chosen.engine == Engine::kernel) CHECK(chosen.format == never.format);
  }
}

TEST_CASE("cusparse: deterministic plans run CSR ALG2, weighed at its own cost") {
  for (Precision p : {Precision::f64, Precision::f32}) {
    CAPTURE(std::string(to_string(p)));
    const Plan alg1 = compiler::make_plan(graph(), with_cusparse(p, "always"));
    REQUIRE(alg1.engine == Engine::cusparse);
    CHECK(alg1.cusparse_algorithm == CusparseAlgorithm::csr_alg1);
    compiler::PlanOptions det = with_cusparse(p, "always");
    det.deterministic = true;
    const Plan alg2 = compiler::make_plan(graph(), det);
    REQUIRE(alg2.engine == Engine::cusparse);
    CHECK(alg2.cusparse_algorithm == CusparseAlgorithm::csr_alg2);
    // ALG2 is predicted slower than ALG1, by the suite's factor for the precision.
    const double factor =
        p == Precision::f64 ? heuristics::kCusparseAlg2Factor64 : heuristics::kCusparseAlg2Factor32;
    CHECK(factor > 1.0);
    CHECK(alg2.cusparse_seconds == doctest::Approx(alg1.cusparse_seconds * factor));
    const std::string json = to_json(alg2);
    const std::size_t key = json.find("\"cusparse_algorithm\"");
    REQUIRE(key != std::string::npos);
    CHECK(json.find("\"csr_alg2\"", key) == json.find('"', json.find(':', key)));
    CHECK(to_report(alg2).find("CSR ALG2, bitwise deterministic") != std::string::npos);
    // With "auto", a deterministic plan hands the multiply to cuSPARSE only where ALG2's
    // prediction beats every deterministic candidate, and then runs ALG2.
    det.cusparse = "auto";
    const Plan chosen = compiler::make_plan(graph(), det);
    if (chosen.engine == Engine::cusparse) {
      CHECK(chosen.cusparse_algorithm == CusparseAlgorithm::csr_alg2);
    } else {
      CHECK(chosen.predicted_seconds <= alg2.cusparse_seconds);
    }
  }
}

TEST_CASE("cusparse: not weighed for forced formats; refused with reasons where it cannot run") {
  // A forced format or parameters win over "always".
  compiler::PlanOptions forced = with_cusparse(Precision::f64, "always");
  forced.format = "csr_stream";
  CHECK(compiler::make_plan(graph(), forced).engine == Engine::kernel);
  // f32acc64: "always" is an error naming why.
  compiler::PlanOptions acc = with_cusparse(Precision::f32_acc64, "always");
  CHECK_THROWS_WITH_AS(compiler::make_plan(graph(), acc), doctest::Contains("f32acc64"),
                       InputError);
  // An unknown setting names the ones there are.
  CHECK_THROWS_WITH_AS(compiler::make_plan(graph(), with_cusparse(Precision::f64, "sometimes")),
                       doctest::Contains("auto, always or never"), InputError);
}

TEST_CASE("cusparse: the pipeline passes Options::cusparse and refuses it on a reordered matrix") {
  const CsrMatrix a = gen::rmat(12, 8);
  Options o;
  o.cusparse = "always";
  BuildTarget target;
  target.until = BuildStage::plan;
  CHECK(build(a, o, target).plan.engine == Engine::cusparse);
  o.cusparse = "never";
  CHECK(build(a, o, target).plan.engine == Engine::kernel);
  o.cusparse = "always";
  o.reorder = "rcm";
  CHECK_THROWS_WITH_AS(build(a, o, target), doctest::Contains("reordered"), InputError);
  // auto with a reordering the caller asked for: the kernels' row map is needed, so they run.
  o.cusparse = "auto";
  CHECK(build(a, o, target).plan.engine == Engine::kernel);
}

TEST_CASE("cusparse: an ordering the planner chose itself gives way to cuSPARSE") {
  // A grid with rows and columns renamed at random: reorder "auto" chooses RCM for it.
  const CsrMatrix grid = gen::from_spec("stencil27:n=30");
  Ordering shuffle;
  shuffle.name = "shuffle";
  shuffle.kind = PermutationKind::symmetric;
  shuffle.perm.resize(static_cast<std::size_t>(grid.nrows));
  std::iota(shuffle.perm.begin(), shuffle.perm.end(), 0);
  std::mt19937 rng(7);
  std::shuffle(shuffle.perm.begin(), shuffle.perm.end(), rng);
  const CsrMatrix a = permute(grid, shuffle);
  Options o;
  o.reorder = "auto";
  o.cusparse = "never";
  BuildTarget target;
  target.until = BuildStage::plan;
  const Build kernels = build(a, o, target);
  REQUIRE(kernels.map);  // the planner reorders it for its kernels
  CHECK(kernels.plan.reorder.find("rcm") != std::string::npos);
  // cuSPARSE asked for: the ordering is dropped, and says why; the Profile is the caller's.
  o.cusparse = "always";
  const Build b = build(a, o, target);
  CHECK(b.plan.engine == Engine::cusparse);
  CHECK_FALSE(b.map);
  CHECK_FALSE(b.reordered);
  CHECK(b.plan.reorder == "none");
  CHECK(b.plan.reorder_why.find("not used: cuSPARSE") != std::string::npos);
  CHECK(b.profile.x_sectors == inspect(a, InspectDepth::rows).x_sectors);
  CHECK(b.profile.x_sectors != kernels.profile.x_sectors);
}

TEST_CASE("cusparse: the device-array planner weighs it as the host planner does") {
  const CsrMatrix a = gen::rmat(16, 16);
  const test::HostDeviceCsr arrays(a);
  const DeviceCsr& d = arrays.view;
  const Profile profile = inspect(a, InspectDepth::row_lengths);
  BuildTarget target;
  target.gpu = "H100";
  for (Precision p : {Precision::f64, Precision::f32}) {
    CAPTURE(std::string(to_string(p)));
    Options o;
    o.precision = p;
    o.cusparse = "never";
    const Plan never = compiler::plan_device_csr(d, profile, o, target);
    CHECK(never.engine == Engine::kernel);
    o.cusparse = "always";
    const Plan always = compiler::plan_device_csr(d, profile, o, target);
    REQUIRE(always.engine == Engine::cusparse);
    CHECK(always.format == "csr");
    CHECK(std::get<CsrParams>(always.params).values == 0);
    CHECK(always.why.find("caller's CSR") != std::string::npos);
    o.cusparse = "auto";
    const Plan chosen = compiler::plan_device_csr(d, profile, o, target);
    CHECK(chosen.cusparse_seconds == doctest::Approx(always.cusparse_seconds));
    CHECK((chosen.engine == Engine::cusparse) ==
          (chosen.cusparse_seconds < never.predicted_seconds));
    // Deterministic plans hand the multiply to cuSPARSE's ALG2, never its ALG1.
    o.deterministic = true;
    const Plan det = compiler::plan_device_csr(d, profile, o, target);
    if (det.engine == Engine::cusparse)
      CHECK(det.cusparse_algorithm == CusparseAlgorithm::csr_alg2);
    CHECK(det.cusparse_seconds > always.cusparse_seconds);
    o.cusparse = "always";
    const Plan det_always = compiler::plan_device_csr(d, profile, o, target);
    REQUIRE(det_always.engine == Engine::cusparse);
    CHECK(det_always.cusparse_algorithm == CusparseAlgorithm::csr_alg2);
  }
}
