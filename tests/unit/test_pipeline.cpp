// The host pipeline (spmvc::build): the one stage sequence compile(), `spmvc plan`, `emit` and
// `explain` share. A build is what the stages give by hand; a reordered build computes the
// caller's product through its row map; stopping after planning leaves the unit empty.
#include <doctest/doctest.h>

#include <unistd.h>
#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "spmvc/build.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/emit.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;
namespace fs = std::filesystem;

namespace {

// y = A x in the caller's order from a build's encoded arrays: the format's reference product on
// the (possibly reordered) matrix, x gathered through the column map and y scattered through the
// row map the unit carries, as the kernels do.
// What the unit's launches compute, on the host: x gathered as the unit gathers it (whole into the
// new column order, or, where the reads are split, the hubs after x in place: column n + j is
// hub j), y written through the row map.
std::vector<double> product_through_build(const Build& b, const std::vector<double>& x) {
  std::vector<double> xb = x;
  Encoded e = b.encoded;
  if (codegen::splits_x(b.encoded)) {
    const std::int64_t hubs = b.encoded.array("x_hub").count();
    for (std::int64_t j = 0; j < hubs; ++j)
      xb.push_back(x[static_cast<std::size_t>(b.map->cols[j])]);
    e.ncols += hubs;  // the reference reads the hubs as columns past x's
  } else if (b.map && !b.map->cols.empty()) {
    // As the gather does, from the unit's own arrays: x_perm[j] = x[col_map[j]], or where only
    // the columns read are gathered, x_perm[col_slot[i]] = x[col_map[i]] and every other element
    // NaN, so that a kernel reading one would show in y.
    const auto from = test::array_as<std::int32_t>(b.encoded.array("col_map"));
    const bool slots = std::any_of(b.encoded.arrays.begin(), b.encoded.arrays.end(),
                                   [](const EncodedArray& arr) { return arr.name == "col_slot"; });
    const std::vector<std::int32_t> to =
        slots ? test::array_as<std::int32_t>(b.encoded.array("col_slot"))
              : std::vector<std::int32_t>{};
    std::fill(xb.begin(), xb.end(), std::numeric_limits<double>::quiet_NaN());
    for (std::size_t i = 0; i < from.size(); ++i)
      xb[slots ? static_cast<std::size_t>(to[i]) : i] = x[static_cast<std::size_t>(from[i])];
  }
  std::vector<double> yb(static_cast<std::size_t>(b.encoded.nrows));
  compiler::reference_spmv(b.plan, e, xb, yb);
  if (!b.map) return yb;
  std::vector<double> y(yb.size());
  for (std::size_t i = 0; i < yb.size(); ++i) y[static_cast<std::size_t>(b.map->rows[i])] = yb[i];
  return y;
}

// RCM with the columns renumbered, in the plan's order or the caller's.
Options rcm_renumbered(bool plan_order) {
  Options o;
  o.reorder = "rcm";
  o.renumber_columns = true;
  o.plan_order = plan_order;
  return o;
}

// The map of a packed build `b` of `a` reads back as RCM's ordering, and permuting by it then
// packing as the map records gives the build's matrix again.
void check_packed_round_trip(const CsrMatrix& a, const Build& b, const Ordering& rcm) {
  const Ordering again = ordering_of(*b.map, "again");
  CHECK(again.kind == PermutationKind::symmetric);
  CHECK(again.perm == rcm.perm);
  const CsrMatrix moved = packed_like(permute(a, again), *b.map);
  CHECK(moved.row_ptr == b.reordered->row_ptr);
  CHECK(moved.col_idx == b.reordered->col_idx);
  CHECK(moved.values == b.reordered->values);
}

}  // namespace

