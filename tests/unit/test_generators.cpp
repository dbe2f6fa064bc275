// Generators: exact sizes, row lengths and values on small grids; determinism; specs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "spmvc/bench/suite.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/profile.hpp"

namespace {

using spmvc::CsrMatrix;
namespace gen = spmvc::gen;

double entry(const CsrMatrix& a, std::int64_t r, std::int64_t c) {
  for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
    if (a.col_idx[k] == c) return a.values[k];
  }
  return 0.0;
}

bool has_entry(const CsrMatrix& a, std::int64_t r, std::int64_t c) {
  return std::binary_search(a.col_idx.begin() + a.row_ptr[r], a.col_idx.begin() + a.row_ptr[r + 1],
                            static_cast<std::int32_t>(c));
}

// Structurally and numerically symmetric (exact equality: generated mirrors are identical).
bool is_symmetric(const CsrMatrix& a) {
  if (a.nrows != a.ncols) return false;
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      const std::int64_t c = a.col_idx[k];
      if (!has_entry(a, c, r) || entry(a, c, r) != a.values[k]) return false;
    }
  }
  return true;
}

bool same(const CsrMatrix& a, const CsrMatrix& b) {
  return a.nrows == b.nrows && a.ncols == b.ncols && a.row_ptr == b.row_ptr &&
         a.col_idx == b.col_idx && a.values == b.values;
}

std::string spec_error(const std::string& spec) {
  try {
    gen::from_spec(spec);
  } catch (const spmvc::InputError& e) {
    CHECK(e.source() == spec);
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("stencil_2d_5pt: sizes, nnz formula, values") {
  const CsrMatrix a = gen::stencil_2d_5pt(4, 3);
  CHECK(a.nrows == 12);
  CHECK(a.ncols == 12);
  // 5 per point minus one per missing neighbour on each boundary side.
  CHECK(a.nnz() == 5 * 12 - 2 * 4 - 2 * 3);
  CHECK_NOTHROW(spmvc::validate(a));
  CHECK(a.row_length(0) == 3);  // corner
  CHECK(a.row_length(1) == 4);  // edge
  CHECK(a.row_length(5) == 5);  // interior (x=1, y=1)
  // Natural ordering, x fastest: row 5 = (1,1) couples to 1, 4, 5, 6, 9.
  CHECK(std::vector<std::int32_t>(a.col_idx.begin() + a.row_ptr[5],
                                  a.col_idx.begin() + a.row_ptr[6]) ==
        std::vector<std::int32_t>{1, 4, 5, 6, 9});
  CHECK(entry(a, 5, 5) == 4.0);
  CHECK(entry(a, 5, 9) == -1.0);
  CHECK(is_symmetric(a));
}

TEST_CASE("stencil_3d_7pt: sizes, nnz formula, values") {
  const CsrMatrix a = gen::stencil_3d_7pt(3, 4, 5);
  CHECK(a.nrows == 60);
  CHECK(a.nnz() == 7 * 60 - 2 * (4 * 5) - 2 * (3 * 5) - 2 * (3 * 4));
  CHECK_NOTHROW(spmvc::validate(a));
  const std::int64_t center = 1 + 3 * (1 + 4 * 1);
  CHECK(a.row_length(center) == 7);
  CHECK(a.row_length(0) == 4);
  CHECK(entry(a, center, center) == 6.0);
  CHECK(entry(a, center, center + 12) == -1.0);  // z neighbour: nx*ny away
  CHECK(is_symmetric(a));
}

TEST_CASE("stencil_3d_27pt on 3x3x3: center row 27, corner 8, edge 12, face 18") {
  const CsrMatrix a = gen::stencil_3d_27pt(3, 3, 3);
  CHECK(a.nrows == 27);
  // Per dimension, 3 points have 2+3+2 = 7 neighbours-or-self: nnz = 7^3.
  CHECK(a.nnz() == 343);
  CHECK(a.row_length(13) == 27);  // center
  CHECK(a.row_length(0) == 8);    // corner
  CHECK(a.row_length(1) == 12);   // edge midpoint
  CHECK(a.row_length(4) == 18);   // face center
  CHECK(entry(a, 13, 13) == 26.0);
  CHECK(entry(a, 13, 0) == -1.0);
  CHECK_NOTHROW(spmvc::validate(a));
  CHECK(is_symmetric(a));
  // nnz formula for a general grid: prod over dimensions of (3n - 2).
  CHECK(gen::stencil_3d_27pt(5, 4, 6).nnz() == (3 * 5 - 2) * (3 * 4 - 2) * (3 * 6 - 2));
}

TEST_CASE("elasticity_3d: 3x3 blocks, 81 per interior row, symmetric, diagonally dominant") {
  const CsrMatrix a = gen::elasticity_3d(3, 3, 3, 7);
  CHECK(a.nrows == 81);
  CHECK(a.nnz() == 9 * 343);
  CHECK_NOTHROW(spmvc::validate(a));
  for (int comp = 0; comp < 3; ++comp) CHECK(a.row_length(3 * 13 + comp) == 81);
  CHECK(a.row_length(0) == 24);
  CHECK(is_symmetric(a));
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    double off = 0.0;
    for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      if (a.col_idx[k] != r) off += std::abs(a.values[k]);
    }
    REQUIRE(entry(a, r, r) > off);
  }
  CHECK(same(a, gen::elasticity_3d(3, 3, 3, 7)));
  CHECK(a.values != gen::elasticity_3d(3, 3, 3, 8).values);
}

