// The csr format unit: encoding, the host reference over encoded arrays, the heuristics and the
// planner's ranking, on matrices small enough to check by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "formats/csr/csr_format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;

namespace {

Plan plan_for(const CsrMatrix& a, Precision p, std::optional<CsrParams> csr = std::nullopt) {
  compiler::PlanOptions o;
  o.format = "csr";  // these tests are about the csr format
  o.precision = p;
  o.csr = csr;
  return compiler::make_plan(inspect(a), o);
}

}  // namespace

TEST_CASE("csr encoding holds exactly the CSR arrays, narrowed as the plan says") {
  const CsrMatrix a = test::small_4x4();
  CsrParams p;
  const Encoded e64 = compiler::encode(a, plan_for(a, Precision::f64, p));
  REQUIRE(e64.arrays.size() == 3);
  CHECK(e64.arrays[0].name == "row_ptr");
  CHECK(e64.arrays[0].type == ElemType::i32);
  CHECK(test::array_as<std::int32_t>(e64.arrays[0]) == std::vector<std::int32_t>{0, 2, 2, 5, 6});
  // col_idx and values are zero-padded to a multiple of 128 entries for aligned vector loads.
  std::vector<std::int32_t> cols = {0, 2, 0, 1, 3, 3};
  std::vector<double> vals = {1, 2, 3, 4, 5, 6};
  cols.resize(128, 0);
  vals.resize(128, 0.0);
  CHECK(test::array_as<std::int32_t>(e64.arrays[1]) == cols);
  CHECK(test::array_as<double>(e64.arrays[2]) == vals);
  CHECK(e64.total_bytes() == 5 * 4 + 128 * 4 + 128 * 8);

  p.offsets64 = true;
  const Encoded e32 = compiler::encode(a, plan_for(a, Precision::f32, p));
  CHECK(e32.arrays[0].type == ElemType::i64);
  CHECK(test::array_as<std::int64_t>(e32.arrays[0]) == std::vector<std::int64_t>{0, 2, 2, 5, 6});
  CHECK(e32.arrays[2].type == ElemType::f32);
  std::vector<float> fvals = {1, 2, 3, 4, 5, 6};
  fvals.resize(128, 0.0f);
  CHECK(test::array_as<float>(e32.arrays[2]) == fvals);
  CHECK(formats::CsrFormat::padded_nnz(0) == 0);
  CHECK(formats::CsrFormat::padded_nnz(1) == 128);
  CHECK(formats::CsrFormat::padded_nnz(256) == 256);
}

TEST_CASE("the reference over encoded arrays computes alpha*A*x + beta*y") {
  const CsrMatrix a = test::small_4x4();
  const Plan plan = plan_for(a, Precision::f64);
  const Encoded e = compiler::encode(a, plan);
  const std::vector<double> x = {1, 10, 100, 1000};
  std::vector<double> y = {7, 7, 7, 7};
  compiler::reference_spmv(plan, e, x, y, 2.0, 0.5);
  // A*x = {201, 0, 5043, 6000}
  CHECK(y == std::vector<double>{2 * 201 + 3.5, 3.5, 2 * 5043 + 3.5, 2 * 6000 + 3.5});
  std::vector<double> z = {std::nan(""), 1, 1, 1};
  compiler::reference_spmv(plan, e, x, z, 1.0, 0.0);  // beta = 0 never reads y
  CHECK(z == std::vector<double>{201, 0, 5043, 6000});
}

TEST_CASE("fp32 encodings round values once and the reference sees the rounded values") {
  CsrMatrix a = test::small_4x4();
  a.values[0] = 0.1;
  const Plan plan = plan_for(a, Precision::f32);
  const Encoded e = compiler::encode(a, plan);
  std::vector<double> y(4);
  compiler::reference_spmv(plan, e, std::vector<double>{1, 0, 0, 0}, y);
  CHECK(y[0] == static_cast<double>(0.1f));
  CHECK(y[0] != 0.1);
}

