// reorder/: every ordering is a permutation that keeps y = A x, each ordering does what its paper
// says on a matrix built to show it, and the locality measures on a matrix checked by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/reorder.hpp"
#include "test_support.hpp"

namespace {

using spmvc::CsrMatrix;
using spmvc::Ordering;
using spmvc::PermutationKind;

// y = A x by the plain CSR loop, and the row sums of |a_ij x_j| that bound its rounding error.
std::vector<double> spmv(const CsrMatrix& a, const std::vector<double>& x,
                         std::vector<double>* magnitude = nullptr) {
  std::vector<double> y(static_cast<std::size_t>(a.nrows), 0.0);
  if (magnitude) magnitude->assign(y.size(), 0.0);
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    for (std::int64_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
      y[i] += a.values[k] * x[a.col_idx[k]];
      if (magnitude) (*magnitude)[i] += std::abs(a.values[k] * x[a.col_idx[k]]);
    }
  }
  return y;
}

// B = permute(A, o) multiplies like A: B (P x) = P (A x), P x being x in the new column order.
void check_same_product(const CsrMatrix& a, const Ordering& o) {
  std::vector<std::int64_t> sources;
  const CsrMatrix b = spmvc::permute(a, o, &sources);
  REQUIRE_NOTHROW(spmvc::validate(b, "permuted"));
  REQUIRE(b.nnz() == a.nnz());
  // Each entry of B names its entry of A: in the old row, the value, the column renamed.
  REQUIRE(sources.size() == static_cast<std::size_t>(b.nnz()));
  std::vector<std::int32_t> renamed(static_cast<std::size_t>(a.ncols));
  std::iota(renamed.begin(), renamed.end(), 0);
  if (o.kind == PermutationKind::symmetric)
    for (std::size_t i = 0; i < o.perm.size(); ++i)
      renamed[o.perm[i]] = static_cast<std::int32_t>(i);
  for (std::int64_t i = 0; i < b.nrows; ++i) {
    for (std::int64_t k = b.row_ptr[i]; k < b.row_ptr[i + 1]; ++k) {
      const std::int64_t s = sources[static_cast<std::size_t>(k)];
      if (s < a.row_ptr[o.perm[i]] || s >= a.row_ptr[o.perm[i] + 1] || b.values[k] != a.values[s] ||
          b.col_idx[k] != renamed[a.col_idx[s]]) {
        FAIL_CHECK(o.name << ": entry " << k << " of row " << i << " names source " << s);
        return;
      }
    }
  }
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> x(static_cast<std::size_t>(a.ncols));
  for (double& v : x) v = dist(rng);
  std::vector<double> bx = x;
  if (o.kind == PermutationKind::symmetric) {
    for (std::size_t j = 0; j < bx.size(); ++j) bx[j] = x[o.perm[j]];
  }
  std::vector<double> magnitude;
  const std::vector<double> y = spmv(a, x, &magnitude);
  const std::vector<double> by = spmv(b, bx);
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    const double want = y[o.perm[i]];
    if (std::abs(by[i] - want) > 1e-12 * magnitude[o.perm[i]] + 1e-300) {
      FAIL_CHECK(o.name << ": row " << i << " (old row " << o.perm[i] << ") gives " << by[i]
                        << ", expected " << want);
      return;
    }
  }
}

void check_every_ordering(const CsrMatrix& a, const std::string& label) {
  for (const std::string& name : spmvc::ordering_names()) {
    CAPTURE(label);
    CAPTURE(name);
    if (a.nrows != a.ncols && spmvc::ordering_needs_square(name)) {
      CHECK_THROWS_AS(spmvc::compute_ordering(a, name), spmvc::InputError);
      continue;
    }
    const Ordering o = spmvc::compute_ordering(a, name);
    CHECK(o.name == name);
    CHECK(o.seconds >= 0);
    REQUIRE(spmvc::is_permutation(o.perm, a.nrows));
    if (a.nrows != a.ncols) CHECK(o.kind == PermutationKind::rows_only);
    check_same_product(a, o);
  }
}

// Relabels rows and columns of `a` by a seeded random permutation.
CsrMatrix shuffled(const CsrMatrix& a, std::uint64_t seed) {
  Ordering o;
  o.name = "shuffle";
  o.kind = PermutationKind::symmetric;
  o.perm.resize(static_cast<std::size_t>(a.nrows));
  std::iota(o.perm.begin(), o.perm.end(), 0);
  std::shuffle(o.perm.begin(), o.perm.end(), std::mt19937_64(seed));
  return spmvc::permute(a, o);
}

// Rows given as column lists (values 1..), columns increasing.
CsrMatrix from_rows(std::int64_t ncols, const std::vector<std::vector<std::int32_t>>& rows) {
  CsrMatrix a;
  a.nrows = static_cast<std::int64_t>(rows.size());
  a.ncols = ncols;
  for (const auto& row : rows) {
    for (const std::int32_t c : row) {
      a.col_idx.push_back(c);
      a.values.push_back(static_cast<double>(a.col_idx.size()));
    }
    a.row_ptr.push_back(a.nnz());
  }
  return a;
}

// Connected components of the graph of symmetric `a` without the vertices in `removed`.
std::vector<std::int64_t> component_sizes(const CsrMatrix& a, const std::vector<char>& removed) {
  std::vector<char> seen(removed);
  std::vector<std::int64_t> sizes, stack;
  for (std::int64_t s = 0; s < a.nrows; ++s) {
    if (seen[s]) continue;
    seen[s] = 1;
    stack.push_back(s);
    std::int64_t size = 0;
    while (!stack.empty()) {
      const std::int64_t v = stack.back();
      stack.pop_back();
      ++size;
      for (std::int64_t k = a.row_ptr[v]; k < a.row_ptr[v + 1]; ++k) {
        if (!seen[a.col_idx[k]]) {
          seen[a.col_idx[k]] = 1;
          stack.push_back(a.col_idx[k]);
        }
      }
    }
    sizes.push_back(size);
  }
  return sizes;
}

}  // namespace

