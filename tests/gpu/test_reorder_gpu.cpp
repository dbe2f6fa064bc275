// Reordering behind the operator: every ordering, with every format, gives y in the caller's
// order (the row map inside the kernels; x gathered when columns are renumbered). Skipped
// without a GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <random>

#include "formats/format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/reorder.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

using namespace spmvc;

namespace {

bool have_device() {
  if (device_available()) return true;
  test::mark_device_missing();
  return false;
}

// y = alpha*A*x + beta*y0 through `op` against the unpermuted host reference.
double error_of(const CsrMatrix& a, const Operator& op, double beta) {
  const Precision p = op.plan().precision;
  const std::vector<double> x = codegen::test_vector(a.ncols, p);
  std::vector<double> y0(static_cast<std::size_t>(a.nrows));
  for (std::size_t i = 0; i < y0.size(); ++i) y0[i] = 0.5 - 0.125 * static_cast<double>(i % 9);
  std::vector<double> y = y0, ref = y0;
  if (beta == 0.0) std::fill(y.begin(), y.end(), std::numeric_limits<double>::quiet_NaN());
  op.apply_host(x, y, 1.5, beta);
  compiler::csr_reference_spmv(a, x, ref, 1.5, beta);
  return compiler::relative_error(y, ref);
}

double tolerance(Precision p) { return compiler::result_tolerance(p); }

}  // namespace

TEST_CASE("gpu: reorder: every ordering with the planner's format, columns kept or renumbered") {
  if (!have_device()) return;
  for (const char* spec : {"stencil2d:n=120", "rmat:scale=13,ef=12", "elasticity:n=8"}) {
    const CsrMatrix a = gen::from_spec(spec);
    for (const std::string& name : ordering_names()) {
      for (bool renumber : {false, true}) {
        for (Precision p : {Precision::f64, Precision::f32}) {
          CAPTURE(spec);
          CAPTURE(name);
          CAPTURE(renumber);
          CAPTURE(to_string(p));
          Options o;
          o.precision = p;
          o.disk_cache = false;
          o.reorder = name;
          o.renumber_columns = renumber;
          const Operator op = compile(a, o);
          CHECK(op.plan().reorder.rfind(name, 0) == 0);
          CHECK(error_of(a, op, 0.0) <= tolerance(p));
          CHECK(error_of(a, op, -0.5) <= tolerance(p));
          // The columns alone (rows kept, y written in place), where the ordering is symmetric.
          if (!renumber || !ordering_needs_square(name)) continue;
          o.keep_row_order = true;
          const Operator alone = compile(a, o);
          CHECK(alone.plan().reorder == name + " (columns)");
          CHECK(error_of(a, alone, 0.0) <= tolerance(p));
          CHECK(error_of(a, alone, -0.5) <= tolerance(p));
        }
      }
    }
  }
}

TEST_CASE("gpu: reorder: every format under every ordering") {
  if (!have_device()) return;
  // Elasticity has dense 3x3 blocks, so the block formats apply too; a format that cannot
  // implement the unordered matrix is left out (its own tests cover why).
  const CsrMatrix a = gen::from_spec("elasticity:n=8");
  for (const formats::FormatUnit* unit : formats::registry()) {
    compiler::PlanOptions po;
    po.format = std::string(unit->name());
    try {
      (void)compiler::make_plan(inspect(a), po);
    } catch (const InputError& e) {
      MESSAGE(unit->name() << " does not apply: " << e.detail());
      continue;
    }
    for (const std::string& name : ordering_names()) {
      for (bool renumber : {false, true}) {
        CAPTURE(unit->name());
        CAPTURE(name);
        CAPTURE(renumber);
        Options o;
        o.format = std::string(unit->name());
        o.disk_cache = false;
        o.reorder = name;
        o.renumber_columns = renumber;
        // An ordering can take a block structure away (rows moved apart): then the format
        // says so, which is its answer, not a failure.
        std::optional<Operator> op;
        try {
          op.emplace(compile(a, o));
        } catch (const InputError& e) {
          MESSAGE(unit->name() << " under " << name << ": " << e.detail());
          continue;
        }
        CHECK(error_of(a, *op, 0.0) <= 1e-12);
        CHECK(error_of(a, *op, 2.0) <= 1e-12);
      }
    }
  }
}

TEST_CASE("gpu: reorder: public matrices with at least 10k nonzeros, every ordering") {
  if (!have_device()) return;
  int tested = 0;
  // METIS and AMD take seconds on the largest; the bound keeps the test in minutes.
  for (const auto& [name, path] : test::public_matrices(10'000, 3'000'000)) {
    const CsrMatrix a = read_matrix_market(path);
    for (const std::string& ordering : ordering_names()) {
      if (ordering == "none") continue;
      // Square only (the error tests cover the message).
      if (a.nrows != a.ncols && ordering_needs_square(ordering)) continue;
      CAPTURE(name);
      CAPTURE(ordering);
      Options o;
      o.disk_cache = false;
      o.reorder = ordering;
      const Operator op = compile(a, o);
      CHECK(error_of(a, op, 0.0) <= 1e-12);
    }
    ++tested;
  }
  MESSAGE("public matrices tested: " << tested);
}

TEST_CASE("gpu: reorder auto: a scattered grid is reordered behind the operator, a local one not") {
  if (!have_device()) return;
  // 27 nonzeros per row: enough that renumbered columns repay their gather of x (the ordering
  // choice needs 6 or more; the 5-point stencil stays in its order whatever its numbering).
  const CsrMatrix grid = gen::from_spec("stencil27:n=40");
  Ordering shuffle;
  shuffle.name = "shuffle";
  shuffle.kind = PermutationKind::symmetric;
  shuffle.perm.resize(static_cast<std::size_t>(grid.nrows));
  std::iota(shuffle.perm.begin(), shuffle.perm.end(), 0);
  std::mt19937 rng(7);
  std::shuffle(shuffle.perm.begin(), shuffle.perm.end(), rng);  // a scattered order
  const CsrMatrix scattered = permute(grid, shuffle);
  for (Precision p : {Precision::f64, Precision::f32}) {
    Options o;
    o.precision = p;
    o.disk_cache = false;
    o.reorder = "auto";
    const Operator a = compile(scattered, o);
    CHECK(a.plan().reorder == "rcm (rows and columns)");
    CHECK(error_of(scattered, a, 0.0) <= tolerance(p));
    CHECK(error_of(scattered, a, 0.5) <= tolerance(p));
    const Operator b = compile(grid, o);
    CHECK(b.plan().reorder == "none");
    CHECK(b.plan().reorder_why.find("already local") != std::string::npos);
    CHECK(error_of(grid, b, 0.0) <= tolerance(p));
  }
}
