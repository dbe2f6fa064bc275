// The traffic model (compiler/traffic.hpp): x read once while it stays in L2 and gathered when it
// does not, atomic formats' y lines read back, the planner's traffic mode, and where AMB's own
// model and the general one meet.
#include <doctest/doctest.h>

#include <cmath>

#include "formats/amb/amb_traffic.hpp"
#include "formats/format.hpp"
#include "heuristics.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "traffic.hpp"

using namespace spmvc;

namespace {

// A square n x n matrix with `per_row` nonzeros a row, described only by what the traffic model
// reads: scattered rows start half the matrix left of the diagonal, banded ones `hbw` left.
Profile synthetic(std::int64_t n, std::int64_t per_row, std::int64_t x_sectors, std::int64_t hbw) {
  Profile p;
  p.nrows = p.ncols = n;
  p.nnz = n * per_row;
  p.row_mean = static_cast<double>(per_row);
  p.row_min = p.row_max = per_row;
  p.row_histogram = {{per_row, per_row, n}};
  p.x_sectors = x_sectors;
  p.profile = n * hbw;
  return p;
}

formats::Cost csr_like(const Profile& p, Precision precision) {
  const double vb = value_bytes(precision);
  formats::Cost c;
  c.matrix_bytes = static_cast<double>(p.nnz) * (4 + vb) + static_cast<double>(p.nrows + 1) * 4;
  c.x_bytes = static_cast<double>(p.ncols) * vb;
  c.y_bytes = static_cast<double>(p.nrows) * vb;
  return c;
}

}  // namespace

TEST_CASE("traffic: x that fits in L2 is read once, as the compulsory model counts it") {
  for (const char* spec : {"stencil27:n=24", "random:n=20000,per_row=10", "rmat:scale=14"}) {
    const CsrMatrix a = gen::from_spec(spec);
    const Profile profile = inspect(a, InspectDepth::rows);
    for (Precision prec : {Precision::f64, Precision::f32}) {
      CAPTURE(spec);
      const formats::FormatUnit& csr = formats::find_format("csr");
      const FormatParams params = csr.propose(profile, prec).front().params;
      const formats::Cost cost = csr.cost(profile, params, prec);
      const compiler::TrafficBytes t =
          compiler::traffic_bytes(cost, profile, prec, compiler::traffic_traits(profile, params));
      CHECK(t.x == cost.x_bytes);
      CHECK(t.x == static_cast<double>(a.ncols) * value_bytes(prec));
      CHECK(t.matrix == cost.matrix_bytes);
      CHECK(t.y == cost.y_bytes);
      CHECK(t.y_atomic == 0);
      CHECK(t.total() == cost.total());
    }
  }
}

TEST_CASE("traffic: scattered x larger than L2 is gathered, more with more sectors per row") {
  const std::int64_t n = 8'000'000, per_row = 8;  // x: 64 MB in fp64, over the 25 MiB assumed
  const double once = static_cast<double>(n) * 8;
  const Profile scattered = synthetic(n, per_row, n * per_row, n / 2);
  const double stream = csr_like(scattered, Precision::f64).matrix_bytes + once;
  const double x = compiler::x_traffic_bytes(scattered, Precision::f64, stream);
  // By hand: gathered = 64M sectors * 32 B, reuse = 32 uses a sector, working set =
  // x + stream / 32, and the misses re-read that share of the gathered bytes.
  const double gathered = static_cast<double>(n * per_row) * 32;
  const double working = once + stream / (gathered / once);
  const double miss = 1 - heuristics::kL2CacheBytes / working;
  CHECK(x == doctest::Approx(once + miss * (gathered - once)));
  CHECK(x > 10 * once);
  // Half the sectors (pairs of neighbouring columns in a row): fewer gathers, less traffic.
  const Profile paired = synthetic(n, per_row, n * per_row / 2, n / 2);
  const double x_paired = compiler::x_traffic_bytes(paired, Precision::f64, stream);
  CHECK(x_paired > once);
  CHECK(x_paired < x);
  // The same x with the rows' columns within 8 of the diagonal: reused before it leaves L2.
  const Profile banded = synthetic(n, per_row, n * per_row, 8);
  CHECK(compiler::x_traffic_bytes(banded, Precision::f64, stream) == once);
  // fp32 halves x (32 MB, still over L2): gathers still miss.
  CHECK(compiler::x_traffic_bytes(scattered, Precision::f32, stream) >
        4.0 * static_cast<double>(n));
}

