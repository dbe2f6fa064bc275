// The ell format unit and the ELL-family padding model: the layout by hand, the reference over
// encoded arrays against plain CSR, the size limits, and the model against counts taken from
// real encodings.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "format_roundtrip.hpp"
#include "formats/ell/ell_format.hpp"
#include "formats/ell/ell_model.hpp"
#include "formats/sell/sell_format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;

namespace {

// nrows x ncols with row lengths drawn uniformly from [0, max_len] independently of the row
// (the padding model's assumption), distinct sorted columns, values depending on (r, c).
CsrMatrix random_lengths(std::int64_t nrows, std::int64_t ncols, int max_len, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> len_dist(0, max_len);
  CsrMatrix a;
  a.nrows = nrows;
  a.ncols = ncols;
  for (std::int64_t r = 0; r < nrows; ++r) {
    const int len = static_cast<int>(std::min<std::int64_t>(len_dist(rng), ncols));
    std::vector<std::int32_t> cols;
    std::uniform_int_distribution<std::int64_t> col_dist(0, ncols - 1);
    while (static_cast<int>(cols.size()) < len) {
      const auto c = static_cast<std::int32_t>(col_dist(rng));
      if (std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
    }
    std::sort(cols.begin(), cols.end());
    for (std::int32_t c : cols) {
      a.col_idx.push_back(c);
      a.values.push_back(0.5 + static_cast<double>((r * 7 + c) % 13) / 8.0);
    }
    a.row_ptr.push_back(a.nnz());
  }
  return a;
}

// Relative error of the format's reference over its own encoding against plain CSR.
double roundtrip_error(const CsrMatrix& a, const FormatParams& params, double alpha = 1.0,
                       double beta = 0.0) {
  return test::reference_roundtrip_error(a, params, alpha, beta);
}

EllParams ell(int width, int t, bool r, int u = 1) {
  EllParams p;
  p.width = width;
  p.threads_per_row = t;
  p.row_lengths = r;
  p.unroll = u;
  return p;
}

Plan plan_for(const CsrMatrix& a, std::optional<FormatParams> params,
              Precision p = Precision::f64) {
  compiler::PlanOptions o;
  o.format = "ell";
  o.precision = p;
  o.params = std::move(params);
  return compiler::make_plan(inspect(a), o);
}

}  // namespace

TEST_CASE("ell: column-major layout with row lengths, -1 padding and a 32-row pitch") {
  const CsrMatrix a = test::small_4x4();
  const formats::EllFormat f;
  const Encoded e = f.encode(a, ell(0, 1, true), Precision::f64);
  REQUIRE(e.arrays.size() == 3);
  CHECK(e.arrays[0].name == "row_lengths");
  CHECK(test::array_as<std::int32_t>(e.arrays[0]) == std::vector<std::int32_t>{2, 0, 3, 1});
  // K = 3 (the longest row), pitch = 32: slot k of row r at k*32 + r.
  std::vector<std::int32_t> cols(3 * 32, -1);
  std::vector<double> vals(3 * 32, 0.0);
  cols[0] = 0, cols[32] = 2, vals[0] = 1, vals[32] = 2;                              // row 0
  cols[2] = 0, cols[34] = 1, cols[66] = 3, vals[2] = 3, vals[34] = 4, vals[66] = 5;  // row 2
  cols[3] = 3, vals[3] = 6;                                                          // row 3
  CHECK(test::array_as<std::int32_t>(e.arrays[1]) == cols);
  CHECK(test::array_as<double>(e.arrays[2]) == vals);
  CHECK(e.total_bytes() == 4 * 4 + 96 * 4 + 96 * 8);
  CHECK(formats::ell_part::stored_width(e, "") == 3);

  // Plain ELL stores no lengths; fp32 values.
  const Encoded plain = f.encode(a, ell(0, 1, false), Precision::f32);
  REQUIRE(plain.arrays.size() == 2);
  CHECK(plain.arrays[0].name == "col_idx");
  CHECK(test::array_as<std::int32_t>(plain.arrays[0]) == cols);
  CHECK(plain.arrays[1].type == ElemType::f32);
  CHECK(plain.total_bytes() == 96 * 4 + 96 * 4);
}

TEST_CASE("ell: T lanes per row read adjacent slots, the width rounded up to T") {
  const CsrMatrix a = test::small_4x4();
  const Encoded e = formats::EllFormat().encode(a, ell(0, 2, false), Precision::f64);
  // K = 3 -> 4 slots; slot k of row r at (k/2)*64 + r*2 + k%2.
  const auto cols = test::array_as<std::int32_t>(e.array("col_idx"));
  REQUIRE(cols.size() == 4 * 32);
  CHECK(formats::ell_part::stored_width(e, "") == 4);
  CHECK(cols[0] == 0);       // row 0, k 0
  CHECK(cols[1] == 2);       // row 0, k 1
  CHECK(cols[2] == -1);      // row 1 is empty
  CHECK(cols[4] == 0);       // row 2, k 0
  CHECK(cols[5] == 1);       // row 2, k 1
  CHECK(cols[64 + 4] == 3);  // row 2, k 2
  CHECK(cols[64 + 5] == -1);
  CHECK(cols[6] == 3);  // row 3
  CHECK(std::count(cols.begin(), cols.end(), -1) == 128 - 6);
}

TEST_CASE("ell: the reference over the encoding computes alpha*A*x + beta*y") {
  const CsrMatrix a = test::small_4x4();
  for (bool r : {true, false}) {
    for (int t : {1, 2, 4}) {
      const formats::EllFormat f;
      const EllParams p = ell(0, t, r);
      const Encoded e = f.encode(a, p, Precision::f64);
      const std::vector<double> x = {1, 10, 100, 1000};
      std::vector<double> y = {7, 7, 7, 7};
      f.reference_spmv(e, p, x, y, 2.0, 0.5);
      CHECK(y == std::vector<double>{2 * 201 + 3.5, 3.5, 2 * 5043 + 3.5, 2 * 6000 + 3.5});
      std::vector<double> z = {std::nan(""), 1, 1, 1};
      f.reference_spmv(e, p, x, z, 1.0, 0.0);  // beta = 0 never reads y
      CHECK(z == std::vector<double>{201, 0, 5043, 6000});
    }
  }
}

TEST_CASE("ell: reference equals plain CSR on every generated class, rectangular and empty rows") {
  std::vector<CsrMatrix> matrices;
  for (const char* spec :
       {"stencil2d:n=30", "stencil7:n=9", "stencil27:n=8", "elasticity:n=4",
        "random:n=700,per_row=9", "banded:n=500,hbw=6", "random:nrows=300,ncols=1000,per_row=7"})
    matrices.push_back(gen::from_spec(spec));
  matrices.push_back(random_lengths(500, 2000, 20, 3));  // a quarter of a... ~5% empty rows
  matrices.push_back(random_lengths(2000, 40, 12, 4));   // more rows than columns
  for (const CsrMatrix& a : matrices) {
    CAPTURE(a.nrows);
    CAPTURE(a.nnz());
    for (int t : {1, 2, 4, 8, 32}) {
      for (bool r : {true, false}) {
        for (int u : {1, 3}) {
          CHECK(roundtrip_error(a, ell(0, t, r, u)) <= 1e-12);
          CHECK(roundtrip_error(a, ell(0, t, r, u), -1.5, 0.25) <= 1e-12);
        }
      }
    }
    // A width above the longest row only adds padding.
    const int wide = static_cast<int>(inspect(a).row_max) + 5;
    CHECK(roundtrip_error(a, ell(wide, 4, false)) <= 1e-12);
  }
}

TEST_CASE("ell: fp32 encodings round values once and the reference sees the rounded values") {
  CsrMatrix a = test::small_4x4();
  a.values[0] = 0.1;
  const formats::EllFormat f;
  const Encoded e = f.encode(a, ell(0, 1, true), Precision::f32);
  std::vector<double> y(4);
  f.reference_spmv(e, ell(0, 1, true), std::vector<double>{1, 0, 0, 0}, y, 1.0, 0.0);
  CHECK(y[0] == static_cast<double>(0.1f));
}

TEST_CASE("ell: cannot_implement names bad parameters and absurd padding") {
  const CsrMatrix a = gen::from_spec("stencil2d:n=20");
  const Profile p = inspect(a);
  const formats::EllFormat f;
  auto why = [&](const EllParams& e, const Profile& prof) {
    return f.cannot_implement(prof, e, Precision::f64).value_or("");
  };
  CHECK(why(ell(0, 1, true), p).empty());
  CHECK(why(ell(5, 1, true), p).empty());
  CHECK(why(ell(4, 1, true), p).find("width 4 is less than the longest row (5)") !=
        std::string::npos);
  CHECK(why(ell(-1, 1, true), p).find("negative") != std::string::npos);
  CHECK(why(ell(0, 3, true), p).find("threads per row 3 is not a power of two") !=
        std::string::npos);
  CHECK(why(ell(0, 64, true), p).find("threads per row 64") != std::string::npos);
  CHECK(why(ell(0, 1, true, 9), p).find("unroll 9") != std::string::npos);
  EllParams b = ell(0, 1, true);
  b.block_size = 100;
  CHECK(why(b, p).find("block size 100") != std::string::npos);

  // Power-law rows: the longest row times every row is far past 3x the nonzeros.
  const Profile rmat = inspect(gen::from_spec("rmat:scale=12,ef=16"));
  CHECK(why(ell(0, 1, true), rmat).find("pads to") != std::string::npos);
  for (const Candidate& c : f.propose(rmat, Precision::f64)) {
    CHECK_FALSE(c.applicable);
    CHECK(c.reason.find("row lengths vary too much") != std::string::npos);
  }
  // Sizes that overflow 32-bit offsets are fine (offsets are 64-bit); memory is the limit.
  Profile huge;
  huge.nrows = 1'000'000'000;
  huge.ncols = huge.nrows;
  huge.nnz = 30'000'000'000;
  huge.row_max = 30;
  huge.row_mean = 30;
  huge.row_histogram = {{30, 30, huge.nrows}};
  CHECK(why(ell(0, 1, true), huge).find("GB") != std::string::npos);
  huge.nrows = 100'000'000;
  huge.nnz = 3'000'000'000;
  huge.row_histogram = {{30, 30, huge.nrows}};
  CHECK(why(ell(0, 1, true), huge).empty());  // 3e9 slots: past 2^31, within memory

  // The planner refuses forced parameters with the reason.
  CHECK_THROWS_WITH_AS(plan_for(a, ell(3, 1, true)),
                       doctest::Contains("width 3 is less than the longest row"), InputError);
}

TEST_CASE("ell: the planner proposes both variants with reasons and ranks them") {
  const CsrMatrix a = gen::from_spec("stencil27:n=24");
  const Plan plan = plan_for(a, std::nullopt);
  CHECK(plan.format == "ell");
  REQUIRE(plan.candidates.size() >= 4);
  bool r = false, plain = false;
  for (const Candidate& c : plan.candidates) {
    CHECK(c.applicable);
    CHECK_FALSE(c.reason.empty());
    CHECK(std::get<EllParams>(c.params).width == 27);
    (std::get<EllParams>(c.params).row_lengths ? r : plain) = true;
  }
  CHECK(r);
  CHECK(plain);
  for (std::size_t i = 1; i < plan.candidates.size(); ++i)
    CHECK(plan.candidates[i - 1].predicted_seconds <= plan.candidates[i].predicted_seconds);
  // Forced through the generic parameter path, width 0 meaning the longest row.
  const Plan forced = plan_for(a, ell(0, 2, false));
  CHECK(std::get<EllParams>(forced.params).threads_per_row == 2);
  const Encoded e = compiler::encode(a, forced);
  CHECK(formats::ell_part::stored_width(e, "") == 28);
}

TEST_CASE("ell: cost counts the bytes the kernel reads") {
  // Every row holds 12 nonzeros: nothing is padded and no sentinel is read.
  Profile p;
  p.nrows = 1024;
  p.ncols = 4096;
  p.nnz = 12 * 1024;
  p.row_mean = 12;
  p.row_min = p.row_max = 12;
  p.row_histogram = {{12, 12, 1024}};
  const formats::EllFormat f;
  for (Precision prec : {Precision::f64, Precision::f32}) {
    const double vb = value_bytes(prec);
    const formats::Cost plain = f.cost(p, ell(0, 1, false), prec);
    CHECK(plain.matrix_bytes == doctest::Approx(12.0 * 1024 * (4 + vb)));
    CHECK(plain.x_bytes == doctest::Approx(4096 * vb));
    CHECK(plain.y_bytes == doctest::Approx(1024 * vb));
    const formats::Cost r = f.cost(p, ell(0, 1, true), prec);
    CHECK(r.matrix_bytes == doctest::Approx(12.0 * 1024 * (4 + vb) + 1024 * 4));
    // T = 4: three full steps per lane, no idle lanes, no latency penalty (3 per lane).
    CHECK(f.cost(p, ell(0, 4, true), prec).lane_efficiency == doctest::Approx(1.0));
    // T = 8: 12 slots on 8 lanes take two steps with 4 lanes idle in the second.
    CHECK(f.cost(p, ell(0, 8, true), prec).lane_efficiency == doctest::Approx(12.0 / 16.0));
  }
  // One long row in every warp's reach: a warp runs until its longest row is done.
  p.row_max = 20;
  p.row_histogram = {{12, 12, 992}, {20, 20, 32}};
  p.nnz = 12 * 992 + 20 * 32;
  p.row_mean = static_cast<double>(p.nnz) / 1024;
  const formats::Cost c = f.cost(p, ell(0, 4, true), Precision::f64);
  CHECK(c.lane_efficiency < 0.95);
  CHECK(c.serial_seconds > f.cost(p, ell(0, 32, true), Precision::f64).serial_seconds);
}

TEST_CASE("ell: the sector model matches the sectors a real encoding touches") {
  // Row lengths independent of the row: the model's assumption holds and its estimate must land
  // within a few percent of the sectors counted on the encoded arrays.
  const CsrMatrix a = random_lengths(20000, 50000, 30, 7);
  const Profile p = inspect(a);
  const auto lengths = formats::ell_model::lengths(p);
  for (int t : {1, 4}) {
    for (int elem : {4, 8}) {
      const int per_sector = 32 / elem;
      const std::int64_t pitch = formats::EllFormat::pitch(a.nrows);
      const std::int64_t width = formats::EllFormat::padded_width(p.row_max, t);
      // Sector s of step j covers slots [j*pitch*t + s*per_sector, ... + per_sector).
      std::int64_t sectors = 0;
      for (std::int64_t j = 0; j < width / t; ++j) {
        for (std::int64_t s = 0; s < pitch * t / per_sector; ++s) {
          bool needed = false;
          for (std::int64_t i = s * per_sector; i < (s + 1) * per_sector && !needed; ++i) {
            const std::int64_t r = i / t, k = j * t + i % t;
            needed = r < a.nrows && k < a.row_length(r);
          }
          sectors += needed ? 1 : 0;
        }
      }
      const double counted =
          static_cast<double>(sectors * per_sector) / static_cast<double>(a.nrows);
      const double model = formats::ell_model::fetched_per_row(lengths, elem, t);
      CAPTURE(t);
      CAPTURE(elem);
      CHECK(model == doctest::Approx(counted).epsilon(0.03));
    }
  }
}

TEST_CASE("ell: binomial groups reduce to the closed forms") {
  namespace m = formats::ell_model;
  CHECK(m::expected_groups(32, 0.0, 32) == 0.0);
  CHECK(m::expected_groups(32, 1.0, 32) == 1.0);
  CHECK(m::expected_groups(1024, 1.0, 32) == 32.0);
  CHECK(m::expected_groups(8, 0.25, 8) == doctest::Approx(1 - std::pow(0.75, 8)));
  // Large windows: about one partly filled group more than the mean fills.
  CHECK(m::expected_groups(4096, 0.5, 32) == doctest::Approx(2048.0 / 32 + 0.5).epsilon(0.01));
  // Sums to one over the pmf: ceil(k / 1) = k, so E = mean.
  CHECK(m::expected_groups(300, 0.3, 1) == doctest::Approx(90.0).epsilon(1e-9));
  // Unsorted groups of one row: the mean length.
  Profile p;
  p.nrows = 100;
  p.row_max = 9;
  p.row_histogram = {{1, 1, 50}, {9, 9, 50}};
  const auto l = m::lengths(p);
  CHECK(l.mean() == doctest::Approx(5.0));
  CHECK(m::padded_per_row(l, 1, 1, 1) == doctest::Approx(5.0));
  CHECK(m::padded_per_row(l, 1, 2, 1) == doctest::Approx(1 + 8 * 0.75));
  CHECK(m::padded_per_row(l, 1, 1, 4) == doctest::Approx(0.5 * 4 + 0.5 * 12));
  CHECK(m::threads_per_row_for(4.8, Precision::f64) == 1);
  CHECK(m::threads_per_row_for(25.7, Precision::f64) == 8);
  CHECK(m::threads_per_row_for(1e6, Precision::f64) == 32);
}

TEST_CASE("ell: kernel names and the generated unit follow the parameters") {
  const CsrMatrix a = gen::from_spec("stencil7:n=6");
  const Plan plan = plan_for(a, ell(0, 4, false, 2), Precision::f32);
  const Encoded e = compiler::encode(a, plan);
  const KernelSource k = formats::EllFormat().generate(e, plan.params, "");
  CHECK(k.kernel_name == "spmv_ell_k8_t4_b256_u2_f32");
  CHECK(k.source.find("constexpr int kWidth = 8;") != std::string::npos);
  CHECK(k.source.find("constexpr bool kRowLengths = false;") != std::string::npos);
  CHECK(k.source.find("using Acc = float;") != std::string::npos);
  CHECK(k.grid == (216 * 4 + 255) / 256);
  CHECK(k.post_launches.empty());
  REQUIRE(k.params.size() == 7);
  CHECK(k.params[1].name == "col_idx");

  const Plan r = plan_for(a, ell(0, 1, true), Precision::f32_acc64);
  const KernelSource kr = formats::EllFormat().generate(compiler::encode(a, r), r.params, "");
  CHECK(kr.kernel_name == "spmv_ellr_k7_t1_b256_u1_f32acc64");
  REQUIRE(kr.params.size() == 8);
  CHECK(kr.params[1].name == "row_lengths");
  CHECK(kr.source.find("using Acc = double;") != std::string::npos);
}

TEST_CASE("ell: an empty matrix encodes to empty arrays and multiplies to beta*y") {
  CsrMatrix a;
  a.nrows = 5;
  a.ncols = 3;
  a.row_ptr = {0, 0, 0, 0, 0, 0};
  const formats::EllFormat f;
  const Encoded e = f.encode(a, ell(0, 1, false), Precision::f64);
  CHECK(e.array("col_idx").count() == 0);
  std::vector<double> y = {1, 2, 3, 4, 5};
  f.reference_spmv(e, ell(0, 1, false), std::vector<double>{1, 1, 1}, y, 1.0, 2.0);
  CHECK(y == std::vector<double>{2, 4, 6, 8, 10});
  CHECK(f.generate(e, ell(0, 1, false), "").grid == 1);
}
