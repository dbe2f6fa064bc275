// amb: the encoder and host reference against plain CSR, the traffic model's counts, and the
// parameter checks.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "formats/amb/amb_format.hpp"
#include "formats/amb/amb_traffic.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;
namespace fs = std::filesystem;

namespace {

const formats::AmbFormat kAmb;

AmbParams amb(int seg, int c, int sigma, int b, bool det = false) {
  AmbParams p;
  p.segment_bits = seg;
  p.slice_height = c;
  p.sigma = sigma;
  p.column_block = b;
  p.deterministic = det;
  return p;
}

// Max relative error of the encoded reference over a few (alpha, beta) pairs.
double round_trip(const CsrMatrix& a, const AmbParams& p, Precision prec = Precision::f64) {
  const Encoded e = kAmb.encode(a, p, prec);
  const std::vector<double> x = codegen::test_vector(a.ncols, prec);
  double worst = 0;
  for (auto [alpha, beta] : {std::pair{1.0, 0.0}, {2.5, -0.75}}) {
    std::vector<double> y0(static_cast<std::size_t>(a.nrows));
    for (std::size_t i = 0; i < y0.size(); ++i) y0[i] = 0.25 * static_cast<double>(i % 7) - 0.5;
    std::vector<double> y = y0, ref = y0;
    kAmb.reference_spmv(e, p, x, y, alpha, beta);
    // The reference reads fp32-rounded values when the plan stores fp32.
    CsrMatrix ar = a;
    if (prec != Precision::f64)
      for (double& v : ar.values) v = static_cast<double>(static_cast<float>(v));
    compiler::csr_reference_spmv(ar, x, ref, alpha, beta);
    worst = std::max(worst, compiler::relative_error(y, ref));
  }
  return worst;
}

std::vector<AmbParams> param_grid() {
  return {amb(16, 32, 32768, 1),       amb(16, 32, 32768, 3),  amb(8, 32, 64, 2),
          amb(6, 16, 16, 10),          amb(10, 8, 32768, 4),   amb(16, 64, 128, 1),
          amb(16, 32, 32768, 3, true), amb(7, 16, 64, 5, true)};
}

}  // namespace

TEST_CASE("amb: reference over the encoded arrays equals CSR on every generated class") {
  for (const char* spec :
       {"stencil2d:n=30", "stencil7:n=9", "stencil27:n=8", "elasticity:n=4", "rmat:scale=12,ef=16",
        "random:n=3000,per_row=12", "banded:n=2000,hbw=5", "random:nrows=700,ncols=5000,per_row=9",
        "random:nrows=3000,ncols=300,per_row=20"}) {
    const CsrMatrix a = gen::from_spec(spec);
    for (const AmbParams& p : param_grid()) {
      CAPTURE(spec);
      CAPTURE(describe(p));
      CHECK(round_trip(a, p) <= 1e-12);
    }
  }
  const CsrMatrix a = test::dense_row_rectangular();
  for (const AmbParams& p : param_grid()) {
    CAPTURE(describe(p));
    CHECK(round_trip(a, p) <= 1e-12);
    CHECK(round_trip(a, p, Precision::f32) <= 1e-6);
  }
}

TEST_CASE("amb: reference equals CSR on every public matrix below 2M nonzeros") {
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
    const Profile profile = inspect(a, InspectDepth::rows);
    CAPTURE(f[0]);
    // The planner's pick, a blocked layout with narrow segments, and the deterministic one.
    std::vector<AmbParams> sets = {formats::AmbFormat::choose(profile, Precision::f64, false),
                                   amb(9, 32, 256, 3), amb(16, 32, 32768, 2, true)};
    for (const AmbParams& p : sets) {
      if (kAmb.cannot_implement(profile, p, Precision::f64)) continue;
      CAPTURE(describe(p));
      CHECK(round_trip(a, p) <= 1e-12);
    }
    ++tested;
  }
  MESSAGE("amb: public matrices checked: " << tested);
  CHECK(tested > 50);
}

TEST_CASE("amb: layout counts on a hand-checkable matrix") {
  // 27-point stencil: every row is runs of 3 adjacent columns, so b = 3 gives exactly one block
  // per run and no zero fill inside rows.
  const CsrMatrix a = gen::from_spec("stencil27:n=8");
  const auto s1 = formats::amb_layout_stats(a, amb(16, 32, 32768, 1));
  CHECK(s1.blocks == a.nnz());
  CHECK(s1.pairs == a.nrows);  // 512 columns: one segment
  CHECK(s1.segments == 1);
  const auto s3 = formats::amb_layout_stats(a, amb(16, 32, 32768, 3));
  std::int64_t runs = 0;
  for (std::int64_t r = 0; r < a.nrows; ++r)
    for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k)
      runs += k == a.row_ptr[r] || a.col_idx[k] != a.col_idx[k - 1] + 1;
  CHECK(s3.blocks <= runs);
  CHECK(s3.elements >= s3.blocks);
  CHECK(s3.chunks % (256 / 32) == 0);
  // Narrow segments split rows: more pairs, each an atomic.
  const auto s_narrow = formats::amb_layout_stats(a, amb(5, 32, 32768, 1));
  CHECK(s_narrow.pairs > s1.pairs);
  CHECK(s_narrow.segments == 16);
}

