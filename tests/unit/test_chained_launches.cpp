// codegen::chain_launches: a unit of several launches begins each launch after the first with a
// wait for the one before it, and each before the last with leave for the next to start, so that
// the runtime may launch it early (programmatic dependent launch). The NVRTC tests check the
// instructions; the GPU tests run such units, captured in graphs too.
#include <doctest/doctest.h>

#include <string>

#include "codegen/codegen.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;

namespace {

struct Unit {
  Encoded encoded;
  KernelSource source;
};

// hyb with K = 2 on the graphs below: its long rows give the COO part entries (a second launch).
Unit unit_of(const CsrMatrix& a, const char* format) {
  const Profile profile = inspect(a);
  compiler::PlanOptions o;
  o.format = format;
  if (std::string(format) == "hyb") {
    HybParams h;
    h.width = 2;
    o.params = h;
  }
  const Plan plan = compiler::make_plan(profile, o);
  Unit u{compiler::encode(a, plan), {}};
  u.source = codegen::generate(plan, u.encoded, profile);
  return u;
}

// The body of entry `entry`: from its definition's brace to the next definition (or the end).
std::string body_of(const std::string& source, const std::string& entry) {
  const std::size_t name = source.find("\n" + entry + "(");
  REQUIRE(name != std::string::npos);
  const std::size_t brace = source.find('{', name);
  const std::size_t next = source.find("extern \"C\" __global__", brace);
  return source.substr(brace, next == std::string::npos ? std::string::npos : next - brace);
}

const std::string kWait = "spmvc::wait_for_previous_launch();";
const std::string kAllow = "spmvc::allow_next_launch();";

}  // namespace

TEST_CASE("a unit of one launch is not chained") {
  const Unit u = unit_of(gen::from_spec("stencil2d:n=10"), "csr");
  REQUIRE(u.source.launches().size() == 1);
  CHECK_FALSE(u.source.chained);
  CHECK(test::occurrences(u.source.source, kWait) == 0);
  CHECK(test::occurrences(u.source.source, kAllow) == 0);
}

TEST_CASE("hyb's two launches: the ELL launch lets the COO launch start, which waits for it") {
  const Unit u = unit_of(gen::from_spec("rmat:scale=9,ef=8"), "hyb");
  const auto launches = u.source.launches();
  REQUIRE(launches.size() == 2);
  CHECK(u.source.chained);
  const std::string ell = body_of(u.source.source, launches[0].entry);
  const std::string coo = body_of(u.source.source, launches[1].entry);
  CHECK(test::occurrences(ell, kAllow) == 1);
  CHECK(test::occurrences(ell, kWait) == 0);
  CHECK(test::occurrences(coo, kWait) == 1);
  CHECK(test::occurrences(coo, kAllow) == 0);
  // The wait comes first in the body, before anything reads y.
  CHECK(coo.find(kWait) < coo.find("spmvc::coo::"));
}

TEST_CASE("renumbered columns: the gather of x is chained to the launches that read it") {
  const CsrMatrix a = gen::from_spec("rmat:scale=9,ef=8");
  Unit u = unit_of(a, "hyb");
  std::vector<std::int32_t> perm(static_cast<std::size_t>(a.nrows));
  for (std::size_t i = 0; i < perm.size(); ++i)
    perm[i] = static_cast<std::int32_t>((i * 7) % perm.size());  // 7 is coprime to 512
  codegen::attach_reordering(u.source, u.encoded, {perm, perm});
  const auto launches = u.source.launches();
  REQUIRE(launches.size() == 3);
  CHECK(u.source.chained);
  const std::string gather = body_of(u.source.source, launches[0].entry);
  const std::string ell = body_of(u.source.source, launches[1].entry);
  const std::string coo = body_of(u.source.source, launches[2].entry);
  CHECK(test::occurrences(gather, kWait) ==
        0);  // the first launch follows the caller's work in order
  CHECK(test::occurrences(gather, kAllow) == 1);
  CHECK(test::occurrences(ell, kWait) == 1);
  CHECK(test::occurrences(ell, kAllow) == 1);
  CHECK(test::occurrences(coo, kWait) == 1);
  CHECK(test::occurrences(coo, kAllow) == 0);
  // Once per launch, however often the unit is chained.
  CHECK(test::occurrences(u.source.source, kWait) == 2);
  CHECK(test::occurrences(u.source.source, kAllow) == 2);
  const std::string once = u.source.source;
  codegen::chain_launches(u.source);
  CHECK(u.source.source == once);
}

TEST_CASE("a csr unit becomes chained when the gather of x comes before it") {
  const CsrMatrix a = gen::from_spec("stencil2d:n=10");
  Unit u = unit_of(a, "csr");
  std::vector<std::int32_t> perm(static_cast<std::size_t>(a.nrows));
  for (std::size_t i = 0; i < perm.size(); ++i)
    perm[i] = static_cast<std::int32_t>(perm.size() - 1 - i);
  codegen::attach_reordering(u.source, u.encoded, {perm, perm});
  REQUIRE(u.source.launches().size() == 2);
  CHECK(u.source.chained);
  CHECK(test::occurrences(body_of(u.source.source, u.source.kernel_name), kWait) == 1);
  // A row map alone adds no launch: the unit stays unchained.
  Unit rows = unit_of(a, "csr");
  codegen::attach_reordering(rows.source, rows.encoded, {perm, {}});
  CHECK_FALSE(rows.source.chained);
}

TEST_CASE("a launch whose entry is not defined in the unit is an internal error") {
  Unit u = unit_of(gen::from_spec("rmat:scale=9,ef=8"), "hyb");
  REQUIRE(u.source.post_launches.size() == 1);
  u.source.post_launches[0].entry = "spmv_not_there";
  CHECK_THROWS_AS(codegen::chain_launches(u.source), InternalError);
}