TEST_CASE("rmat: sizes, sorted distinct columns, values in (0,1], determinism") {
  const CsrMatrix a = gen::rmat(10, 8, 42);
  CHECK(a.nrows == 1024);
  CHECK(a.ncols == 1024);
  CHECK_NOTHROW(spmvc::validate(a));  // columns strictly increasing: duplicates merged
  CHECK(a.nnz() <= 8 * 1024);
  CHECK(a.nnz() > 4 * 1024);  // with a=0.57 some edges repeat, but most are distinct
  for (double v : a.values) {
    REQUIRE(v > 0.0);
    REQUIRE(v <= 1.0);
  }
  // Power-law: the heaviest row is far above the mean of 8.
  std::int64_t max_len = 0;
  for (std::int64_t r = 0; r < a.nrows; ++r) max_len = std::max(max_len, a.row_length(r));
  CHECK(max_len > 40);
  CHECK(same(a, gen::rmat(10, 8, 42)));
  CHECK(!same(a, gen::rmat(10, 8, 43)));
}

TEST_CASE("rmat with a=1 puts every edge on one vertex's self loop") {
  // Probability 1 for the (0,0) quadrant: every edge is 0->0 before permutation, so one entry
  // remains after merging, on the diagonal (self loops are kept).
  const CsrMatrix a = gen::rmat(4, 4, 1, 1.0, 0.0, 0.0);
  REQUIRE(a.nnz() == 1);
  std::int64_t row = 0;
  while (a.row_length(row) == 0) ++row;
  CHECK(a.col_idx[0] == row);
}

TEST_CASE("random_uniform: exactly per_row distinct columns per row") {
  const CsrMatrix a = gen::random_uniform(200, 50, 7, 5);
  CHECK(a.nrows == 200);
  CHECK(a.ncols == 50);
  CHECK(a.nnz() == 200 * 7);
  CHECK_NOTHROW(spmvc::validate(a));  // strictly increasing: distinct
  for (std::int64_t r = 0; r < a.nrows; ++r) REQUIRE(a.row_length(r) == 7);
  CHECK(same(a, gen::random_uniform(200, 50, 7, 5)));
  CHECK(!same(a, gen::random_uniform(200, 50, 7, 6)));
  // per_row == ncols: every row is full.
  const CsrMatrix full = gen::random_uniform(3, 9, 9, 1);
  CHECK(full.nnz() == 27);
  CHECK_NOTHROW(spmvc::validate(full));
  CHECK_THROWS_AS(gen::random_uniform(3, 9, 10, 1), spmvc::InputError);
}

TEST_CASE("random_uniform columns cover the whole range") {
  const CsrMatrix a = gen::random_uniform(2000, 100, 3, 11);
  std::vector<int> hits(100, 0);
  for (auto c : a.col_idx) ++hits[c];
  // 6000 draws over 100 columns: every column is hit (expected 60 each).
  CHECK(*std::min_element(hits.begin(), hits.end()) > 20);
  CHECK(*std::max_element(hits.begin(), hits.end()) < 120);
}

