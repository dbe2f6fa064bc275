// Break-even-aware planning on the GPU: compile() with Options::multiplies runs the pick the
// planner makes for that horizon (host pipeline and device arrays), multiplies right, and its
// plan says what it was ranked by.
#include <doctest/doctest.h>

#include "device.hpp"
#include "device_csr.hpp"
#include "gpu_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"

using namespace spmvc;
using test::check;
using test::have_device;
using test::tolerance;

TEST_CASE("gpu: compile() with a multiply count runs the planner's pick for that horizon") {
  if (!have_device()) return;
  const CsrMatrix a = gen::from_spec("stencil27:n=40");
  const runtime::DeviceInfo device = runtime::probe_device(0);
  for (const std::int64_t n : {std::int64_t{10}, std::int64_t{100000}}) {
    CAPTURE(n);
    Options o;
    o.multiplies = n;
    o.disk_cache = false;
    o.build = BuildMode::host;  // compared with the host pipeline's plan below
    const Operator op = compile(a, o);
    REQUIRE(op.plan().multiplies == n);
    // The same plan the host pipeline makes for the running GPU.
    BuildTarget target;
    target.until = BuildStage::plan;
    target.arch = device.arch();
    target.gpu = device.name;
    const Build b = build(a, o, target);
    CHECK(op.plan().format == b.plan.format);
    CHECK(describe(op.plan().params) == describe(b.plan.params));
    CHECK(check(a, op) <= tolerance(Precision::f64));
    CHECK(op.plan().predicted_build_seconds == b.plan.predicted_build_seconds);
  }
}

TEST_CASE("gpu: compile(DeviceCsr) with a multiply count ranks by the device build's cost") {
  if (!have_device()) return;
  const CsrMatrix a = gen::rmat(16, 16);
  for (Precision p : {Precision::f64, Precision::f32}) {
    CAPTURE(to_string(p));
    const runtime::ResidentCsr r = runtime::upload_csr(a, p);
    Options o;
    o.precision = p;
    o.disk_cache = false;
    o.multiplies = 20;
    o.cusparse = "never";  // the generated candidates' ranking (cuSPARSE's: test_cusparse_plan)
    const Operator op = compile(r.view, o);
    REQUIRE(op.plan().multiplies == 20);
    CHECK(op.plan().why.find("one-time cost + 20 x multiply time") != std::string::npos);
    for (const Candidate& c : op.plan().candidates)
      if (c.applicable) CHECK(c.total_seconds > 0);
    CHECK(check(a, op) <= tolerance(p));
  }
}
