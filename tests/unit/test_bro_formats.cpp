// The BRO formats (bro_ell, bro_coo, bro_hyb): the paper's example by hand, round trips of the
// encodings through the host references on every generated class and public matrix, the
// limits, the cost model against the real encodings, and eta.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "formats/arrays.hpp"
#include "formats/bro/bro_eta.hpp"
#include "formats/bro_coo/bro_coo_codec.hpp"
#include "formats/bro_coo/bro_coo_format.hpp"
#include "formats/bro_ell/bro_ell_codec.hpp"
#include "formats/bro_ell/bro_ell_format.hpp"
#include "formats/bro_ell/bro_ell_model.hpp"
#include "formats/bro_hyb/bro_hyb_format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;
namespace fs = std::filesystem;

namespace {

// The paper's example matrix A (section 2, 1-based columns there, 0-based here):
// rows {1,3}, {1,2,3}, {2,3,5}, {4,5} of the ELL part.
CsrMatrix paper_example() {
  CsrMatrix a;
  a.nrows = 4;
  a.ncols = 5;
  a.row_ptr = {0, 2, 5, 8, 10};
  a.col_idx = {0, 2, 0, 1, 2, 1, 2, 4, 3, 4};
  a.values = {3, 2, 2, 6, 5, 1, 9, 7, 8, 3};
  return a;
}

// Rectangular, empty rows, one dense row and rows of every length up to 40.
CsrMatrix awkward() {
  CsrMatrix a;
  a.nrows = 700;
  a.ncols = 2500;
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    if (r == 3) {
      for (int c = 0; c < 2500; ++c) {
        a.col_idx.push_back(c);
        a.values.push_back(1.0 / (c + 1));
      }
    } else if (r % 5 != 0) {
      const std::int64_t len = r % 41;
      for (std::int64_t k = 0; k < len; ++k) {
        a.col_idx.push_back(static_cast<std::int32_t>((r * 7 + k * (k + 3) * 11) % 2500));
        a.values.push_back(static_cast<double>(r - k) * 0.01 + 0.5);
      }
      std::sort(a.col_idx.begin() + a.row_ptr.back(), a.col_idx.end());
      a.col_idx.erase(std::unique(a.col_idx.begin() + a.row_ptr.back(), a.col_idx.end()),
                      a.col_idx.end());
      a.values.resize(a.col_idx.size());
    }
    a.row_ptr.push_back(a.nnz());
  }
  validate(a);
  return a;
}

// A reference over the format's encoded arrays against plain CSR, with alpha and beta.
double round_trip(const CsrMatrix& a, const FormatParams& params, Precision precision) {
  const formats::FormatUnit& unit = formats::find_format(format_of(params));
  const Encoded e = unit.encode(a, params, precision);
  std::vector<double> x = codegen::test_vector(a.ncols, precision);
  std::vector<double> y(static_cast<std::size_t>(a.nrows)), ref;
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = 0.5 - 0.125 * static_cast<double>(i % 7);
  ref = y;
  // Values round to the precision's storage; x already has.
  CsrMatrix rounded = a;
  if (precision != Precision::f64)
    for (double& v : rounded.values) v = static_cast<double>(static_cast<float>(v));
  unit.reference_spmv(e, params, x, y, 1.5, -0.5);
  compiler::csr_reference_spmv(rounded, x, ref, 1.5, -0.5);
  return compiler::relative_error(y, ref);
}

std::vector<FormatParams> bro_param_grid(const CsrMatrix& a) {
  const std::int64_t k = formats::hyb_split_width(inspect(a, InspectDepth::rows));
  std::vector<FormatParams> grid = {
      BroEllParams{256, 32, 1, 256, 1, false, 0},
      BroEllParams{32, 64, 1, 256, 2, true, 0},
      BroEllParams{8, 32, 4, 256, 4, true, 1},
      BroEllParams{32, 32, 1, 256, 1, false, 2},
      BroEllParams{16, 64, 2, 128, 1, false, 2},
      BroCooParams{1024, 32, 256},
      BroCooParams{64, 64, 128},
      BroHybParams{static_cast<int>(k), 32, 32, 1, 256, 2, true, 0, 1024},
      BroHybParams{static_cast<int>(k), 8, 64, 4, 256, 1, false, 2, 256},
      BroHybParams{0, 32, 32, 1, 256, 1, false, 0, 128},
  };
  return grid;
}

}  // namespace