TEST_CASE("every ordering is a permutation that keeps y = A x (generated matrices)") {
  for (const char* spec :
       {"stencil2d:n=50", "rmat:scale=12", "random:nrows=300,ncols=200,per_row=7",
        "random:nrows=200,ncols=300,per_row=9"}) {
    check_every_ordering(spmvc::gen::from_spec(spec), spec);
  }
}

TEST_CASE("every ordering is a permutation that keeps y = A x (public matrices)") {
  const auto dir = spmvc::test::shared_matrices();
  if (dir.empty()) return;  // a clone without ../shared/matrices
  // Symmetric FEM, unsymmetric square, rectangular LP, and a graph with empty rows.
  for (const char* name : {"bcsstk08", "west0479", "lp_afiro", "Erdos971"}) {
    const auto path = dir / (std::string(name) + ".mtx.xz");
    if (!std::filesystem::exists(path)) continue;
    check_every_ordering(spmvc::read_matrix_market(path), name);
  }
}

TEST_CASE("orderings of the empty and one-row matrices") {
  for (const CsrMatrix& a : {from_rows(0, {}), from_rows(1, {{0}}), from_rows(1, {{}})}) {
    for (const std::string& name : spmvc::ordering_names()) {
      CAPTURE(name);
      const Ordering o = spmvc::compute_ordering(a, name);
      CHECK(spmvc::is_permutation(o.perm, a.nrows));
      CHECK(spmvc::permute(a, o).nnz() == a.nnz());
    }
  }
}

TEST_CASE("is_permutation") {
  const std::vector<std::int32_t> ok{2, 0, 1}, repeated{0, 0, 1}, out_of_range{0, 1, 3};
  CHECK(spmvc::is_permutation(ok, 3));
  CHECK_FALSE(spmvc::is_permutation(ok, 4));
  CHECK_FALSE(spmvc::is_permutation(repeated, 3));
  CHECK_FALSE(spmvc::is_permutation(out_of_range, 3));
  CHECK(spmvc::is_permutation({}, 0));
}

TEST_CASE("permute: B = P A P^T by hand") {
  // A = [1 2 0; 0 3 4; 5 0 6], perm = (2, 0, 1): B = A([2 0 1], [2 0 1]).
  const CsrMatrix a = from_rows(3, {{0, 1}, {1, 2}, {0, 2}});
  Ordering o;
  o.kind = PermutationKind::symmetric;
  o.perm = {2, 0, 1};
  const CsrMatrix b = spmvc::permute(a, o);
  CHECK(b.row_ptr == std::vector<std::int64_t>{0, 2, 4, 6});
  CHECK(b.col_idx == std::vector<std::int32_t>{0, 1, 1, 2, 0, 2});
  CHECK(b.values == std::vector<double>{6, 5, 1, 2, 4, 3});
  // Where each entry came from: B's values are A's (1..6) taken at the sources.
  std::vector<std::int64_t> sources;
  CHECK(spmvc::permute(a, o, &sources).values == b.values);
  CHECK(sources == std::vector<std::int64_t>{5, 4, 0, 1, 3, 2});
  o.kind = PermutationKind::rows_only;
  const CsrMatrix c = spmvc::permute(a, o, &sources);
  CHECK(c.col_idx == std::vector<std::int32_t>{0, 2, 0, 1, 1, 2});
  CHECK(c.values == std::vector<double>{5, 6, 1, 2, 3, 4});
  CHECK(sources == std::vector<std::int64_t>{4, 5, 0, 1, 2, 3});
}

TEST_CASE("permute: B = A Q^T by hand, the columns alone") {
  // A = [1 2 0 7; 0 3 4 0; 5 0 6 0] (3x4: the columns may outnumber the rows), perm = (3, 2, 0, 1):
  // new column j is old column perm[j], so old columns 0, 1, 2, 3 become 2, 3, 1, 0.
  CsrMatrix a = from_rows(4, {{0, 1, 3}, {1, 2}, {0, 2}});
  a.values = {1, 2, 7, 3, 4, 5, 6};
  const Ordering o{"cols", PermutationKind::columns_only, {3, 2, 0, 1}, 0, ""};
  std::vector<std::int64_t> sources;
  const CsrMatrix b = spmvc::permute(a, o, &sources);
  CHECK(b.nrows == 3);
  CHECK(b.ncols == 4);
  CHECK(b.row_ptr == a.row_ptr);  // the rows stay where they were
  CHECK(b.col_idx == std::vector<std::int32_t>{0, 2, 3, 1, 3, 1, 2});
  CHECK(b.values == std::vector<double>{7, 1, 2, 4, 3, 6, 5});
  CHECK(sources == std::vector<std::int64_t>{2, 0, 1, 4, 3, 6, 5});
  // B x' = A x with x'[j] = x[perm[j]].
  const std::vector<double> x{1, 10, 100, 1000};
  std::vector<double> xp(4);
  for (std::size_t j = 0; j < 4; ++j) xp[j] = x[static_cast<std::size_t>(o.perm[j])];
  CHECK(spmv(b, xp) == spmv(a, x));
  // The permutation is of the columns: one of the rows' length is refused, naming the columns.
  const Ordering rows_long{"short", PermutationKind::columns_only, {2, 0, 1}, 0, ""};
  try {
    (void)spmvc::permute(a, rows_long);
    FAIL("a 3-entry column ordering of 4 columns was accepted");
  } catch (const spmvc::InputError& e) {
    CHECK(std::string(e.what()).find("permutation of the 4 columns") != std::string::npos);
  }
  // A symmetric ordering applied to the columns alone: old columns 2, 0, 1 are numbered 0, 1, 2,
  // the rows stay (row 1's {1, 2} becomes {2, 0}, sorted {0, 2}).
  const CsrMatrix s = from_rows(3, {{0, 1}, {1, 2}, {0, 2}});
  const Ordering sym{"sym", PermutationKind::symmetric, {2, 0, 1}, 0, ""};
  const Ordering alone = spmvc::columns_only(sym);
  CHECK(alone.kind == PermutationKind::columns_only);
  CHECK(alone.perm == sym.perm);
  CHECK(spmvc::permute(s, alone).col_idx == std::vector<std::int32_t>{1, 2, 0, 2, 0, 1});
  CHECK_THROWS_AS(spmvc::columns_only(Ordering{"r", PermutationKind::rows_only, {0}, 0, ""}),
                  spmvc::InputError);
}

