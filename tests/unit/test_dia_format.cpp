// The dia format: the inspector's diagonal count, the encoding by hand, the host reference over
// the encoded arrays (plain and symmetric) against plain CSR, the refusals (too many diagonals,
// padding, S=1 on a matrix that is not its transpose), and the planner's choice on a symmetric
// stencil.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "formats/dia/dia_format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/value_update.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/parallel.hpp"
#include "test_support.hpp"

using namespace spmvc;

namespace {

// [ 4 1 0 0 ]
// [ 1 4 1 0 ]     symmetric, three diagonals
// [ 0 1 4 2 ]
// [ 0 0 2 4 ]
CsrMatrix tridiagonal() {
  CsrMatrix a;
  a.nrows = a.ncols = 4;
  a.row_ptr = {0, 2, 5, 8, 10};
  a.col_idx = {0, 1, 0, 1, 2, 1, 2, 3, 2, 3};
  a.values = {4, 1, 1, 4, 1, 1, 4, 2, 2, 4};
  return a;
}

DiaParams dia(bool symmetric) {
  DiaParams p;
  p.symmetric = symmetric;
  return p;
}

// The encoding's reference product against plain CSR's, alpha and beta both used.
void check_reference(const CsrMatrix& a, const DiaParams& p, Precision precision) {
  const formats::DiaFormat f;
  const Encoded e = f.encode(a, p, precision);
  std::vector<double> x(static_cast<std::size_t>(a.ncols));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0 + static_cast<double>(i % 7) * 0.25;
  std::vector<double> want(static_cast<std::size_t>(a.nrows), 0.5), got = want;
  compiler::csr_reference_spmv(a, x, want, 2.0, -1.0);
  f.reference_spmv(e, p, x, got, 2.0, -1.0);
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  // fp32 storage rounds each value once.
  CHECK(worst <= (precision == Precision::f64 ? 1e-12 : 1e-5) * std::max(1.0, scale));
}

}  // namespace

TEST_CASE("inspector: the distinct diagonals, capped, the same for any thread count") {
  CHECK(inspect(tridiagonal(), InspectDepth::rows).diagonals == 3);
  CHECK(occupied_diagonals(tridiagonal()) == std::vector<std::int64_t>{-1, 0, 1});
  CHECK_FALSE(occupied_diagonals(gen::from_spec("random:n=2000,per_row=8")).has_value());
  CHECK(inspect(gen::from_spec("stencil2d:n=12"), InspectDepth::rows).diagonals == 5);
  CHECK(inspect(gen::from_spec("stencil27:n=6"), InspectDepth::full).diagonals == 27);
  CHECK(inspect(gen::from_spec("banded:n=300,hbw=4"), InspectDepth::rows).diagonals == 9);
  // A random matrix's columns fall on far more than kMaxDiagonals diagonals.
  CHECK(inspect(gen::from_spec("random:n=2000,per_row=8"), InspectDepth::rows).diagonals == -1);
  CsrMatrix empty;
  empty.nrows = empty.ncols = 3;
  empty.row_ptr = {0, 0, 0, 0};
  CHECK(inspect(empty, InspectDepth::rows).diagonals == 0);
  // Split into ranges of a row or two: the merge gives the same counts.
  set_host_parallelism({4, true});
  CHECK(inspect(gen::from_spec("stencil27:n=6"), InspectDepth::rows).diagonals == 27);
  CHECK(inspect(gen::from_spec("random:n=2000,per_row=8"), InspectDepth::rows).diagonals == -1);
  set_host_parallelism({});
}

TEST_CASE("inspector: a matrix on few diagonals is checked for symmetry at rows depth") {
  const Profile sym = inspect(gen::from_spec("stencil27:n=6,contrast=100"), InspectDepth::rows);
  CHECK(sym.numerically_symmetric);
  CsrMatrix skew = tridiagonal();
  skew.values[1] = 3;  // (0, 1) no longer equals (1, 0)
  const Profile p = inspect(skew, InspectDepth::rows);
  CHECK(p.structurally_symmetric);
  CHECK_FALSE(p.numerically_symmetric);
}