TEST_CASE("bro: bits are written and read back MSB first across symbol boundaries") {
  for (int L : {32, 64}) {
    std::vector<std::uint64_t> words(8, 0);
    std::int64_t pos = 0;
    const int widths[] = {1, 31, 7, 32, 13, 2, 30, 5};
    std::vector<std::uint64_t> vals;
    for (int b : widths) {
      const std::uint64_t v = (0x9E3779B97F4A7C15ull >> (64 - b)) | 1;
      formats::bro::put_bits(words.data(), 1, L, pos, b, v);
      vals.push_back(v);
      pos += b;
    }
    std::vector<std::uint32_t> narrow(words.begin(), words.end());
    pos = 0;
    for (std::size_t i = 0; i < vals.size(); ++i) {
      const std::uint64_t got =
          L == 64 ? formats::bro::get_bits(words.data(), true, 0, 1, pos, widths[i])
                  : formats::bro::get_bits(narrow.data(), false, 0, 1, pos, widths[i]);
      CHECK(got == vals[i]);
      pos += widths[i];
    }
  }
  // A field of no bits touches no word, even at a symbol boundary or with stray bits in d: the
  // word may be a neighbour's that another thread is encoding.
  for (int L : {32, 64}) {
    for (std::int64_t pos : {0, 8, 32}) {
      std::vector<std::uint64_t> words(3, 0);
      formats::bro::put_bits(words.data(), 1, L, pos, 0, 0xFFull);
      CHECK(words == std::vector<std::uint64_t>(3, 0));
    }
  }
  CHECK(formats::bro::bit_width(0) == 0);
  CHECK(formats::bro::bit_width(1) == 1);
  CHECK(formats::bro::bit_width(5) == 3);
  CHECK(formats::bro::bit_width(0x80000000u) == 32);
}

TEST_CASE("bro_ell encodes the paper's example by hand") {
  // h = 2 (below a warp: encode accepts it, cannot_implement would not), T = 1, 32-bit symbols.
  // Deltas (first column + 1, then differences): {1,2}, {1,1,1}, {2,1,2}, {4,1}.
  // Slice 0: widths {1,2,1}; slice 1: widths {3,1,2}.
  std::vector<EncodedArray> arrays;
  const formats::bro::EllShape shape{2, 32, 1, 0};
  const auto z =
      formats::bro::encode_ell(paper_example(), 1 << 30, shape, Precision::f64, "", arrays);
  REQUIRE(arrays.size() == 5);
  CHECK(arrays[0].name == "col_ptr");
  CHECK(test::array_as<std::int64_t>(arrays[0]) == std::vector<std::int64_t>{0, 3, 6});
  CHECK(test::array_as<std::int64_t>(arrays[1]) == std::vector<std::int64_t>{0, 1, 2});
  CHECK(test::array_as<std::uint8_t>(arrays[2]) == std::vector<std::uint8_t>{1, 2, 1, 3, 1, 2});
  // Row 0: 1|10|0 -> 1100; row 1: 1|01|1 -> 1011; row 2: 010|1|10; row 3: 100|1|00.
  // One padding row of symbols follows (for the prefetching kernel).
  CHECK(test::array_as<std::uint32_t>(arrays[3]) ==
        std::vector<std::uint32_t>{0xC0000000u, 0xB0000000u, 0x58000000u, 0x90000000u, 0, 0});
  // Values column-major within each slice, zero where a row is shorter.
  CHECK(test::array_as<double>(arrays[4]) ==
        std::vector<double>{3, 2, 2, 6, 0, 5, 1, 8, 9, 3, 7, 0});
  CHECK(z.stream_bits == 2 * 4 + 2 * 6);
  CHECK(z.entries == 10);

  // Baked: one pattern, the widest of each position: {3,2,2}.
  arrays.clear();
  const auto zb =
      formats::bro::encode_ell(paper_example(), 1 << 30, {2, 32, 1, 2}, Precision::f64, "", arrays);
  CHECK(zb.pattern == std::vector<int>{3, 2, 2});
  CHECK(test::array_as<std::uint8_t>(arrays[2]) == std::vector<std::uint8_t>{3, 2, 2, 3, 2, 2});
  Encoded e;
  e.arrays = arrays;
  CHECK(formats::bro::baked_pattern(e, "") == std::vector<int>{3, 2, 2});

  // T = 2: lane 0 of row 1 holds columns {0, 2} (deltas 1, 2), lane 1 holds {1} (delta 2).
  arrays.clear();
  formats::bro::encode_ell(paper_example(), 1 << 30, {1, 32, 2, 0}, Precision::f64, "", arrays);
  const auto widths = test::array_as<std::uint8_t>(arrays[2]);
  const auto col_ptr = test::array_as<std::int64_t>(arrays[0]);
  CHECK(col_ptr == std::vector<std::int64_t>{0, 1, 3, 5, 6});
  CHECK(widths[1] == 2);  // row 1, position 0: deltas 1 (lane 0) and 2 (lane 1)
  CHECK(widths[2] == 2);  // row 1, position 1: delta 2 (lane 0), padding (lane 1)
}

