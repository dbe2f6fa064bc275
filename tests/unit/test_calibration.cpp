// The planner's calibration (compiler/calibration.hpp: a factor per format and precision, and an
// exponent on the warp imbalance the cost model reports), csr's warp imbalance, AMB's scattered
// y updates, and the ranking they give a census-like graph (short rows of mixed lengths).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "calibration.hpp"
#include "formats/amb/amb_traffic.hpp"
#include "formats/csr/csr_format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"
#include "test_support.hpp"

using namespace spmvc;

namespace {

// n rows whose lengths follow `weights` (weights[i]: rows of length i + 1), each row's columns
// distinct and within 2000 of the diagonal, values mostly distinct (no value table applies).
CsrMatrix local_rows(std::int64_t n, const std::vector<double>& weights, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  double total = 0;
  for (double w : weights) total += w;
  CsrMatrix a;
  a.nrows = a.ncols = n;
  std::vector<std::int32_t> cols;
  for (std::int64_t r = 0; r < n; ++r) {
    double u = static_cast<double>(rng() >> 11) * 0x1.0p-53 * total;
    std::size_t len = 1;
    while (len < weights.size() && u >= weights[len - 1]) u -= weights[len++ - 1];
    cols.clear();
    while (cols.size() < len) {
      const std::int64_t c = r - 2000 + static_cast<std::int64_t>(rng() % 4001);
      if (c < 0 || c >= n) continue;
      if (std::find(cols.begin(), cols.end(), c) == cols.end())
        cols.push_back(static_cast<std::int32_t>(c));
    }
    std::sort(cols.begin(), cols.end());
    for (std::int32_t c : cols) {
      a.col_idx.push_back(c);
      a.values.push_back(1.0 + static_cast<double>(rng() % 1000003) * 1e-7);
    }
    a.row_ptr.push_back(static_cast<std::int64_t>(a.col_idx.size()));
  }
  return a;
}

// The row lengths of the census graphs (ct2010: 1 to 15 nonzeros, mostly 3 to 6).
const std::vector<double> kCensusLengths = {121, 280, 566, 775, 542, 330, 199, 129,
                                            89,  57,  41,  30,  21,  14,  12};

Profile histogram_only(std::vector<HistogramBin> bins) {
  Profile p;
  for (const HistogramBin& b : bins) {
    p.nrows += b.count;
    p.nnz += b.count * (b.lo + b.hi) / 2;
  }
  p.ncols = p.nrows;
  p.row_histogram = std::move(bins);
  return p;
}

double min_predicted(const Plan& plan, std::string_view format) {
  double best = INFINITY;
  for (const Candidate& c : plan.candidates)
    if (c.applicable && c.format == format) best = std::min(best, c.predicted_seconds);
  return best;
}

}  // namespace

TEST_CASE("calibration: csr's factor grows with its warp imbalance, padded formats' does not") {
  const compiler::GpuCalibration* h100 = compiler::find_calibration("sm_90", "H100");
  REQUIRE(h100 != nullptr);
  for (Precision prec : {Precision::f64, Precision::f32}) {
    CAPTURE(static_cast<int>(prec));
    const double flat = compiler::time_factor(h100, "csr", prec, 1.0);
    const double skewed = compiler::time_factor(h100, "csr", prec, 3.0);
    // The suite's csr/csr_stream ratio rose with the imbalance (census graphs at T=1: about 3).
    CHECK(skewed > 1.2 * flat);
    CHECK(compiler::time_factor(h100, "csr", prec) == flat);
    // An imbalance below 1 is no imbalance.
    CHECK(compiler::time_factor(h100, "csr", prec, 0.5) == flat);
    CHECK(compiler::time_factor(h100, "hyb", prec, 3.0) ==
          compiler::time_factor(h100, "hyb", prec, 1.0));
  }
  CHECK(compiler::time_factor(compiler::find_calibration("sm_80", ""), "csr", Precision::f64,
                              3.0) == 1.0);
  CHECK(compiler::time_factor(h100, "no_such_format", Precision::f64) == 1.0);
}

TEST_CASE("csr: warp imbalance is the warp's longest row over the mean row, in steps") {
  // Half the rows 1 long, half 3: a warp of 32 rows almost surely holds a 3 (mean 2).
  const Profile mixed = histogram_only({{1, 1, 500}, {3, 3, 500}});
  CHECK(formats::CsrFormat::warp_imbalance(mixed, 1) == doctest::Approx(1.5).epsilon(1e-6));
  // T=2: steps 1 and 2 (mean 1.5), 16 rows a warp.
  CHECK(formats::CsrFormat::warp_imbalance(mixed, 2) == doctest::Approx(2.0 / 1.5).epsilon(1e-4));
  // T=4: every row one step; T=32: one row a warp.
  CHECK(formats::CsrFormat::warp_imbalance(mixed, 4) == 1.0);
  CHECK(formats::CsrFormat::warp_imbalance(mixed, 32) == 1.0);
  const Profile regular = histogram_only({{5, 5, 1000}});
  CHECK(formats::CsrFormat::warp_imbalance(regular, 1) == 1.0);
  // The cost reports it.
  const formats::FormatUnit& csr = formats::find_format("csr");
  CsrParams p;
  p.threads_per_row = 1;
  CHECK(csr.cost(mixed, p, Precision::f64).warp_imbalance == doctest::Approx(1.5).epsilon(1e-6));
}

