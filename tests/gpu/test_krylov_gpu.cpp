// `spmvc bench --solve`'s solver on the GPU: CG on an SPD system and BiCGStab on a nonsymmetric
// one, each through spmvc's operator and through cuSPARSE, converge to x_true in about the same
// number of iterations; breakdowns stop with their reason and a finite x; CG run wholly in a
// reordered operator's own order (Options::plan_order, as `bench --solve --plan-order` runs it)
// ends at the caller's solution. Skipped without a GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "gpu_support.hpp"
#include "spmvc/bench/cusparse.hpp"
#include "spmvc/bench/krylov.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/reorder.hpp"
#include "spmvc/spmvc.hpp"

using namespace spmvc;
using namespace spmvc::bench;
using test::have_device;

namespace {

// 2D convection-diffusion on an n x n grid, 5-point upwind: 4 on the diagonal, -1 - c to the
// west and south, -1 + c to the east and north. Nonsymmetric for c != 0, an M-matrix for
// 0 <= c < 1, so BiCGStab converges without a preconditioner.
CsrMatrix convection_diffusion(std::int64_t n, double c) {
  CsrMatrix a;
  a.nrows = a.ncols = n * n;
  a.row_ptr = {0};
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      auto add = [&](std::int64_t ii, std::int64_t jj, double v) {
        if (ii < 0 || jj < 0 || ii >= n || jj >= n) return;
        a.col_idx.push_back(static_cast<std::int32_t>(ii * n + jj));
        a.values.push_back(v);
      };
      add(i - 1, j, -1 - c);
      add(i, j - 1, -1 - c);
      add(i, j, 4);
      add(i, j + 1, -1 + c);
      add(i + 1, j, -1 + c);
      a.row_ptr.push_back(a.nnz());
    }
  }
  return a;
}

struct Outcome {
  SolveResult result;
  SolveAccuracy accuracy;
};

// Solves A x = A x_true with `method` through spmvc's operator and through cuSPARSE CSR ALG1, on
// one solver (so everything but the multiply is shared).
std::pair<Outcome, Outcome> solve_both(const CsrMatrix& a, KrylovMethod method, Precision p,
                                       std::int64_t iterations, double tol) {
  const std::vector<double> x_true = codegen::test_vector(a.ncols, p);
  std::vector<double> b(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x_true, b);
  KrylovSolver solver(method, a.nrows, p, b);
  Options o;
  o.precision = p;
  o.disk_cache = false;
  const Operator op = compile(a, o);
  CusparseCsr cusparse(a, p);
  cusparse.prepare(CusparseAlg::csr_alg1, solver.spmv_input(), solver.spmv_output());
  auto run = [&](const DeviceSpmv& spmv) {
    Outcome out;
    out.result = solver.solve(spmv, iterations, tol);
    out.accuracy = solve_accuracy(a, out.result.x, b, x_true);
    return out;
  };
  Outcome ours = run([&](const void* x, void* y) { op.apply(x, y); });
  Outcome theirs = run([&](const void* x, void* y) {
    cusparse.spmv(CusparseAlg::csr_alg1, x, y, 1.0, 0.0, nullptr);
  });
  return {ours, theirs};
}

}  // namespace

TEST_CASE("krylov: CG on an SPD stencil converges to x_true through both SpMVs") {
  if (!have_device()) return;
  const CsrMatrix a = gen::stencil_2d_5pt(40, 40);
  // fp32 stops on its recurrence residual; the true one, in fp64 against the fp64 b, lags it.
  struct Case {
    Precision p;
    double tol, max_residual, max_error;
    std::int64_t margin;
  };
  for (const Case& c :
       {Case{Precision::f64, 1e-11, 2e-11, 1e-8, 2}, Case{Precision::f32, 1e-5, 1e-3, 1e-2, 8}}) {
    CAPTURE(to_string(c.p));
    const auto [ours, theirs] = solve_both(a, KrylovMethod::cg, c.p, 5000, c.tol);
    for (const Outcome* o : {&ours, &theirs}) {
      CHECK(o->result.stop == SolveStop::converged);
      CHECK(o->result.iterations > 10);
      CHECK(o->result.iterations < 5000);
      CHECK(o->accuracy.relative_residual <= c.max_residual);
      CHECK(o->accuracy.relative_error <= c.max_error);
      CHECK(o->result.seconds > 0);
    }
    CHECK(std::llabs(ours.result.iterations - theirs.result.iterations) <= c.margin);
  }
}

TEST_CASE("krylov: BiCGStab on a nonsymmetric convection-diffusion matrix converges through both") {
  if (!have_device()) return;
  const CsrMatrix a = convection_diffusion(40, 0.4);
  // fp32 stops on its recurrence residual; the true one, in fp64 against the fp64 b, lags it.
  struct Case {
    Precision p;
    double tol, max_residual, max_error;
    std::int64_t margin;
  };
  for (const Case& c :
       {Case{Precision::f64, 1e-11, 2e-11, 1e-8, 3}, Case{Precision::f32, 1e-5, 1e-3, 1e-2, 10}}) {
    CAPTURE(to_string(c.p));
    const auto [ours, theirs] = solve_both(a, KrylovMethod::bicgstab, c.p, 5000, c.tol);
    for (const Outcome* o : {&ours, &theirs}) {
      CHECK(o->result.stop == SolveStop::converged);
      CHECK(o->result.iterations > 5);
      CHECK(o->accuracy.relative_residual <= c.max_residual);
      CHECK(o->accuracy.relative_error <= c.max_error);
    }
    CHECK(std::llabs(ours.result.iterations - theirs.result.iterations) <= c.margin);
  }
}