TEST_CASE("build gives what the stages give by hand, in the caller's order") {
  const CsrMatrix a = gen::from_spec("stencil27:n=8");
  Options o;
  o.precision = Precision::f32;
  const Build b = build(a, o);
  CHECK_FALSE(b.reordered);
  CHECK_FALSE(b.map);
  CHECK(b.plan.reorder == "none");

  const Profile profile = inspect(a, InspectDepth::rows);
  compiler::PlanOptions po;
  po.precision = Precision::f32;
  const Plan plan = compiler::make_plan(profile, po);
  const Encoded encoded = compiler::encode(a, plan);
  const KernelSource source = codegen::generate(plan, encoded, profile);
  CHECK(b.plan.format == plan.format);
  CHECK(describe(b.plan.params) == describe(plan.params));
  CHECK(b.source.source == source.source);
  CHECK(b.source.kernel_name == source.kernel_name);
  REQUIRE(b.encoded.arrays.size() == encoded.arrays.size());
  for (std::size_t i = 0; i < encoded.arrays.size(); ++i)
    CHECK(b.encoded.arrays[i].bytes == encoded.arrays[i].bytes);
}

TEST_CASE("a reordered build carries its row map and multiplies in the caller's order") {
  // A stencil numbered at random: RCM has something to do.
  CsrMatrix a = gen::from_spec("stencil2d:n=24");
  Ordering shuffle{"shuffle", PermutationKind::symmetric, {}, 0, ""};
  shuffle.perm.resize(static_cast<std::size_t>(a.nrows));
  for (std::size_t i = 0; i < shuffle.perm.size(); ++i)
    shuffle.perm[i] = static_cast<std::int32_t>((i * 37) % shuffle.perm.size());
  a = permute(a, shuffle);
  const std::vector<double> x = codegen::test_vector(a.ncols);
  std::vector<double> ref(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x, ref);

  for (const bool renumber : {false, true}) {
    CAPTURE(renumber);
    Options o;
    o.reorder = "rcm";
    o.renumber_columns = renumber;
    const Build b = build(a, o);
    REQUIRE(b.reordered);
    REQUIRE(b.map);
    CHECK(b.map->cols.empty() == !renumber);
    CHECK(b.plan.reorder == (renumber ? "rcm (rows and columns)" : "rcm (rows)"));
    CHECK(b.source.source.find("#define SPMVC_ROW_MAP 1") != std::string::npos);
    CHECK_NOTHROW(b.encoded.array("row_map"));
    CHECK(b.encoded.nrows == a.nrows);
    CHECK(compiler::relative_error(product_through_build(b, x), ref) < 1e-14);
  }
}

