// Measure mode: the model's best few candidates are timed on the GPU, the fastest is kept and
// remembered on disk by matrix fingerprint. Skipped without a GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

using namespace spmvc;

namespace {

bool have_device() {
  if (device_available()) return true;
  test::mark_device_missing();
  return false;
}

double error_of(const CsrMatrix& a, const Operator& op) {
  const std::vector<double> x = codegen::test_vector(a.ncols, op.plan().precision);
  std::vector<double> y(static_cast<std::size_t>(a.nrows)), ref(y.size());
  op.apply_host(x, y);
  compiler::csr_reference_spmv(a, x, ref);
  return compiler::relative_error(y, ref);
}

std::size_t files_in(const std::filesystem::path& dir) {
  if (!std::filesystem::exists(dir)) return 0;
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.is_regular_file() ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("gpu: measure mode times candidates, keeps the fastest and remembers it") {
  if (!have_device()) return;
  test::TempDir cache;
  for (const char* spec : {"stencil27:n=40", "rmat:scale=15,ef=16"}) {
    CAPTURE(spec);
    const CsrMatrix a = gen::from_spec(spec);
    Options o;
    o.planner = PlannerMode::measure;
    o.cache_dir = cache.path().string();
    const Operator first = compile(a, o);
    CHECK(error_of(a, first) <= 1e-12);
    CHECK(first.plan().why.find("measured fastest of the model's best candidates") == 0);
    CHECK(first.plan().why.find("csr") != std::string::npos);  // the fallback was timed
    // cuSPARSE's CSR SpMV was timed beside them; whichever won, the operator says who multiplies.
    CHECK(first.plan().why.find("cusparse [csr alg1]") != std::string::npos);
    CHECK(first.timings().engine == to_string(first.plan().engine));
    CHECK(first.timings().measure > 0);

    const Operator second = compile(a, o);
    CHECK(second.plan().why.find("measured fastest earlier") == 0);
    CHECK(second.plan().format == first.plan().format);
    CHECK(describe(second.plan().params) == describe(first.plan().params));
    CHECK(second.timings().measure == 0);
    CHECK(second.plan().engine == first.plan().engine);
    CHECK(second.timings().engine == first.timings().engine);
    CHECK(error_of(a, second) <= 1e-12);
  }
  CHECK(files_in(cache.path() / "decisions") == 2);
}

TEST_CASE("gpu: measure mode keeps a decision per ordering and vector order") {
  if (!have_device()) return;
  // One matrix measured unordered, under rcm with renumbered columns, and so in the plan's
  // order: three decisions, each found again only by its own options.
  test::TempDir cache;
  const CsrMatrix a = gen::from_spec("rmat:scale=13,ef=12");
  Options o;
  o.planner = PlannerMode::measure;
  o.cache_dir = cache.path().string();
  Options rcm = o;
  rcm.reorder = "rcm";
  rcm.renumber_columns = true;
  Options plan = rcm;
  plan.plan_order = true;
  for (const Options* options : {&o, &rcm, &plan}) {
    const Operator first = compile(a, *options);
    CHECK(first.plan().why.find("measured fastest earlier") == std::string::npos);
  }
  CHECK(files_in(cache.path() / "decisions") == 3);
  for (const Options* options : {&o, &rcm, &plan}) {
    const Operator again = compile(a, *options);
    CHECK(again.plan().why.find("measured fastest earlier") != std::string::npos);
    CHECK(again.plan_order() == options->plan_order);
  }
}

TEST_CASE(
    "gpu: measure mode keeps cuSPARSE where asked, remembers it, and leaves it out on never") {
  if (!have_device()) return;
  test::TempDir cache;
  const CsrMatrix a = gen::from_spec("rmat:scale=14,ef=16");
  Options o;
  o.planner = PlannerMode::measure;
  o.cache_dir = cache.path().string();
  o.cusparse = "always";  // the one candidate: a deterministic pick of cuSPARSE
  const Operator first = compile(a, o);
  REQUIRE(first.plan().engine == Engine::cusparse);
  CHECK(first.plan().format == "csr");
  CHECK(first.timings().engine == "cusparse");
  CHECK(first.plan().why.find("cuSPARSE, no generated candidate faster") != std::string::npos);
  CHECK(error_of(a, first) <= 1e-12);
  const Operator second = compile(a, o);
  CHECK(second.plan().engine == Engine::cusparse);
  CHECK(second.timings().engine == "cusparse");
  CHECK(second.plan().why.find("cuSPARSE's CSR SpMV") != std::string::npos);
  CHECK(second.timings().measure == 0);
  CHECK(error_of(a, second) <= 1e-12);
  // never: generated kernels only, and a decision of its own (the option is in the key).
  o.cusparse = "never";
  const Operator kernels = compile(a, o);
  CHECK(kernels.plan().engine == Engine::kernel);
  CHECK(kernels.timings().engine == "kernel");
  CHECK(kernels.plan().why.find("cusparse [") == std::string::npos);
  CHECK(kernels.timings().measure > 0);
  // Deterministic: cuSPARSE's ALG2 is timed beside the deterministic candidates, and runs
  // where it is kept.
  o.cusparse = "auto";
  o.deterministic = true;
  const Operator det = compile(a, o);
  CHECK(det.plan().why.find("cuSPARSE not timed") == std::string::npos);
  if (det.plan().engine == Engine::cusparse)
    CHECK(det.plan().cusparse_algorithm == CusparseAlgorithm::csr_alg2);
  CHECK(error_of(a, det) <= 1e-12);
  CHECK(files_in(cache.path() / "decisions") == 3);
}

namespace {

// y's error within what the plan promises: its rounding's bound, or full precision's.
void check_within_plan(const CsrMatrix& a, const Operator& op) {
  const std::vector<double> x = codegen::test_vector(a.ncols, op.plan().precision);
  std::vector<double> y(static_cast<std::size_t>(a.nrows)), ref(y.size());
  op.apply_host(x, y);
  compiler::csr_reference_spmv(a, x, ref);
  const compiler::MixedError err = compiler::mixed_error(a, x, y, ref);
  CHECK(err.componentwise <= compiler::mixed_error_tolerance(op.plan()));
}

// The same decision, taken again from the decision file.
void check_remembered(const Operator& first, const Operator& second) {
  CHECK(second.plan().why.find("measured fastest earlier") != std::string::npos);
  CHECK(second.timings().measure == 0);
  CHECK(second.plan().engine == first.plan().engine);
  CHECK(describe(second.plan().params) == describe(first.plan().params));
  CHECK(second.plan().rounding.has_value() == first.plan().rounding.has_value());
  CHECK(second.plan().mixed_fallback.has_value() == first.plan().mixed_fallback.has_value());
}

}  // namespace

TEST_CASE("gpu: measure mode with mixed precision times the full-precision best beside it") {
  if (!have_device()) return;
  test::TempDir cache;
  // Inexact values on a Kronecker graph, where cuSPARSE and the mixed-precision pick are close.
  CsrMatrix a = gen::from_spec("rmat:scale=16,ef=16");
  for (std::size_t k = 0; k < a.values.size(); ++k)
    a.values[k] = 1.0 + std::sin(0.37 * static_cast<double>(k)) / 3;
  Options o;
  o.planner = PlannerMode::measure;
  o.cache_dir = cache.path().string();
  o.mixed_precision = MixedPrecision::f32;
  const Operator first = compile(a, o);
  const Plan& p = first.plan();
  CAPTURE(p.why);
  // cuSPARSE, full precision, was timed beside the mixed-precision candidates.
  CHECK(p.why.find("cusparse [csr alg1]") != std::string::npos);
  if (p.mixed_fallback) {
    // Measured faster than every mixed-precision timing: kept, exact, and saying so.
    CHECK(p.mixed_fallback->measured);
    CHECK(p.mixed_fallback->full_seconds < p.mixed_fallback->mixed_seconds);
    CHECK_FALSE(p.mixed_fallback->mixed_best.empty());
    CHECK_FALSE(p.rounding.has_value());
    CHECK_FALSE(compiler::is_mixed_candidate(p.params));
    CHECK(p.why.find("mixed precision f32 was asked for, but the full-precision") == 0);
    CHECK(error_of(a, first) <= 1e-12);
  } else {
    CHECK(p.engine == Engine::kernel);
    CHECK(compiler::is_mixed_candidate(p.params));
    CHECK(p.rounding.has_value());
  }
  check_within_plan(a, first);
  const Operator second = compile(a, o);
  check_remembered(first, second);
  check_within_plan(a, second);
  // Insisting: the mixed-precision candidates only, cuSPARSE not timed, a decision of its own.
  o.mixed_fallback = false;
  const Operator insisted = compile(a, o);
  CHECK(insisted.plan().engine == Engine::kernel);
  CHECK(insisted.plan().rounding.has_value());
  CHECK_FALSE(insisted.plan().mixed_fallback.has_value());
  CHECK(insisted.plan().why.find("cuSPARSE not timed") != std::string::npos);
  CHECK(insisted.timings().measure > 0);
  check_within_plan(a, insisted);
  CHECK(files_in(cache.path() / "decisions") == 2);
}

TEST_CASE("gpu: measure mode keeps full precision where no mixed candidate applies") {
  if (!have_device()) return;
  test::TempDir cache;
  // Values past fp32's range (3.4e38), too many for a table: only full-precision candidates
  // apply (1e39, not more: the error norm squares the products).
  CsrMatrix a = gen::from_spec("stencil27:n=40");
  for (std::size_t k = 0; k < a.values.size(); ++k)
    a.values[k] = 1e39 * (1.0 + std::sin(0.37 * static_cast<double>(k)) / 3);
  Options o;
  o.planner = PlannerMode::measure;
  o.cache_dir = cache.path().string();
  o.mixed_precision = MixedPrecision::f32;
  const Operator first = compile(a, o);
  REQUIRE(first.plan().mixed_fallback.has_value());
  CHECK(first.plan().mixed_fallback->measured);
  CHECK(first.plan().mixed_fallback->mixed_best.empty());
  CHECK_FALSE(first.plan().rounding.has_value());
  CHECK_FALSE(compiler::is_mixed_candidate(first.plan().params));
  CHECK(first.timings().measure > 0);
  CHECK(error_of(a, first) <= 1e-12);
  // Remembered as a full-precision decision: planned without rounding again.
  const Operator second = compile(a, o);
  check_remembered(first, second);
  CHECK(second.plan().why.find("mixed precision f32 was asked for") == 0);
  CHECK(error_of(a, second) <= 1e-12);
}
