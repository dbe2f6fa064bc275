// The hyb format unit: the BRO paper's worked example, the reference over both parts against
// plain CSR, the Bell-Garland split carried in the parameters, parameter checks, the cost and
// the two-launch unit.
#include <doctest/doctest.h>

#include <cstring>

#include <fmt/format.h>

#include "format_roundtrip.hpp"
#include "formats/arrays.hpp"
#include "formats/ell/ell_format.hpp"
#include "formats/hyb/hyb_format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;

namespace {

// The BRO paper's example (section 2.1.1), 0-based:
// [ 3 0 2 0 0 ]
// [ 2 6 5 4 1 ]
// [ 0 1 9 0 7 ]
// [ 0 0 0 8 3 ]
CsrMatrix paper() {
  CsrMatrix a;
  a.nrows = 4;
  a.ncols = 5;
  a.row_ptr = {0, 2, 7, 10, 12};
  a.col_idx = {0, 2, 0, 1, 2, 3, 4, 1, 2, 4, 3, 4};
  a.values = {3, 2, 2, 6, 5, 4, 1, 1, 9, 7, 8, 3};
  return a;
}

HybParams hyb(int width, int t, bool r = false, int interval = 256) {
  HybParams p;
  p.width = width;
  p.threads_per_row = t;
  p.row_lengths = r;
  p.coo_interval = interval;
  return p;
}

double roundtrip_error(const CsrMatrix& a, const HybParams& params, double alpha = 1.0,
                       double beta = 0.0, Precision precision = Precision::f64) {
  return test::reference_roundtrip_error(a, params, alpha, beta, precision);
}

}  // namespace

TEST_CASE("hyb: the paper's example splits at K = 3 into its ELL and COO parts") {
  const Encoded e = formats::HybFormat().encode(paper(), hyb(3, 1), Precision::f64);
  std::vector<std::int32_t> cols(3 * 32, -1);
  const std::int32_t k0[] = {0, 0, 1, 3}, k1[] = {2, 1, 2, 4}, k2[] = {-1, 2, 4, -1};
  for (int r = 0; r < 4; ++r) {
    cols[static_cast<std::size_t>(r)] = k0[r];
    cols[static_cast<std::size_t>(32 + r)] = k1[r];
    cols[static_cast<std::size_t>(64 + r)] = k2[r];
  }
  CHECK(test::array_as<std::int32_t>(e.array("ell_col_idx")) == cols);
  CHECK(test::array_as<std::int32_t>(e.array("coo_row")) == std::vector<std::int32_t>{1, 1});
  CHECK(test::array_as<std::int32_t>(e.array("coo_col")) == std::vector<std::int32_t>{3, 4});
  CHECK(test::array_as<double>(e.array("coo_values")) == std::vector<double>{4, 1});
  CHECK(e.total_bytes() == 96 * (4 + 8) + 2 * (4 + 4 + 8));
  CHECK_THROWS_AS(e.array("ell_row_lengths"), InternalError);
  const Encoded r = formats::HybFormat().encode(paper(), hyb(3, 1, true), Precision::f32);
  CHECK(test::array_as<std::int32_t>(r.array("ell_row_lengths")) ==
        std::vector<std::int32_t>{2, 3, 3, 2});
  CHECK(r.array("coo_values").type == ElemType::f32);

  std::vector<double> y = {1, 1, 1, 1};
  formats::HybFormat().reference_spmv(e, hyb(3, 1), std::vector<double>{1, 1, 1, 1, 1}, y, 2.0,
                                      1.0);
  CHECK(y == std::vector<double>{11, 37, 35, 23});
}