TEST_CASE("a reordered build numbers the columns read first and gathers only them") {
  // A directed graph in which only every fourth vertex is pointed to: random rows of 8 nonzeros
  // with their columns moved onto multiples of 4 (a quarter of x read), numbered at random.
  const CsrMatrix r = gen::from_spec("random:n=4000,per_row=8");
  const CsrMatrix a = test::sparse_directed(r, 4, 0);
  const std::vector<double> x = codegen::test_vector(a.ncols);
  std::vector<double> ref(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x, ref);
  const Ordering rcm = compute_ordering(a, "rcm");
  for (const Precision p : {Precision::f64, Precision::f32}) {
    for (const char* format : {"csr", "csr_stream", "bro_ell"}) {
      CAPTURE(to_string(p));
      CAPTURE(format);
      Options o = rcm_renumbered(false);
      o.precision = p;
      o.format = format;
      const Build b = build(a, o);
      REQUIRE(b.map);
      REQUIRE(b.reordered);
      // The 1,000 columns read are the reordered matrix's first, in RCM's order; the rest
      // follow, and the rows are RCM's.
      CHECK(b.map->packed_columns == 1000);
      const std::vector<std::int32_t> read = columns_read(*b.reordered);
      REQUIRE(read.size() == 1000);
      CHECK(read.back() == 999);
      CHECK(b.map->rows == rcm.perm);
      std::vector<std::int32_t> rank(static_cast<std::size_t>(a.ncols));
      for (std::size_t j = 0; j < rank.size(); ++j)
        rank[static_cast<std::size_t>(rcm.perm[j])] = static_cast<std::int32_t>(j);
      for (std::size_t j = 0; j < b.map->cols.size(); ++j) {
        CHECK((b.map->cols[j] % 4 == 0) == (j < 1000));  // read columns first
        if (j > 0 && j != 1000)
          CHECK(rank[static_cast<std::size_t>(b.map->cols[j - 1])] <
                rank[static_cast<std::size_t>(b.map->cols[j])]);
      }
      REQUIRE(b.source.pre_launches.size() >= 1);
      CHECK(b.source.pre_launches[0].entry == "spmvc_gather_x_" + std::string(to_string(p)));
      CHECK_THROWS(b.encoded.array("col_slot"));
      const auto from = test::array_as<std::int32_t>(b.encoded.array("col_map"));
      REQUIRE(from.size() == 1000);
      for (std::size_t i = 0; i < from.size(); ++i) CHECK(from[i] == b.map->cols[i]);
      // x_perm past the first 1,000 is NaN in the product below: no kernel reads it.
      const double tol = p == Precision::f64 ? 1e-14 : 1e-6;
      CHECK(compiler::relative_error(product_through_build(b, x), ref) < tol);
      check_packed_round_trip(a, b, rcm);
    }
  }
  // In the plan's order x and y move alike: no packing and no gather; with the rows alone
  // moved, x is read in place.
  Options o = rcm_renumbered(true);
  const Build planned = build(a, o);
  CHECK(planned.map->packed_columns == 0);
  CHECK(planned.map->cols == planned.map->rows);
  CHECK_THROWS(planned.encoded.array("col_map"));
  o.plan_order = false;
  o.renumber_columns = false;
  const Build rows = build(a, o);
  CHECK(rows.map->packed_columns == 0);
  CHECK_THROWS(rows.encoded.array("col_map"));
  CHECK(rows.source.pre_launches.empty());
  // Most columns read (two of every three): not packed, x gathered whole in RCM's order.
  std::vector<std::int32_t> most(r.col_idx.begin(), r.col_idx.end());
  for (std::int32_t& c : most) c -= c % 3 == 2 ? 1 : 0;
  const CsrMatrix m = csr_from_arrays(r.nrows, r.ncols, r.row_ptr, most, r.values);
  o.renumber_columns = true;
  const Build whole = build(m, o);
  CHECK(columns_read(m).size() > static_cast<std::size_t>(m.ncols / 2));
  CHECK(whole.map->packed_columns == 0);
  CHECK(whole.map->cols == whole.map->rows);
  CHECK(whole.encoded.array("col_map").count() == m.ncols);
  CHECK(whole.source.pre_launches[0].entry == "spmvc_gather_x_f64");
}

