// Power-law graphs (suite v13's class G: Kronecker graphs, wiki-Vote, Maragal_6): csr_stream's
// blocks wait in the reduction for their longest row, which its cost reports as warp_imbalance
// (CsrStreamFormat::warp_imbalance) and each GPU's calibration weighs with a fitted exponent.
// Without that term the model ranked csr_stream first on Kronecker graphs at about half its
// measured time, where hyb measured faster (bench/results/2026-11-24-h100-suite-v13/pass1.json:
// scale 21, fp32, csr_stream 300 us against hyb 277 us; predicted 125 against 277).
#include <doctest/doctest.h>

#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

#include "calibration.hpp"
#include "formats/csr_stream/csr_stream_format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"

using namespace spmvc;

namespace {

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

// A Kronecker (R-MAT) graph as suite v13 generates them, at a scale the unit tests build quickly:
// mean row 15, longest rows of thousands.
const Profile& kronecker_profile() {
  static const Profile p = inspect(gen::rmat(18, 16), InspectDepth::rows);
  return p;
}

}  // namespace

TEST_CASE("csr_stream: a block's wait for its longest row, from the row-length histogram") {
  CsrStreamParams p;  // 256 threads, tile 1024
  // Every row 8 long: 127 rows a block, 2 lanes a row, 4 steps each; no wait.
  CHECK(formats::CsrStreamFormat::warp_imbalance(histogram_only({{8, 8, 100000}}), p) == 1.0);
  // One row in 64 is 512 long among rows of 4 (mean 11.9): 84 rows fill a block, 2 lanes a row.
  // A block holds a long row with probability 1 - (63/64)^84 = 0.734, summed in 256 steps, else
  // waits 2: E[longest] = 188.3 steps, against the mean row's 63/64 * 2 + 256/64 = 5.97, each
  // beside the stream phase's 4: (4 + 188.3) / (4 + 5.97) = 19.3.
  const Profile tail = histogram_only({{4, 4, 63000}, {512, 512, 1000}});
  const double wait = formats::CsrStreamFormat::warp_imbalance(tail, p);
  CHECK(wait == doctest::Approx(19.29).epsilon(0.005));
  // Rows longer than the tile get blocks of their own and are left out.
  const Profile alone = histogram_only({{8, 8, 100000}, {4097, 8192, 10}});
  CHECK(formats::CsrStreamFormat::warp_imbalance(alone, p) == 1.0);
  // The cost reports it; the Kronecker graph's blocks wait tens of times their mean.
  const formats::FormatUnit& unit = formats::find_format("csr_stream");
  CHECK(unit.cost(tail, p, Precision::f64).warp_imbalance == doctest::Approx(wait));
  // Every shape's cost reports the reference shape's wait (the calibration ranks formats by it;
  // csr_stream's own shapes keep the order the tile sweeps measured).
  CsrStreamParams wide;
  wide.tile = 2048;
  CHECK(formats::CsrStreamFormat::warp_imbalance(tail, wide) != doctest::Approx(wait));
  CHECK(unit.cost(tail, wide, Precision::f64).warp_imbalance == doctest::Approx(wait));
  CHECK(unit.cost(kronecker_profile(), p, Precision::f32).warp_imbalance > 10);
}

TEST_CASE("calibration: csr_stream's time grows with the reduction's wait on every GPU") {
  for (const char* gpu : {"H100", "H200"}) {
    const compiler::GpuCalibration* c = compiler::find_calibration("sm_90", gpu);
    REQUIRE(c != nullptr);
    for (Precision prec : {Precision::f64, Precision::f32}) {
      CAPTURE(gpu);
      CAPTURE(static_cast<int>(prec));
      // The suite's Kronecker graphs (wait ~30) measured csr_stream at 1.8-3.0x its balanced
      // prediction, its regular matrices (wait 1) at 0.6-1.3x; the fit gives part of that to
      // the wait (exponents 0.09-0.11: 1.35-1.45x at 30) and part to the x sectors their rows
      // gather, one per nonzero (Cost::gathered_sectors; 0.15-0.20 before that term).
      CHECK(compiler::time_factor(c, "csr_stream", prec, 30.0) >
            1.3 * compiler::time_factor(c, "csr_stream", prec, 1.0));
    }
  }
}

TEST_CASE("planner: power-law graphs no longer go to csr_stream") {
  // Measured (suite v13, Kronecker scale 21 and 22, fp64 and fp32): cuSPARSE's CSR ALG1 fastest,
  // csr_stream 9-15% slower on both GPUs, hyb between them or tied with csr_stream (csr_stream /
  // hyb 1.00-1.08). The old model put csr_stream at under half of hyb's time.
  for (const char* gpu : {"H100", "H200"}) {
    for (Precision prec : {Precision::f64, Precision::f32}) {
      CAPTURE(gpu);
      CAPTURE(static_cast<int>(prec));
      compiler::PlanOptions o;
      o.precision = prec;
      o.gpu = gpu;
      const Plan kernels = compiler::make_plan(kronecker_profile(), o);
      const double stream = min_predicted(kernels, "csr_stream");
      const double hyb = min_predicted(kernels, "hyb");
      REQUIRE(std::isfinite(stream));
      REQUIRE(std::isfinite(hyb));
      // The reduction's wait and hyb's COO count narrow the gap: csr_stream over hyb predicted
      // 0.45-0.50 by the old model, 0.62-0.72 with the wait alone, 0.78-0.95 with hyb's COO
      // count fixed too (measured 1.00-1.08). The refit with csr_stream's gathered x sectors
      // put it at 0.62-0.74: the pick fit lowered csr_stream's factors (and raised hyb's in
      // fp32) where cuSPARSE, not hyb, takes these graphs. The H200's fp32 factor refitted on
      // the short-row kernel (its factor alone: calibrate.py --refit) put it at 0.55, where that
      // kernel measured 1.00-1.06 (bench/results/2026-11-29-h200-dia-pass-refit): the wait does
      // not account for all of csr_stream's time on these graphs, and the plan check below is
      // what keeps them off it.
      CHECK(stream > 0.5 * hyb);
      // With cuSPARSE weighed, as compile() does by default, the plan is not csr_stream's.
      o.cusparse = "auto";
      const Plan plan = compiler::make_plan(kronecker_profile(), o);
      CHECK((plan.engine == Engine::cusparse || plan.format == "hyb"));
    }
  }
}