TEST_CASE("lane efficiency counts idle lanes at the ends of rows") {
  // Every row has 3 nonzeros: T=4 leaves one lane of four idle; T=1 none; T=2 one of four.
  const CsrMatrix a = gen::banded(50, 1);
  Profile p = inspect(a);
  // banded rows 0 and n-1 have 2 nonzeros; the rest 3.
  const double useful = 2 * 2 + 48 * 3;
  CHECK(formats::CsrFormat::lane_efficiency(p, 1) == doctest::Approx(1.0));
  CHECK(formats::CsrFormat::lane_efficiency(p, 4) == doctest::Approx(useful / (50 * 4)));
  CHECK(formats::CsrFormat::lane_efficiency(p, 2) == doctest::Approx(useful / (2 * 2 + 48 * 4)));
}

TEST_CASE("threads per row follow the mean row length") {
  CHECK(formats::CsrFormat::choose(inspect(gen::banded(1000, 1))).threads_per_row == 1);  // 3/row
  CHECK(formats::CsrFormat::choose(inspect(gen::stencil_2d_5pt(40, 40))).threads_per_row ==
        1);  // 4.9/row
  CHECK(formats::CsrFormat::choose(inspect(gen::stencil_3d_27pt(12, 12, 12))).threads_per_row ==
        4);  // 22
  CHECK(formats::CsrFormat::choose(inspect(gen::elasticity_3d(6, 6, 6))).threads_per_row ==
        16);  // 65
  CHECK(formats::CsrFormat::choose(inspect(gen::random_uniform(64, 5000, 1000))).threads_per_row ==
        32);
}

TEST_CASE("vector width and unroll follow the nonzeros each lane gets") {
  const Profile p27 = inspect(gen::stencil_3d_27pt(12, 12, 12));  // mean ~22: 5.5 per lane at T=4
  CHECK(formats::CsrFormat::vector_width_for(p27, 4) == 4);
  CHECK(formats::CsrFormat::vector_width_for(p27, 8) == 2);   // 2.7 per lane
  CHECK(formats::CsrFormat::vector_width_for(p27, 32) == 1);  // 0.7 per lane
  CHECK(formats::CsrFormat::unroll_for(1) == 1);
  CHECK(formats::CsrFormat::unroll_for(4) == 1);
  // Power-law rows: the nonzero-weighted row length, not the mean, sets V.
  const Profile pr = inspect(gen::rmat(16, 16, 1));
  CHECK(pr.row_mean / 32 < 1.0);
  CHECK(formats::CsrFormat::vector_width_for(pr, 32) == 4);
}

TEST_CASE("a few very long rows push the planner to whole warps per row") {
  // R-MAT rows follow a power law: the mean says T=4, the longest row says T=32.
  const CsrMatrix a = gen::rmat(16, 16, 1);
  const Profile p = inspect(a);
  REQUIRE(p.row_max > 1000);
  CHECK(p.row_mean / 4 <= 6.0);
  CHECK(formats::CsrFormat::choose(p).threads_per_row == 4);
  const Plan plan = plan_for(a, Precision::f64);
  CHECK(std::get<CsrParams>(plan.params).threads_per_row == 32);
}

TEST_CASE("the planner ranks every thread mapping, best first, with reasons") {
  // Large enough that bandwidth, not the launch or the longest row, dominates the model.
  const CsrMatrix a = gen::stencil_3d_27pt(64, 64, 64);
  const Plan plan = plan_for(a, Precision::f64);
  CHECK(plan.format == "csr");
  // Six thread mappings, each plain and with its values as 8-bit table indices (the stencil has
  // two distinct values); the coded twin moves fewer bytes and ranks first.
  REQUIRE(plan.candidates.size() == 12);
  CHECK(std::get<CsrParams>(plan.params).values == 2);
  for (std::size_t i = 1; i < plan.candidates.size(); ++i) {
    CHECK(plan.candidates[i - 1].predicted_seconds <= plan.candidates[i].predicted_seconds);
  }
  CHECK(plan.predicted_seconds == plan.candidates.front().predicted_seconds);
  CHECK(std::get<CsrParams>(plan.params).threads_per_row == 4);
  CHECK(std::get<CsrParams>(plan.params).vector_width == 4);
  CHECK_FALSE(plan.why.empty());
  CHECK(to_report(plan).find("T=4 V=4") != std::string::npos);
  CHECK(to_json(plan).find("\"threads_per_row\": 4") != std::string::npos);
}