TEST_CASE("a reordered build in the caller's order puts its empty rows last") {
  // Random rows of 8 with every third row emptied and a quarter of the columns read.
  const CsrMatrix a = test::sparse_directed(gen::from_spec("random:n=3000,per_row=8"), 4, 3);
  const std::vector<double> x = codegen::test_vector(a.ncols);
  std::vector<double> ref(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x, ref);
  const Ordering rcm = compute_ordering(a, "rcm");
  std::vector<std::int32_t> rank(static_cast<std::size_t>(a.nrows));
  for (std::size_t j = 0; j < rank.size(); ++j)
    rank[static_cast<std::size_t>(rcm.perm[j])] = static_cast<std::int32_t>(j);
  for (const char* format : {"csr", "csr_stream", "bro_ell", "ell"}) {
    CAPTURE(format);
    Options o = rcm_renumbered(false);
    o.format = format;
    const Build b = build(a, o);
    REQUIRE(b.map);
    REQUIRE(b.reordered);
    CHECK(b.map->packed_rows == 2000);
    CHECK(b.map->packed_columns > 0);
    // The plan says so, for `spmvc plan` and explain.
    CHECK(b.plan.reorder_why.find("its 1000 empty rows last") != std::string::npos);
    CHECK(b.plan.reorder_why.find(fmt::format("the {} of 3000 columns read numbered first",
                                              b.map->packed_columns)) != std::string::npos);
    for (std::int64_t i = 0; i < a.nrows; ++i) {
      const auto caller = static_cast<std::size_t>(b.map->rows[static_cast<std::size_t>(i)]);
      CHECK((b.reordered->row_ptr[i + 1] > b.reordered->row_ptr[i]) == (i < 2000));
      CHECK((caller % 3 != 2) == (i < 2000));  // the caller's emptied rows last
      CHECK(b.reordered->row_ptr[i + 1] - b.reordered->row_ptr[i] ==
            a.row_ptr[caller + 1] - a.row_ptr[caller]);
      if (i > 0 && i != 2000)  // each part in RCM's order
        CHECK(rank[static_cast<std::size_t>(b.map->rows[static_cast<std::size_t>(i - 1)])] <
              rank[caller]);
    }
    CHECK(compiler::relative_error(product_through_build(b, x), ref) < 1e-14);
    check_packed_round_trip(a, b, rcm);
  }
  // The plan's order moves x and y alike: the rows are RCM's.
  Options o = rcm_renumbered(true);
  const Build planned = build(a, o);
  CHECK(planned.map->packed_rows == 0);
  CHECK(planned.map->rows == rcm.perm);
  // A map whose counts do not match the matrix is refused by name.
  o.plan_order = false;
  RowColumnMap wrong = *build(a, o).map;
  wrong.packed_rows = 1999;
  try {
    (void)packed_like(permute(a, rcm), wrong);
    FAIL("a map with the wrong count of rows was accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("packed_like") != std::string::npos);
  }
}

TEST_CASE("keep_row_order: the columns move alone, y is written in place") {
  const CsrMatrix a = gen::from_spec("rmat:scale=10,ef=8");
  const std::vector<double> x = codegen::test_vector(a.ncols);
  std::vector<double> ref(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x, ref);
  for (const char* name : {"dbg", "rcm"}) {
    CAPTURE(name);
    Options o;
    o.reorder = name;
    o.renumber_columns = true;
    o.keep_row_order = true;
    const Build b = build(a, o);
    REQUIRE(b.map);
    REQUIRE(b.reordered);
    CHECK(b.plan.reorder == std::string(name) + " (columns)");
    CHECK(is_identity(b.map->rows));
    CHECK(b.map->cols == compute_ordering(a, name).perm);
    CHECK(b.reordered->row_ptr == a.row_ptr);  // every row where it was
    // No row map: y is written in place; x is still gathered into the columns' order.
    CHECK(b.source.source.find("SPMVC_ROW_MAP") == std::string::npos);
    CHECK_THROWS(b.encoded.array("row_map"));
    CHECK_NOTHROW(b.encoded.array("col_map"));
    CHECK(b.source.source.find(codegen::splits_x(b.encoded)
                                   ? "spmvc_gather_hubs"
                                   : "spmvc_gather_x") != std::string::npos);
    CHECK(compiler::relative_error(product_through_build(b, x), ref) < 1e-14);
  }
  // What it cannot do is refused, naming the option: rows-only orderings and unrenumbered
  // columns move no columns, and the plan's order keeps x and y in one order.
  Options sort;
  sort.reorder = "sort";
  sort.keep_row_order = true;
  sort.renumber_columns = true;
  Options kept;
  kept.reorder = "rcm";
  kept.keep_row_order = true;
  Options planned = kept;
  planned.renumber_columns = true;
  planned.plan_order = true;
  // With plan_order it is refused whatever the matrix, even where no ordering is asked for.
  Options unordered;
  unordered.keep_row_order = true;
  unordered.plan_order = true;
  for (const Options& bad : {sort, kept, planned, unordered}) {
    try {
      (void)build(a, bad);
      FAIL("keep_row_order was accepted where it cannot apply");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find("keep_row_order") != std::string::npos);
    }
  }
}

