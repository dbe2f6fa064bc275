// Explain reads the kernel's byte traffic from its AST; on every csr variant it must agree with
// the planner's cost model (Cost::matrix_bytes / nnz). Both count each matrix array once and
// padded col_idx/values entries, so they agree to rounding: tolerance 1e-9 relative.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "formats/format.hpp"
#include "golden_plans.hpp"
#include "spmvc/tooling/explain.hpp"

namespace {

struct Explained {
  spmvc::tooling::ExplainReport report;
  double model_bytes_per_nonzero = 0;
};

Explained explain_plan(const spmvc::test::GoldenPlan& g) {
  const spmvc::CsrMatrix a = spmvc::gen::from_spec(g.spec);
  const spmvc::Profile profile = spmvc::inspect(a);
  const spmvc::Plan plan = spmvc::compiler::make_plan(profile, g.options);
  const spmvc::Encoded encoded = spmvc::compiler::encode(a, plan);
  const spmvc::KernelSource src = spmvc::codegen::generate(plan, encoded, profile);
  spmvc::tooling::ExplainOptions options;
  options.arch = "";  // the NVRTC report is checked once below
  options.shape = spmvc::tooling::MatrixShape{a.nrows, a.nnz(), encoded.array("values").count()};
  const spmvc::formats::Cost cost =
      spmvc::formats::find_format(plan.format).cost(profile, plan.params, plan.precision);
  return {spmvc::tooling::explain(src, options),
          cost.matrix_bytes / static_cast<double>(profile.nnz)};
}

}  // namespace

TEST_CASE("explain's bytes per nonzero equal the cost model's on every csr variant") {
  for (int t : {1, 4, 32}) {
    for (int v : {1, 2, 4}) {
      for (bool o64 : {false, true}) {
        for (auto p : {spmvc::Precision::f64, spmvc::Precision::f32, spmvc::Precision::f32_acc64}) {
          spmvc::test::GoldenPlan g{"sweep", "stencil27:n=5", {}};
          g.options.precision = p;
          g.options.csr = spmvc::test::csr_params(t, 1, true, o64, v);
          const Explained e = explain_plan(g);
          CAPTURE(e.report.kernel_name);
          const double value_bytes = p == spmvc::Precision::f64 ? 8 : 4;
          CHECK(e.report.nonzero_bytes == 4 + value_bytes);
          CHECK(e.report.row_bytes == (o64 ? 8 : 4));
          CHECK(std::abs(e.report.matrix_bytes_per_nonzero() - e.model_bytes_per_nonzero) <=
                1e-9 * e.model_bytes_per_nonzero);
        }
      }
    }
  }
}

TEST_CASE("explain names the parameters' roles and sees vector loads, loops and shuffles") {
  spmvc::test::GoldenPlan g{"v4", "stencil2d:n=12", {}};
  g.options.precision = spmvc::Precision::f32;
  g.options.csr = spmvc::test::csr_params(4, 2, true, false, 4);
  const auto r = explain_plan(g).report;
  REQUIRE(r.params.size() == 8);
  CHECK(r.params[0].role == "row count");
  CHECK(r.params[1].role == "row pointer (matrix, read per row)");
  CHECK(r.params[2].role == "column indices (matrix, read per nonzero)");
  CHECK(r.params[3].role == "values (matrix, read per nonzero)");
  CHECK(r.params[4].role == "x (input vector, gathered by column index)");
  CHECK(r.params[5].role == "y (output vector, written)");
  CHECK(r.launch_bounds == 256);
  CHECK(r.shuffles == 1);
  CHECK(r.atomics == 0);
  CHECK(r.shared.empty());
  const auto has = [&](const std::string& array, int bytes, bool per_nonzero, bool store) {
    return std::any_of(r.accesses.begin(), r.accesses.end(), [&](const auto& a) {
      return a.array == array && a.bytes == bytes && a.per_nonzero == per_nonzero &&
             a.store == store;
    });
  };
  CHECK(has("col_idx", 16, true, false));  // one uint4 per 4 column indices
  CHECK(has("values", 16, true, false));
  CHECK(has("x", 4, true, false));
  CHECK(has("row_ptr", 4, false, false));
  CHECK(has("y", 4, false, true));
  // group_sum over 4 lanes: offsets 2, 1.
  CHECK(std::any_of(r.loops.begin(), r.loops.end(), [](const auto& l) {
    return l.trip_count == 2 && l.where.find("group_sum") != std::string::npos;
  }));
  CHECK(std::count_if(r.loops.begin(), r.loops.end(),
                      [](const auto& l) { return l.per_nonzero; }) == 1);
}

TEST_CASE("explain reports NVRTC's resources") {
  const auto src = spmvc::test::generate_golden(spmvc::test::golden_plans()[0]);
  const auto r = spmvc::tooling::explain(src);
  REQUIRE(r.resources.has_value());
  CHECK(r.resources->registers > 0);
  CHECK(r.resources->spill_store_bytes == 0);
  CHECK(spmvc::tooling::to_report(r).find("NVRTC (sm_90)") != std::string::npos);
  CHECK(spmvc::tooling::to_json(r).find("\"registers\"") != std::string::npos);
}