TEST_CASE("ordering_of: the ordering a row and column map records") {
  spmvc::RowColumnMap map{{2, 0, 1}, {}};
  const Ordering rows = spmvc::ordering_of(map, "kept");
  CHECK(rows.name == "kept");
  CHECK(rows.kind == PermutationKind::rows_only);  // the columns kept their numbers
  CHECK(rows.perm == map.rows);
  map.cols = map.rows;
  CHECK(spmvc::ordering_of(map, "kept").kind == PermutationKind::symmetric);
  // Rows kept, columns moved: the columns alone.
  const spmvc::RowColumnMap columns{{0, 1, 2}, {1, 2, 0}};
  const Ordering alone = spmvc::ordering_of(columns, "alone");
  CHECK(alone.kind == PermutationKind::columns_only);
  CHECK(alone.perm == columns.cols);
  // Rows and columns moved differently: no one ordering records that.
  CHECK_THROWS_AS(spmvc::ordering_of(spmvc::RowColumnMap{{1, 0, 2}, {2, 0, 1}}, "mixed"),
                  spmvc::InputError);
  CHECK(spmvc::is_identity(std::vector<std::int32_t>{0, 1, 2}));
  CHECK(spmvc::is_identity(std::vector<std::int32_t>{}));
  CHECK_FALSE(spmvc::is_identity(std::vector<std::int32_t>{1, 0, 2}));
}

TEST_CASE("rcm brings a shuffled 2D stencil back to a narrow band") {
  const CsrMatrix grid = spmvc::gen::from_spec("stencil2d:n=50");
  const CsrMatrix a = shuffled(grid, 3);
  const std::int64_t shuffled_bandwidth = spmvc::locality(a).bandwidth;
  REQUIRE(shuffled_bandwidth > 2000);  // the shuffle did scatter it
  const Ordering o = spmvc::compute_ordering(a, "rcm");
  CHECK(o.kind == PermutationKind::symmetric);
  CHECK(o.note.empty());  // the stencil is structurally symmetric
  const spmvc::LocalityStats after = spmvc::locality(spmvc::permute(a, o));
  // Level sets of a 50x50 grid from a corner hold at most 50 vertices, so the band is < 100.
  CHECK(after.bandwidth < 100);
  CHECK(after.profile < spmvc::locality(a).profile / 10);
}

TEST_CASE("rcm orders every connected component on its own, each one contiguous and banded") {
  // 40 shuffled copies of a 20x20 grid, shuffled together: every component's vertices must
  // come out consecutive (a component split across the order would widen its band), and each
  // copy's band must be as narrow as one grid's RCM gives (< 40).
  const CsrMatrix grid = shuffled(spmvc::gen::from_spec("stencil2d:n=20"), 5);
  const CsrMatrix a = shuffled(spmvc::gen::replicate(grid, 40), 11);
  const Ordering o = spmvc::compute_ordering(a, "rcm");
  REQUIRE(o.perm.size() == static_cast<std::size_t>(a.nrows));
  std::vector<std::int32_t> sorted = o.perm;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) CHECK(sorted[i] == static_cast<std::int32_t>(i));
  const CsrMatrix b = spmvc::permute(a, o);
  CHECK(spmvc::locality(b).bandwidth < 40);
  CHECK(spmvc::locality(a).bandwidth > 1000);
}

TEST_CASE("rcm's components take slices in the order of their lowest vertex, on any thread count") {
  // Vertices 1..3000 form three paths, vertex v in path (v - 1) % 3, each path visiting its
  // vertices in a scattered order (so the union of its edges links long chains of roots); 0 and
  // 3001 have no edges. The order must hold {0}, then the path with vertex 1, then 2's, then
  // 3's, then {3001}, each contiguous, the same on 1, 4 and 8 threads.
  const std::int32_t n = 3002;
  std::vector<std::vector<std::int32_t>> rows(n);
  std::mt19937 rng(17);
  for (std::int32_t path = 0; path < 3; ++path) {
    std::vector<std::int32_t> members;
    for (std::int32_t v = 1 + path; v <= 3000; v += 3) members.push_back(v);
    std::shuffle(members.begin(), members.end(), rng);
    for (std::size_t i = 0; i + 1 < members.size(); ++i) {
      rows[members[i]].push_back(members[i + 1]);
      rows[members[i + 1]].push_back(members[i]);
    }
  }
  for (auto& r : rows) std::sort(r.begin(), r.end());
  const CsrMatrix a = from_rows(n, rows);
  std::vector<std::int32_t> first;
  for (const int threads : {1, 4, 8}) {
    CAPTURE(threads);
    spmvc::ReorderOptions options;
    options.threads = threads;
    const std::vector<std::int32_t> perm = spmvc::compute_ordering(a, "rcm", options).perm;
    REQUIRE(perm.size() == static_cast<std::size_t>(n));
    CHECK(perm[0] == 0);
    CHECK(perm[n - 1] == 3001);
    for (std::int32_t k = 1; k <= 3000; ++k) {
      CAPTURE(k);
      CHECK((perm[k] - 1) % 3 == (k - 1) / 1000);
    }
    if (first.empty()) first = perm;
    CHECK(perm == first);
  }
}