TEST_CASE("hyb: reference equals plain CSR for every split, lane count and precision") {
  std::vector<CsrMatrix> matrices;
  for (const char* spec : {"stencil2d:n=30", "stencil27:n=8", "elasticity:n=4",
                           "rmat:scale=11,ef=8", "random:n=700,per_row=9", "banded:n=500,hbw=6",
                           "random:nrows=300,ncols=1000,per_row=7", "rmat:scale=9,ef=4"})
    matrices.push_back(gen::from_spec(spec));
  for (const CsrMatrix& a : matrices) {
    const Profile p = inspect(a);
    const int split = static_cast<int>(formats::hyb_split_width(p));
    CAPTURE(a.nrows);
    CAPTURE(split);
    for (int k : {0, 1, split, static_cast<int>(p.row_max)}) {
      for (int t : {1, 4}) {
        for (bool r : {false, true}) {
          CAPTURE(k);
          CAPTURE(t);
          CAPTURE(r);
          CHECK(roundtrip_error(a, hyb(k, t, r)) <= 1e-12);
          CHECK(roundtrip_error(a, hyb(k, t, r), -0.5, 1.5) <= 1e-12);
          CHECK(roundtrip_error(a, hyb(k, t, r), 1.0, 0.0, Precision::f32) <= 1e-12);
          HybParams narrow = hyb(k, t, r, 64);
          narrow.narrow_rows = true;
          CHECK(roundtrip_error(a, narrow, -0.5, 1.5) <= 1e-12);
        }
      }
    }
  }
}

TEST_CASE("hyb: 16-bit COO rows, a base per interval, 32-bit rows where an interval spans 2^16") {
  HybParams p = hyb(3, 1);
  p.narrow_rows = true;
  const Encoded paper_e = formats::HybFormat().encode(paper(), p, Precision::f64);
  CHECK_THROWS_AS(paper_e.array("coo_row"), InternalError);
  CHECK(test::array_as<std::int32_t>(paper_e.array("coo_base")) == std::vector<std::int32_t>{1});
  CHECK(test::array_as<std::uint16_t>(paper_e.array("coo_row16")) ==
        std::vector<std::uint16_t>{0, 0});
  CHECK(paper_e.array("coo_row_wide").count() == 1);  // none wide: one unused element
  std::vector<double> y = {1, 1, 1, 1};
  formats::HybFormat().reference_spmv(paper_e, p, std::vector<double>{1, 1, 1, 1, 1}, y, 2.0, 1.0);
  CHECK(y == std::vector<double>{11, 37, 35, 23});

  const CsrMatrix a = test::rows_far_apart();
  HybParams far = hyb(1, 1, false, 32);
  far.narrow_rows = true;
  const Encoded e = formats::HybFormat().encode(a, far, Precision::f64);
  const std::vector<std::int32_t> base = test::array_as<std::int32_t>(e.array("coo_base"));
  REQUIRE(base.size() == 7);
  for (int w = 0; w < 6; ++w) CHECK(base[static_cast<std::size_t>(w)] == 16 * w);
  CHECK(base[6] == -1);  // the first wide interval: its rows from coo_row_wide[0]
  CHECK(test::array_as<std::int32_t>(e.array("coo_row_wide")) ==
        std::vector<std::int32_t>{96, 96, 97, 97, 98, 98, 99, 99, 150000, 150000, 199999, 199999});
  const std::vector<std::uint16_t> row16 = test::array_as<std::uint16_t>(e.array("coo_row16"));
  REQUIRE(row16.size() == 204);
  CHECK(row16[0] == 0);
  CHECK(row16[31] == 15);   // entry 31: row 15 of the interval from row 0
  CHECK(row16[191] == 15);  // entry 191: row 95, of the interval from row 80
  CHECK(row16[192] == 0);   // the wide interval's entries stay 0
  CHECK(roundtrip_error(a, far) <= 1e-12);
  CHECK(roundtrip_error(a, far, 0.5, -2.0, Precision::f32) <= 1e-12);
  // Two bytes an entry fewer, a base per interval and the wide rows more.
  const Encoded wide = formats::HybFormat().encode(a, hyb(1, 1, false, 32), Precision::f64);
  CHECK(wide.total_bytes() - e.total_bytes() == 204 * 2 - 7 * 4 - 12 * 4);

  // The unit reads the three arrays in place of coo_row.
  const KernelSource k = formats::HybFormat().generate(e, far, "");
  CHECK(k.kernel_name == "spmv_hyb_k1_t1_b256_i32_r16_f64");
  REQUIRE(k.post_launches.size() == 1);
  const KernelLaunch& coo = k.post_launches[0];
  REQUIRE(coo.params.size() == 8);
  CHECK(coo.params[0].name == "coo_base");
  CHECK(coo.params[1].name == "coo_row16");
  CHECK(coo.params[2].name == "coo_row_wide");
  CHECK(coo.params[3].name == "coo_col");
  CHECK(k.source.find("spmvc::coo::NarrowRows{coo_base, coo_row16, coo_row_wide}") !=
        std::string::npos);
  CHECK(k.source.find("const unsigned short* __restrict__ coo_row16") != std::string::npos);
  CHECK(k.source.find("constexpr long long kCooEntries = 204;") != std::string::npos);
}