TEST_CASE("bro_coo encodes row deltas per lane with a first-delta and a rest width") {
  // 40 entries in one interval of 64 (2 per lane): lane l takes entries 2l and 2l+1.
  CsrMatrix a;
  a.nrows = 20;
  a.ncols = 4;
  for (std::int64_t r = 0; r < 20; ++r) {
    a.col_idx.push_back(0);
    a.col_idx.push_back(3);
    a.values.push_back(1.0 + static_cast<double>(r));
    a.values.push_back(-2.0);
    a.row_ptr.push_back(a.nnz());
  }
  std::vector<EncodedArray> arrays;
  const auto z = formats::bro::encode_coo(a, 0, 64, 32, Precision::f64, "", arrays);
  REQUIRE(arrays.size() == 7);
  CHECK(z.entries == 40);
  CHECK(z.intervals == 1);
  CHECK(test::array_as<std::int64_t>(arrays[0]) == std::vector<std::int64_t>{40});
  CHECK(test::array_as<std::int32_t>(arrays[1]) == std::vector<std::int32_t>{0});
  // First deltas: lane l starts at row l (l < 20), then the last row 19 for padding lanes:
  // widest 19 -> 5 bits. Within a lane the two entries share a row: rest width 0.
  CHECK(test::array_as<std::uint8_t>(arrays[2]) == std::vector<std::uint8_t>{5, 0});
  const auto sym = test::array_as<std::uint32_t>(arrays[4]);
  REQUIRE(sym.size() == 2 * 32);
  CHECK(sym[0] == 0u);
  CHECK(sym[7] == (7u << 27));
  CHECK(sym[25] == (19u << 27));
  // Entry e of lane l at e*32 + l.
  const auto cols = test::array_as<std::int32_t>(arrays[5]);
  CHECK(cols[0] == 0);
  CHECK(cols[32] == 3);
  CHECK(cols[20] == 0);  // padding
}

TEST_CASE("bro formats: the references over encoded arrays equal plain CSR on generated classes") {
  std::vector<std::string> specs = {"stencil2d:n=30",      "stencil7:n=9",
                                    "stencil27:n=8",       "elasticity:n=4",
                                    "rmat:scale=12,ef=16", "random:n=3000,per_row=12",
                                    "banded:n=2000,hbw=5"};
  for (const std::string& spec : specs) {
    const CsrMatrix a = gen::from_spec(spec);
    for (const FormatParams& p : bro_param_grid(a)) {
      for (Precision prec : {Precision::f64, Precision::f32}) {
        CAPTURE(spec);
        CAPTURE(describe(p));
        CHECK(round_trip(a, p, prec) <= 1e-12);
      }
    }
  }
  const CsrMatrix odd = awkward();
  for (const FormatParams& p : bro_param_grid(odd)) {
    CAPTURE(describe(p));
    CHECK(round_trip(odd, p, Precision::f64) <= 1e-12);
  }
  // Rectangular from the generator, and an all-empty matrix.
  const CsrMatrix wide = gen::from_spec("random:nrows=500,ncols=3000,per_row=9");
  for (const FormatParams& p : bro_param_grid(wide))
    CHECK(round_trip(wide, p, Precision::f64) <= 1e-12);
  CsrMatrix empty;
  empty.nrows = 70;
  empty.ncols = 9;
  empty.row_ptr.assign(71, 0);
  for (const FormatParams& p : bro_param_grid(empty))
    CHECK(round_trip(empty, p, Precision::f64) <= 1e-12);
}