TEST_CASE("amb: the traffic model from the profile tracks the counted layout") {
  for (const char* spec : {"stencil27:n=24", "elasticity:n=8", "stencil2d:n=120",
                           "banded:n=20000,hbw=6", "random:n=20000,per_row=10"}) {
    const CsrMatrix a = gen::from_spec(spec);
    const Profile profile = inspect(a, InspectDepth::rows);
    for (int b : {1, 3}) {
      const AmbParams p = amb(16, 32, 32768, b);
      const auto est = formats::amb_traffic(profile, p, Precision::f64);
      const auto exact = formats::amb_traffic(a, p, Precision::f64);
      CAPTURE(spec);
      CAPTURE(b);
      CAPTURE(est.describe());
      CAPTURE(exact.describe());
      CHECK(est.total() == doctest::Approx(exact.total()).epsilon(0.2));
    }
  }
}

TEST_CASE("amb: propose picks the block size the structure asks for") {
  const Profile stencil = inspect(gen::from_spec("stencil27:n=24"), InspectDepth::rows);
  CHECK(formats::AmbFormat::choose(stencil, Precision::f64, false).column_block == 3);
  const Profile random = inspect(gen::from_spec("random:n=20000,per_row=10"), InspectDepth::rows);
  CHECK(formats::AmbFormat::choose(random, Precision::f64, false).column_block == 1);
  const auto cands = kAmb.propose(stencil, Precision::f64);
  REQUIRE(cands.size() >= 2);
  CHECK(std::get<AmbParams>(cands[1].params).deterministic);
  for (const Candidate& c : cands) CHECK(c.applicable);
  // Blocking the stencil saves traffic; the deterministic variant pays for its partial sums.
  const auto t3 = formats::amb_traffic(stencil, amb(16, 32, 32768, 3), Precision::f64);
  const auto t1 = formats::amb_traffic(stencil, amb(16, 32, 32768, 1), Precision::f64);
  const auto t3d = formats::amb_traffic(stencil, amb(16, 32, 32768, 3, true), Precision::f64);
  CHECK(t3.total() < t1.total());
  CHECK(t3d.scratch > 0);
  CHECK(t3.y_updates > 0);
}

TEST_CASE("amb: cannot_implement names what does not fit") {
  const Profile p = inspect(gen::from_spec("stencil2d:n=30"), InspectDepth::rows);
  auto why = [&](AmbParams q) {
    auto r = kAmb.cannot_implement(p, q, Precision::f64);
    return r ? *r : std::string();
  };
  CHECK(why(amb(16, 32, 32768, 1)).empty());
  CHECK(why(amb(17, 32, 32768, 1)).find("segment bits 17") != std::string::npos);
  CHECK(why(amb(16, 24, 32768, 1)).find("C=24") != std::string::npos);
  CHECK(why(amb(16, 32, 100, 1)).find("sigma 100") != std::string::npos);
  CHECK(why(amb(16, 32, 65536, 1)).find("sigma 65536") != std::string::npos);
  CHECK(why(amb(16, 32, 32768, 11)).find("b=11") != std::string::npos);
  CHECK(why(amb(2, 32, 32768, 5)).find("narrower than a block") != std::string::npos);
  CHECK(why(amb(1, 32, 32, 1)).empty());  // 900 columns: 450 segments of 2
  Profile big = p;
  big.nrows = 3'000'000;
  CHECK(why(amb(16, 32, 32, 1)).empty());
  auto r = kAmb.cannot_implement(big, amb(16, 32, 32, 1), Precision::f64);
  REQUIRE(r);
  CHECK(r->find("windows") != std::string::npos);
  big.ncols = std::int64_t{1} << 20;
  r = kAmb.cannot_implement(big, amb(2, 32, 32768, 1), Precision::f64);
  REQUIRE(r);
  CHECK(r->find("segments") != std::string::npos);
}

TEST_CASE("amb: generated unit has the entry points and launches the runtime needs") {
  const CsrMatrix a = gen::from_spec("stencil7:n=6");
  for (bool det : {false, true}) {
    const AmbParams p = amb(16, 32, 32768, 2, det);
    const Encoded e = kAmb.encode(a, p, Precision::f64);
    const KernelSource k = kAmb.generate(e, p, "");
    CHECK(k.kernel_name == (det ? "spmv_amb_seg16_c32_s32768_cb2_b256_det_f64"
                                : "spmv_amb_seg16_c32_s32768_cb2_b256_f64"));
    CHECK(k.grid * k.block == e.array("chunk_len").count() * 32);
    CHECK(k.source.find(k.kernel_name) != std::string::npos);
    if (det) {
      REQUIRE(k.post_launches.size() == 1);
      CHECK(k.pre_launches.empty());
      CHECK(e.array("partial").scratch);
      CHECK(k.source.find("atomicAdd") == std::string::npos);
    } else {
      REQUIRE(k.pre_launches.size() == 1);
      CHECK(k.source.find(k.pre_launches[0].entry) != std::string::npos);
    }
  }
}