TEST_CASE("hyb: the planner carries the Bell-Garland split in the parameters") {
  const CsrMatrix a = gen::from_spec("rmat:scale=12,ef=16");
  const Profile p = inspect(a);
  compiler::PlanOptions o;
  o.format = "hyb";
  const Plan plan = compiler::make_plan(p, o);
  REQUIRE_FALSE(plan.candidates.empty());
  for (const Candidate& c : plan.candidates) {
    CHECK(c.applicable);
    CHECK(std::get<HybParams>(c.params).width == formats::hyb_split_width(p));
    CHECK(c.reason.find("Bell-Garland split") != std::string::npos);
  }
  const Encoded e = compiler::encode(a, plan);
  CHECK(formats::ell_part::stored_width(e, "ell_") ==
        formats::EllFormat::padded_width(formats::hyb_split_width(p),
                                         std::get<HybParams>(plan.params).threads_per_row));
  // The COO part holds exactly the nonzeros past column K of their rows.
  std::int64_t spilled = 0;
  for (std::int64_t r = 0; r < a.nrows; ++r)
    spilled += std::max<std::int64_t>(0, a.row_length(r) - formats::hyb_split_width(p));
  CHECK(e.array("coo_col").count() == spilled);
  CHECK(formats::HybFormat::coo_nonzeros(p, formats::hyb_split_width(p)) ==
        doctest::Approx(static_cast<double>(spilled)).epsilon(0.15));  // range bins: midpoints
}

TEST_CASE("hyb: a small matrix with a long row caps the split at the ELL padding limit") {
  // 300 rows (fewer than the split's 4096-row threshold, so it keeps every row in ELL) with one
  // row of 3000 nonzeros: K = 3000 would pad to 900k slots; the proposal lowers K instead.
  CsrMatrix a;
  a.nrows = 300;
  a.ncols = 3000;
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    for (std::int64_t c = r % 5; c < (r == 7 ? 3000 : 40); c += (r == 7 ? 1 : 5)) {
      a.col_idx.push_back(static_cast<std::int32_t>(c));
      a.values.push_back(1.0 + static_cast<double>(c % 3));
    }
    a.row_ptr.push_back(a.nnz());
  }
  const Profile p = inspect(a);
  REQUIRE(formats::hyb_split_width(p) == p.row_max);
  for (const Candidate& c : formats::HybFormat().propose(p, Precision::f64)) {
    CHECK(c.applicable);
    const int k = std::get<HybParams>(c.params).width;
    CHECK(k < 3000);
    CHECK(k >= 8);
    CHECK(c.reason.find("capped by ELL padding") != std::string::npos);
    CHECK(roundtrip_error(a, std::get<HybParams>(c.params)) <= 1e-12);
  }
}

TEST_CASE("hyb: cannot_implement names bad parameters") {
  const Profile p = inspect(gen::from_spec("rmat:scale=12,ef=16"));
  const formats::HybFormat f;
  auto why = [&](const HybParams& h) {
    return f.cannot_implement(p, h, Precision::f64).value_or("");
  };
  CHECK(why(hyb(4, 1)).empty());
  CHECK(why(hyb(0, 1)).empty());  // all COO
  CHECK(why(hyb(4, 1, false, 48)).find("COO interval 48") != std::string::npos);
  CHECK(why(hyb(4, 1, false, 0)).find("COO interval 0") != std::string::npos);
  CHECK(why(hyb(4, 1, false, 1 << 17)).find("COO interval") != std::string::npos);
  CHECK(why(hyb(-2, 1)).find("negative") != std::string::npos);
  CHECK(why(hyb(4, 6)).find("threads per row 6") != std::string::npos);
  CHECK(why(hyb(static_cast<int>(p.row_max), 1)).find("pads to") != std::string::npos);
}