TEST_CASE("bro encoders: the same arrays on every run, whatever the host threads do") {
  // R-MAT rows span many 32-entry COO intervals whose row deltas are all 0: their first width is
  // 0 and their streams end on a symbol boundary, where a zero-bit field once did a
  // read-modify-write of the next interval's first symbol while another thread encoded it
  // (GPU tests saw 1e-3 errors in about a third of runs). Encoding again and again must give the
  // same bytes and the right product.
  const CsrMatrix a = gen::from_spec("rmat:scale=13,ef=8");
  for (const FormatParams& p :
       {FormatParams{BroCooParams{32, 32, 256}}, FormatParams{BroCooParams{32, 64, 256}},
        FormatParams{BroHybParams{1, 32, 32, 1, 256, 2, true, 0, 32}}}) {
    CAPTURE(describe(p));
    const formats::FormatUnit& unit = formats::find_format(format_of(p));
    const Encoded first = unit.encode(a, p, Precision::f64);
    for (int run = 0; run < 12; ++run) {
      const Encoded again = unit.encode(a, p, Precision::f64);
      REQUIRE(again.arrays.size() == first.arrays.size());
      for (std::size_t i = 0; i < first.arrays.size(); ++i) {
        CAPTURE(first.arrays[i].name);
        CHECK(again.arrays[i].bytes == first.arrays[i].bytes);
      }
    }
    CHECK(round_trip(a, p, Precision::f64) <= 1e-12);
  }
}

TEST_CASE("bro formats: the references equal plain CSR on every public matrix") {
  const fs::path dir = test::shared_matrices();
  if (dir.empty() || !fs::exists(dir / "index.csv")) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  std::ifstream index(dir / "index.csv");
  std::string line;
  std::getline(index, line);
  int tested = 0;
  while (std::getline(index, line)) {
    std::stringstream ss(line);
    std::vector<std::string> f;
    for (std::string cell; std::getline(ss, cell, ',') && f.size() < 6;) f.push_back(cell);
    if (f.size() < 6 || f[0] == "young1c") continue;  // complex
    const fs::path file = dir / (f[0] + ".mtx.xz");
    if (!fs::exists(file)) continue;
    const CsrMatrix a = read_matrix_market(file);
    const std::int64_t k = formats::hyb_split_width(inspect(a, InspectDepth::rows));
    // Large matrices (G3_circuit, 7.7M nonzeros) get one parameter set per format to keep the
    // suite quick; the rest the whole grid.
    std::vector<FormatParams> grid = bro_param_grid(a);
    if (a.nnz() > 2000000)
      grid = {BroEllParams{32, 32, 1, 256, 2, true, 0}, BroCooParams{1024, 64, 256},
              BroHybParams{static_cast<int>(k), 32, 32, 1, 256, 1, false, 0, 1024}};
    for (const FormatParams& p : grid) {
      CAPTURE(f[0]);
      CAPTURE(describe(p));
      CHECK(round_trip(a, p, Precision::f64) <= 1e-12);
    }
    ++tested;
  }
  MESSAGE("public matrices round-tripped: " << tested);
  CHECK(tested > 50);
}

