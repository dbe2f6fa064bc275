// cci on the GPU: per-matrix and paper decode tables, both code layouts, every lane count,
// against the fp64 host reference on the generated classes, every public matrix with >= 10k
// nonzeros, alpha/beta, empty rows, a dense row and rectangular shapes. Filter: -tc='gpu: cci*'.
// Skipped without a GPU.
#include "gpu/test_amb_cci_support.hpp"

using namespace spmvc;

namespace {

CciParams cci(int t, bool paper = false, bool interleaved = true) {
  CciParams p;
  p.threads_per_row = t;
  p.paper_table = paper;
  p.interleaved = interleaved;
  return p;
}

}  // namespace

TEST_CASE("gpu: cci planner's choice on every generated class and precision") {
  if (!test::amb_cci_have_device()) return;
  for (const char* spec : {"stencil2d:n=300", "stencil7:n=40", "stencil27:n=40", "elasticity:n=14",
                           "rmat:scale=16,ef=16", "random:n=50000,per_row=16",
                           "banded:n=60000,hbw=10", "random:nrows=20000,ncols=90000,per_row=12"}) {
    const CsrMatrix a = gen::from_spec(spec);
    for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
      CAPTURE(spec);
      CAPTURE(to_string(p));
      Options o;
      o.precision = p;
      o.disk_cache = false;
      o.format = "cci";
      const Operator op = compile(a, o);
      CHECK(op.plan().format == "cci");
      CHECK(test::amb_cci_check(a, op) <= test::amb_cci_tolerance(p));
      CHECK(op.timings().spill_bytes == 0);
    }
  }
}

TEST_CASE("gpu: cci every lane count, table and layout computes the same product") {
  if (!test::amb_cci_have_device()) return;
  const CsrMatrix a = gen::from_spec("rmat:scale=12,ef=8");  // skewed rows, empty rows
  for (int t : {1, 2, 4, 8, 16, 32}) {
    for (bool paper : {false, true}) {
      for (bool il : {false, true}) {
        for (Precision p : {Precision::f64, Precision::f32}) {
          const Operator op = compile(a, test::amb_cci_options(p, cci(t, paper, il)));
          CAPTURE(op.source().kernel_name);
          CHECK(test::amb_cci_check(a, op) <= test::amb_cci_tolerance(p));
        }
      }
    }
  }
}

TEST_CASE("gpu: cci alpha and beta follow y = alpha*A*x + beta*y") {
  if (!test::amb_cci_have_device()) return;
  const CsrMatrix a = gen::from_spec("stencil27:n=20");
  for (Precision p : {Precision::f64, Precision::f32}) {
    const Operator op = compile(a, test::amb_cci_options(p, cci(4)));
    CHECK(test::amb_cci_check(a, op, 2.5, 0.0) <= test::amb_cci_tolerance(p));
    CHECK(test::amb_cci_check(a, op, -1.0, 0.75) <= test::amb_cci_tolerance(p));
  }
}

TEST_CASE("gpu: cci rectangular matrices, empty rows and a single dense row") {
  if (!test::amb_cci_have_device()) return;
  const CsrMatrix a = test::dense_row_rectangular();
  const CsrMatrix tall = gen::from_spec("random:nrows=30000,ncols=700,per_row=9");
  for (Precision p : {Precision::f64, Precision::f32}) {
    for (const CciParams& params : {cci(1), cci(8, true, false), cci(32)}) {
      const Operator op = compile(a, test::amb_cci_options(p, params));
      CAPTURE(op.source().kernel_name);
      CHECK(test::amb_cci_check(a, op) <= test::amb_cci_tolerance(p));
      const Operator op2 = compile(tall, test::amb_cci_options(p, params));
      CHECK(test::amb_cci_check(tall, op2, 1.0, -0.5) <= test::amb_cci_tolerance(p));
    }
  }
}

TEST_CASE("gpu: cci every public matrix with at least 10k nonzeros, fp64 and fp32") {
  if (!test::amb_cci_have_device()) return;
  const int tested = test::for_each_public_matrix([](const std::string& name, const CsrMatrix& a) {
    for (Precision p : {Precision::f64, Precision::f32}) {
      for (const CciParams& params : {cci(4), cci(8, true, false)}) {
        CAPTURE(name);
        CAPTURE(to_string(p));
        const Operator op = compile(a, test::amb_cci_options(p, params));
        CAPTURE(op.source().kernel_name);
        CHECK(test::amb_cci_check(a, op) <= test::amb_cci_tolerance(p));
      }
    }
  });
  if (tested < 0) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  MESSAGE("cci: public matrices tested: " << tested);
  CHECK(tested > 0);
}
