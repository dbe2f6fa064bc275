// Vectors in the plan's order (Options::plan_order): apply() on x permuted into the plan's column
// order gives A x permuted into its row order, for orderings with columns kept or renumbered and
// both precisions; to_plan_order and from_plan_order are the exact permutations of plan_columns()
// and plan_rows(); a power iteration stays in the plan's order from start to end and ends where
// the caller's order ends; an operator without an ordering keeps the caller's order; the generic
// tier stays out; apply_many and apply_transpose take and give their vectors in the plan's order
// too, and update_values keeps the order, the kept CSR's values included. Skipped without a GPU.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu_support.hpp"
#include "spmvc/bench/gpu.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/spmm.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"

using namespace spmvc;
using test::have_device;
using test::tolerance;

namespace {

// v permuted by `map` (out[i] = v[map[i]]); an empty map is the identity.
std::vector<double> gathered(const std::vector<double>& v, std::span<const std::int32_t> map) {
  if (map.empty()) return v;
  std::vector<double> out(map.size());
  for (std::size_t i = 0; i < map.size(); ++i) out[i] = v[static_cast<std::size_t>(map[i])];
  return out;
}

bool is_permutation_of(std::span<const std::int32_t> map, std::int64_t n) {
  if (static_cast<std::int64_t>(map.size()) != n) return false;
  std::vector<char> seen(map.size(), 0);
  for (const std::int32_t v : map) {
    if (v < 0 || v >= n || seen[static_cast<std::size_t>(v)]) return false;
    seen[static_cast<std::size_t>(v)] = 1;
  }
  return true;
}

std::size_t value_size(Precision p) { return p == Precision::f64 ? 8 : 4; }

}  // namespace

TEST_CASE("gpu: plan order: y in the plan's row order from x in its column order") {
  if (!have_device()) return;
  struct Case {
    const char* spec;
    const char* ordering;
    bool renumber;
  };
  for (const Case c :
       {Case{"rmat:scale=13,ef=12", "dbg", true}, Case{"rmat:scale=13,ef=12", "dbg", false},
        Case{"stencil2d:n=90", "rcm", true}, Case{"elasticity:n=7", "amd", false}}) {
    const CsrMatrix a = gen::from_spec(c.spec);
    for (const Precision p : {Precision::f64, Precision::f32}) {
      CAPTURE(c.spec);
      CAPTURE(c.ordering);
      CAPTURE(c.renumber);
      CAPTURE(to_string(p));
      Options o;
      o.precision = p;
      o.disk_cache = false;
      o.reorder = c.ordering;
      o.renumber_columns = c.renumber;
      o.plan_order = true;
      const Operator op = compile(a, o);
      REQUIRE(op.plan_order());
      CHECK(op.plan().reorder.rfind(c.ordering, 0) == 0);
      CHECK(is_permutation_of(op.plan_rows(), a.nrows));
      if (c.renumber) {
        CHECK(is_permutation_of(op.plan_columns(), a.ncols));
        CHECK(std::equal(op.plan_rows().begin(), op.plan_rows().end(), op.plan_columns().begin()));
      } else {
        CHECK(op.plan_columns().empty());
      }
      // The unit multiplies the reordered matrix as it stands: no launch gathers x.
      CHECK(op.source().source.find("SPMVC_ROW_MAP") == std::string::npos);
      for (const KernelLaunch& l : op.source().pre_launches)
        CHECK(l.entry.find("gather_x") == std::string::npos);

      const std::vector<double> x = codegen::test_vector(a.ncols, p);
      std::vector<double> y0(static_cast<std::size_t>(a.nrows));
      for (std::size_t i = 0; i < y0.size(); ++i) y0[i] = 0.5 - 0.125 * static_cast<double>(i % 7);
      std::vector<double> ref = y0;
      compiler::csr_reference_spmv(a, x, ref, 1.5, -0.5);
      // apply_host takes them as they are: the caller permutes on the host.
      std::vector<double> y = gathered(y0, op.plan_rows());
      op.apply_host(gathered(x, op.plan_columns()), y, 1.5, -0.5);
      CHECK(compiler::relative_error(y, gathered(ref, op.plan_rows())) <= tolerance(p));

      // On the device: to_plan_order, apply, from_plan_order give the caller's y.
      const std::size_t vb = value_size(p);
      bench::DeviceArray dx(x.size() * vb), dx_plan(x.size() * vb);
      bench::DeviceArray dy(y0.size() * vb), dy_plan(y0.size() * vb);
      dx.upload_values(x, p);
      dy.upload_values(y0, p);
      op.to_plan_order(dx.get(), dx_plan.get());
      op.to_plan_order(dy.get(), dy_plan.get(), PlanAxis::rows);
      // Exact permutations: the same values, bit for bit, where plan_columns() says.
      CHECK(dx_plan.download_values(x.size(), p) ==
            gathered(dx.download_values(x.size(), p), op.plan_columns()));
      dy.fill_bytes(0xff);
      op.apply(dx_plan.get(), dy_plan.get(), 1.5, -0.5);
      op.from_plan_order(dy_plan.get(), dy.get());
      CHECK(compiler::relative_error(dy.download_values(y0.size(), p), ref) <= tolerance(p));
      // And back: from_plan_order undoes to_plan_order on either side.
      bench::DeviceArray back(x.size() * vb);
      op.from_plan_order(dx_plan.get(), back.get(), PlanAxis::columns);
      CHECK(back.download_values(x.size(), p) == dx.download_values(x.size(), p));
      // Out of place only: the same array in and out is an error naming the call.
      CHECK_THROWS_WITH_AS(op.to_plan_order(dx.get(), dx.get()), doctest::Contains("to_plan_order"),
                           InputError);
    }
  }
}

