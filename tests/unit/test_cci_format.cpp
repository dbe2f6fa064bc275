// cci: the decode table, the encoder and host reference against plain CSR, the space report and
// the parameter checks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "formats/cci/cci_format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;
namespace fs = std::filesystem;

namespace {

const formats::CciFormat kCci;

CciParams cci(int t, bool paper = false, bool interleaved = true) {
  CciParams p;
  p.threads_per_row = t;
  p.paper_table = paper;
  p.interleaved = interleaved;
  return p;
}

double round_trip(const CsrMatrix& a, const CciParams& p) {
  const Encoded e = kCci.encode(a, p, Precision::f64);
  const std::vector<double> x = codegen::test_vector(a.ncols);
  double worst = 0;
  for (auto [alpha, beta] : {std::pair{1.0, 0.0}, {-1.5, 0.5}}) {
    std::vector<double> y0(static_cast<std::size_t>(a.nrows));
    for (std::size_t i = 0; i < y0.size(); ++i) y0[i] = 0.25 * static_cast<double>(i % 5) - 0.5;
    std::vector<double> y = y0, ref = y0;
    kCci.reference_spmv(e, p, x, y, alpha, beta);
    compiler::csr_reference_spmv(a, x, ref, alpha, beta);
    worst = std::max(worst, compiler::relative_error(y, ref));
  }
  return worst;
}

}  // namespace

TEST_CASE("cci: the paper's table expands short opcodes over every index they prefix") {
  const formats::CciTable t = formats::cci_paper_table();
  for (int i = 0; i < 8; i += 2) {
    CHECK(t.op_len[static_cast<std::size_t>(i)] == 1);  // low bit 0: the short jump
    CHECK(t.imm_bits[static_cast<std::size_t>(i)] == 0);
  }
  CHECK(t.imm_bits[1] == 5);
  CHECK(t.imm_bits[3] == 15);
  CHECK(t.imm_bits[5] == 20);
  CHECK(t.imm_bits[7] == 29);
  CHECK(t.code_bits(0) == 1);
  CHECK(t.code_bits(6) == 18);
  CHECK(t.code_bits(30) == -1);
  CHECK_THROWS_AS(formats::CciTable::from_classes({{1, 0u, 0}, {1, 0u, 4}}), InternalError);
}

TEST_CASE("cci: the chosen table codes a histogram in no more bits than the paper's") {
  std::array<std::int64_t, 33> hist{};
  hist[0] = 500;  // stride jumps
  hist[3] = 200;
  hist[7] = 50;
  hist[12] = 10;
  const formats::CciTable chosen = formats::cci_choose_table(hist);
  const formats::CciTable paper = formats::cci_paper_table();
  auto bits = [&](const formats::CciTable& t) {
    double s = 0;
    for (int b = 0; b <= 32; ++b) {
      REQUIRE((t.code_bits(b) != -1 || hist[static_cast<std::size_t>(b)] == 0));
      s += static_cast<double>(hist[static_cast<std::size_t>(b)]) * t.code_bits(b);
    }
    return s;
  };
  CHECK(bits(chosen) < bits(paper));
  CHECK(chosen.code_bits(0) == 1);  // the most frequent class gets the shortest opcode
  CHECK(chosen.max_imm_bits() == 12);
}