TEST_CASE("metis: the last vertices are the top-level separator") {
  // Nested dissection numbers a separator after the two halves it splits, so dropping the last
  // 60 vertices of the ordering of a 50x50 grid (its separators are lines of about 50) must cut
  // the grid in pieces. With the permutation read the wrong way round these 60 are scattered.
  const CsrMatrix a = spmvc::gen::from_spec("stencil2d:n=50");
  const Ordering o = spmvc::compute_ordering(a, "metis");
  CHECK(o.kind == PermutationKind::symmetric);
  std::vector<char> removed(static_cast<std::size_t>(a.nrows), 0);
  for (std::int64_t i = a.nrows - 60; i < a.nrows; ++i) removed[o.perm[i]] = 1;
  const std::vector<std::int64_t> sizes = component_sizes(a, removed);
  CHECK(sizes.size() >= 2);
  CHECK(*std::max_element(sizes.begin(), sizes.end()) < a.nrows * 2 / 3);
}

TEST_CASE("amd eliminates the hub of an arrow matrix last") {
  // Row and column 0 are full: eliminating the hub first would fill the whole matrix.
  std::vector<std::vector<std::int32_t>> rows(100);
  for (std::int32_t i = 0; i < 100; ++i) rows[0].push_back(i);
  for (std::int32_t i = 1; i < 100; ++i) rows[i] = {0, i};
  const Ordering o = spmvc::compute_ordering(from_rows(100, rows), "amd");
  CHECK(o.perm.back() == 0);
}

TEST_CASE("graph orderings say when they symmetrised the pattern") {
  // Upper bidiagonal: the pattern of A + A^T is tridiagonal.
  std::vector<std::vector<std::int32_t>> rows(10);
  for (std::int32_t i = 0; i < 10; ++i)
    rows[i] = i + 1 < 10 ? std::vector{i, i + 1} : std::vector{i};
  for (const char* name : {"rcm", "amd", "metis"}) {
    CAPTURE(name);
    const Ordering o = spmvc::compute_ordering(from_rows(10, rows), name);
    CHECK(o.note.find("not structurally symmetric") != std::string::npos);
  }
}

TEST_CASE("d regroups shuffled rows that share their columns") {
  // 64 groups of 32 rows; the rows of a group share 8 columns spread over x. Shuffled, every
  // warp of 32 rows reads many groups' lines; grouped again, one group's 8 lines.
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<std::int32_t> column(0, 4095);
  std::vector<std::vector<std::int32_t>> rows;
  for (int g = 0; g < 64; ++g) {
    std::vector<std::int32_t> cols;
    while (cols.size() < 8) {
      const std::int32_t c = column(rng) / 16 * 16;  // one column per 128-byte line
      if (std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
    }
    std::sort(cols.begin(), cols.end());
    for (int r = 0; r < 32; ++r) rows.push_back(cols);
  }
  std::shuffle(rows.begin(), rows.end(), rng);
  const CsrMatrix a = from_rows(4096, rows);  // rectangular: rows only
  const double before = spmvc::locality(a).lines_per_warp;
  REQUIRE(before > 100);
  const Ordering o = spmvc::compute_ordering(a, "d");
  CHECK(o.kind == PermutationKind::rows_only);
  CHECK(spmvc::locality(spmvc::permute(a, o)).lines_per_warp == doctest::Approx(8.0));
}

TEST_CASE("dset moves sets of consecutive rows whole") {
  const CsrMatrix a = shuffled(spmvc::gen::from_spec("stencil2d:n=30"), 5);  // 900 rows
  spmvc::ReorderOptions options;
  options.dset_rows = 7;  // 128 sets of 7 and one of 4
  const Ordering o = spmvc::compute_ordering(a, "dset", options);
  bool whole = true;
  for (std::size_t i = 0; i < o.perm.size(); ++i) {
    // Each set starts at a multiple of 7 and continues with the next rows in order.
    const bool starts_set = o.perm[i] % 7 == 0;
    whole &= starts_set || (i > 0 && o.perm[i] == o.perm[i - 1] + 1);
  }
  CHECK(whole);
  CHECK(o.kind == PermutationKind::symmetric);
}

TEST_CASE("bar gathers rows of alike delta widths and shrinks equation 1") {
  // Rows alternate between 16 consecutive columns (a first column of up to 12 bits, then 1-bit
  // deltas) and 16 columns about 1000 apart (10-bit deltas). In the input order every slice of 32
  // mixes both and pays 12 + 15 x 10 = 162 bits: 6 symbols of 32 bits per row. Gathered, half of
  // the slices need 27 bits, 1 symbol per row: 3.5 symbols on average.
  std::vector<std::vector<std::int32_t>> rows;
  for (std::int32_t r = 0; r < 2048; ++r) {
    std::vector<std::int32_t> cols;
    for (std::int32_t k = 0; k < 16; ++k) {
      cols.push_back(r % 2 == 0 ? (r * 37) % 3000 + k : (r * 11) % 1000 + k * (1000 + r % 13));
    }
    rows.push_back(cols);
  }
  const CsrMatrix a = from_rows(20000, rows);
  const std::int64_t before = spmvc::bro_ell_index_bits(a);
  CHECK(before == 2048 * 6 * 32);
  for (const int candidates : {0, 4, 64}) {
    CAPTURE(candidates);
    spmvc::ReorderOptions options;
    options.bar_candidate_clusters = candidates;
    const Ordering o = spmvc::compute_ordering(a, "bar", options);
    CHECK(o.kind == PermutationKind::rows_only);
    const std::int64_t after = spmvc::bro_ell_index_bits(spmvc::permute(a, o));
    CHECK(after <= before * 6 / 10);
    // eta goes from 1 - 6/16 to about 1 - 3.5/16.
    CHECK(spmvc::locality(spmvc::permute(a, o)).bro_eta > spmvc::locality(a).bro_eta + 0.15);
  }
}

TEST_CASE("bar never returns a larger index stream than the input order") {
  for (const char* spec : {"stencil2d:n=64", "rmat:scale=11", "banded:n=3000,hbw=3"}) {
    CAPTURE(spec);
    const CsrMatrix a = spmvc::gen::from_spec(spec);
    const Ordering o = spmvc::compute_ordering(a, "bar");
    CHECK(spmvc::bro_ell_index_bits(spmvc::permute(a, o)) <= spmvc::bro_ell_index_bits(a));
  }
}

TEST_CASE("sort puts longer rows first within each window, stably") {
  const CsrMatrix a = spmvc::gen::from_spec("rmat:scale=12");
  spmvc::ReorderOptions options;
  options.window = 100;
  const Ordering o = spmvc::compute_ordering(a, "sort", options);
  CHECK(o.kind == PermutationKind::rows_only);
  bool sorted = true, in_window = true, stable = true;
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    in_window &= o.perm[i] / 100 == i / 100;
    if (i % 100 == 0) continue;
    const std::int64_t prev = a.row_length(o.perm[i - 1]), cur = a.row_length(o.perm[i]);
    sorted &= prev >= cur;
    stable &= prev != cur || o.perm[i - 1] < o.perm[i];
  }
  CHECK(sorted);
  CHECK(in_window);
  CHECK(stable);
  // The default window is kDefaultSortWindow.
  const Ordering d = spmvc::compute_ordering(a, "sort");
  CHECK(d.note.find(std::to_string(spmvc::kDefaultSortWindow)) != std::string::npos);
}