TEST_CASE("hyb: cost adds the COO part to the ELL part") {
  // 1000 rows of 4 nonzeros, 10 of them with 20: K = 4 leaves 160 nonzeros in COO.
  Profile p;
  p.nrows = 1000;
  p.ncols = 1000;
  p.row_histogram = {{4, 4, 990}, {20, 20, 10}};
  p.nnz = 4 * 990 + 20 * 10;
  p.row_mean = static_cast<double>(p.nnz) / 1000;
  p.row_min = 4;
  p.row_max = 20;
  const formats::HybFormat f;
  CHECK(formats::HybFormat::coo_nonzeros(p, 4) == 160);
  for (Precision prec : {Precision::f64, Precision::f32}) {
    const double vb = value_bytes(prec);
    const formats::Cost c = f.cost(p, hyb(4, 1), prec);
    CHECK(c.matrix_bytes == doctest::Approx(1000 * 4 * (4 + vb) + 160 * (8 + vb)));
    // 16-bit rows: 2 bytes an entry fewer, a 4-byte base per interval of 256 more.
    HybParams narrow = hyb(4, 1);
    narrow.narrow_rows = true;
    CHECK(f.cost(p, narrow, prec).matrix_bytes ==
          doctest::Approx(c.matrix_bytes - 160 * (2 - 4.0 / 256)));
    CHECK(c.y_bytes == doctest::Approx(1010 * vb));
    // The COO part's bytes stream at the read bandwidth (kCooLaneEfficiency), as the ELL part's
    // full rows of 4 do: the two launches together lose nothing to idle lanes.
    CHECK(c.lane_efficiency == doctest::Approx(1.0));
    // Without a COO part there is no second launch.
    const formats::Cost whole = f.cost(p, hyb(20, 1), prec);
    CHECK(whole.y_bytes == doctest::Approx(1000 * vb));
    CHECK(c.serial_seconds > 4e-6);
  }
}

TEST_CASE("hyb: two launches, the COO one only when the COO part holds entries") {
  const CsrMatrix a = gen::from_spec("rmat:scale=10,ef=8");
  const Profile p = inspect(a);
  const formats::HybFormat f;
  const HybParams h = hyb(3, 2, true, 64);
  const Encoded e = f.encode(a, h, Precision::f32_acc64);
  const KernelSource k = f.generate(e, h, "");
  CHECK(k.kernel_name == "spmv_hyb_k4_t2_b256_i64_r_f32acc64");
  REQUIRE(k.post_launches.size() == 1);
  const KernelLaunch& coo = k.post_launches[0];
  CHECK(coo.entry == "spmv_hyb_k4_t2_b256_i64_r_f32acc64_coo");
  const std::int64_t n = e.array("coo_row").count();
  REQUIRE(n > 0);
  CHECK(coo.grid == ((n + 63) / 64 + 7) / 8);
  CHECK(coo.block == 256);
  CHECK(coo.params.size() == 6);
  CHECK(k.source.find(fmt::format("constexpr long long kCooEntries = {};", n)) !=
        std::string::npos);
  CHECK(k.source.find(coo.entry + "(") != std::string::npos);
  CHECK(k.params[1].name == "ell_row_lengths");
  CHECK(k.launches().size() == 2);

  const HybParams all_ell = hyb(static_cast<int>(p.row_max), 1);
  const KernelSource whole = f.generate(f.encode(a, all_ell, Precision::f64), all_ell, "");
  CHECK(whole.post_launches.empty());
  CHECK(whole.source.find("constexpr long long kCooEntries = 0;") != std::string::npos);
}

TEST_CASE("hyb: the COO count holds the nonzeros the histogram's range bins miscount") {
  // 1000 rows of 2 and 100 rows in the range bin 33-64, the longest 64. The bin's rows stand at
  // its midpoint (48.5; the longest at 64), so the histogram counts 2000 + 64 + 99 x 48.5 =
  // 6865.5 nonzeros. Where they average 40 (a power-law tail) the matrix has 6000, where they
  // average 60 it has 8000: at K = 2 the COO part holds every long row's nonzeros past 2,
  // 100 x 38 and 100 x 58, whatever the midpoints say.
  for (const auto& [mean_long, coo] : {std::pair{40, 3800.0}, std::pair{60, 5800.0}}) {
    CAPTURE(mean_long);
    Profile p;
    p.nrows = 1100;
    p.ncols = 1100;
    p.row_histogram = {{2, 2, 1000}, {33, 64, 100}};
    p.nnz = 2 * 1000 + mean_long * 100;
    p.row_mean = static_cast<double>(p.nnz) / 1100;
    p.row_min = 2;
    p.row_max = 64;
    CHECK(formats::HybFormat::coo_nonzeros(p, 2) == doctest::Approx(coo));
  }
}
