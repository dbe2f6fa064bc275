// csr_warp on the device: the main kernel and the long rows' fixup against the host CSR reference
// on power-law graphs (hub rows cut into many pieces), stencils, matrices with empty and
// one-nonzero rows, a rectangular matrix with a dense row, under dbg ordering, every precision,
// value codings, alpha and beta; and y the same bit for bit from one multiply to the next.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gpu_support.hpp"
#include "spmvc/generators.hpp"

using namespace spmvc;

namespace {

CsrWarpParams warp(int chunk, int values = 0) {
  CsrWarpParams p;
  p.chunk = chunk;
  p.values = values;
  return p;
}

}  // namespace

TEST_CASE("csr_warp: chunks and pieces equal the host reference") {
  if (!test::have_device()) return;
  for (const char* spec : {"rmat:scale=14,ef=16", "rmat:scale=12,ef=4", "stencil27:n=20",
                           "random:n=20000,per_row=3", "rgg:n=20000,degree=10"}) {
    const CsrMatrix a = gen::from_spec(spec);
    for (const Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
      for (const int chunk : {64, 512, 4096}) {
        CAPTURE(spec);
        CAPTURE(std::string(to_string(p)));
        CAPTURE(chunk);
        const Operator op = compile(a, test::forced(p, warp(chunk)));
        REQUIRE(op.plan().format == "csr_warp");
        CHECK(test::check(a, op) <= test::tolerance(p));
        CHECK(test::check(a, op, 1.5, -0.5) <= test::tolerance(p));
      }
    }
  }
}

TEST_CASE("csr_warp: a rectangular matrix, reordering and coded values") {
  if (!test::have_device()) return;
  const CsrMatrix wide = test::dense_row_rectangular();
  for (const int chunk : {64, 512}) {
    const Operator op = compile(wide, test::forced(Precision::f64, warp(chunk)));
    CHECK(test::check(wide, op, 2.0, 1.0) <= test::tolerance(Precision::f64));
  }
  // Under dbg, the hubs' rows come first and their pieces take the first chunks.
  const CsrMatrix g = gen::from_spec("rmat:scale=13,ef=16");
  Options o = test::forced(Precision::f64, warp(512));
  o.reorder = "dbg";
  const Operator reordered = compile(g, o);
  CHECK(test::check(g, reordered) <= test::tolerance(Precision::f64));
  // 8-bit codes (the stencil's few values), ones (a pattern graph) and exact fp32 values.
  const CsrMatrix s = gen::from_spec("stencil27:n=16");
  CHECK(
      test::check(s, compile(s, test::forced(Precision::f64, warp(512, formats::kValuesTable8)))) <=
      test::tolerance(Precision::f64));
  const CsrMatrix r = gen::from_spec("rgg:n=30000,degree=12");
  CHECK(test::check(r, compile(r, test::forced(Precision::f32, warp(512, formats::kValuesUnit)))) <=
        test::tolerance(Precision::f32));
}

TEST_CASE("csr_warp: y is the same bit for bit from one multiply to the next") {
  if (!test::have_device()) return;
  // No atomics: the long rows' pieces are added in a fixed order, so repeated multiplies agree
  // in every bit (hubs of thousands of nonzeros cut into pieces of 64).
  const CsrMatrix a = gen::from_spec("rmat:scale=15,ef=16");
  const Operator op = compile(a, test::forced(Precision::f32, warp(64)));
  const std::vector<double> x = codegen::test_vector(a.ncols, Precision::f32);
  std::vector<double> first(static_cast<std::size_t>(a.nrows), 0.0);
  op.apply_host(x, first, 1.0, 0.0);
  for (int i = 0; i < 5; ++i) {
    std::vector<double> y(first.size(), 0.0);
    op.apply_host(x, y, 1.0, 0.0);
    CHECK(std::memcmp(y.data(), first.data(), y.size() * sizeof(double)) == 0);
  }
}