TEST_CASE("banded: band structure and dominance") {
  const CsrMatrix a = gen::banded(10, 2, 3);
  CHECK(a.nrows == 10);
  CHECK(a.nnz() == 10 * 5 - 2 * (1 + 2));
  CHECK(a.row_length(0) == 3);
  CHECK(a.row_length(5) == 5);
  CHECK(has_entry(a, 5, 3));
  CHECK(!has_entry(a, 5, 2));
  CHECK(entry(a, 5, 5) == 5.0);
  CHECK(is_symmetric(a));
  CHECK_NOTHROW(spmvc::validate(a));
  CHECK(gen::banded(4, 0, 1).nnz() == 4);
  CHECK(same(a, gen::banded(10, 2, 3)));
  CHECK(!same(a, gen::banded(10, 2, 4)));
}

TEST_CASE("replicate: block diagonal copies") {
  const CsrMatrix a = gen::random_uniform(3, 4, 2, 9);
  const CsrMatrix r = gen::replicate(a, 3, gen::ReplicaValues::repeated);
  CHECK(r.nrows == 9);
  CHECK(r.ncols == 12);
  CHECK(r.nnz() == 3 * a.nnz());
  CHECK_NOTHROW(spmvc::validate(r));
  for (std::int64_t copy = 0; copy < 3; ++copy) {
    for (std::int64_t row = 0; row < 3; ++row) {
      const std::int64_t rr = copy * 3 + row;
      REQUIRE(r.row_length(rr) == a.row_length(row));
      for (std::int64_t j = 0; j < a.row_length(row); ++j) {
        CHECK(r.col_idx[r.row_ptr[rr] + j] == a.col_idx[a.row_ptr[row] + j] + copy * 4);
        CHECK(r.values[r.row_ptr[rr] + j] == a.values[a.row_ptr[row] + j]);
      }
    }
  }
  CHECK(same(gen::replicate(a, 1), a));
  CHECK_THROWS_AS(gen::replicate(a, 0), spmvc::InputError);
}

TEST_CASE("replicate: each copy's values scaled by its own factor, so distinct values grow") {
  const CsrMatrix a = gen::random_uniform(40, 50, 5, 3);
  const std::int64_t k = 12;
  const CsrMatrix r = gen::replicate(a, k);
  const CsrMatrix repeated = gen::replicate(a, k, gen::ReplicaValues::repeated);
  CHECK(r.row_ptr == repeated.row_ptr);
  CHECK(r.col_idx == repeated.col_idx);
  const auto n = static_cast<std::size_t>(a.nnz());
  std::vector<double> factors;
  for (std::int64_t copy = 0; copy < k; ++copy) {
    const double f = r.values[copy * n] / a.values[0];
    // One factor per copy, applied to every value of it.
    for (std::size_t j = 0; j < n; ++j)
      CHECK(r.values[copy * n + j] == doctest::Approx(a.values[j] * f).epsilon(1e-15));
    if (copy == 0) CHECK(f == 1.0);
    CHECK(f > 0.5);
    CHECK(f <= 2.0);
    factors.push_back(f);
  }
  std::sort(factors.begin(), factors.end());
  CHECK(std::adjacent_find(factors.begin(), factors.end()) == factors.end());
  std::vector<double> distinct = r.values;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  CHECK(distinct.size() == static_cast<std::size_t>(k) * n);
  // Deterministic from the seed; another seed scales differently.
  CHECK(same(r, gen::replicate(a, k)));
  CHECK(!same(r, gen::replicate(a, k, gen::ReplicaValues::scaled, 2)));
  CHECK(is_symmetric(gen::replicate(gen::banded(30, 2, 1), 5)));
}