TEST_CASE("bro formats say why they cannot implement a matrix") {
  const Profile p = inspect(gen::from_spec("stencil2d:n=30"));
  const formats::FormatUnit& ell = formats::find_format("bro_ell");
  auto reason = [&](const formats::FormatUnit& unit, const FormatParams& params) {
    const auto r = unit.cannot_implement(p, params, Precision::f64);
    return r ? *r : std::string();
  };
  CHECK(reason(ell, BroEllParams{32, 32, 1, 256, 1, false, 0}).empty());
  CHECK(reason(ell, BroEllParams{16, 32, 1, 256, 1, false, 0}).find("whole number of warps") !=
        std::string::npos);
  CHECK(reason(ell, BroEllParams{32, 48, 1, 256, 1, false, 0}).find("32 or 64") !=
        std::string::npos);
  CHECK(reason(ell, BroEllParams{32, 32, 3, 256, 1, false, 0}).find("power of two") !=
        std::string::npos);
  CHECK(reason(ell, BroEllParams{64, 32, 1, 96, 1, false, 0}).find("multiple of the slice") !=
        std::string::npos);
  CHECK(reason(ell, BroEllParams{32, 32, 1, 256, 3, false, 0}).find("unroll") != std::string::npos);
  CHECK(reason(ell, BroEllParams{32, 32, 1, 256, 1, false, 3}).find("tables 3") !=
        std::string::npos);
  CHECK(reason(ell, BroEllParams{32, 32, 1, 256, 2, false, 2}).find("compile-time schedule") !=
        std::string::npos);

  // Constant tables: 1.6M rows of 5 nonzeros need ~250 KB of widths at h = 32.
  Profile big = p;
  big.nrows = big.ncols = 1600000;
  CHECK(reason(ell, BroEllParams{32, 32, 1, 256, 1, false, 1}).empty());
  const auto r =
      ell.cannot_implement(big, BroEllParams{32, 32, 1, 256, 1, false, 1}, Precision::f64);
  REQUIRE(r);
  CHECK(r->find("64 KiB") != std::string::npos);
  // A baked pattern of 3000 columns is too long to unroll.
  Profile dense_row = p;
  dense_row.row_max = 3000;
  const auto rb =
      ell.cannot_implement(dense_row, BroEllParams{32, 32, 1, 256, 1, false, 2}, Precision::f64);
  REQUIRE(rb);
  CHECK(rb->find("longer than 64") != std::string::npos);

  const formats::FormatUnit& coo = formats::find_format("bro_coo");
  CHECK(reason(coo, BroCooParams{1000, 32, 256}).find("multiple of 32") != std::string::npos);
  CHECK(reason(coo, BroCooParams{1024, 16, 256}).find("32 or 64") != std::string::npos);
  const formats::FormatUnit& hyb = formats::find_format("bro_hyb");
  CHECK(reason(hyb, BroHybParams{-1, 32, 32, 1, 256, 1, false, 0, 1024}).find("negative") !=
        std::string::npos);
  CHECK(reason(hyb, BroHybParams{4, 32, 32, 1, 256, 1, false, 0, 1000}).find("interval") !=
        std::string::npos);
}

TEST_CASE("bro cost model: estimates from the profile track the real encodings") {
  for (const char* spec : {"stencil2d:n=200", "stencil27:n=20", "random:n=20000,per_row=12",
                           "banded:n=20000,hbw=5", "elasticity:n=10"}) {
    const CsrMatrix a = gen::from_spec(spec);
    const Profile prof = inspect(a, InspectDepth::rows);
    for (const BroEllParams& p :
         {BroEllParams{256, 32, 1, 256, 1, false, 0}, BroEllParams{32, 64, 1, 256, 2, true, 0},
          BroEllParams{8, 32, 4, 256, 1, false, 0}, BroEllParams{32, 32, 1, 256, 1, false, 2}}) {
      const auto shape = formats::bro::shape_of(p);
      const auto actual = formats::bro::measure_ell(a, 1 << 30, shape);
      const auto est = formats::bro::estimate_ell(prof, 1 << 30, shape);
      const double ratio = est.index_bytes / static_cast<double>(actual.index_bytes(p.symbol_bits));
      const std::string what = std::string(spec) + " " + describe(FormatParams{p});
      CAPTURE(what);
      CAPTURE(ratio);
      // Halfway between alike and independent rows: within -30% / +150% of the truth on these
      // (structured matrices sit at the top: elasticity's wide deltas keep to their positions).
      CHECK(ratio > 0.7);
      CHECK(ratio < 2.5);
      const double padded = static_cast<double>(actual.columns * shape.lanes());
      CHECK(est.padded_entries / padded > 0.8);
      CHECK(est.padded_entries / padded < 1.6);
    }
  }
  // Compression pays: on a 2D stencil bro_ell moves fewer bytes than csr, and baked tables are
  // cheaper than global ones when every slice shares the pattern.
  const Profile prof = inspect(gen::from_spec("stencil2d:n=300"), InspectDepth::rows);
  const auto& ell = formats::find_format("bro_ell");
  const auto& csr = formats::find_format("csr");
  const double bro_bytes =
      ell.cost(prof, BroEllParams{32, 32, 1, 256, 1, false, 0}, Precision::f64).total();
  const double csr_bytes = csr.cost(prof, CsrParams{}, Precision::f64).total();
  CHECK(bro_bytes < 0.9 * csr_bytes);
  // More lanes per slice pad more and widen widths: h = 256 costs more bytes than h = 32 on
  // rows of varying length.
  const Profile cage = inspect(gen::from_spec("random:n=20000,per_row=12"), InspectDepth::rows);
  CHECK(ell.cost(cage, BroEllParams{256, 32, 1, 256, 1, false, 0}, Precision::f64).matrix_bytes >
        ell.cost(cage, BroEllParams{32, 32, 1, 256, 1, false, 0}, Precision::f64).matrix_bytes);
}