TEST_CASE("krylov: tol 0 runs exactly the iterations asked, the same x through both SpMVs") {
  if (!have_device()) return;
  const CsrMatrix a = gen::stencil_2d_5pt(40, 40);
  for (std::int64_t n : {1, 9, 10, 11, 37}) {  // around the stop-code checks every 10
    CAPTURE(n);
    const auto [ours, theirs] = solve_both(a, KrylovMethod::cg, Precision::f64, n, 0);
    CHECK(ours.result.stop == SolveStop::iterations);
    CHECK(ours.result.iterations == n);
    CHECK(theirs.result.iterations == n);
    // Only the summation order of the multiply differs: a handful of iterations stay close.
    CHECK(compiler::relative_error(ours.result.x, theirs.result.x) < 1e-10);
  }
}

TEST_CASE("krylov: a breakdown stops the solve with its reason and a finite x") {
  if (!have_device()) return;
  // Negative definite: CG's first p'Ap is negative.
  CsrMatrix neg = gen::stencil_2d_5pt(8, 8);
  for (double& v : neg.values) v = -v;
  const auto [cg_ours, cg_theirs] = solve_both(neg, KrylovMethod::cg, Precision::f64, 100, 1e-10);
  for (const Outcome* o : {&cg_ours, &cg_theirs}) {
    CHECK(o->result.stop == SolveStop::curvature);
    CHECK(o->result.iterations == 0);
    CHECK(std::all_of(o->result.x.begin(), o->result.x.end(), [](double v) { return v == 0; }));
  }
  // Skew-symmetric: (r0, A r0) = 0 for r0 = b, so BiCGStab's first alpha has no pivot.
  CsrMatrix skew;
  skew.nrows = skew.ncols = 64;
  skew.row_ptr = {0};
  for (std::int32_t i = 0; i < 64; ++i) {
    skew.col_idx.push_back(i ^ 1);
    skew.values.push_back(i % 2 == 0 ? 1.0 : -1.0);
    skew.row_ptr.push_back(skew.nnz());
  }
  const auto [bi_ours, bi_theirs] =
      solve_both(skew, KrylovMethod::bicgstab, Precision::f64, 100, 1e-10);
  for (const Outcome* o : {&bi_ours, &bi_theirs}) {
    CHECK(o->result.stop == SolveStop::rho_breakdown);
    CHECK(o->result.iterations == 0);
    CHECK(std::all_of(o->result.x.begin(), o->result.x.end(),
                      [](double v) { return std::isfinite(v); }));
  }
}

TEST_CASE("krylov: CG wholly in the plan's order ends at the caller's solution") {
  if (!have_device()) return;
  // A 2D stencil with its unknowns shuffled: RCM brings it back to a band, so the plan's order is
  // far from the caller's and a solve that mixed the two orders would not converge to x_true.
  const CsrMatrix grid = gen::stencil_2d_5pt(40, 40);
  Ordering shuffle{"shuffle", PermutationKind::symmetric, {}, 0, ""};
  shuffle.perm.resize(static_cast<std::size_t>(grid.nrows));
  std::iota(shuffle.perm.begin(), shuffle.perm.end(), 0);
  std::shuffle(shuffle.perm.begin(), shuffle.perm.end(), std::mt19937(7));
  const CsrMatrix a = permute(grid, shuffle);
  const std::vector<double> x_true = codegen::test_vector(a.ncols, Precision::f64);
  std::vector<double> b(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x_true, b);

  Options o;
  o.disk_cache = false;
  o.reorder = "rcm";
  o.renumber_columns = true;
  o.plan_order = true;
  const Operator op = compile(a, o);
  REQUIRE(op.plan_order());
  const std::span<const std::int32_t> order = op.plan_rows();
  REQUIRE(std::ranges::equal(order, op.plan_columns()));
  REQUIRE(!std::is_sorted(order.begin(), order.end()));  // RCM moved the rows
  std::vector<double> b_plan(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) b_plan[i] = b[static_cast<std::size_t>(order[i])];

  KrylovSolver in_plan(KrylovMethod::cg, a.nrows, Precision::f64, b_plan);
  const SolveResult r = in_plan.solve([&](const void* x, void* y) { op.apply(x, y); }, 5000, 1e-11);
  CHECK(r.stop == SolveStop::converged);
  std::vector<double> x(r.x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[static_cast<std::size_t>(order[i])] = r.x[i];
  const SolveAccuracy acc = solve_accuracy(a, x, b, x_true);
  CHECK(acc.relative_residual <= 2e-11);
  CHECK(acc.relative_error <= 1e-8);
  // The plan's order renames the unknowns only: CG takes the iterations it takes in the caller's.
  const auto [caller, cusparse] = solve_both(a, KrylovMethod::cg, Precision::f64, 5000, 1e-11);
  CHECK(caller.result.stop == SolveStop::converged);
  CHECK(std::llabs(r.iterations - caller.result.iterations) <= 2);
  // Solved in the caller's order the same vectors would not do: the plan's b is not b.
  CHECK(compiler::relative_error(b_plan, b) > 0.1);
}