TEST_CASE("degree puts the most-read columns first, stably; dbg groups them against the mean") {
  const CsrMatrix a = spmvc::gen::from_spec("rmat:scale=12");
  std::vector<std::int64_t> reads(static_cast<std::size_t>(a.ncols), 0);
  for (const std::int32_t c : a.col_idx) ++reads[static_cast<std::size_t>(c)];
  const double mean = static_cast<double>(a.nnz()) / static_cast<double>(a.ncols);

  const Ordering d = spmvc::compute_ordering(a, "degree");
  CHECK(d.kind == PermutationKind::symmetric);
  bool sorted = true, stable = true;
  for (std::int64_t i = 1; i < a.nrows; ++i) {
    const std::int64_t prev = reads[d.perm[i - 1]], cur = reads[d.perm[i]];
    sorted &= prev >= cur;
    stable &= prev != cur || d.perm[i - 1] < d.perm[i];
  }
  CHECK(sorted);
  CHECK(stable);

  // dbg: the hottest vertex leads, every vertex read at least 32x the mean comes before every one
  // read less than the mean, and the input order holds among vertices of one group (here: those
  // read less than half the mean).
  const Ordering g = spmvc::compute_ordering(a, "dbg");
  CHECK(g.kind == PermutationKind::symmetric);
  CHECK(reads[g.perm[0]] >= 32 * mean);
  std::int64_t last_hot = -1, first_cool = a.nrows, previous_cold = -1;
  bool cold_in_order = true;
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    const auto r = static_cast<double>(reads[g.perm[i]]);
    if (r >= 32 * mean) last_hot = i;
    if (r < mean) first_cool = std::min(first_cool, i);
    if (r < mean / 2) {
      cold_in_order &= g.perm[i] > previous_cold;
      previous_cold = g.perm[i];
    }
  }
  CHECK(last_hot < first_cool);
  CHECK(cold_in_order);
  // Not the full sort: dbg keeps input order inside a group where degree would reorder it.
  CHECK(g.perm != d.perm);

  // Two diagonal copies of one graph: inside every dbg group the first copy's vertices all come
  // before the second's, so no group interleaves them (degree, a full sort, puts each vertex
  // beside its twin).
  const CsrMatrix base = spmvc::gen::from_spec("rmat:scale=8");
  const CsrMatrix two = spmvc::gen::replicate(base, 2);
  const Ordering pair = spmvc::compute_ordering(two, "dbg");
  std::int64_t switches = 0;
  for (std::int64_t i = 1; i < two.nrows; ++i) {
    switches += (pair.perm[i - 1] < base.nrows) != (pair.perm[i] < base.nrows);
  }
  CHECK(switches <= 2 * 8 - 1);  // one switch inside each of the 8 groups, one between groups
  const Ordering twin = spmvc::compute_ordering(two, "degree");
  std::int64_t twin_switches = 0;
  for (std::int64_t i = 1; i < two.nrows; ++i) {
    twin_switches += (twin.perm[i - 1] < base.nrows) != (twin.perm[i] < base.nrows);
  }
  CHECK(twin_switches > 3 * (2 * 8 - 1));
}

