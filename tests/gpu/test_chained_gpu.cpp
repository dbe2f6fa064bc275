// Chained launches (codegen::chain_launches): on sm_90 and newer, a unit's launches after the
// first start before the previous one ends and wait inside for it. A multiply whose launches
// read what the one before wrote (the gather of x, hyb's ELL part before its COO part) must
// still see it: x changes between multiplies, so a launch that read x_perm or y early would
// give the previous multiply's values. SPMVC_EARLY_LAUNCH=0 turns the early launches off. Units
// under the hub order whose format reads x in two parts gather the hub columns alone and read
// the rest of x in place (codegen::split_x_reads), every x of the eight checked. A unit whose
// columns are not all read gathers only those that are.
// Skipped without a GPU.
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gpu_support.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"

using namespace spmvc;
using test::have_device;
using test::tolerance;

namespace {

bool hopper_or_newer() {
  int device = 0, major = 0;
  REQUIRE(cudaGetDevice(&device) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess);
  return major >= 9;
}

Options unit(const char* format, const char* reorder, Precision p) {
  Options o;
  o.build = BuildMode::host;
  o.disk_cache = false;
  o.precision = p;
  o.format = format;
  o.reorder = reorder;
  o.renumber_columns = std::string(reorder) != "none";
  return o;
}

// The hub order on the columns alone (the caller's order): hyb and csr_warp gather the hubs
// alone and read every other column of x in place.
Options columns_alone(const char* format, Precision p) {
  Options o = unit(format, "dbg", p);
  o.keep_row_order = true;
  return o;
}

// Multiplies by eight different x in a row, each y checked against the host reference.
void check_many(const CsrMatrix& a, const Operator& op) {
  const Precision p = op.plan().precision;
  std::vector<double> y(static_cast<std::size_t>(a.nrows)), ref(y.size()), y0(y.size());
  for (std::size_t i = 0; i < y0.size(); ++i) y0[i] = 0.5 - 0.125 * static_cast<double>(i % 7);
  for (int round = 0; round < 8; ++round) {
    CAPTURE(round);
    std::vector<double> x = codegen::test_vector(a.ncols, p);
    for (std::size_t j = 0; j < x.size(); ++j)
      x[j] = p == Precision::f64 ? x[j] * (1.0 + round) - round
                                 : static_cast<float>(x[j] * (1.0 + round) - round);
    y = y0;
    ref = y0;
    op.apply_host(x, y, 1.0, 0.75);
    compiler::csr_reference_spmv(a, x, ref, 1.0, 0.75);
    CHECK(compiler::relative_error(y, ref) <= tolerance(p));
  }
}

}  // namespace

TEST_CASE("gpu: a unit's launches after the first start early on sm_90, and see the one before") {
  if (!have_device()) return;
  const bool early = hopper_or_newer();
  const CsrMatrix graph = gen::from_spec("rmat:scale=17,ef=16");
  const CsrMatrix mesh = gen::from_spec("stencil2d:n=400");
  struct Case {
    const char* what;
    const CsrMatrix* a;
    Options options;
    int launches;
    bool hubs_alone = false;  // x read in two parts: the gather takes the hub columns alone
  };
  for (Precision p : {Precision::f64, Precision::f32}) {
    CAPTURE(to_string(p));
    const std::vector<Case> cases = {
        {"csr: one launch", &mesh, unit("csr", "none", p), 1},
        {"hyb: ELL then COO", &graph, unit("hyb", "none", p), 2},
        {"csr under rcm: the gather of x, then the multiply", &mesh, unit("csr", "rcm", p), 2},
        {"hyb under dbg: the gather of the hubs, ELL, COO", &graph, unit("hyb", "dbg", p), 3, true},
        {"csr_stream under rcm", &graph, unit("csr_stream", "rcm", p), 2},
        {"hyb under dbg, columns alone", &graph, columns_alone("hyb", p), 3, true},
        {"csr_warp under dbg, columns alone: the hubs, the chunks, the long rows' fixup", &graph,
         columns_alone("csr_warp", p), 3, true},
        {"csr_stream under dbg, columns alone: x gathered whole", &graph,
         columns_alone("csr_stream", p), 2},
    };
    for (const Case& c : cases) {
      CAPTURE(c.what);
      const Operator op = compile(*c.a, c.options);
      REQUIRE(static_cast<int>(op.source().launches().size()) == c.launches);
      const bool gathers = std::string(c.options.reorder) != "none";
      REQUIRE(op.source().pre_launches.size() == (gathers ? 1u : 0u));
      if (gathers) {
        CHECK(op.source().pre_launches[0].entry.starts_with(c.hubs_alone ? "spmvc_gather_hubs_"
                                                                         : "spmvc_gather_x_"));
      }
      CHECK(op.timings().early_launches == (early ? c.launches - 1 : 0));
      check_many(*c.a, op);
    }
  }
}