TEST_CASE("traffic: atomic formats read back the y lines that left L2") {
  const std::int64_t n = 8'000'000;
  const Profile big = synthetic(n, 8, n * 8, 8);  // banded: x reads once, stream over L2
  const formats::Cost cost = csr_like(big, Precision::f64);
  const double y = static_cast<double>(n) * 8;

  const compiler::TrafficTraits store = compiler::traffic_traits(big, CsrParams{});
  CHECK(store.y_update == compiler::YUpdate::store);
  CHECK(compiler::traffic_bytes(cost, big, Precision::f64, store).y_atomic == 0);

  const compiler::TrafficTraits coo = compiler::traffic_traits(big, BroCooParams{});
  REQUIRE(coo.y_update == compiler::YUpdate::atomic);
  CHECK(coo.atomic_row_share == 1);
  const compiler::TrafficBytes t = compiler::traffic_bytes(cost, big, Precision::f64, coo);
  const double miss = 1 - heuristics::kL2CacheBytes / (cost.matrix_bytes + cost.x_bytes);
  CHECK(t.y_atomic == doctest::Approx(2 * y * miss));
  CHECK(t.total() > cost.total());

  // A small matrix: y is still in L2 when the atomics come.
  const Profile small = synthetic(10'000, 8, 80'000, 8);
  CHECK(compiler::traffic_bytes(csr_like(small, Precision::f64), small, Precision::f64, coo)
            .y_atomic == 0);

  // hyb and bro_hyb: only rows longer than the ELL width take atomics. Rows of 1..4 nonzeros,
  // a quarter each: width 2 spills half the rows; width 4 none.
  Profile mixed = big;
  mixed.row_histogram = {{1, 1, n / 4}, {2, 2, n / 4}, {3, 3, n / 4}, {4, 4, n / 4}};
  HybParams hyb;
  hyb.width = 2;
  CHECK(compiler::traffic_traits(mixed, hyb).atomic_row_share == doctest::Approx(0.5));
  BroHybParams bro_hyb;
  bro_hyb.width = 4;
  const compiler::TrafficTraits none = compiler::traffic_traits(mixed, bro_hyb);
  CHECK(none.y_update == compiler::YUpdate::atomic);
  CHECK(compiler::traffic_bytes(cost, mixed, Precision::f64, none).y_atomic == 0);
  // A sector of 4 fp64 rows is touched when any of them spilled: 1 - 0.5^4 of the sectors.
  const compiler::TrafficBytes half =
      compiler::traffic_bytes(cost, mixed, Precision::f64, compiler::traffic_traits(mixed, hyb));
  CHECK(half.y_atomic == doctest::Approx(t.y_atomic * (1 - std::pow(0.5, 4))));

  // AMB: atomics unless deterministic.
  AmbParams amb;
  CHECK(compiler::traffic_traits(big, amb).y_update == compiler::YUpdate::atomic);
  amb.deterministic = true;
  CHECK(compiler::traffic_traits(big, amb).y_update == compiler::YUpdate::store);
  CHECK(compiler::traffic_traits(big, amb).x_modelled);
}

TEST_CASE("traffic: the planner's traffic mode ranks by traffic and never predicts less") {
  for (const char* spec : {"stencil27:n=20", "rmat:scale=13", "random:n=30000,per_row=12"}) {
    CAPTURE(spec);
    const Profile profile = inspect(gen::from_spec(spec), InspectDepth::rows);
    compiler::PlanOptions compulsory;
    compiler::PlanOptions traffic;
    traffic.cost_model = compiler::CostModel::traffic;
    const Plan pc = compiler::make_plan(profile, compulsory);
    const Plan pt = compiler::make_plan(profile, traffic);
    REQUIRE(pt.candidates.front().applicable);
    CHECK_FALSE(formats::find_format(pt.format).cannot_implement(profile, pt.params, pt.precision));
    CHECK(pt.candidates.size() == pc.candidates.size());
    for (const Candidate& c : pt.candidates) {
      if (!c.applicable) continue;
      const compiler::Prediction p = compiler::predict(profile, c.params, traffic);
      CAPTURE(c.format);
      CAPTURE(c.label);
      CHECK(c.predicted_seconds == p.traffic_seconds);
      CHECK(c.predicted_bytes == p.traffic.total());
      CHECK(p.traffic_seconds >= p.compulsory_seconds);
      CHECK(p.traffic.total() >= p.compulsory_bytes);
    }
    // The default is the compulsory model: its bytes are the format's Cost.
    const Candidate& best = pc.candidates.front();
    CHECK(best.predicted_bytes ==
          formats::find_format(best.format).cost(profile, best.params, Precision::f64).total());
  }
  CHECK(compiler::parse_cost_model("traffic") == compiler::CostModel::traffic);
  CHECK_THROWS_AS(compiler::parse_cost_model("dram"), InputError);
}

// Where they overlap (one column segment, or x within L2) AMB's x term and the general one are the
// same reasoning and agree; past L2 they differ on purpose: AMB charges each segment's slice of x
// against L2 (2^16 columns always fit on Hopper), the general model the whole of x, which is what
// a format without column segments gathers from. The y terms count different things: AMB's
// y_updates are its atomics in L2 (formats' Cost), y_atomic the DRAM read-back of evicted lines.
TEST_CASE("traffic: AMB's own x term agrees with the general model where they overlap") {
  for (const char* spec : {"stencil2d:n=120", "random:n=20000,per_row=10", "elasticity:n=8"}) {
    const Profile profile = inspect(gen::from_spec(spec), InspectDepth::rows);
    for (Precision prec : {Precision::f64, Precision::f32}) {
      CAPTURE(spec);
      AmbParams p;  // 2^16-column segments: one segment for these matrices
      REQUIRE(profile.ncols <= (std::int64_t{1} << p.segment_bits));
      const formats::TrafficEstimate amb = formats::amb_traffic(profile, p, prec);
      const double stream = amb.matrix() + amb.y();
      CHECK(amb.x == doctest::Approx(compiler::x_traffic_bytes(profile, prec, stream)));
      // The general model keeps AMB's x as AMB computed it.
      const formats::Cost cost = formats::find_format("amb").cost(profile, p, prec);
      CHECK(compiler::traffic_bytes(cost, profile, prec, compiler::traffic_traits(profile, p)).x ==
            amb.x);
    }
  }
  const std::int64_t n = 8'000'000;
  const Profile scattered = synthetic(n, 8, n * 8, n / 2);
  const formats::TrafficEstimate amb = formats::amb_traffic(scattered, AmbParams{}, Precision::f64);
  CHECK(amb.x == doctest::Approx(static_cast<double>(n) * 8));  // every slice fits
  CHECK(compiler::x_traffic_bytes(scattered, Precision::f64, amb.matrix()) > 10 * amb.x);
}