TEST_CASE("orderings do not depend on the thread count") {
  const CsrMatrix a = spmvc::gen::from_spec("rmat:scale=14");
  for (const std::string& name : spmvc::ordering_names()) {
    CAPTURE(name);
    spmvc::ReorderOptions one, four;
    one.threads = 1;
    four.threads = 4;
    CHECK(spmvc::compute_ordering(a, name, one).perm ==
          spmvc::compute_ordering(a, name, four).perm);
  }
  // rcm orders the connected components side by side: 30 shuffled copies of a grid, and
  // components of unequal sizes, come out the same on 1, 3 and 8 threads.
  const CsrMatrix copies =
      shuffled(spmvc::gen::replicate(shuffled(spmvc::gen::from_spec("stencil2d:n=12"), 3), 30), 9);
  const CsrMatrix mixed = shuffled(spmvc::gen::from_spec("rmat:scale=12,ef=2"), 4);
  for (const CsrMatrix* m : {&copies, &mixed}) {
    spmvc::ReorderOptions one, three, eight;
    one.threads = 1;
    three.threads = 3;
    eight.threads = 8;
    const std::vector<std::int32_t> serial = spmvc::compute_ordering(*m, "rcm", one).perm;
    CHECK(serial == spmvc::compute_ordering(*m, "rcm", three).perm);
    CHECK(serial == spmvc::compute_ordering(*m, "rcm", eight).perm);
  }
}

TEST_CASE("locality and BRO index bits by hand") {
  // Row 0: columns 0, 15, 16 (deltas 0, 15, 1: widths 1, 4, 1); row 1 empty; row 2: columns 1,
  // 39 (deltas 1, 38: widths 1, 6).
  const CsrMatrix a = from_rows(40, {{0, 15, 16}, {}, {1, 39}});
  const spmvc::LocalityStats s = spmvc::locality(a);
  CHECK(s.bandwidth == 37);  // row 2, column 39
  CHECK(s.profile == 1);     // row 2 starts one column left of the diagonal
  // fp64: columns 0, 15, 1 in line 0, 16 in line 1, 39 in line 2.
  CHECK(s.lines_per_warp == 3.0);
  // fp32: 0, 15, 16, 1 in line 0 (bytes < 128), 39 in line 1.
  CHECK(spmvc::locality(a, 4).lines_per_warp == 2.0);
  // One slice of 3 rows: widths per position max(1,1), max(4,6), 1 = 8 bits, one 32-bit symbol
  // per row: C = 96 bits against O = 5 x 32 = 160.
  CHECK(spmvc::bro_ell_index_bits(a) == 96);
  CHECK(s.bro_eta == doctest::Approx(1.0 - 96.0 / 160.0));
  // Slices of one row, 4-bit symbols: row 0 needs 6 bits (2 symbols), row 2 7 bits (2 symbols).
  CHECK(spmvc::bro_ell_index_bits(a, 1, 4) == 16);
  // The lines alone, and through an ordering without the permuted matrix.
  CHECK(spmvc::lines_per_warp(a) == 3.0);
  CHECK(spmvc::lines_per_warp(a, 4) == 2.0);
  CHECK_THROWS_AS(spmvc::lines_per_warp(a, 0), spmvc::InputError);
  const CsrMatrix grid = shuffled(spmvc::gen::from_spec("stencil2d:n=64"), 2);
  const Ordering rcm = spmvc::compute_ordering(grid, "rcm");
  for (const int vb : {4, 8}) {
    CAPTURE(vb);
    const double through = spmvc::lines_per_warp(grid, rcm, vb);
    CHECK(through == spmvc::locality(spmvc::permute(grid, rcm), vb).lines_per_warp);
    CHECK(through * 2 < spmvc::lines_per_warp(grid, vb));  // RCM brings the grid together
  }
  Ordering reversed{"reversed", spmvc::PermutationKind::rows_only, {}, 0, ""};
  for (std::int64_t i = grid.nrows - 1; i >= 0; --i)
    reversed.perm.push_back(static_cast<std::int32_t>(i));
  CHECK(spmvc::lines_per_warp(grid, reversed, 4) ==
        spmvc::locality(spmvc::permute(grid, reversed), 4).lines_per_warp);
  reversed.perm.pop_back();
  CHECK_THROWS_AS(spmvc::lines_per_warp(grid, reversed), spmvc::InputError);
  // An x of more lines than the matrix has nonzeros: the lines are counted by sorting, not
  // stamped. fp64: columns 0 (line 0), 16 and 17 (line 1), 500,000 (line 31,250) and 999,999
  // (line 62,499), in one group of 32 rows: 4 lines.
  const CsrMatrix wide = from_rows(1'000'000, {{0, 16, 999'999}, {17, 500'000}});
  CHECK(spmvc::lines_per_warp(wide) == 4.0);
  CHECK(spmvc::lines_per_warp(wide, 4) == 3.0);  // fp32: 0, 16 and 17 share line 0
}

