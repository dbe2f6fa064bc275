// The sell format unit (SELL-C-sigma): the sorted, sliced layout by hand, the reference over
// encoded arrays against plain CSR, parameter checks, and the padding estimate against real
// encodings.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "format_roundtrip.hpp"
#include "formats/ell/ell_model.hpp"
#include "formats/sell/sell_format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;

namespace {

CsrMatrix random_lengths(std::int64_t nrows, std::int64_t ncols, int max_len, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> len_dist(0, max_len);
  std::uniform_int_distribution<std::int64_t> col_dist(0, ncols - 1);
  CsrMatrix a;
  a.nrows = nrows;
  a.ncols = ncols;
  for (std::int64_t r = 0; r < nrows; ++r) {
    const int len = static_cast<int>(std::min<std::int64_t>(len_dist(rng), ncols));
    std::vector<std::int32_t> cols;
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

double roundtrip_error(const CsrMatrix& a, const SellParams& params, double alpha = 1.0,
                       double beta = 0.0) {
  return test::reference_roundtrip_error(a, params, alpha, beta);
}

SellParams sell(int c, int sigma, int t) {
  SellParams p;
  p.slice_height = c;
  p.sigma = sigma;
  p.threads_per_row = t;
  return p;
}

}  // namespace

TEST_CASE("sell: rows sorted within the window, slices padded to their own longest row") {
  // Lengths {2, 0, 3, 1}; sigma = 4 sorts them to rows {2, 0, 3, 1}; C = 2 gives slices {2, 0}
  // (width 3) and {3, 1} (width 1).
  const Encoded e = formats::SellFormat().encode(test::small_4x4(), sell(2, 4, 1), Precision::f64);
  REQUIRE(e.arrays.size() == 4);
  CHECK(test::array_as<std::int64_t>(e.array("slice_ptr")) == std::vector<std::int64_t>{0, 6, 8});
  CHECK(test::array_as<std::int32_t>(e.array("perm")) == std::vector<std::int32_t>{2, 0, 3, 1});
  CHECK(test::array_as<std::int32_t>(e.array("col_idx")) ==
        std::vector<std::int32_t>{0, 0, 1, 2, 3, -1, 3, -1});
  CHECK(test::array_as<double>(e.array("values")) == std::vector<double>{3, 1, 4, 2, 5, 0, 6, 0});
  CHECK(e.total_bytes() == 3 * 8 + 4 * 4 + 8 * 4 + 8 * 8);

  // sigma = 1: no sort, no perm; slices {0, 1} (width 2) and {2, 3} (width 3).
  const Encoded u = formats::SellFormat().encode(test::small_4x4(), sell(2, 1, 1), Precision::f32);
  REQUIRE(u.arrays.size() == 3);
  CHECK(test::array_as<std::int64_t>(u.array("slice_ptr")) == std::vector<std::int64_t>{0, 4, 10});
  CHECK(test::array_as<std::int32_t>(u.array("col_idx")) ==
        std::vector<std::int32_t>{0, -1, 2, -1, 0, 3, 1, -1, 3, -1});
  CHECK(u.array("values").type == ElemType::f32);
}

TEST_CASE("sell: T lanes of a row read adjacent slots and the last slice is padded to C rows") {
  // C = 4 > 4 rows... with 5 rows the second slice holds one real row and three -1 rows.
  CsrMatrix a = test::small_4x4();
  a.nrows = 5;
  a.row_ptr.push_back(6);
  const Encoded e = formats::SellFormat().encode(a, sell(4, 1, 2), Precision::f64);
  // Slice 0: width 4 (3 rounded up to T = 2): 16 slots; slice 1: empty rows only, width 0.
  CHECK(test::array_as<std::int64_t>(e.array("slice_ptr")) == std::vector<std::int64_t>{0, 16, 16});
  const auto cols = test::array_as<std::int32_t>(e.array("col_idx"));
  // Slot k of slice row i at (k/2)*8 + i*2 + k%2.
  CHECK(cols[0] == 0);
  CHECK(cols[1] == 2);
  CHECK(cols[2] == -1);
  CHECK(cols[4] == 0);
  CHECK(cols[5] == 1);
  CHECK(cols[8 + 4] == 3);
  CHECK(cols[8 + 5] == -1);
  CHECK(cols[6] == 3);
}

TEST_CASE("sell: reference equals plain CSR for every slice height, window and lane count") {
  std::vector<CsrMatrix> matrices;
  for (const char* spec :
       {"stencil2d:n=30", "stencil27:n=8", "elasticity:n=4", "rmat:scale=10,ef=8",
        "random:n=700,per_row=9", "banded:n=500,hbw=6", "random:nrows=300,ncols=1000,per_row=7"})
    matrices.push_back(gen::from_spec(spec));
  matrices.push_back(random_lengths(1000, 3000, 40, 5));
  matrices.push_back(random_lengths(3000, 50, 10, 6));
  for (const CsrMatrix& a : matrices) {
    CAPTURE(a.nrows);
    CAPTURE(a.nnz());
    for (int c : {1, 8, 16, 32, 64}) {
      for (int sigma : {1, c, 1024}) {
        if (sigma % c != 0 && sigma != 1) continue;
        for (int t : {1, 4, 32}) {
          CAPTURE(c);
          CAPTURE(sigma);
          CAPTURE(t);
          CHECK(roundtrip_error(a, sell(c, sigma, t)) <= 1e-12);
          CHECK(roundtrip_error(a, sell(c, sigma, t), 2.0, -0.5) <= 1e-12);
        }
      }
    }
  }
}

TEST_CASE("sell: cannot_implement names bad parameters") {
  const Profile p = inspect(gen::from_spec("stencil2d:n=20"));
  const formats::SellFormat f;
  auto why = [&](const SellParams& s) {
    return f.cannot_implement(p, s, Precision::f64).value_or("");
  };
  CHECK(why(sell(32, 1, 1)).empty());
  CHECK(why(sell(8, 4096, 4)).empty());
  CHECK(why(sell(24, 1, 1)).find("slice height 24 is not a power of two") != std::string::npos);
  CHECK(why(sell(512, 1, 1)).find("slice height 512") != std::string::npos);
  CHECK(why(sell(32, 48, 1)).find("sigma 48 is neither 1 nor a multiple") != std::string::npos);
  CHECK(why(sell(32, 0, 1)).find("sigma 0") != std::string::npos);
  CHECK(why(sell(32, 1, 5)).find("threads per row 5") != std::string::npos);
  SellParams b = sell(32, 1, 1);
  b.block_size = 48;
  CHECK(why(b).find("block size 48") != std::string::npos);
  compiler::PlanOptions o;
  o.format = "sell";
  o.params = sell(32, 48, 1);
  CHECK_THROWS_WITH_AS(compiler::make_plan(p, o), doctest::Contains("sigma 48"), InputError);
}

TEST_CASE("sell: the padding estimate matches real encodings, and sorting removes padding") {
  const CsrMatrix a = random_lengths(40000, 40000, 30, 9);
  const Profile p = inspect(a);
  const formats::SellFormat f;
  for (int c : {8, 32}) {
    for (int sigma : {1, 256, 4096}) {
      for (int t : {1, 4}) {
        const SellParams s = sell(c, sigma == 1 ? 1 : sigma, t);
        const Encoded e = f.encode(a, s, Precision::f64);
        const double actual =
            static_cast<double>(e.array("col_idx").count()) / static_cast<double>(a.nrows);
        CAPTURE(c);
        CAPTURE(sigma);
        CAPTURE(t);
        CHECK(formats::SellFormat::stored_per_row(p, s) == doctest::Approx(actual).epsilon(0.03));
      }
    }
  }
  // Sorting: near the mean row length with a wide window, near the longest without one.
  CHECK(formats::SellFormat::stored_per_row(p, sell(32, 4096, 1)) < 1.05 * p.row_mean);
  CHECK(formats::SellFormat::stored_per_row(p, sell(32, 1, 1)) >
        0.9 * static_cast<double>(p.row_max));
  // And the cost sees it.
  CHECK(f.cost(p, sell(32, 4096, 1), Precision::f64).matrix_bytes <
        0.8 * f.cost(p, sell(32, 1, 1), Precision::f64).matrix_bytes);
}

TEST_CASE("sell: y writes scatter only when the sort moves rows") {
  Profile p;
  p.nrows = 1000;
  p.row_histogram = {{5, 5, 1000}};
  p.row_max = 5;
  CHECK(formats::SellFormat::y_write_bytes(p, sell(32, 1, 1), Precision::f64) == 8000);
  CHECK(formats::SellFormat::y_write_bytes(p, sell(32, 1024, 1), Precision::f64) == 8000);
  p.row_histogram = {{5, 5, 500}, {6, 6, 500}};  // a gap of 2 rows: 16 bytes per write
  CHECK(formats::SellFormat::y_write_bytes(p, sell(32, 1024, 1), Precision::f64) >= 8000);
  CHECK(formats::SellFormat::y_write_bytes(p, sell(32, 1024, 1), Precision::f64) <= 16000);
  CHECK(formats::SellFormat::y_write_bytes(p, sell(32, 1024, 1), Precision::f64) >
        formats::SellFormat::y_write_bytes(p, sell(32, 1, 1), Precision::f64));
}

TEST_CASE("sell: proposals and the generated unit") {
  // Large enough that bytes, not the launch or the longest row, decide.
  const CsrMatrix big = random_lengths(100000, 100000, 30, 11);
  compiler::PlanOptions o;
  o.format = "sell";
  const Plan plan = compiler::make_plan(inspect(big), o);
  CHECK(plan.format == "sell");
  bool sorted = false;
  for (const Candidate& c : plan.candidates) {
    CHECK(c.applicable);
    CHECK_FALSE(c.reason.empty());
    if (std::get<SellParams>(c.params).sigma > 1) sorted = true;
  }
  CHECK(sorted);
  // Row lengths all over the place: a sorting window wins over none.
  CHECK(std::get<SellParams>(plan.params).sigma > 1);

  const CsrMatrix a = gen::from_spec("rmat:scale=10,ef=8");

  o.params = sell(16, 64, 2);
  o.precision = Precision::f32;
  const Plan forced = compiler::make_plan(inspect(a), o);
  const KernelSource k =
      formats::SellFormat().generate(compiler::encode(a, forced), forced.params, "");
  CHECK(k.kernel_name == "spmv_sell_c16_s64_t2_b256_f32");
  CHECK(k.source.find("constexpr bool kPermuted = true;") != std::string::npos);
  REQUIRE(k.params.size() == 9);
  CHECK(k.params[1].name == "slice_ptr");
  CHECK(k.params[2].name == "perm");
  CHECK(k.grid == (1024 * 2 + 255) / 256);
  o.params = sell(32, 1, 1);
  const Plan unsorted = compiler::make_plan(inspect(a), o);
  const KernelSource ku =
      formats::SellFormat().generate(compiler::encode(a, unsorted), unsorted.params, "");
  CHECK(ku.source.find("constexpr bool kPermuted = false;") != std::string::npos);
  CHECK(ku.params.size() == 8);
}