TEST_CASE("replicate: a matrix holding one value (pattern, unit weights) keeps it") {
  CsrMatrix pattern = gen::random_uniform(20, 20, 3, 1);
  std::fill(pattern.values.begin(), pattern.values.end(), 1.0);
  const CsrMatrix r = gen::replicate(pattern, 7);
  CHECK(std::all_of(r.values.begin(), r.values.end(), [](double v) { return v == 1.0; }));
  // Two values are real values: the copies are scaled.
  const CsrMatrix lap = gen::replicate(gen::stencil_2d_5pt(4, 4), 3);
  CHECK(std::count(lap.values.begin(), lap.values.end(), -1.0) ==
        std::count(lap.values.begin(), lap.values.begin() + lap.nnz() / 3, -1.0));
}

TEST_CASE("stencils with contrast: variable coefficients, symmetric, diagonally dominant") {
  // contrast = 1 is the constant-coefficient Laplacian exactly.
  CHECK(same(gen::stencil_3d_27pt(5, 4, 3, 1.0, 9), gen::stencil_3d_27pt(5, 4, 3)));
  const CsrMatrix c = gen::stencil_3d_7pt(3, 3, 3);
  CHECK(entry(c, 0, 0) == 6.0);
  CHECK(entry(c, 13, 13) == 6.0);
  for (const CsrMatrix& a :
       {gen::stencil_2d_5pt(12, 9, 100.0, 3), gen::stencil_3d_7pt(6, 5, 4, 1000.0, 1),
        gen::stencil_3d_27pt(5, 5, 5, 1000.0, 2)}) {
    CHECK_NOTHROW(spmvc::validate(a));
    CHECK(is_symmetric(a));
    std::int64_t distinct_off = 0;
    std::vector<double> offs;
    for (std::int64_t r = 0; r < a.nrows; ++r) {
      double off = 0, diag = 0;
      for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
        if (a.col_idx[k] == r) {
          diag = a.values[k];
        } else {
          off += std::abs(a.values[k]);
          offs.push_back(a.values[k]);
          // Minus a harmonic mean of two coefficients in [1, contrast].
          CHECK(a.values[k] <= -1.0);
          CHECK(a.values[k] >= -1000.0);
        }
      }
      CHECK(diag >= off);
    }
    std::sort(offs.begin(), offs.end());
    distinct_off = std::unique(offs.begin(), offs.end()) - offs.begin();
    // Each coupling is its own value (a pair and its mirror share one).
    CHECK(distinct_off >= static_cast<std::int64_t>(offs.size()) / 2 - 1);
  }
  // Boundary rows are strictly dominant (Dirichlet): row 0 of the 2D stencil.
  const CsrMatrix b = gen::stencil_2d_5pt(6, 6, 50.0, 4);
  CHECK(entry(b, 0, 0) > -entry(b, 0, 1) - entry(b, 0, 6));
  CHECK(!same(b, gen::stencil_2d_5pt(6, 6, 50.0, 5)));
  CHECK(
      same(gen::from_spec("stencil7:n=4,contrast=10,seed=3"), gen::stencil_3d_7pt(4, 4, 4, 10, 3)));
  CHECK(
      contains(spec_error("stencil2d:n=4,contrast=0.5"), "contrast must be a finite number >= 1"));
}

TEST_CASE("random_geometric: symmetric pattern, mean degree, vertices numbered by cell") {
  const CsrMatrix g = gen::random_geometric(20000, 12.0, 7);
  CHECK_NOTHROW(spmvc::validate(g));
  CHECK(g.nrows == 20000);
  CHECK(is_symmetric(g));
  CHECK(std::all_of(g.values.begin(), g.values.end(), [](double v) { return v == 1.0; }));
  std::int64_t self_loops = 0, near = 0;
  for (std::int64_t r = 0; r < g.nrows; ++r) {
    for (std::int64_t k = g.row_ptr[r]; k < g.row_ptr[r + 1]; ++k) {
      self_loops += g.col_idx[k] == r;
      // Cell order: neighbours sit within a few rows of cells (sqrt(n / 12 * pi) cells a row).
      near += std::abs(g.col_idx[k] - r) < 3 * 20000 / 40;
    }
  }
  CHECK(self_loops == 0);
  CHECK(near == g.nnz());
  // The border has fewer neighbours: the mean is a little below the target.
  const double mean = static_cast<double>(g.nnz()) / static_cast<double>(g.nrows);
  CHECK(mean > 0.9 * 12.0);
  CHECK(mean < 12.0);
  CHECK(same(g, gen::from_spec("rgg:n=20000,degree=12,seed=7")));
  CHECK(!same(g, gen::random_geometric(20000, 12.0, 8)));
  CHECK(contains(spec_error("rgg:n=100,degree=0"), "degree must be in (0, n-1]"));
  CHECK(contains(spec_error("rgg:n=1"), "n=1 must be at least 2"));
}