TEST_CASE("x_gather_miss_share by hand: kept sectors, bands, and hubs packed by dbg") {
  // fp64 (4 values a sector). Rows read columns 0, 1, 4, 0, 8, 0: sectors 0, 0, 1, 0, 2, 0.
  // A cache of two sectors keeps sector 0 (4 uses) and one of 1, 2 (1 use): hits 3 + 0 of 6.
  const CsrMatrix a = from_rows(12, {{0, 1, 4}, {0, 8}, {0}});
  CHECK(spmvc::x_gather_miss_share(a, 8, 32768, 64) == doctest::Approx(3.0 / 6.0));
  // x wider than the nonzeros (250 sectors for 6 nonzeros): counted by sorting, the same share.
  const CsrMatrix wide = from_rows(1000, {{0, 1, 4}, {0, 8}, {0}});
  CHECK(spmvc::x_gather_miss_share(wide, 8, 32768, 64) == doctest::Approx(3.0 / 6.0));
  CHECK(spmvc::x_gather_miss_share(wide, 8, 1, 1 << 20) == doctest::Approx(5.0 / 6.0));
  // One sector of cache: the same (sector 0 kept).
  CHECK(spmvc::x_gather_miss_share(a, 8, 32768, 32) == doctest::Approx(3.0 / 6.0));
  // fp32 (8 values a sector): 0, 1, 4 share sector 0 with 0, 0; 8 is sector 1. Kept both: only
  // the first gather of each misses.
  CHECK(spmvc::x_gather_miss_share(a, 4, 32768, 64) == doctest::Approx(2.0 / 6.0));
  // Bands of one row: each row's first gather of a sector misses, reuse across rows is lost.
  // fp64: row 0 sectors 0, 0, 1 (misses 2), row 1 sectors 0, 2 (2), row 2 sector 0 (1).
  CHECK(spmvc::x_gather_miss_share(a, 8, 1, 1 << 20) == doctest::Approx(5.0 / 6.0));
  CHECK(spmvc::x_gather_miss_share(CsrMatrix{}, 8) == 0.0);
  CHECK_THROWS_AS(spmvc::x_gather_miss_share(a, 0), spmvc::InputError);
  CHECK_THROWS_AS(spmvc::x_gather_miss_share(a, 8, 0), spmvc::InputError);
  CHECK_THROWS_AS(spmvc::x_gather_miss_share(a, 8, 32768, 16), spmvc::InputError);
  CHECK_THROWS_AS(spmvc::x_gather_miss_share(a, 8, 32768, 64, -1), spmvc::InputError);
  // Bands of one row with at most one band taken: row 0's alone, 2 misses of its 3 gathers.
  CHECK(spmvc::x_gather_miss_share(a, 8, 1, 1 << 20, 1) == doctest::Approx(2.0 / 3.0));
  // Two of three bands: rows 0 and 1 (0 * 3 / 2, 1 * 3 / 2), 4 misses of 5.
  CHECK(spmvc::x_gather_miss_share(a, 8, 1, 1 << 20, 2) == doctest::Approx(4.0 / 5.0));

  // A power-law graph: its hub columns spread over x each hold a sector of their own; dbg numbers
  // them together, so a small cache keeps more of them.
  const CsrMatrix g = spmvc::gen::from_spec("rmat:scale=14,ef=16");
  const spmvc::CsrMatrix grouped = spmvc::permute(g, spmvc::compute_ordering(g, "dbg"));
  const double before = spmvc::x_gather_miss_share(g, 4, 32768, 8 * 1024);
  const double after = spmvc::x_gather_miss_share(grouped, 4, 32768, 8 * 1024);
  CHECK(before > 0.3);
  CHECK(after < 0.7 * before);
  // The same measured through the ordering, without the permuted matrix; a rows-only ordering
  // keeps the columns' numbers (rows reversed: the same bands' sectors, other bands).
  const spmvc::Ordering dbg = spmvc::compute_ordering(g, "dbg");
  CHECK(spmvc::x_gather_miss_share(g, dbg, 4, 32768, 8 * 1024) == doctest::Approx(after));
  // In bands of 256 rows (64 bands of about 4K nonzeros), 16 of them spread over the rows give
  // every band's share to within 0.03 in the graph's own order and under dbg (whose bands, rows
  // sorted by degree, differ most), fp32 and fp64, and the same cut by dbg as the hub rule
  // weighs it (at least 15%).
  for (const int vb : {4, 8}) {
    const double all = spmvc::x_gather_miss_share(g, vb, 256, 8 * 1024, 0);
    const double some = spmvc::x_gather_miss_share(g, vb, 256, 8 * 1024, 16);
    const double all_dbg = spmvc::x_gather_miss_share(g, dbg, vb, 256, 8 * 1024, 0);
    const double some_dbg = spmvc::x_gather_miss_share(g, dbg, vb, 256, 8 * 1024, 16);
    CHECK(std::abs(some - all) < 0.03);
    CHECK(std::abs(some_dbg - all_dbg) < 0.03);
    CHECK(all_dbg < 0.85 * all);
    CHECK(some_dbg < 0.85 * some);
  }
  spmvc::Ordering reversed{"reversed", spmvc::PermutationKind::rows_only, {}, 0, ""};
  for (std::int64_t i = g.nrows - 1; i >= 0; --i)
    reversed.perm.push_back(static_cast<std::int32_t>(i));
  CHECK(
      spmvc::x_gather_miss_share(g, reversed, 4, 32768, 8 * 1024) ==
      doctest::Approx(spmvc::x_gather_miss_share(spmvc::permute(g, reversed), 4, 32768, 8 * 1024)));
  reversed.perm.pop_back();
  CHECK_THROWS_AS(spmvc::x_gather_miss_share(g, reversed, 4), spmvc::InputError);
  // dbg on the columns alone (the rows in their order): as measured on the matrix so permuted,
  // and the hubs packed as well as with the rows moved too.
  const spmvc::Ordering alone = spmvc::columns_only(dbg);
  const double alone_share = spmvc::x_gather_miss_share(g, alone, 4, 32768, 8 * 1024);
  CHECK(alone_share ==
        doctest::Approx(spmvc::x_gather_miss_share(spmvc::permute(g, alone), 4, 32768, 8 * 1024)));
  CHECK(alone_share < 0.7 * before);
  CHECK(spmvc::lines_per_warp(g, alone, 8) ==
        spmvc::locality(spmvc::permute(g, alone), 8).lines_per_warp);
  // A cache that holds all of x misses only each sector's first gather, in any order.
  std::vector<bool> touched(static_cast<std::size_t>((g.ncols + 7) / 8), false);
  for (const std::int32_t c : g.col_idx) touched[static_cast<std::size_t>(c / 8)] = true;
  const double all = static_cast<double>(std::count(touched.begin(), touched.end(), true)) /
                     static_cast<double>(g.nnz());
  CHECK(spmvc::x_gather_miss_share(g, 4, 1 << 20, 1 << 30) == doctest::Approx(all));
}