TEST_CASE("dia: the layout by hand, plain and symmetric") {
  const formats::DiaFormat f;
  const Encoded plain = f.encode(tridiagonal(), dia(false), Precision::f64);
  CHECK(test::array_as<std::int32_t>(plain.array("offsets")) ==
        std::vector<std::int32_t>{-1, 0, 1});
  // Row r of diagonal d at d * 4 + r; 0 where the diagonal leaves the matrix.
  CHECK(test::array_as<double>(plain.array("values")) ==
        std::vector<double>{0, 1, 1, 2, 4, 4, 4, 4, 1, 1, 2, 0});
  const Encoded sym = f.encode(tridiagonal(), dia(true), Precision::f64);
  CHECK(test::array_as<std::int32_t>(sym.array("offsets")) == std::vector<std::int32_t>{-1, 0});
  CHECK(test::array_as<double>(sym.array("values")) == std::vector<double>{0, 1, 1, 2, 4, 4, 4, 4});
  CHECK(f.generate(sym, dia(true), "").source.find("spmvc::dia::Offsets<-1, 0>") !=
        std::string::npos);
}

TEST_CASE("dia: the reference over the encoding equals plain CSR") {
  for (const Precision p : {Precision::f64, Precision::f32}) {
    for (const char* spec : {"stencil27:n=7,contrast=1000", "stencil2d:n=15,contrast=10",
                             "banded:n=200,hbw=3", "stencil7:n=5"}) {
      CAPTURE(spec);
      const CsrMatrix a = gen::from_spec(spec);
      check_reference(a, dia(false), p);
      if (inspect(a, InspectDepth::full).numerically_symmetric) check_reference(a, dia(true), p);
    }
    // A symmetric pattern without its main diagonal, and a rectangular matrix (plain only).
    CsrMatrix hollow;
    hollow.nrows = hollow.ncols = 3;
    hollow.row_ptr = {0, 1, 3, 4};
    hollow.col_idx = {1, 0, 2, 1};
    hollow.values = {5, 5, -2, -2};
    check_reference(hollow, dia(true), p);
    CsrMatrix wide;
    wide.nrows = 2;
    wide.ncols = 5;
    wide.row_ptr = {0, 2, 4};
    wide.col_idx = {0, 3, 1, 4};
    wide.values = {1, 2, 3, 4};
    check_reference(wide, dia(false), p);
  }
}

TEST_CASE("dia: S=1 on a matrix that is not its transpose is refused, not lost") {
  const formats::DiaFormat f;
  CsrMatrix skew = tridiagonal();
  skew.values[7] = 3;  // (2, 3) = 3 against (3, 2) = 2
  CHECK_THROWS_WITH_AS(f.encode(skew, dia(true), Precision::f64),
                       doctest::Contains("row 2 holds an entry above the diagonal"), InputError);
  const Profile p = inspect(skew, InspectDepth::full);
  const auto why = f.cannot_implement(p, dia(true), Precision::f64);
  REQUIRE(why);
  CHECK(why->find("equal to its transpose") != std::string::npos);
  CHECK_FALSE(f.cannot_implement(p, dia(false), Precision::f64));
}

TEST_CASE("dia: rows per thread set the tile, the grid and the kernel's name") {
  const formats::DiaFormat f;
  const Profile p = inspect(gen::from_spec("stencil2d:n=40"), InspectDepth::rows);  // 1600 rows
  DiaParams d = dia(false);
  d.rows_per_thread = 4;
  const auto why = f.cannot_implement(p, d, Precision::f32);
  REQUIRE(why);
  CHECK(why->find("4 rows a thread") != std::string::npos);
  d.rows_per_thread = 2;
  d.block_size = 128;
  CHECK_FALSE(f.cannot_implement(p, d, Precision::f32));
  const Encoded e = f.encode(gen::from_spec("stencil2d:n=40"), d, Precision::f32);
  const KernelSource k = f.generate(e, d, "");
  CHECK(k.kernel_name == "spmv_dia_d5_b128_r2i_f32");
  CHECK(k.block == 128);
  CHECK(k.grid == 7);  // 1600 rows in tiles of 256
  CHECK(k.source.find("constexpr int kRowsPerThread = 2;") != std::string::npos);
  d.interior = false;
  CHECK(f.generate(e, d, "").kernel_name == "spmv_dia_d5_b128_r2_f32");
}