TEST_CASE("in the plan's order a reordered unit has no row map and no gather of x") {
  const CsrMatrix a = gen::from_spec("rmat:scale=9,ef=8");
  const std::vector<double> x = codegen::test_vector(a.ncols);
  std::vector<double> ref(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x, ref);
  for (const bool renumber : {false, true}) {
    CAPTURE(renumber);
    Options o;
    o.reorder = "dbg";
    o.renumber_columns = renumber;
    const Build caller = build(a, o);
    o.plan_order = true;
    const Build b = build(a, o);
    REQUIRE(b.map);
    CHECK(b.map->cols.empty() == !renumber);
    CHECK(b.plan.reorder == caller.plan.reorder);
    CHECK(b.plan.format == caller.plan.format);
    // The unit is the reordered matrix's own: the caller's order's unit adds the row map, and
    // with renumbered columns the gather of x into a scratch array.
    CHECK(b.source.source.find("SPMVC_ROW_MAP") == std::string::npos);
    CHECK(caller.source.source.find("#define SPMVC_ROW_MAP 1") != std::string::npos);
    CHECK(b.source.source.find("spmvc_gather_x") == std::string::npos);
    CHECK((caller.source.source.find("spmvc_gather_x") != std::string::npos) == renumber);
    CHECK(b.source.pre_launches.size() + (renumber ? 1 : 0) == caller.source.pre_launches.size());
    for (const char* name : {"row_map", "col_map", "x_perm"}) CHECK_THROWS(b.encoded.array(name));
    CHECK(b.source.source != caller.source.source);  // a kernel cache key of its own

    // x in the plan's column order gives y in its row order: the reordered matrix's product.
    std::vector<double> xp = x;
    if (renumber)
      for (std::size_t j = 0; j < xp.size(); ++j)
        xp[j] = x[static_cast<std::size_t>(b.map->cols[j])];
    std::vector<double> yp(static_cast<std::size_t>(a.nrows));
    compiler::reference_spmv(b.plan, b.encoded, xp, yp);
    std::vector<double> ref_plan(ref.size());
    for (std::size_t r = 0; r < ref.size(); ++r)
      ref_plan[r] = ref[static_cast<std::size_t>(b.map->rows[r])];
    CHECK(compiler::relative_error(yp, ref_plan) < 1e-14);
  }
  // Without an ordering the plan's order is the caller's: the same unit.
  Options plain;
  Options ordered;
  ordered.plan_order = true;
  CHECK(build(a, ordered).source.source == build(a, plain).source.source);
}