TEST_CASE("tree_likeness: random graphs are tree-like expanders, meshes and clustered graphs not") {
  using spmvc::tree_likeness;
  using spmvc::TreeLikeness;
  // Uniform random columns: no short cycles, each step reaches about a row's length more rows,
  // nothing reciprocal, so A + A^T holds twice A's entries a row.
  for (const int per_row : {3, 6, 16}) {
    CAPTURE(per_row);
    const CsrMatrix a =
        spmvc::gen::from_spec("random:n=" + std::to_string(per_row == 16 ? 100000 : 50000) +
                              ",per_row=" + std::to_string(per_row));
    const TreeLikeness t = tree_likeness(a);
    CHECK(t.closure < 0.01);
    CHECK(t.growth == doctest::Approx(per_row).epsilon(0.25));
    CHECK(t.reciprocity < 0.05);
    CHECK(t.row_mean == doctest::Approx(per_row).epsilon(0.01));
    CHECK(t.mean_degree == doctest::Approx(2 * per_row).epsilon(0.05));
    REQUIRE(t.tree_like());
    CHECK(t.rcm_lines_left() == doctest::Approx(1 - 1.0 / per_row).epsilon(0.05));
    // The bound: RCM leaves at least that share of x's lines a warp reads.
    const double before = spmvc::lines_per_warp(a, 8);
    const double after = spmvc::lines_per_warp(a, spmvc::compute_ordering(a, "rcm"), 8);
    CAPTURE(before);
    CAPTURE(after);
    CHECK(after >= before * t.rcm_lines_left());
    CHECK(after < before);  // and RCM does make some of them local: the bound is not vacuous
  }
  // A symmetric random pattern: every sampled entry reciprocal, A + A^T is A. Rows are built
  // as lists (csr_from_arrays sorts them and sums duplicates).
  const CsrMatrix r = spmvc::gen::from_spec("random:n=20000,per_row=8");
  std::vector<std::vector<std::int32_t>> adjacent(static_cast<std::size_t>(r.nrows));
  for (std::int64_t i = 0; i < r.nrows; ++i) {
    for (std::int64_t k = r.row_ptr[i]; k < r.row_ptr[i + 1]; ++k) {
      adjacent[static_cast<std::size_t>(i)].push_back(r.col_idx[k]);
      adjacent[static_cast<std::size_t>(r.col_idx[k])].push_back(static_cast<std::int32_t>(i));
    }
  }
  const auto from_rows = [&](const std::vector<std::vector<std::int32_t>>& rows) {
    std::vector<std::int64_t> ptr{0};
    std::vector<std::int32_t> idx;
    for (const auto& row : rows) {
      idx.insert(idx.end(), row.begin(), row.end());
      ptr.push_back(static_cast<std::int64_t>(idx.size()));
    }
    return spmvc::csr_from_arrays(r.nrows, r.ncols, ptr, idx, std::vector<double>(idx.size(), 1.0));
  };
  const TreeLikeness s = tree_likeness(from_rows(adjacent));
  CHECK(s.reciprocity == doctest::Approx(1.0));
  CHECK(s.mean_degree == doctest::Approx(s.row_mean));
  CHECK(s.tree_like());
  // With its diagonal stored too, an entry a row more, but no more edges: the same degree.
  for (std::size_t i = 0; i < adjacent.size(); ++i)
    adjacent[i].push_back(static_cast<std::int32_t>(i));
  const TreeLikeness d = tree_likeness(from_rows(adjacent));
  CHECK(d.row_mean == doctest::Approx(s.row_mean + 1).epsilon(0.01));
  CHECK(d.mean_degree == doctest::Approx(s.mean_degree).epsilon(0.01));
  CHECK(d.tree_like());

  // Meshes (squares: 4-cycles through every edge), a random geometric graph (triangles), and
  // a grid in a scattered order (the statistic sees the graph, not its numbering).
  for (const char* spec : {"stencil2d:n=200", "stencil7:n=30", "rgg:n=50000,degree=12",
                           "stencil27:n=20", "banded:n=50000,hbw=4"}) {
    CAPTURE(spec);
    const TreeLikeness t = tree_likeness(spmvc::gen::from_spec(spec));
    CHECK(t.closure > 0.05);
    CHECK_FALSE(t.tree_like());
  }
  const TreeLikeness scattered =
      tree_likeness(shuffled(spmvc::gen::from_spec("stencil2d:n=200"), 5));
  CHECK(scattered.closure > 0.05);
  CHECK_FALSE(scattered.tree_like());
  // A path (a tree) shares no cycles but does not expand, and holds two entries a row.
  const CsrMatrix path = spmvc::gen::from_spec("banded:n=5000,hbw=1");
  CHECK_FALSE(tree_likeness(path).tree_like());

  CHECK_THROWS_AS(tree_likeness(spmvc::gen::from_spec("random:nrows=30,ncols=20,per_row=3")),
                  spmvc::InputError);
  CHECK_THROWS_AS(tree_likeness(path, 0), spmvc::InputError);
  CHECK(tree_likeness(CsrMatrix{}).closure == 0);
}