TEST_CASE("amb: y updates cost a sector each where the length sort scatters the rows") {
  const CsrMatrix census = local_rows(1 << 16, kCensusLengths, 7);
  const CsrMatrix regular = local_rows(1 << 16, {0, 0, 0, 0, 1}, 7);
  AmbParams p;  // seg=16, C=32, sigma=32768, b=1, atomics
  for (Precision prec : {Precision::f64, Precision::f32}) {
    CAPTURE(static_cast<int>(prec));
    const double v = value_bytes(prec);
    // Rows of one length stay in order: a sector holds 32/v adjacent updates, as before.
    const auto reg = formats::amb_traffic(inspect(regular, InspectDepth::rows), p, prec);
    const auto reg_exact = formats::amb_traffic(regular, p, prec);
    CHECK(reg.y_updates ==
          doctest::Approx(
              2 * v *
              static_cast<double>(
                  formats::amb_layout_estimate(inspect(regular, InspectDepth::rows), p).pairs))
              .epsilon(0.02));
    CHECK(reg_exact.y_updates == doctest::Approx(reg.y_updates).epsilon(0.1));
    // Mixed lengths: neighbours in a chunk are rows far apart, each update its own sector.
    const Profile cp = inspect(census, InspectDepth::rows);
    const auto est = formats::amb_traffic(cp, p, prec);
    const auto exact = formats::amb_traffic(census, p, prec);
    const double pairs = static_cast<double>(formats::amb_layout_estimate(cp, p).pairs);
    CHECK(est.y_updates > 2.5 * 2 * v * pairs);
    CHECK(est.y_updates == doctest::Approx(exact.y_updates).epsilon(0.25));
    // The deterministic variant's partial sums land the same way.
    AmbParams det = p;
    det.deterministic = true;
    const auto det_est = formats::amb_traffic(cp, det, prec);
    const auto det_exact = formats::amb_traffic(census, det, prec);
    CHECK(det_est.scratch == doctest::Approx(det_exact.scratch).epsilon(0.25));
  }
}

TEST_CASE("planner: census graphs rank csr_stream above amb and csr") {
  // ct2010 x16M measured csr_stream 1.17x of cuSPARSE, csr 0.92x, amb 0.73x (fp64; fp32 0.95x,
  // 0.87x, 0.63x) on the H100 suite v3; suite v8: csr_stream 104 / 82 us, csr 118 / 92 us.
  // The census graphs themselves where ../shared is present (the bandwidth-regime replica, as
  // the suite runs it), else a synthetic graph with their row lengths.
  std::vector<std::pair<std::string, CsrMatrix>> graphs;
  if (const auto dir = spmvc::test::shared_matrices(); !dir.empty()) {
    for (const char* name : {"ct2010", "vt2010"}) {
      const CsrMatrix g = read_matrix_market(dir / (std::string(name) + ".mtx.xz"));
      graphs.emplace_back(name, gen::replicate(g, (16'000'000 + g.nnz() - 1) / g.nnz()));
    }
  } else {
    graphs.emplace_back("census-like", local_rows(1 << 20, kCensusLengths, 11));
  }
  for (const auto& [name, a] : graphs) {
    const Profile profile = inspect(a, InspectDepth::rows);
    for (Precision prec : {Precision::f64, Precision::f32}) {
      CAPTURE(name);
      CAPTURE(static_cast<int>(prec));
      compiler::PlanOptions o;
      o.precision = prec;
      const Plan plan = compiler::make_plan(profile, o);
      const double stream = min_predicted(plan, "csr_stream");
      CHECK(stream < min_predicted(plan, "amb"));
      CHECK(stream < min_predicted(plan, "csr"));
    }
  }
}

