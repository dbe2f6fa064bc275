// dia built on the GPU from device arrays (runtime/device_build_ell.cpp): the diagonal pass and
// its symmetry check give the Profile what inspect() gives (diagonals, and symmetry where dia's
// half could hold the matrix), the values array equals the host encoder's byte for byte in both
// forms, on generated matrices and every public matrix on at most 64 diagonals, and
// compile(DeviceCsr) picks the symmetric form for a symmetric stencil and multiplies right.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "device.hpp"
#include "device_csr.hpp"
#include "device_ell.hpp"
#include "formats/dia/dia_format.hpp"
#include "gpu_support.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;

namespace {

// compile(DeviceCsr)'s options here: no disk cache, no generic tier.
Options device_options(Precision p) {
  Options o;
  o.precision = p;
  o.disk_cache = false;
  o.tiered = false;
  return o;
}

struct Kernels {
  runtime::KernelCache cache{{}};
  runtime::DeviceEllKernels ell;
  Kernels() { ell = runtime::load_device_ell_kernels(cache, runtime::probe_device(0)); }
};

// The diagonal pass against inspect(), and, where dia applies, each form's values array against
// the host encoder's.
void check_dia(const CsrMatrix& a, Precision p, const Kernels& k) {
  CAPTURE(std::string(to_string(p)));
  const Profile want = inspect(a, InspectDepth::full);
  const runtime::ResidentCsr r = runtime::upload_csr(a, p);
  const runtime::DeviceDiagonals got = runtime::inspect_diagonals_device(r.view, p, k.ell);
  CHECK(got.count == want.diagonals);
  if (got.count <= 0) return;
  CHECK(static_cast<std::int64_t>(got.occupied.size()) == got.count);
  // The device compares the values as stored: fp32 rounding can only make mirrors equal.
  if (p == Precision::f64 || want.numerically_symmetric)
    CHECK(got.numerical == want.numerically_symmetric);
  const formats::DiaFormat f;
  for (const bool symmetric : {false, true}) {
    if (symmetric && !got.numerical) continue;
    CAPTURE(symmetric);
    DiaParams params;
    params.symmetric = symmetric;
    Profile profile = want;
    if (f.cannot_implement(profile, params, p)) continue;
    Plan plan;
    plan.format = "dia";
    plan.params = params;
    plan.precision = p;
    const Encoded host = f.encode(a, params, p);
    const runtime::DeviceDiaBuild built =
        runtime::build_dia_device(r.view, plan, got.occupied, k.ell);
    const EncodedArray& offsets = host.array("offsets");
    REQUIRE(static_cast<std::int64_t>(built.offsets.size()) == offsets.count());
    CHECK(std::memcmp(built.offsets.data(), offsets.bytes.data(), offsets.bytes.size()) == 0);
    REQUIRE(built.arrays.size() == 1);
    const EncodedArray& values = host.array("values");
    std::vector<std::byte> d(values.bytes.size());
    REQUIRE(built.arrays[0].second.bytes() >= d.size());
    if (!d.empty()) built.arrays[0].second.download(d.data(), d.size());
    CHECK(std::memcmp(d.data(), values.bytes.data(), d.size()) == 0);
  }
}

}  // namespace

TEST_CASE("gpu: dia from device arrays equals the host encoding on generated matrices") {
  if (!test::have_device()) return;
  const Kernels k;
  for (const char* spec :
       {"stencil27:n=12,contrast=1000", "stencil2d:n=50", "stencil7:n=9,contrast=3",
        "banded:n=3000,hbw=5", "random:n=3000,per_row=6", "elasticity:n=4", "rmat:scale=10,ef=8"}) {
    CAPTURE(spec);
    const CsrMatrix a = gen::from_spec(spec);
    for (const Precision p : {Precision::f64, Precision::f32}) check_dia(a, p, k);
  }
  // One entry of a symmetric stencil changed: the pass finds it no longer symmetric.
  CsrMatrix skew = gen::from_spec("stencil2d:n=30,contrast=10");
  skew.values[100] += 1.0;
  check_dia(skew, Precision::f64, k);
}

TEST_CASE("gpu: dia from device arrays on every public matrix") {
  if (!test::have_device()) return;
  const auto list = test::public_matrices(1000);
  if (list.empty()) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  const Kernels k;
  int few = 0;
  for (const auto& [name, path] : list) {
    CAPTURE(name);
    const CsrMatrix a = read_matrix_market(path);
    check_dia(a, Precision::f64, k);
    if (inspect(a, InspectDepth::rows).diagonals > 0) {
      check_dia(a, Precision::f32, k);
      ++few;
    }
  }
  MESSAGE(few << " public matrices on at most 64 diagonals");
}

TEST_CASE("gpu: compile(DeviceCsr) picks dia's symmetric half for a symmetric stencil") {
  if (!test::have_device()) return;
  const CsrMatrix a = gen::from_spec("stencil27:n=80,contrast=1000");
  for (const Precision p : {Precision::f64, Precision::f32}) {
    CAPTURE(std::string(to_string(p)));
    const runtime::ResidentCsr r = runtime::upload_csr(a, p);
    const Options o = device_options(p);
    const Operator op = compile(r.view, o);
    CHECK(op.plan().format == "dia");
    const auto* params = std::get_if<DiaParams>(&op.plan().params);
    REQUIRE(params != nullptr);
    CHECK(params->symmetric);
    CHECK(op.profile().diagonals == 27);
    CHECK(test::check(a, op) <= test::tolerance(p));
    CHECK(test::check(a, op, 2.0, 0.5) <= test::tolerance(p));
    // Forced plain form, from the same arrays.
    DiaParams plain;
    Options forced = o;
    forced.format = "dia";
    forced.params = FormatParams{plain};
    const Operator op2 = compile(r.view, forced);
    CHECK(test::check(a, op2, -1.0, 0.25) <= test::tolerance(p));
  }
}

TEST_CASE("gpu: compile(DeviceCsr) shapes dia's threads as the host planner does") {
  if (!test::have_device()) return;
  // A band of half-width 8: the diagonal pass gives the bandwidth, and fp32 takes two rows a
  // thread with untested interior tiles, fp64 one row with every row tested.
  const CsrMatrix a = gen::from_spec("banded:n=300000,hbw=8");
  for (const Precision p : {Precision::f64, Precision::f32}) {
    CAPTURE(std::string(to_string(p)));
    const runtime::ResidentCsr r = runtime::upload_csr(a, p);
    Options o = device_options(p);
    o.format = "dia";
    const Operator op = compile(r.view, o);
    CHECK(op.profile().bandwidth == 8);
    const auto* params = std::get_if<DiaParams>(&op.plan().params);
    REQUIRE(params != nullptr);
    CHECK(params->rows_per_thread == (p == Precision::f32 ? 2 : 1));
    CHECK(params->interior == (p == Precision::f32));
    CHECK(test::check(a, op) <= test::tolerance(p));
    CHECK(test::check(a, op, 2.0, 0.5) <= test::tolerance(p));
  }
}