TEST_CASE("emit writes a reordered unit whose reference y is in the caller's order") {
  const CsrMatrix a = gen::from_spec("random:n=300,per_row=6");
  Options o;
  o.reorder = "rcm";
  const Build b = build(a, o);
  REQUIRE(b.map);
  const std::vector<double> x = codegen::test_vector(a.ncols);
  std::vector<double> ref(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x, ref);
  const fs::path dir =
      fs::temp_directory_path() / ("spmvc-test-emit-reorder-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  codegen::emit(b.plan, b.encoded, b.source, ref, dir);
  const Encoded back = codegen::read_encoded(dir / "matrix.bin");
  CHECK(std::any_of(back.arrays.begin(), back.arrays.end(),
                    [](const EncodedArray& e) { return e.name == "row_map"; }));
  // The harness points spmvc_row_map at the uploaded map before its launches.
  CHECK(codegen::harness_source(b.encoded, b.source).find("cudaMemcpyToSymbol(spmvc_row_map") !=
        std::string::npos);
  CHECK(compiler::relative_error(product_through_build(b, x), ref) < 1e-14);
  fs::remove_all(dir);

  // The columns alone: no row map to point at, the gather of x launched first.
  o.renumber_columns = true;
  o.keep_row_order = true;
  const Build alone = build(a, o);
  const std::string harness = codegen::harness_source(alone.encoded, alone.source);
  CHECK(harness.find("spmvc_row_map") == std::string::npos);
  CHECK(harness.find("spmvc_gather_x") != std::string::npos);
  CHECK(compiler::relative_error(product_through_build(alone, x), ref) < 1e-14);
}

TEST_CASE("build can stop after planning, and realize finishes any candidate") {
  const CsrMatrix a = gen::from_spec("rmat:scale=10,ef=8");
  const Options o;
  BuildTarget t;
  t.until = BuildStage::plan;
  Build b = build(a, o, t);
  CHECK(b.source.source.empty());
  CHECK(b.encoded.arrays.empty());
  REQUIRE(b.plan.candidates.size() > 1);
  // The second applicable candidate, encoded and generated by the pipeline's tail.
  const auto second = std::find_if(b.plan.candidates.begin() + 1, b.plan.candidates.end(),
                                   [](const Candidate& c) { return c.applicable; });
  REQUIRE(second != b.plan.candidates.end());
  Plan p = b.plan;
  p.format = second->format;
  p.params = second->params;
  realize(a, b, p, o);
  CHECK(b.plan.format == second->format);
  CHECK_FALSE(b.source.source.empty());
  const std::vector<double> x = codegen::test_vector(a.ncols);
  std::vector<double> ref(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x, ref);
  CHECK(compiler::relative_error(product_through_build(b, x), ref) < 1e-12);
}

TEST_CASE("build refuses an ordering that is no permutation of the matrix") {
  const CsrMatrix a = gen::from_spec("stencil2d:n=6");
  Options o;
  o.ordering = Ordering{"broken", PermutationKind::rows_only, {0, 0, 1}, 0, ""};
  CHECK_THROWS_WITH_AS(build(a, o), doctest::Contains("not a permutation"), InputError);
}

TEST_CASE("reorder auto: a scattered grid is reordered, a local one not") {
  const CsrMatrix grid = gen::from_spec("stencil27:n=40");  // scattered enough once shuffled
  Ordering shuffle{"shuffle", PermutationKind::symmetric, {}, 0, ""};
  shuffle.perm.resize(static_cast<std::size_t>(grid.nrows));
  std::iota(shuffle.perm.begin(), shuffle.perm.end(), 0);
  std::mt19937 rng(7);
  std::shuffle(shuffle.perm.begin(), shuffle.perm.end(), rng);  // a scattered order
  const CsrMatrix scattered = permute(grid, shuffle);
  Options o;
  o.reorder = "auto";
  BuildTarget t;
  t.until = BuildStage::plan;
  const Build a = build(scattered, o, t);
  CAPTURE(a.plan.reorder_why);
  CHECK(a.plan.reorder == "rcm (rows and columns)");
  REQUIRE(a.map);
  CHECK(a.map->cols.size() == static_cast<std::size_t>(grid.ncols));
  const Build b = build(grid, o, t);
  CHECK(b.plan.reorder == "none");
  CHECK(b.plan.reorder_why.find("already local") != std::string::npos);
}

TEST_CASE(
    "reorder auto: a hub graph in fp32 is built as csr_warp under dbg, cuSPARSE not weighed") {
  // The cost model puts cuSPARSE first on this graph in its own order (it has no term for what
  // grouping the hubs saves): the hub rule plans its format on the ordered matrix regardless.
  const CsrMatrix g = gen::from_spec("rmat:scale=19,ef=16");
  Options o;
  o.precision = Precision::f32;
  o.reorder = "auto";
  BuildTarget t;
  t.until = BuildStage::plan;
  t.gpu = "H200";
  const Build hub = build(g, o, t);
  CAPTURE(hub.plan.reorder_why);
  CHECK(hub.plan.reorder == "dbg (columns)");  // in the caller's order the rows stay
  CHECK(hub.plan.format == "csr_warp");        // the H200's calibration prices it
  CHECK(hub.plan.engine == Engine::kernel);
  REQUIRE(hub.map);
  CHECK(is_identity(hub.map->rows));
  CHECK(hub.map->cols == compute_ordering(g, "dbg").perm);
  // In the plan's order they move with the columns.
  Options planned = o;
  planned.plan_order = true;
  const Build both = build(g, planned, t);
  CHECK(both.plan.reorder == "dbg (rows and columns)");
  CHECK(both.plan.format == "hyb");
  REQUIRE(both.map);
  CHECK(both.map->rows == hub.map->cols);

  // Asking for bitwise-reproducible sums: csr_warp so ordered where the GPU's calibration prices
  // it (the H200's), no hub rule where it does not (the H100's).
  Options reproducible = o;
  reproducible.deterministic = true;
  const Build warp = build(g, reproducible, t);
  CAPTURE(warp.plan.reorder_why);
  CHECK(warp.plan.reorder == "dbg (columns)");
  CHECK(warp.plan.format == "csr_warp");
  t.gpu = "H100";
  CHECK(build(g, reproducible, t).plan.reorder.rfind("dbg", 0) == std::string::npos);
  CHECK(build(g, o, t).plan.format == "hyb");  // the H100's calibration has no csr_warp row
  t.gpu = "H200";

  // A caller who fixes the format leaves the rule out.
  Options fixed = o;
  fixed.cusparse = "never";
  fixed.format = "csr";
  const Build b = build(g, fixed, t);
  CAPTURE(b.plan.reorder_why);
  CHECK(b.plan.reorder.rfind("dbg", 0) == std::string::npos);
}

TEST_CASE("the hub order in the caller's order: hyb and csr_warp gather the hubs alone") {
  const CsrMatrix a = gen::from_spec("rmat:scale=12,ef=16");
  const std::int64_t n = a.ncols;
  // The hubs: the columns read at least as often as the mean, which dbg puts first.
  std::vector<std::int64_t> count(static_cast<std::size_t>(n), 0);
  for (const std::int32_t c : a.col_idx) ++count[static_cast<std::size_t>(c)];
  const double mean = static_cast<double>(a.nnz()) / static_cast<double>(n);
  const Ordering dbg = compute_ordering(a, "dbg");
  const std::int64_t hubs = std::count_if(
      count.begin(), count.end(), [&](std::int64_t k) { return static_cast<double>(k) >= mean; });
  REQUIRE(hubs > 0);
  REQUIRE(hubs < n / 2);
  CHECK(dbg.hub_columns == hubs);
  for (std::int64_t j = 0; j < n; ++j) {
    CAPTURE(j);
    const bool hub = static_cast<double>(count[static_cast<std::size_t>(dbg.perm[j])]) >= mean;
    if (hub != (j < hubs)) FAIL_CHECK("a hub past the first hub_columns or a column before");
  }
  CHECK(compute_ordering(a, "rcm").hub_columns == 0);

  const std::vector<double> x = codegen::test_vector(n);
  std::vector<double> ref(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x, ref);
  for (const char* format : {"hyb", "csr_warp"}) {
    for (Precision p : {Precision::f64, Precision::f32}) {
      CAPTURE(format);
      CAPTURE(to_string(p));
      const Build b = build(a, test::hub_order_columns(format, p));
      REQUIRE(b.map);
      CHECK(b.map->hub_columns == hubs);
      REQUIRE(codegen::splits_x(b.encoded));
      const EncodedArray& x_hub = b.encoded.array("x_hub");
      CHECK(x_hub.scratch);
      CHECK(x_hub.count() == hubs);
      CHECK(x_hub.type == (p == Precision::f64 ? ElemType::f64 : ElemType::f32));
      // The gather reads the hubs' map alone: hubs entries, not n.
      const EncodedArray& col_map = b.encoded.array("col_map");
      REQUIRE(col_map.count() == hubs);
      const auto* gathered = reinterpret_cast<const std::int32_t*>(col_map.bytes.data());
      CHECK(std::equal(gathered, gathered + hubs, dbg.perm.begin()));
      CHECK_THROWS(b.encoded.array("x_perm"));
      // Every stored column is the caller's own below n, or a hub at n + j; hub j's nonzeros
      // are its column's in a.
      std::vector<std::int64_t> seen(static_cast<std::size_t>(n + hubs), 0);
      for (const std::string& name : std::vector<std::string>{
               std::string(format) == "hyb" ? "ell_col_idx" : "col_idx", "coo_col"}) {
        if (std::string(format) != "hyb" && name == "coo_col") continue;
        const EncodedArray& cols = b.encoded.array(name);
        const auto* c = reinterpret_cast<const std::int32_t*>(cols.bytes.data());
        for (std::int64_t k = 0; k < cols.count(); ++k) {
          if (c[k] < 0) continue;
          REQUIRE(c[k] < n + hubs);
          ++seen[static_cast<std::size_t>(c[k])];
        }
      }
      for (std::int64_t j = 0; j < hubs; ++j) {
        CHECK(seen[static_cast<std::size_t>(n + j)] ==
              count[static_cast<std::size_t>(dbg.perm[j])]);
        CHECK(seen[static_cast<std::size_t>(dbg.perm[j])] == 0);  // never read in place
      }
      for (std::int64_t j = hubs; j < n; ++j) {
        const std::int32_t c = dbg.perm[j];
        CHECK(seen[static_cast<std::size_t>(c)] == count[static_cast<std::size_t>(c)]);
      }
      // The kernels take x, x_hub and ncols; the pre-launch gathers the hubs in stretches of 4,096.
      CHECK(b.source.source.find("spmvc::SplitX<Value>{x, x_hub, ncols}") != std::string::npos);
      // Its entry points say so (a profiler trace, a cache listing).
      CHECK(b.source.kernel_name.ends_with(std::string("_xhub")));
      for (const KernelLaunch& l : b.source.launches()) {
        const bool reads_x =
            std::any_of(l.params.begin(), l.params.end(),
                        [](const KernelParam& q) { return q.kind == KernelParam::Kind::x; });
        if (reads_x && !l.entry.starts_with("spmvc_gather"))
          CHECK(l.entry.find("_xhub") != std::string::npos);
      }
      REQUIRE(b.source.pre_launches.size() == 1);
      CHECK(b.source.pre_launches[0].entry.starts_with("spmvc_gather_hubs_"));
      CHECK(b.source.pre_launches[0].grid == (hubs + 4095) / 4096);
      for (const KernelLaunch& l : b.source.launches()) {
        if (l.entry.starts_with("spmvc_gather")) continue;
        const bool reads_x =
            std::any_of(l.params.begin(), l.params.end(),
                        [](const KernelParam& q) { return q.kind == KernelParam::Kind::x; });
        const bool reads_hubs = std::any_of(l.params.begin(), l.params.end(),
                                            [](const KernelParam& q) { return q.name == "x_hub"; });
        CHECK(reads_x == reads_hubs);
      }
      const double tol = p == Precision::f64 ? 1e-14 : 1e-6;
      CHECK(compiler::relative_error(product_through_build(b, x), ref) < tol);
    }
  }

  // x is gathered whole where the format codes its columns otherwise (csr_stream's 16-bit
  // columns), where no hubs are named (RCM), and not at all in the plan's order.
  const Options stream = test::hub_order_columns("csr_stream", Precision::f64);
  Options rcm = stream;
  rcm.format = "hyb";
  rcm.reorder = "rcm";
  for (const Options& o : {stream, rcm}) {
    const Build b = build(a, o);
    CHECK_FALSE(codegen::splits_x(b.encoded));
    CHECK(b.source.kernel_name.find("_xhub") == std::string::npos);
    CHECK(b.encoded.array("x_perm").count() == n);
    CHECK(compiler::relative_error(product_through_build(b, x), ref) < 1e-14);
  }
  Options planned;
  planned.format = "hyb";
  planned.reorder = "dbg";
  planned.renumber_columns = true;
  planned.plan_order = true;
  const Build p = build(a, planned);
  CHECK_FALSE(codegen::splits_x(p.encoded));
  CHECK_THROWS(p.encoded.array("col_map"));
}