TEST_CASE("forced parameters are checked and reported") {
  const CsrMatrix a = test::small_4x4();
  CsrParams bad;
  bad.threads_per_row = 3;
  CHECK_THROWS_WITH_AS(plan_for(a, Precision::f64, bad),
                       doctest::Contains("threads per row 3 is not a power of two"), InputError);
  bad.threads_per_row = 4;
  bad.vector_width = 2;
  bad.aligned = false;
  CHECK_THROWS_WITH_AS(plan_for(a, Precision::f64, bad),
                       doctest::Contains("vector loads need the aligned start"), InputError);
  bad.aligned = true;
  bad.vector_width = 3;
  CHECK_THROWS_WITH_AS(plan_for(a, Precision::f64, bad), doctest::Contains("vector width 3"),
                       InputError);
  bad.vector_width = 1;
  bad.block_size = 100;
  CHECK_THROWS_WITH_AS(plan_for(a, Precision::f64, bad), doctest::Contains("block size 100"),
                       InputError);
  compiler::PlanOptions o;
  o.format = "nope";
  CHECK_THROWS_WITH_AS(compiler::make_plan(inspect(a), o),
                       doctest::Contains("unknown format 'nope'"), InputError);
}

TEST_CASE("encoded reference equals plain CSR on every generated class") {
  for (const char* spec : {"stencil2d:n=30", "stencil7:n=9", "stencil27:n=8", "elasticity:n=4",
                           "rmat:scale=10,ef=8", "random:n=700,per_row=9", "banded:n=500,hbw=6"}) {
    CAPTURE(spec);
    const CsrMatrix a = gen::from_spec(spec);
    std::vector<double> x(static_cast<std::size_t>(a.ncols));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0 + static_cast<double>(i % 7) * 0.25;
    std::vector<double> ref(static_cast<std::size_t>(a.nrows)), y(ref.size());
    compiler::csr_reference_spmv(a, x, ref);
    for (int t : {1, 8, 32}) {
      CsrParams p;
      p.threads_per_row = t;
      p.vector_width = t == 8 ? 2 : 1;
      const Plan plan = plan_for(a, Precision::f64, p);
      compiler::reference_spmv(plan, compiler::encode(a, plan), x, y);
      CHECK(y == ref);
    }
  }
}

TEST_CASE("relative error is the 2-norm ratio and never passes a NaN") {
  CHECK(compiler::relative_error(std::vector<double>{3, 4}, std::vector<double>{3, 4}) == 0.0);
  CHECK(compiler::relative_error(std::vector<double>{3, 5}, std::vector<double>{3, 4}) ==
        doctest::Approx(1.0 / 5.0));
  CHECK(compiler::relative_error(std::vector<double>{1, 0}, std::vector<double>{0, 0}) == 1.0);
  CHECK(std::isinf(
      compiler::relative_error(std::vector<double>{std::nan(""), 4}, std::vector<double>{3, 4})));
}

TEST_CASE("fp32 lets each lane walk a little more of a row than fp64") {
  // Mean row length 13.5 (the shape of wave): 6.75 nonzeros per lane at T=2.
  Profile p;
  p.nrows = 1000;
  p.ncols = 1000;
  p.nnz = 13500;
  p.row_mean = 13.5;
  p.row_histogram = {{13, 13, 500}, {14, 14, 500}};
  CHECK(formats::CsrFormat::choose(p, Precision::f64).threads_per_row == 4);
  CHECK(formats::CsrFormat::choose(p, Precision::f32).threads_per_row == 2);
}