TEST_CASE("gpu: plan order: a power iteration in the plan's order ends where the caller's ends") {
  if (!have_device()) return;
  // PageRank-like: x <- A x / ||A x||_1 for a few steps, once with the caller's order and once
  // wholly in the plan's order (dbg, the hub rule's ordering, columns renumbered), permuted only
  // before the first step and after the last.
  const CsrMatrix a = gen::from_spec("rmat:scale=12,ef=10");
  Options caller;
  caller.disk_cache = false;
  caller.reorder = "dbg";
  caller.renumber_columns = true;
  Options plan = caller;
  plan.plan_order = true;
  const Operator op_caller = compile(a, caller);
  const Operator op_plan = compile(a, plan);
  REQUIRE_FALSE(op_caller.plan_order());
  REQUIRE(op_plan.plan_order());
  const std::size_t n = static_cast<std::size_t>(a.nrows);
  const std::vector<double> start(n, 1.0 / static_cast<double>(n));
  auto iterate = [&](const Operator& op, std::vector<double> x) {
    bench::DeviceArray dx(n * 8), dy(n * 8);
    for (int step = 0; step < 6; ++step) {
      dx.upload_values(x, Precision::f64);
      op.apply(dx.get(), dy.get());
      x = dy.download_values(n, Precision::f64);
      double sum = 0;
      for (const double v : x) sum += std::fabs(v);
      for (double& v : x) v /= sum;
    }
    return x;
  };
  const std::vector<double> in_caller = iterate(op_caller, start);
  bench::DeviceArray d_start(n * 8), d_start_plan(n * 8), d_end(n * 8), d_end_plan(n * 8);
  d_start.upload_values(start, Precision::f64);
  op_plan.to_plan_order(d_start.get(), d_start_plan.get());
  const std::vector<double> in_plan =
      iterate(op_plan, d_start_plan.download_values(n, Precision::f64));
  d_end_plan.upload_values(in_plan, Precision::f64);
  op_plan.from_plan_order(d_end_plan.get(), d_end.get());
  CHECK(compiler::relative_error(d_end.download_values(n, Precision::f64), in_caller) <= 1e-12);
}

TEST_CASE("gpu: plan order: without an ordering the caller's order, copied") {
  if (!have_device()) return;
  const CsrMatrix a = gen::from_spec("stencil2d:n=64");
  Options o;
  o.disk_cache = false;
  o.plan_order = true;  // reorder "none": nothing to permute
  const Operator op = compile(a, o);
  CHECK_FALSE(op.plan_order());
  CHECK(op.plan_rows().empty());
  CHECK(op.plan_columns().empty());
  CHECK(test::check(a, op) <= tolerance(Precision::f64));
  const std::vector<double> x = codegen::test_vector(a.ncols);
  bench::DeviceArray dx(x.size() * 8), dx_plan(x.size() * 8);
  dx.upload_values(x, Precision::f64);
  op.to_plan_order(dx.get(), dx_plan.get());
  CHECK(dx_plan.download_values(x.size(), Precision::f64) == x);
}

namespace {

// X's k columns (column-major), each permuted by `map`.
std::vector<double> gathered_columns(const std::vector<double>& v, int k,
                                     std::span<const std::int32_t> map) {
  const std::size_t n = v.size() / static_cast<std::size_t>(k);
  std::vector<double> out;
  for (int j = 0; j < k; ++j) {
    const std::vector<double> column(v.begin() + static_cast<std::ptrdiff_t>(j * n),
                                     v.begin() + static_cast<std::ptrdiff_t>((j + 1) * n));
    const std::vector<double> moved = gathered(column, map);
    out.insert(out.end(), moved.begin(), moved.end());
  }
  return out;
}

// apply_many (k = 3, column-major) and apply_transpose of `op` on vectors in the plan's order,
// against the host references of `a` (the caller's matrix) permuted into that order.
void check_spmm_and_transpose(const Operator& op, const CsrMatrix& a) {
  constexpr int k = 3;
  std::vector<double> x(static_cast<std::size_t>(a.ncols) * k);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.25 + 0.5 * static_cast<double>(i % 13);
  std::vector<double> want(static_cast<std::size_t>(a.nrows) * k, 0.0);
  compiler::reference_spmm(a, k, DenseLayout::col_major, x, want, 1.0, 0.0);
  std::vector<double> y(want.size());
  op.apply_many_host(gathered_columns(x, k, op.plan_columns()), y, k);
  CHECK(compiler::relative_error(y, gathered_columns(want, k, op.plan_rows())) <=
        tolerance(Precision::f64));
  // A^T takes x in the plan's row order and gives y in its column order.
  const std::vector<double> xt = codegen::test_vector(a.nrows);
  std::vector<double> yt_want(static_cast<std::size_t>(a.ncols));
  compiler::csr_reference_spmv(compiler::transpose(a), xt, yt_want);
  std::vector<double> yt(yt_want.size());
  op.apply_transpose_host(gathered(xt, op.plan_rows()), yt);
  CHECK(compiler::relative_error(yt, gathered(yt_want, op.plan_columns())) <=
        tolerance(Precision::f64));
}

}  // namespace