namespace {

// Bits to code `hist` with `t`, or -1 when a present width has no class.
double coded_bits(const formats::CciTable& t, const std::array<std::int64_t, 33>& hist) {
  double s = 0;
  for (int b = 0; b <= 32; ++b) {
    if (hist[static_cast<std::size_t>(b)] == 0) continue;
    if (t.code_bits(b) < 0) return -1;
    s += static_cast<double>(hist[static_cast<std::size_t>(b)]) * t.code_bits(b);
  }
  return s;
}

// The fewest bits any table codes `hist` in, by brute force: every complete prefix code of
// opcodes of at most 3 bits (Kraft sum 1), every assignment of its lengths to classes, and every
// choice of class widths among the present ones (the largest always a class).
double brute_force_bits(const std::array<std::int64_t, 33>& hist) {
  std::vector<int> present;
  for (int b = 0; b <= 32; ++b)
    if (hist[static_cast<std::size_t>(b)] > 0) present.push_back(b);
  double best = -1;
  const int np = static_cast<int>(present.size());
  // Every nonempty subset of present widths that contains the largest: the class widths.
  for (unsigned mask = 0; mask < (1u << np); ++mask) {
    if (!(mask >> (np - 1) & 1u)) continue;
    std::vector<int> widths;
    for (int i = 0; i < np; ++i)
      if (mask >> i & 1u) widths.push_back(present[static_cast<std::size_t>(i)]);
    const std::size_t n = widths.size();
    if (n > 8) continue;
    // Every assignment of lengths 0..3 whose Kraft sum is exactly 1 (lengths 0 only alone).
    std::vector<int> lens(n, 0);
    for (;;) {
      double kraft = 0;
      bool ok = n == 1 || std::all_of(lens.begin(), lens.end(), [](int l) { return l > 0; });
      for (std::size_t i = 0; i < n; ++i) kraft += std::ldexp(1.0, -lens[i]);
      if (ok && kraft == 1.0) {
        // Each width is coded by the class of fewest total bits that holds it (as
        // CciTable::class_for does).
        double bits = 0;
        for (std::size_t i = 0; i < n; ++i) ok = ok && lens[i] + widths[i] <= 32;
        for (int b = 0; b <= 32 && ok; ++b) {
          if (hist[static_cast<std::size_t>(b)] == 0) continue;
          int fewest = 64;
          for (std::size_t i = 0; i < n; ++i)
            if (widths[i] >= b) fewest = std::min(fewest, lens[i] + widths[i]);
          bits += static_cast<double>(hist[static_cast<std::size_t>(b)]) * fewest;
        }
        if (ok && (best < 0 || bits < best)) best = bits;
      }
      std::size_t k = 0;
      while (k < n && ++lens[k] > 3) lens[k++] = 0;
      if (k == n) break;
    }
  }
  return best;
}

}  // namespace

TEST_CASE("cci: the chosen table is the cheapest of every partition and opcode assignment") {
  // Random histograms over few present widths (so the brute force stays small), including wide
  // immediates where shortest-opcode-to-most-frequent would pass 32 bits.
  std::uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  for (int trial = 0; trial < 60; ++trial) {
    std::array<std::int64_t, 33> hist{};
    const int present = 1 + static_cast<int>(next() % 7);
    for (int k = 0; k < present; ++k)
      hist[next() % 33] += 1 + static_cast<std::int64_t>(next() % 1000);
    if (trial % 5 == 0) hist[31] += 5000;  // a frequent wide class
    const formats::CciTable chosen = formats::cci_choose_table(hist);
    const double bits = coded_bits(chosen, hist);
    CAPTURE(trial);
    REQUIRE(bits >= 0);
    CHECK(bits == brute_force_bits(hist));
  }
}

TEST_CASE("cci: reference over the encoded arrays equals CSR on every generated class") {
  for (const char* spec :
       {"stencil2d:n=30", "stencil7:n=9", "stencil27:n=8", "elasticity:n=4", "rmat:scale=12,ef=16",
        "random:n=3000,per_row=12", "banded:n=2000,hbw=5", "random:nrows=700,ncols=5000,per_row=9",
        "random:nrows=3000,ncols=300,per_row=20"}) {
    const CsrMatrix a = gen::from_spec(spec);
    for (int t : {1, 2, 4, 8, 32}) {
      for (bool paper : {false, true}) {
        for (bool il : {true, false}) {
          CAPTURE(spec);
          CAPTURE(t);
          CAPTURE(paper);
          CAPTURE(il);
          CHECK(round_trip(a, cci(t, paper, il)) <= 1e-12);
        }
      }
    }
  }
  const CsrMatrix a = test::dense_row_rectangular();
  for (int t : {1, 4, 32}) CHECK(round_trip(a, cci(t)) <= 1e-12);
}