TEST_CASE("bro cost model: padding comes from the inspector's measured slices") {
  // Rows alike within each slice of 32, lengths 1..20 across slices: no padding at h = 32, T = 1,
  // where independent draws from the same histogram would pad every slice to about 20.
  const std::int64_t n = 32 * 200;
  CsrMatrix a;
  a.nrows = a.ncols = n;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t len = 1 + (i / 32) % 20;
    for (std::int64_t k = 0; k < len; ++k) {
      a.col_idx.push_back(static_cast<std::int32_t>((i + 37 * k) % n));
      a.values.push_back(1.0 + static_cast<double>(k));
    }
    std::sort(a.col_idx.end() - len, a.col_idx.end());
    a.row_ptr.push_back(static_cast<std::int64_t>(a.col_idx.size()));
  }
  const Profile prof = inspect(a, InspectDepth::rows);
  Profile drawn = prof;
  drawn.slice_longest = {};
  for (const BroEllParams& p :
       {BroEllParams{32, 32, 1, 256, 1, false, 2}, BroEllParams{16, 32, 2, 256, 1, false, 2},
        BroEllParams{8, 32, 4, 256, 2, true, 0}}) {
    const auto shape = formats::bro::shape_of(p);
    CAPTURE(describe(FormatParams{p}));
    const double padded =
        static_cast<double>(formats::bro::measure_ell(a, 1 << 30, shape).columns * shape.lanes());
    const auto est = formats::bro::estimate_ell(prof, 1 << 30, shape);
    CHECK(est.padded_entries == doctest::Approx(padded).epsilon(0.05));
    CHECK(formats::bro::estimate_ell(drawn, 1 << 30, shape).padded_entries > 1.3 * padded);
  }
  // A split row limit is not what the inspector measured: the draws stay.
  const auto shape = formats::bro::shape_of(BroEllParams{32, 32, 1, 256, 1, false, 2});
  CHECK(formats::bro::estimate_ell(prof, 8, shape).padded_entries ==
        formats::bro::estimate_ell(drawn, 8, shape).padded_entries);
}

TEST_CASE("bro propose: the paper's variant and Hopper variants, hyb split stored in params") {
  const CsrMatrix a = gen::from_spec("rmat:scale=12,ef=16");
  const Profile prof = inspect(a, InspectDepth::rows);
  const auto ell = formats::find_format("bro_ell").propose(prof, Precision::f64);
  REQUIRE(ell.size() >= 4);
  const auto& paper = std::get<BroEllParams>(ell.front().params);
  CHECK(paper.threads_per_row == 1);
  CHECK(paper.symbol_bits == 32);
  CHECK(paper.slice_height == 256);
  bool hopper64 = false, shared_rows = false;
  for (const Candidate& c : ell) {
    const auto& p = std::get<BroEllParams>(c.params);
    hopper64 |= p.symbol_bits == 64 && p.prefetch;
    shared_rows |= p.threads_per_row > 1;
  }
  CHECK(hopper64);
  CHECK(shared_rows);  // R-MAT rows average 16 nonzeros
  const auto hyb = formats::find_format("bro_hyb").propose(prof, Precision::f64);
  REQUIRE(!hyb.empty());
  for (const Candidate& c : hyb)
    CHECK(std::get<BroHybParams>(c.params).width == formats::hyb_split_width(prof));
  // The planner ranks them with the rest.
  compiler::PlanOptions o;
  o.format = "bro_hyb";
  const Plan plan = compiler::make_plan(prof, o);
  CHECK(plan.format == "bro_hyb");
  CHECK(plan.predicted_seconds > 0);
}

TEST_CASE("bro_hyb: the ELL part holds the first K nonzeros of each row, COO the rest") {
  const CsrMatrix a = awkward();
  const int k = 7;
  const BroHybParams p{k, 32, 32, 1, 256, 1, false, 0, 256};
  const Encoded e = formats::find_format("bro_hyb").encode(a, p, Precision::f64);
  std::int64_t beyond = 0;
  for (std::int64_t r = 0; r < a.nrows; ++r)
    beyond += std::max<std::int64_t>(0, a.row_length(r) - k);
  CHECK(formats::typed<std::int64_t>(e.array("coo_count"))[0] == beyond);
  const auto z = formats::bro::measure_ell(a, k, formats::bro::shape_of(p));
  CHECK(z.entries == a.nnz() - beyond);
  // Every array is there under its part's prefix.
  for (const char* n :
       {"ell_col_ptr", "ell_sym_ptr", "ell_widths", "ell_symbols", "ell_values", "coo_count",
        "coo_row_base", "coo_widths", "coo_sym_ptr", "coo_symbols", "coo_col_idx", "coo_values"})
    CHECK_NOTHROW(e.array(n));
}