TEST_CASE("dia: the planner's thread shape follows the value width and the band") {
  compiler::PlanOptions o;
  o.gpu = "H200";
  const auto shape = [&](const char* spec, Precision precision) {
    o.precision = precision;
    const Plan plan = compiler::make_plan(inspect(gen::from_spec(spec), InspectDepth::rows), o);
    REQUIRE(plan.format == "dia");
    return std::get<DiaParams>(plan.params);
  };
  // A band of half-width 8: two rows a thread and untested interior tiles in fp32 ...
  DiaParams p = shape("banded:n=200000,hbw=8", Precision::f32);
  CHECK(p.rows_per_thread == 2);
  CHECK(p.interior);
  p = shape("banded:n=200000,hbw=8", Precision::f32_acc64);
  CHECK(p.rows_per_thread == 2);
  // ... one row, every row tested, in fp64.
  p = shape("banded:n=200000,hbw=8", Precision::f64);
  CHECK(p.rows_per_thread == 1);
  CHECK_FALSE(p.interior);
  // A stencil reaches past kDiaNarrowBand (a plane away): one row a thread.
  p = shape("stencil27:n=60,contrast=1000", Precision::f32);
  CHECK(p.rows_per_thread == 1);
  CHECK(p.interior);
}

TEST_CASE("dia: matrices off few full diagonals are refused with the reason") {
  const formats::DiaFormat f;
  const Profile random = inspect(gen::from_spec("random:n=2000,per_row=8"), InspectDepth::rows);
  const auto many = f.cannot_implement(random, dia(false), Precision::f64);
  REQUIRE(many);
  CHECK(many->find("more than 64 diagonals") != std::string::npos);
  CHECK_THROWS_WITH_AS(
      f.encode(gen::from_spec("random:n=2000,per_row=8"), dia(false), Precision::f64),
      doctest::Contains("more than 64 diagonals"), InputError);
  // The main diagonal and three diagonals holding one entry each: 4 x 100000 entries stored
  // for 100003 nonzeros.
  CsrMatrix sparse_diagonal;
  sparse_diagonal.nrows = sparse_diagonal.ncols = 100000;
  sparse_diagonal.row_ptr.assign(1, 0);
  for (std::int32_t r = 0; r < 100000; ++r) {
    sparse_diagonal.col_idx.push_back(r);
    sparse_diagonal.values.push_back(1);
    if (r == 0) {
      for (const std::int32_t c : {50000, 60000, 70000}) {
        sparse_diagonal.col_idx.push_back(c);
        sparse_diagonal.values.push_back(1);
      }
    }
    sparse_diagonal.row_ptr.push_back(static_cast<std::int64_t>(sparse_diagonal.col_idx.size()));
  }
  const auto padded =
      f.cannot_implement(inspect(sparse_diagonal, InspectDepth::rows), dia(false), Precision::f64);
  REQUIRE(padded);
  CHECK(padded->find("the diagonals are not full") != std::string::npos);
}

TEST_CASE("dia: the planner stores a symmetric stencil's lower diagonals") {
  const Profile p = inspect(gen::from_spec("stencil27:n=80,contrast=1000"), InspectDepth::rows);
  compiler::PlanOptions o;
  o.gpu = "H200";
  const Plan plan = compiler::make_plan(p, o);
  CHECK(plan.format == "dia");
  const auto* params = std::get_if<DiaParams>(&plan.params);
  REQUIRE(params != nullptr);
  CHECK(params->symmetric);
  // 14 of 27 diagonals, x and y: 8 bytes each per row.
  CHECK(plan.predicted_bytes ==
        doctest::Approx((14.0 + 2.0) * 8.0 * static_cast<double>(p.nrows)).epsilon(1e-9));
}

TEST_CASE("dia: new values for a symmetric half must stay symmetric") {
  const CsrMatrix a = tridiagonal();
  Plan plan;
  plan.format = "dia";
  plan.params = dia(true);
  CHECK(compiler::stores_symmetric_half(plan));
  plan.params = dia(false);
  CHECK_FALSE(compiler::stores_symmetric_half(plan));
  std::vector<double> v = a.values;
  for (double& x : v) x *= 3;
  CHECK_FALSE(compiler::symmetry_problem(a, v));
  v[7] = 5;  // a(2, 3)
  const auto why = compiler::symmetry_problem(a, v);
  REQUIRE(why);
  CHECK(why->find("a(2, 3) = 5 against a(3, 2) = 6") != std::string::npos);
  // The gathers of a symmetric half read the entries on and below the diagonal only.
  plan.params = dia(true);
  plan.precision = Precision::f64;
  const auto gathers = compiler::value_gathers(a, nullptr, plan);
  REQUIRE(gathers.size() == 1);
  // Diagonal -1: rows 1..3 hold nonzeros 2, 5 and 8; the main one 0, 3, 6 and 9.
  CHECK(gathers[0].source == std::vector<std::int64_t>{-1, 2, 5, 8, 0, 3, 6, 9});
}