TEST_CASE("cci: reference equals CSR on every public matrix below 2M nonzeros") {
  fs::path dir = test::shared_matrices();
  if (dir.empty() || !fs::exists(dir / "index.csv")) return;
  std::ifstream index(dir / "index.csv");
  std::string line;
  std::getline(index, line);
  int tested = 0;
  while (std::getline(index, line)) {
    std::stringstream ss(line);
    std::vector<std::string> f;
    for (std::string cell; std::getline(ss, cell, ',') && f.size() < 7;) f.push_back(cell);
    if (f.size() < 7 || f[6] == "complex" || std::stoll(f[5]) >= 2000000) continue;
    const fs::path file = dir / (f[0] + ".mtx.xz");
    if (!fs::exists(file)) continue;
    const CsrMatrix a = read_matrix_market(file);
    CAPTURE(f[0]);
    CHECK(round_trip(a, cci(4)) <= 1e-12);
    CHECK(round_trip(a, cci(8, true, false)) <= 1e-12);
    ++tested;
  }
  MESSAGE("cci: public matrices checked: " << tested);
  CHECK(tested > 50);
}

TEST_CASE("cci: column data of a stencil compresses like the paper's regular matrices") {
  const CsrMatrix a = gen::from_spec("stencil27:n=24");
  const auto own = formats::cci_space(kCci.encode(a, cci(1), Precision::f64));
  CHECK(own.csr_column_bytes == 4.0 * static_cast<double>(a.nnz()));
  CHECK(own.saved_codes_only > 0.80);
  CHECK(own.saved_with_starts < own.saved_codes_only);
  const auto paper = formats::cci_space(kCci.encode(a, cci(1, true), Precision::f64));
  CHECK(own.code_bytes <= paper.code_bytes);
  // A random matrix has little to compress.
  const CsrMatrix r = gen::from_spec("random:n=20000,per_row=4");
  CHECK(formats::cci_space(kCci.encode(r, cci(4), Precision::f64)).saved_codes_only < 0.6);
}

TEST_CASE("cci: the cost model's matrix bytes follow the encoded size") {
  for (const char* spec :
       {"stencil27:n=24", "banded:n=20000,hbw=6", "random:n=20000,per_row=10", "elasticity:n=8"}) {
    const CsrMatrix a = gen::from_spec(spec);
    const Profile profile = inspect(a, InspectDepth::rows);
    for (int t : {1, 4, 8}) {
      for (bool il : {true, false}) {
        const CciParams p = cci(t, false, il);
        const Encoded e = kCci.encode(a, p, Precision::f64);
        const double exact = static_cast<double>(e.total_bytes() - e.array("decode_table").count());
        const double est = kCci.cost(profile, p, Precision::f64).matrix_bytes;
        CAPTURE(spec);
        CAPTURE(t);
        CAPTURE(il);
        CHECK(est == doctest::Approx(exact).epsilon(0.15));
      }
    }
  }
}

TEST_CASE("cci: cannot_implement names what does not fit") {
  const Profile p = inspect(gen::from_spec("stencil2d:n=30"), InspectDepth::rows);
  CHECK_FALSE(kCci.cannot_implement(p, cci(4), Precision::f64));
  auto r = kCci.cannot_implement(p, cci(3), Precision::f64);
  REQUIRE(r);
  CHECK(r->find("power of two") != std::string::npos);
  Profile wide = p;
  wide.ncols = (std::int64_t{1} << 29) + 5;
  r = kCci.cannot_implement(wide, cci(8, true), Precision::f64);
  REQUIRE(r);
  CHECK(r->find("29-bit") != std::string::npos);
  CHECK_FALSE(kCci.cannot_implement(wide, cci(8), Precision::f64));
  CciParams bad = cci(4);
  bad.block_size = 100;
  CHECK(kCci.cannot_implement(p, bad, Precision::f64));
}

TEST_CASE("cci: the decode table is baked into the unit and named in the kernel") {
  const CsrMatrix a = gen::from_spec("stencil27:n=6");
  const Encoded e = kCci.encode(a, cci(8, true, false), Precision::f32);
  const KernelSource k = kCci.generate(e, cci(8, true, false), "");
  CHECK(k.kernel_name == "spmv_cci_t8_b256_slices_paper_f32");
  CHECK(k.source.find("kDecodeTable[8]") != std::string::npos);
  const Encoded e2 = kCci.encode(a, cci(4), Precision::f64);
  const KernelSource k2 = kCci.generate(e2, cci(4), "");
  CHECK(k2.kernel_name.rfind("spmv_cci_t4_b256_c", 0) == 0);
  CHECK(formats::CciFormat::table_of(e2).classes.size() >= 1);
}
