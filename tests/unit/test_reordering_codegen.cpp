// attach_reordering: a unit generated for a reordered matrix writes y through the row map and,
// with renumbered columns, gathers x first. (The GPU tests run such units.)
#include <doctest/doctest.h>

#include <algorithm>

#include "codegen/codegen.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"

using namespace spmvc;

namespace {

struct Unit {
  Encoded encoded;
  KernelSource source;
};

Unit csr_unit(const CsrMatrix& a) {
  const Profile profile = inspect(a);
  compiler::PlanOptions o;
  o.format = "csr";
  const Plan plan = compiler::make_plan(profile, o);
  Unit u{compiler::encode(a, plan), {}};
  u.source = codegen::generate(plan, u.encoded, profile);
  return u;
}

std::vector<std::int32_t> reversed(std::int64_t n) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(v.size() - 1 - i);
  return v;
}

}  // namespace

TEST_CASE("a row map adds its array and the define, and leaves the launches alone") {
  const CsrMatrix a = gen::from_spec("stencil2d:n=10");
  Unit u = csr_unit(a);
  const auto arrays = u.encoded.arrays.size();
  const std::int64_t bytes = u.encoded.total_bytes();
  codegen::attach_reordering(u.source, u.encoded, {reversed(a.nrows), {}});
  REQUIRE(u.encoded.arrays.size() == arrays + 1);
  CHECK(u.encoded.arrays.back().name == "row_map");
  CHECK(u.encoded.arrays.back().count() == a.nrows);
  CHECK(u.encoded.total_bytes() == bytes + 4 * a.nrows);
  // Defined before the first include, so common.cuh sees it.
  const auto define = u.source.source.find("#define SPMVC_ROW_MAP");
  REQUIRE(define != std::string::npos);
  CHECK(define < u.source.source.find("#include"));
  CHECK(u.source.pre_launches.empty());
}

TEST_CASE("renumbered columns: x is gathered into a scratch array that every launch reads") {
  const CsrMatrix a = gen::from_spec("stencil2d:n=10");
  Unit u = csr_unit(a);
  codegen::attach_reordering(u.source, u.encoded, {reversed(a.nrows), reversed(a.ncols)});
  REQUIRE(u.source.pre_launches.size() == 1);
  CHECK(u.source.pre_launches[0].entry == "spmvc_gather_x_f64");
  const auto& x_perm = u.encoded.array("x_perm");
  CHECK(x_perm.scratch);
  CHECK(x_perm.count() == a.ncols);
  CHECK(std::none_of(u.source.params.begin(), u.source.params.end(),
                     [](const KernelParam& p) { return p.kind == KernelParam::Kind::x; }));
  CHECK(std::any_of(u.source.params.begin(), u.source.params.end(),
                    [](const KernelParam& p) { return p.name == "x_perm"; }));
  // Scratch is workspace, not matrix data.
  CHECK(u.encoded.total_bytes() == csr_unit(a).encoded.total_bytes() + 4 * a.nrows + 4 * a.ncols);
  CHECK_THROWS_AS(codegen::attach_reordering(u.source, u.encoded, {{0, 1}, {}}), InternalError);

  // Blocks of 256 threads gather 16 elements each: 10,000 columns take three stretches of 4,096.
  const CsrMatrix big = gen::from_spec("stencil2d:n=100");
  Unit v = csr_unit(big);
  codegen::attach_reordering(v.source, v.encoded, {reversed(big.nrows), reversed(big.ncols)});
  REQUIRE(v.source.pre_launches.size() == 1);
  CHECK(v.source.pre_launches[0].block == 256);
  CHECK(v.source.pre_launches[0].grid == 3);
  CHECK(v.source.source.find("spmvc::permute::gather<256, 16, double>") != std::string::npos);
}