TEST_CASE("replicate refuses more than 2^31-1 columns") {
  CsrMatrix wide;
  wide.nrows = 1;
  wide.ncols = 1 << 30;
  wide.row_ptr = {0, 0};
  CHECK(gen::replicate(wide, 1).ncols == (1 << 30));
  try {
    gen::replicate(wide, 2);
    FAIL("expected an InputError");
  } catch (const spmvc::InputError& e) {
    CHECK(contains(e.what(), "column indices are 32-bit"));
  }
}

TEST_CASE("from_spec builds what the direct calls build") {
  CHECK(same(gen::from_spec("stencil2d:nx=5,ny=3"), gen::stencil_2d_5pt(5, 3)));
  CHECK(same(gen::from_spec("stencil2d:n=4"), gen::stencil_2d_5pt(4, 4)));
  CHECK(same(gen::from_spec("stencil7:n=3,nz=2"), gen::stencil_3d_7pt(3, 3, 2)));
  CHECK(same(gen::from_spec("stencil27:nx=2,ny=3,nz=4"), gen::stencil_3d_27pt(2, 3, 4)));
  CHECK(same(gen::from_spec("elasticity:n=2,seed=5"), gen::elasticity_3d(2, 2, 2, 5)));
  CHECK(same(gen::from_spec("rmat:scale=6,ef=4,seed=3"), gen::rmat(6, 4, 3)));
  CHECK(same(gen::from_spec("rmat:scale=6,a=0.45,b=0.15,c=0.15"),
             gen::rmat(6, 16, 1, 0.45, 0.15, 0.15)));
  CHECK(same(gen::from_spec("random:nrows=30,ncols=20,per_row=4,seed=2"),
             gen::random_uniform(30, 20, 4, 2)));
  CHECK(same(gen::from_spec("random:n=40"), gen::random_uniform(40, 40, 16, 1)));
  CHECK(same(gen::from_spec("banded:n=20,hbw=3"), gen::banded(20, 3, 1)));
  CHECK(same(gen::from_spec("stencil2d:n=3,rep=4"), gen::replicate(gen::stencil_2d_5pt(3, 3), 4)));
  CHECK(same(gen::from_spec(" stencil2d : nx = 5 , ny = 3 "), gen::stencil_2d_5pt(5, 3)));
}

TEST_CASE("from_spec defaults for omitted keys") {
  CHECK(gen::from_spec("stencil7").nrows == 64 * 64 * 64);
  CHECK(gen::from_spec("banded").nrows == 100000);
  CHECK(gen::from_spec("rmat:scale=5").nnz() <= 16 * 32);
}

TEST_CASE("from_spec errors name the spec and what is wrong") {
  CHECK(contains(spec_error("cube:n=3"), "unknown generator 'cube'"));
  CHECK(contains(spec_error("stencil27:n=3,m=4"), "unknown key 'm' for generator 'stencil27'"));
  CHECK(contains(spec_error("stencil27:n=3.5"), "n=3.5 is not an integer"));
  CHECK(contains(spec_error("stencil27:n=abc"), "n=abc is not an integer"));
  CHECK(contains(spec_error("stencil27:n=0"), "n=0 must be at least 1"));
  CHECK(contains(spec_error("stencil2d:nx=-4"), "nx=-4 must be at least 1"));
  CHECK(contains(spec_error("random:n=10,per_row=11"), "per_row = 11 exceeds ncols = 10"));
  CHECK(contains(spec_error("stencil2d:nx"), "expected key=value"));
  CHECK(contains(spec_error("stencil2d:n=3,n=4"), "key 'n' given twice"));
  CHECK(contains(spec_error("rmat:scale=31"), "scale=31 exceeds 30"));
  CHECK(contains(spec_error("rmat:scale=4,a=0.9,b=0.2"), "a+b+c <= 1"));
  CHECK(contains(spec_error("stencil27:n=2000"), "column indices are 32-bit"));
  CHECK(contains(spec_error("banded:n=5,seed=-1"), "seed=-1 is not a non-negative integer"));
  CHECK(contains(spec_error("banded:n=5,rep=0"), "rep=0 must be at least 1"));
  CHECK(spec_error("stencil27:n=3,m=4").rfind("stencil27:n=3,m=4: ", 0) == 0);
}

