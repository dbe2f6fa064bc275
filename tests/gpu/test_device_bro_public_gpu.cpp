// The BRO formats built on the GPU from device arrays on the public matrices: for every bro_ell
// candidate the planner proposes on each public matrix of at least 10k nonzeros, every array
// equals the host codec's, entry by entry, and the planner's bro_ell operator multiplies right;
// bro_coo and bro_hyb the same on those of 10k to 2M nonzeros.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "device_bro_support.hpp"

using namespace spmvc;
using namespace spmvc::test::bro_gpu;
using test::check;
using test::have_device;
using test::tolerance;

TEST_CASE("gpu: bro_ell from device arrays on every public matrix: arrays and product") {
  if (!have_device()) return;
  const auto matrices = test::public_matrices(10000);
  if (matrices.empty()) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  const Units u;
  const formats::BroEllFormat unit;
  int modes[3] = {0, 0, 0};
  for (const auto& [name, path] : matrices) {
    const CsrMatrix a = read_matrix_market(path);
    const Profile profile = inspect(a, InspectDepth::rows);
    bool any = false;
    for (const Candidate& c : unit.propose(profile, Precision::f64)) {
      if (!c.applicable) continue;
      const auto& p = std::get<BroEllParams>(c.params);
      // 16-bit tables: test_device_bro16_gpu.cpp, on the matrices that need them.
      if (p.values == formats::kValuesTable16) continue;
      any = true;
      CAPTURE(name);
      CAPTURE(c.label);
      if (same_as_host(u, a, p, Precision::f64)) ++modes[p.tables];
    }
    if (!any) {
      MESSAGE(name << ": no bro_ell candidate applies");
      continue;
    }
    // The operator, with the planner's own pick among bro_ell candidates.
    const runtime::ResidentCsr r = runtime::upload_csr(a, Precision::f64);
    Options o;
    o.disk_cache = false;
    o.format = "bro_ell";
    const Operator op = compile(r.view, o);
    CAPTURE(name);
    CHECK(op.plan().format == "bro_ell");
    CHECK(check(a, op) <= tolerance(Precision::f64));
    CHECK(check(a, op, -0.5, 1.25) <= tolerance(Precision::f64));
  }
  CHECK(modes[0] > 0);
  CHECK(modes[1] > 0);
  CHECK(modes[2] > 0);
}

TEST_CASE("gpu: bro_coo and bro_hyb from device arrays on the public matrices up to 2M nonzeros") {
  if (!have_device()) return;
  const auto matrices = test::public_matrices(10000, 2000000);
  if (matrices.empty()) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  const Units u;
  for (const auto& [name, path] : matrices) {
    CAPTURE(name);
    const CsrMatrix a = read_matrix_market(path);
    check_bro_coo(u, a);
    check_bro_hyb(u, a);
  }
}
