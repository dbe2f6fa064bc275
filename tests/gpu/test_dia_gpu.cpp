// dia on the device: the plain and the symmetric kernels against the host CSR reference on
// stencils, a band and matrices whose diagonals leave the matrix early (every precision, alpha
// and beta); the planner's pick on a symmetric stencil; and value updates of a symmetric half,
// gathered when the new values stay symmetric and planned again when they do not.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "gpu_support.hpp"
#include "spmvc/generators.hpp"

using namespace spmvc;

namespace {

DiaParams dia(bool symmetric, int rows_per_thread = 1) {
  DiaParams p;
  p.symmetric = symmetric;
  p.rows_per_thread = rows_per_thread;
  return p;
}

}  // namespace

TEST_CASE("dia: plain and symmetric kernels equal the host reference") {
  if (!test::have_device()) return;
  for (const char* spec : {"stencil27:n=20,contrast=1000", "stencil2d:n=70,contrast=10",
                           "stencil7:n=17", "banded:n=5000,hbw=6", "stencil27:n=3"}) {
    const CsrMatrix a = gen::from_spec(spec);
    const bool symmetric = inspect(a, InspectDepth::full).numerically_symmetric;
    for (const Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
      for (const bool s : {false, true}) {
        // Tiles of 64 or 128 rows leave a partial last tile and, on the small matrices, tiles
        // where only some rows keep every diagonal inside the matrix.
        for (const auto& [b, r] : {std::pair{256, 1}, std::pair{64, 2}, std::pair{32, 2}}) {
          if (s && !symmetric) continue;
          CAPTURE(spec);
          CAPTURE(std::string(to_string(p)));
          CAPTURE(s);
          CAPTURE(r);
          DiaParams params = dia(s, r);
          params.block_size = b;
          params.interior = b != 64;  // both forms of the tile's bounds
          const Operator op = compile(a, test::forced(p, params));
          REQUIRE(op.plan().format == "dia");
          CHECK(test::check(a, op) <= test::tolerance(p));
          CHECK(test::check(a, op, 1.5, -0.5) <= test::tolerance(p));
        }
      }
    }
  }
}

TEST_CASE("dia: a rectangular matrix and a symmetric one without its main diagonal") {
  if (!test::have_device()) return;
  CsrMatrix wide;
  wide.nrows = 300;
  wide.ncols = 700;
  wide.row_ptr.assign(1, 0);
  for (std::int32_t r = 0; r < 300; ++r) {
    for (const std::int32_t o : {-2, 5, 399}) {
      if (r + o < 0 || r + o >= 700) continue;
      wide.col_idx.push_back(r + o);
      wide.values.push_back(1.0 + 0.01 * r + o);
    }
    wide.row_ptr.push_back(static_cast<std::int64_t>(wide.col_idx.size()));
  }
  CHECK(test::check(wide, compile(wide, test::forced(Precision::f64, dia(false)))) <= 1e-12);
  // Tiles of 128 rows: the second keeps every diagonal inside x, the first and the last do not.
  DiaParams tiles = dia(false, 2);
  tiles.block_size = 64;
  CHECK(test::check(wide, compile(wide, test::forced(Precision::f64, tiles))) <= 1e-12);
  CsrMatrix hollow;  // a(i, i +- 3) = 1 + min(i, j) / 100, nothing on the diagonal
  hollow.nrows = hollow.ncols = 1000;
  hollow.row_ptr.assign(1, 0);
  for (std::int32_t r = 0; r < 1000; ++r) {
    for (const std::int32_t c : {r - 3, r + 3}) {
      if (c < 0 || c >= 1000) continue;
      hollow.col_idx.push_back(c);
      hollow.values.push_back(1.0 + 0.01 * std::min(r, c));
    }
    hollow.row_ptr.push_back(static_cast<std::int64_t>(hollow.col_idx.size()));
  }
  CHECK(test::check(hollow, compile(hollow, test::forced(Precision::f32, dia(true)))) <=
        test::tolerance(Precision::f32));
}

TEST_CASE("dia: the host pipeline picks the symmetric form for a symmetric stencil") {
  if (!test::have_device()) return;
  const CsrMatrix a = gen::from_spec("stencil27:n=80,contrast=1000");
  Options o;
  o.build = BuildMode::host;
  o.disk_cache = false;
  const Operator op = compile(a, o);
  CHECK(op.plan().format == "dia");
  const auto* p = std::get_if<DiaParams>(&op.plan().params);
  REQUIRE(p != nullptr);
  CHECK(p->symmetric);
  CHECK(test::check(a, op) <= test::tolerance(Precision::f64));
}

TEST_CASE("dia: a symmetric half's value update, gathered or planned again") {
  if (!test::have_device()) return;
  CsrMatrix a = gen::from_spec("stencil2d:n=60,contrast=100");
  Operator op = compile(a, test::forced(Precision::f64, dia(true)));
  // Scaled values stay symmetric: gathered into the arrays.
  std::vector<double> v = a.values;
  for (double& x : v) x *= 2.5;
  ValueUpdate u = op.update_values(v);
  CHECK_FALSE(u.replanned);
  a.values = v;
  CHECK(test::check(a, op) <= 1e-12);
  // One entry above the diagonal changed: the half cannot hold it, so the matrix is planned
  // again (the forced symmetric form gives way to the plain one) and multiplies right.
  for (std::int64_t k = a.row_ptr[10]; k < a.row_ptr[11]; ++k) {
    if (a.col_idx[static_cast<std::size_t>(k)] > 10) {
      v[static_cast<std::size_t>(k)] += 1.0;
      break;
    }
  }
  u = op.update_values(v);
  CHECK(u.replanned);
  CHECK(u.why.find("not symmetric") != std::string::npos);
  a.values = v;
  CHECK(test::check(a, op) <= 1e-12);
}