TEST_CASE("is_spec recognises generator names only") {
  CHECK(gen::is_spec("stencil27:nx=128"));
  CHECK(gen::is_spec("rmat"));
  CHECK(gen::is_spec("banded:"));
  CHECK(!gen::is_spec("matrix.mtx"));
  CHECK(!gen::is_spec("rmat.mtx"));
  CHECK(!gen::is_spec("/data/stencil27:nx=3"));
  CHECK(!gen::is_spec(""));
}

TEST_CASE("spec_help has one line per generator") {
  const std::string help = gen::spec_help();
  for (const char* name : {"stencil2d", "stencil7", "stencil27", "elasticity", "rmat", "random",
                           "banded", "rgg", "contrast=", "rep="}) {
    CHECK(contains(help, name));
  }
  CHECK(std::count(help.begin(), help.end(), '\n') == 10);
}

TEST_CASE("generator output is pinned: the same on every machine and compiler") {
  // Reference values recorded from this implementation. A change here means every benchmark
  // matrix changed: only update them on purpose.
  const CsrMatrix r = gen::random_uniform(3, 10, 3, 1);
  CHECK(r.col_idx == std::vector<std::int32_t>{1, 3, 5, 2, 4, 6, 2, 5, 9});
  CHECK(r.values[0] == 0.57900323223998984);

  const CsrMatrix m = gen::rmat(8, 4, 1);
  CHECK(m.nnz() == 838);
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over the structure
  for (auto c : m.col_idx) h = (h ^ static_cast<std::uint32_t>(c)) * 1099511628211ULL;
  for (auto p : m.row_ptr) h = (h ^ static_cast<std::uint64_t>(p)) * 1099511628211ULL;
  CHECK(h == 16587921412202138152ULL);

  const CsrMatrix e = gen::elasticity_3d(2, 2, 2, 1);
  CHECK(e.values[0] == 10.5643061324882);
  CHECK(e.values[1] == 0.15800646447997968);
}

TEST_CASE("suite classes from the profile: power-law G, few values P, real values R") {
  using spmvc::InspectDepth;
  using spmvc::bench::matrix_class;
  // A Kronecker graph's longest row is hundreds of times its mean.
  CHECK(matrix_class(spmvc::inspect(gen::rmat(14, 16, 1), InspectDepth::rows)) == "G");
  // Constant coefficients and pattern graphs: a table codes their values.
  CHECK(matrix_class(spmvc::inspect(gen::stencil_3d_27pt(30, 30, 30), InspectDepth::rows)) == "P");
  CHECK(matrix_class(spmvc::inspect(gen::random_geometric(50000, 16), InspectDepth::rows)) == "P");
  // Variable coefficients: one value per coupling, far more than a table holds.
  const spmvc::Profile var =
      spmvc::inspect(gen::stencil_3d_27pt(30, 30, 30, 1000.0), InspectDepth::rows);
  CHECK(var.distinct_values > spmvc::kDistinctValuesCap);
  CHECK(matrix_class(var) == "R");
  // Replicas of a few-valued matrix stay few-valued only while k times its values fit a table.
  const CsrMatrix lap = gen::stencil_2d_5pt(100, 100);
  CHECK(matrix_class(spmvc::inspect(gen::replicate(lap, 1000), InspectDepth::rows)) == "P");
  const CsrMatrix real = gen::banded(2000, 4, 1);
  CHECK(matrix_class(spmvc::inspect(gen::replicate(real, 20), InspectDepth::rows)) == "R");
  CHECK(matrix_class(spmvc::inspect(gen::replicate(real, 20, gen::ReplicaValues::repeated),
                                    InspectDepth::rows)) == "P");
}