TEST_CASE("gpu: a reordered unit gathers only the columns read; x elsewhere is never read") {
  if (!have_device()) return;
  // A directed graph in which only every fourth vertex is pointed to (random rows of 8, their
  // columns moved onto multiples of 4) and every fifth points nowhere (an empty row), under RCM
  // in the caller's order: the columns read are numbered first, and only they are gathered; the
  // empty rows go last, and y is still written for them.
  const CsrMatrix a = test::sparse_directed(gen::from_spec("random:n=60000,per_row=8"), 4, 5);
  for (Precision p : {Precision::f64, Precision::f32}) {
    for (const char* format : {"csr", "csr_stream", "bro_ell"}) {
      CAPTURE(to_string(p));
      CAPTURE(format);
      Operator op = compile(a, unit(format, "rcm", p));
      REQUIRE(op.source().pre_launches.size() == 1u);
      CHECK(op.source().pre_launches[0].entry == "spmvc_gather_x_" + std::string(to_string(p)));
      CHECK(op.source().source.find("(15000LL, col_map, x, x_perm)") != std::string::npos);
      check_many(a, op);
      // x is NaN in every column no entry reads: the gather leaves them out, so y stays finite;
      // y starts NaN, so every row, the empty ones too, must be written.
      std::vector<double> x = codegen::test_vector(a.ncols, p);
      for (std::size_t j = 0; j < x.size(); ++j)
        if (j % 4 != 0) x[j] = std::nan("");
      std::vector<double> y(static_cast<std::size_t>(a.nrows), std::nan("")), ref(y.size());
      op.apply_host(x, y);
      compiler::csr_reference_spmv(a, x, ref);
      CHECK(std::all_of(y.begin(), y.end(), [](double v) { return std::isfinite(v); }));
      CHECK(compiler::relative_error(y, ref) <= tolerance(p));
      // New values reach the packed unit's arrays where its own encode puts them.
      CsrMatrix b = a;
      for (std::size_t k = 0; k < b.values.size(); ++k)
        b.values[k] = 1.0 + static_cast<double>(k % 97) / 8.0;
      const ValueUpdate u = op.update_values(b.values);
      CHECK_FALSE(u.replanned);
      check_many(b, op);
    }
  }
}

TEST_CASE("gpu: SPMVC_EARLY_LAUNCH=0 launches in stream order; another value is an input error") {
  if (!have_device()) return;
  const CsrMatrix graph = gen::from_spec("rmat:scale=15,ef=16");
  {
    test::EnvVar off("SPMVC_EARLY_LAUNCH", "0");
    const Operator op = compile(graph, unit("hyb", "dbg", Precision::f64));
    REQUIRE(op.source().launches().size() == 3);
    CHECK(op.timings().early_launches == 0);
    check_many(graph, op);
  }
  {
    test::EnvVar on("SPMVC_EARLY_LAUNCH", "on");
    const Operator op = compile(graph, unit("hyb", "none", Precision::f64));
    CHECK(op.timings().early_launches == (hopper_or_newer() ? 1 : 0));
  }
  if (hopper_or_newer()) {
    test::EnvVar bad("SPMVC_EARLY_LAUNCH", "sometimes");
    try {
      (void)compile(graph, unit("hyb", "none", Precision::f64));
      FAIL("SPMVC_EARLY_LAUNCH=sometimes was accepted");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find("SPMVC_EARLY_LAUNCH") != std::string::npos);
      CHECK(std::string(e.what()).find("sometimes") != std::string::npos);
    }
  }
}
