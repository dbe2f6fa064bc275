// cuSPARSE as a plan's engine (Engine::cusparse) on the GPU: y against the host fp64 reference in
// both precisions, with and without beta, on rows of very unequal length; what the operator
// reports; and that the caller's opt-out and the planner's own choice hold. Skipped without a
// device. (Graph capture and update_values: test_ops_gpu.cpp's capture test has a cuSPARSE case.)
#include <doctest/doctest.h>

#include <string>

#include "device_csr.hpp"
#include "gpu_support.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"

using namespace spmvc;
using spmvc::test::have_device;
using spmvc::test::tolerance;

namespace {

Options with_cusparse(Precision p, const char* use) {
  Options o;
  o.precision = p;
  o.disk_cache = false;
  o.cusparse = use;
  o.build =
      BuildMode::host;  // the host pipeline's planner weighs cuSPARSE (the GPU build does not)
  return o;
}

}  // namespace

TEST_CASE("gpu: the cuSPARSE engine's y matches the host reference") {
  if (!have_device()) return;
  // A power-law graph (rows of 1 to thousands) and a stencil, real values.
  for (const char* spec : {"rmat:scale=14,ef=16", "stencil27:n=24,contrast=100"}) {
    const CsrMatrix a = gen::from_spec(spec);
    for (Precision p : {Precision::f64, Precision::f32}) {
      CAPTURE(spec);
      CAPTURE(std::string(to_string(p)));
      const Operator op = compile(a, with_cusparse(p, "always"));
      REQUIRE(op.plan().engine == Engine::cusparse);
      CHECK(op.plan().format == "csr");
      CHECK(op.timings().engine == "cusparse");
      CHECK(op.timings().cusparse_setup > 0);
      CHECK(spmvc::test::check(a, op) <= tolerance(p));
      CHECK(spmvc::test::check(a, op, 1.5, 0.5) <= tolerance(p));
      CHECK(spmvc::test::check(a, op, -2.0, 1.0) <= tolerance(p));
    }
  }
}

TEST_CASE("gpu: cusparse never keeps the generated kernel; auto follows the plan") {
  if (!have_device()) return;
  const CsrMatrix a = gen::from_spec("rmat:scale=14,ef=16");
  const Operator never = compile(a, with_cusparse(Precision::f32, "never"));
  CHECK(never.plan().engine == Engine::kernel);
  CHECK(never.timings().engine == "kernel");
  CHECK(spmvc::test::check(a, never) <= tolerance(Precision::f32));
  // auto: whichever engine the model chose runs, and says so.
  const Operator chosen = compile(a, with_cusparse(Precision::f32, "auto"));
  CHECK(chosen.timings().engine == std::string(to_string(chosen.plan().engine)));
  CHECK(chosen.plan().cusparse_seconds > 0);
  CHECK(spmvc::test::check(a, chosen) <= tolerance(Precision::f32));
}

TEST_CASE("gpu: from device arrays, the cuSPARSE engine runs on the caller's CSR at once") {
  if (!have_device()) return;
  const CsrMatrix a = gen::from_spec("rmat:scale=14,ef=16");
  for (Precision p : {Precision::f64, Precision::f32}) {
    CAPTURE(std::string(to_string(p)));
    const runtime::ResidentCsr r = runtime::upload_csr(a, p);
    for (bool tiered : {false, true}) {
      CAPTURE(tiered);
      Options o = with_cusparse(p, "always");
      o.tiered = tiered;
      const Operator op = compile(r.view, o);
      // Tiered: plan() waits for a plan made on the tiers' thread (with nothing cached), and
      // the engine is ready then, before the csr kernel (for SpMM and the transpose) is
      // compiled.
      REQUIRE(op.plan().engine == Engine::cusparse);
      CHECK(op.timings().engine == "cusparse");
      CHECK(op.timings().cusparse_setup > 0);
      CHECK(op.timings().upload == 0.0);
      // Before any wait for the background compile: cuSPARSE's y, not the generic tier's, and
      // right.
      CHECK(spmvc::test::check(a, op) <= tolerance(p));
      CHECK(spmvc::test::check(a, op, 1.5, 0.5) <= tolerance(p));
      CHECK(op.timings().generic_applies == 0);
      CHECK(op.timings().tier == "specialised");
      op.wait_specialised();
      CHECK(spmvc::test::check(a, op, -2.0, 1.0) <= tolerance(p));
    }
    // auto: the engine the device planner chose runs, and says so.
    const Operator chosen = compile(r.view, with_cusparse(p, "auto"));
    CHECK(chosen.timings().engine == std::string(to_string(chosen.plan().engine)));
    CHECK(chosen.plan().cusparse_seconds > 0);
    CHECK(spmvc::test::check(a, chosen) <= tolerance(p));
  }
}