TEST_CASE("gpu: plan order: no generic tier; SpMM, the transpose and new values in the order") {
  if (!have_device()) return;
  const CsrMatrix a = gen::from_spec("rmat:scale=11,ef=8");
  Options o;
  o.reorder = "dbg";
  o.renumber_columns = true;
  o.tiered = true;
  o.keep_csr = true;
  {
    // Nothing cached: in the caller's order the operator starts on its generic tier.
    test::TempDir empty("plan-order");
    o.cache_dir = empty.path().string();
    const Operator op = compile(a, o);
    CHECK(op.timings().tier == "generic");
  }
  // The generic tier multiplies the caller's order: a plan-ordered operator runs its own kernel
  // from the first multiply.
  test::TempDir empty("plan-order");
  o.cache_dir = empty.path().string();
  o.plan_order = true;
  Operator op = compile(a, o);
  REQUIRE(op.plan_order());
  CHECK(op.timings().tier == "specialised");
  const std::vector<std::int32_t> rows(op.plan_rows().begin(), op.plan_rows().end());
  // SpMM and A^T in the plan's order: csr_stream's own SpMM unit, cusparseSpMM on the kept CSR
  // (reordered), and for hyb (no SpMM kernel) a unit built on that CSR, each against the
  // references.
  check_spmm_and_transpose(op, a);
  for (const auto& [format, engine] :
       {std::pair{"csr_stream", "never"}, std::pair{"csr_stream", "always"},
        std::pair{"hyb", "never"}}) {
    CAPTURE(format);
    CAPTURE(engine);
    Options f = o;
    f.format = format;
    f.spmm_cusparse = engine;
    const Operator g = compile(a, f);
    REQUIRE(g.plan_order());
    check_spmm_and_transpose(g, a);
    const std::string note = g.timings().spmm_note;
    CAPTURE(note);
    if (std::string_view(engine) == "always") CHECK(note.find("cuSPARSE") != std::string::npos);
    if (std::string_view(format) == "hyb") CHECK(note.find("kept CSR") != std::string::npos);
  }
  // Without the kept CSR the transpose says what it needs.
  Options no_csr = o;
  no_csr.keep_csr = false;
  const Operator bare = compile(a, no_csr);
  std::vector<double> yt(static_cast<std::size_t>(a.ncols));
  CHECK_THROWS_WITH_AS(
      bare.apply_transpose_host(std::vector<double>(static_cast<std::size_t>(a.nrows)), yt),
      doctest::Contains("keep_csr"), InputError);

  // New values, re-planned or not, leave the vectors' order as it was, and reach the kept CSR
  // in that order: from the host, then from the device.
  CsrMatrix b = a;
  for (std::size_t k = 0; k < b.values.size(); ++k)
    b.values[k] = 1.0 + 1e-3 * static_cast<double>(k % 1009);
  const ValueUpdate u = op.update_values(b.values);
  CAPTURE(u.why);
  REQUIRE(op.plan_order());
  CHECK(std::equal(rows.begin(), rows.end(), op.plan_rows().begin(), op.plan_rows().end()));
  const std::vector<double> x = codegen::test_vector(a.ncols);
  std::vector<double> y(static_cast<std::size_t>(a.nrows));
  std::vector<double> ref(static_cast<std::size_t>(b.nrows));
  compiler::csr_reference_spmv(b, x, ref);
  op.apply_host(gathered(x, op.plan_columns()), y);
  CHECK(compiler::relative_error(y, gathered(ref, op.plan_rows())) <= tolerance(Precision::f64));
  check_spmm_and_transpose(op, b);
  CsrMatrix c = a;
  for (std::size_t k = 0; k < c.values.size(); ++k)
    c.values[k] = 2.0 - 1e-3 * static_cast<double>(k % 997);
  bench::DeviceArray dv(c.values.size() * 8);
  dv.upload_values(c.values, Precision::f64);
  op.update_values(static_cast<const void*>(dv.get()));
  REQUIRE(op.plan_order());
  check_spmm_and_transpose(op, c);
}
