// amb on the GPU: both variants (atomic and deterministic) against the fp64 host reference on
// the generated classes, every public matrix with >= 10k nonzeros, alpha/beta, empty rows, a
// dense row and rectangular shapes; the deterministic variant run twice and compared bit for
// bit. Filter: -tc='gpu: amb*'. Skipped without a GPU.
#include "formats/amb/amb_format.hpp"
#include "gpu/test_amb_cci_support.hpp"

using namespace spmvc;

namespace {

AmbParams amb(int seg, int c, int sigma, int b, bool det) {
  AmbParams p;
  p.segment_bits = seg;
  p.slice_height = c;
  p.sigma = sigma;
  p.column_block = b;
  p.deterministic = det;
  return p;
}

}  // namespace

TEST_CASE("gpu: amb planner's parameters on every generated class and precision") {
  if (!test::amb_cci_have_device()) return;
  for (const char* spec : {"stencil2d:n=300", "stencil7:n=40", "stencil27:n=40", "elasticity:n=14",
                           "rmat:scale=16,ef=16", "random:n=50000,per_row=16",
                           "banded:n=60000,hbw=10", "random:nrows=20000,ncols=90000,per_row=12"}) {
    const CsrMatrix a = gen::from_spec(spec);
    const Profile profile = inspect(a, InspectDepth::rows);
    for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
      for (bool det : {false, true}) {
        CAPTURE(spec);
        CAPTURE(to_string(p));
        CAPTURE(det);
        const AmbParams params = formats::AmbFormat::choose(profile, p, det);
        const Operator op = compile(a, test::amb_cci_options(p, params));
        CHECK(op.plan().format == "amb");
        CHECK(test::amb_cci_check(a, op) <= test::amb_cci_tolerance(p));
        CHECK(op.timings().spill_bytes == 0);
      }
    }
  }
}

TEST_CASE("gpu: amb segment widths, chunk heights, windows and block sizes") {
  if (!test::amb_cci_have_device()) return;
  // Skewed rows across many narrow segments, and a 3-dof FEM pattern blocked up to b = 10.
  const CsrMatrix rmat = gen::from_spec("rmat:scale=13,ef=8");
  const CsrMatrix fem = gen::from_spec("elasticity:n=8");
  for (const AmbParams& p :
       {amb(16, 32, 32768, 1, false), amb(8, 32, 64, 2, false), amb(6, 16, 16, 4, false),
        amb(10, 8, 32768, 3, false), amb(12, 64, 128, 10, false), amb(9, 128, 256, 6, false),
        amb(8, 32, 64, 2, true), amb(12, 64, 128, 10, true)}) {
    for (Precision prec : {Precision::f64, Precision::f32}) {
      for (const CsrMatrix* a : {&rmat, &fem}) {
        const Operator op = compile(*a, test::amb_cci_options(prec, p));
        CAPTURE(op.source().kernel_name);
        CHECK(test::amb_cci_check(*a, op) <= test::amb_cci_tolerance(prec));
      }
    }
  }
}

TEST_CASE("gpu: amb alpha and beta follow y = alpha*A*x + beta*y") {
  if (!test::amb_cci_have_device()) return;
  const CsrMatrix a = gen::from_spec("stencil27:n=20");
  for (bool det : {false, true}) {
    for (Precision p : {Precision::f64, Precision::f32}) {
      const Operator op = compile(a, test::amb_cci_options(p, amb(16, 32, 32768, 3, det)));
      CAPTURE(op.source().kernel_name);
      CHECK(test::amb_cci_check(a, op, 2.5, 0.0) <= test::amb_cci_tolerance(p));
      CHECK(test::amb_cci_check(a, op, -1.0, 0.75) <= test::amb_cci_tolerance(p));
      CHECK(test::amb_cci_check(a, op, 0.5, 1.0) <= test::amb_cci_tolerance(p));
    }
  }
}

TEST_CASE("gpu: amb rectangular matrices, empty rows and a single dense row") {
  if (!test::amb_cci_have_device()) return;
  const CsrMatrix a = test::dense_row_rectangular();  // 1000 x 3000, row 0 dense
  const CsrMatrix tall = gen::from_spec("random:nrows=30000,ncols=700,per_row=9");
  for (bool det : {false, true}) {
    for (Precision p : {Precision::f64, Precision::f32}) {
      for (const AmbParams& params : {amb(16, 32, 32768, 1, det), amb(8, 32, 256, 4, det)}) {
        const Operator op = compile(a, test::amb_cci_options(p, params));
        CAPTURE(op.source().kernel_name);
        CHECK(test::amb_cci_check(a, op) <= test::amb_cci_tolerance(p));
        const Operator op2 = compile(tall, test::amb_cci_options(p, params));
        CHECK(test::amb_cci_check(tall, op2, 1.0, -0.5) <= test::amb_cci_tolerance(p));
      }
    }
  }
}

TEST_CASE("gpu: amb every public matrix with at least 10k nonzeros, fp64 and fp32") {
  if (!test::amb_cci_have_device()) return;
  const int tested = test::for_each_public_matrix([](const std::string& name, const CsrMatrix& a) {
    const Profile profile = inspect(a, InspectDepth::rows);
    for (Precision p : {Precision::f64, Precision::f32}) {
      for (bool det : {false, true}) {
        CAPTURE(name);
        CAPTURE(to_string(p));
        CAPTURE(det);
        const Operator op =
            compile(a, test::amb_cci_options(p, formats::AmbFormat::choose(profile, p, det)));
        CHECK(test::amb_cci_check(a, op) <= test::amb_cci_tolerance(p));
      }
    }
  });
  if (tested < 0) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  MESSAGE("amb: public matrices tested: " << tested);
  CHECK(tested > 0);
}

TEST_CASE("gpu: amb deterministic variant gives bit-identical results run to run") {
  if (!test::amb_cci_have_device()) return;
  // Many segments per row (narrow segments), so every row sums several partials.
  const CsrMatrix a = gen::from_spec("rmat:scale=16,ef=16");
  for (Precision p : {Precision::f64, Precision::f32}) {
    const Operator op = compile(a, test::amb_cci_options(p, amb(10, 32, 32768, 1, true)));
    CAPTURE(op.source().kernel_name);
    const std::vector<double> y1 = test::amb_cci_apply(a, op, 1.0, 0.5);
    const std::vector<double> y2 = test::amb_cci_apply(a, op, 1.0, 0.5);
    REQUIRE(y1.size() == y2.size());
    CHECK(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(double)) == 0);
    // And a second operator over the same matrix agrees with the first.
    const Operator op2 = compile(a, test::amb_cci_options(p, amb(10, 32, 32768, 1, true)));
    const std::vector<double> y3 = test::amb_cci_apply(a, op2, 1.0, 0.5);
    CHECK(std::memcmp(y1.data(), y3.data(), y1.size() * sizeof(double)) == 0);
    CHECK(compiler::relative_error(y1, y1) == 0.0);
  }
}