TEST_CASE("planner: the census graphs in fp32 on the H200 take csr_stream's fewest-block shape") {
  // Suite v13 on the H200 (bench/results/2026-11-29-h200-census-shapes/): 512 threads, tiles of
  // 4096 and two rows a lane measured 1.10-1.15x cuSPARSE's best on the four census graphs x16M
  // fp32, 256 x 1024 0.99-1.08x. With a block's start at 256 bytes the model ranked it third,
  // and without cuSPARSE's row term it handed the graphs to cuSPARSE.
  const auto dir = spmvc::test::shared_matrices();
  if (dir.empty()) return;  // the public matrices are not beside the project
  for (const char* name : {"ct2010", "de2010"}) {
    CAPTURE(name);
    const CsrMatrix g = read_matrix_market(dir / (std::string(name) + ".mtx.xz"));
    const CsrMatrix a = gen::replicate(g, (16'000'000 + g.nnz() - 1) / g.nnz());
    compiler::PlanOptions o;
    o.precision = Precision::f32;
    o.gpu = "H200";
    const Plan plan = compiler::make_plan(inspect(a, InspectDepth::rows), o);
    CHECK(plan.engine == Engine::kernel);
    REQUIRE(plan.format == "csr_stream");
    const auto& p = std::get<CsrStreamParams>(plan.params);
    CHECK(p.block_size == 512);
    CHECK(p.tile == 4096);
    CHECK(p.rows_per_lane == 2);
  }
}

TEST_CASE("calibration is per GPU model: its own where calibrated, sm_90's reference otherwise") {
  const compiler::GpuCalibration* h100 = compiler::find_calibration("sm_90", "H100");
  const compiler::GpuCalibration* h200 = compiler::find_calibration("sm_90", "NVIDIA H200");
  REQUIRE(h100 != nullptr);
  REQUIRE(h200 != nullptr);
  CHECK(h100->model == "H100");
  CHECK(h200->model == "H200");
  CHECK(compiler::find_calibration("sm_90", "NVIDIA H100 80GB HBM3") == h100);
  CHECK(compiler::find_calibration("sm_90", "H200") == h200);
  // Another sm_90 part (other memory clocks) and no GPU named: the reference GPU's, not its own.
  CHECK(compiler::find_calibration("sm_90", "NVIDIA H100 PCIe") == h100);
  CHECK(compiler::find_calibration("sm_90", "") == h100);
  CHECK_FALSE(compiler::calibration_for("sm_90", "NVIDIA H100 PCIe").own);
  CHECK(compiler::calibration_for("sm_90", "NVIDIA H200").own);
  CHECK(compiler::calibration_for("sm_90", "NVIDIA H200").model == "H200");
  // An architecture without calibration: none.
  CHECK(compiler::find_calibration("sm_80", "NVIDIA H200") == nullptr);
  CHECK(compiler::calibration_for("sm_80", "").model.empty());
  CHECK(h200->read_bandwidth > h100->read_bandwidth);
  CHECK(compiler::calibrated_read_bandwidth("NVIDIA H200") == h200->read_bandwidth);
  CHECK_FALSE(compiler::calibrated_read_bandwidth("H200"));  // a device name, matched whole
  CHECK(compiler::calibrated_gpus() == std::vector<std::string>{"H100", "H200"});
  // Every fitted row is a factor of a format and precision the planner knows.
  for (const compiler::GpuCalibration* c : {h100, h200}) {
    CAPTURE(c->model);
    CHECK(c->factors.size() >= 20);
    for (const compiler::TimeFactor& f : c->factors) {
      CHECK(f.factor > 0.2);
      CHECK(f.factor < 5.0);
      CHECK((f.precision == "f64" || f.precision == "f32"));
    }
  }
}

TEST_CASE("the planner predicts with the target GPU's bandwidth and factors") {
  const CsrMatrix a = gen::stencil_3d_27pt(40, 40, 40);
  const Profile profile = inspect(a, InspectDepth::rows);
  compiler::PlanOptions h100;
  h100.gpu = "H100";
  compiler::PlanOptions h200;
  h200.gpu = "H200";
  const Plan plan = compiler::make_plan(profile, h100);
  const compiler::Prediction p100 = compiler::predict(profile, plan.params, h100);
  const compiler::Prediction p200 = compiler::predict(profile, plan.params, h200);
  CHECK(p100.compulsory_bytes == p200.compulsory_bytes);
  CHECK(p100.time_factor == compiler::time_factor(compiler::find_calibration("sm_90", "H100"),
                                                  plan.format, Precision::f64));
  CHECK(p200.time_factor == compiler::time_factor(compiler::find_calibration("sm_90", "H200"),
                                                  plan.format, Precision::f64));
  // The same GPU's bandwidth given explicitly predicts the same; another bandwidth does not.
  compiler::PlanOptions h200_explicit = h200;
  h200_explicit.read_bandwidth = compiler::calibration_for("sm_90", "H200").read_bandwidth;
  CHECK(compiler::predict(profile, plan.params, h200_explicit).compulsory_seconds ==
        p200.compulsory_seconds);
  compiler::PlanOptions h200_slow = h200;
  h200_slow.read_bandwidth = compiler::calibration_for("sm_90", "H100").read_bandwidth;
  CHECK(compiler::predict(profile, plan.params, h200_slow).compulsory_seconds >
        p200.compulsory_seconds);
}