TEST_CASE("bro eta: space saving on index data") {
  // A 2D stencil: first column ~16 bits, deltas 1 and n-1: most of the 32 bits per index go.
  const CsrMatrix s = gen::from_spec("stencil2d:n=300");
  const double eta_ell = formats::bro_eta(s, BroEllParams{32, 32, 1, 256, 1, false, 0});
  CHECK(eta_ell > 0.55);
  CHECK(eta_ell < 0.9);
  // COO keeps its 32-bit column indices: at most half of its two index arrays can go.
  const double eta_coo = formats::bro_eta(s, BroCooParams{1024, 32, 256});
  CHECK(eta_coo > 0.4);
  CHECK(eta_coo < 0.5);
  const double eta_hyb =
      formats::bro_eta(s, BroHybParams{static_cast<int>(formats::hyb_split_width(inspect(s))), 32,
                                       32, 1, 256, 1, false, 0, 1024});
  CHECK(eta_hyb > 0.4);
  // Random columns over a wide matrix compress less than a stencil.
  const CsrMatrix r = gen::from_spec("random:n=100000,per_row=8");
  CHECK(formats::bro_eta(r, BroEllParams{32, 32, 1, 256, 1, false, 0}) < eta_ell);
  CsrMatrix empty;
  empty.nrows = 3;
  empty.ncols = 3;
  empty.row_ptr.assign(4, 0);
  CHECK(formats::bro_eta(empty, BroEllParams{}) == 0.0);

  // The report's figures.
  const fs::path dir = test::shared_matrices();
  for (const char* name : {"G3_circuit", "cage11"}) {
    if (dir.empty() || !fs::exists(dir / (std::string(name) + ".mtx.xz"))) continue;
    const CsrMatrix m = read_matrix_market(dir / (std::string(name) + ".mtx.xz"));
    const BroEllParams warp{32, 32, 1, 256, 1, false, 0}, paper{256, 32, 1, 256, 1, false, 0};
    const auto z = formats::bro::measure_ell(m, 1 << 30, formats::bro::shape_of(warp));
    MESSAGE(std::string(name) << ": bro_ell h=32 eta " << formats::bro_eta(m, warp)
                              << ", h=256 eta " << formats::bro_eta(m, paper) << ", index bytes "
                              << z.index_bytes(32) << " for " << m.nnz()
                              << " nonzeros; bro_coo eta " << formats::bro_eta(m, BroCooParams{}));
  }
}

TEST_CASE("bro_ell: the x gather costs nothing where rows share x sectors, a quarter where not") {
  using formats::BroEllFormat;
  namespace m = formats::bro::model;
  const Profile band = inspect(gen::banded(20000, 8), InspectDepth::rows);
  const Profile scattered = inspect(gen::random_uniform(20000, 20000, 16), InspectDepth::rows);
  CHECK(static_cast<double>(band.x_sectors) / static_cast<double>(band.nnz) <
        m::kLocalSectorsPerNonzero);
  CHECK(BroEllFormat::gather_efficiency(band) == 1.0);
  CHECK(BroEllFormat::gather_efficiency(scattered) == m::kScatteredGatherEfficiency);
  // Between the two thresholds the efficiency falls linearly.
  Profile mid = band;
  mid.x_sectors = static_cast<std::int64_t>(0.475 * static_cast<double>(mid.nnz));
  CHECK(BroEllFormat::gather_efficiency(mid) ==
        doctest::Approx(0.5 * (1.0 + m::kScatteredGatherEfficiency)).epsilon(0.01));
  // It is part of the cost: same bytes, the local matrix's lanes faster.
  BroEllParams p;
  const BroEllFormat unit;
  CHECK(unit.cost(band, p, Precision::f64).lane_efficiency >
        unit.cost(scattered, p, Precision::f64).lane_efficiency);
}
