// The planner's ordering decision (Options.reorder = "auto"): reorder only a matrix whose x
// accesses are scattered, with the ordering that makes them local.
//
// Why: an ordering slows every format on a matrix whose x accesses are already local, and pays
// off only where they scatter (measured on the H100 ordering runs,
// bench/results/2026-11-22-h100-suite-v1-formats/ and
// bench/results/2026-11-23-h100-suite-v7-values/, which also place the threshold below).
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "calibration.hpp"
#include "formats/csr_stream/csr_stream_format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/profile.hpp"
#include "spmvc/reorder.hpp"

namespace spmvc::compiler {

namespace {

/// In the caller's order RCM is taken where it saves at least this many distinct 128-byte lines of
/// x per row (over 32 consecutive rows, values of the operator's precision). Its gain is per line
/// of x a row no longer reads; its cost, the gather of x and the row map's writes of y, is per row.
/// Measured on the H200 against each graph's pick (suite v13's replicated graphs, fp64 / fp32,
/// bench/results/2026-11-30-h200-rcm-rule/rcm-caller-order.txt): MIT8_facebook100 saves 3.6 / 1.3
/// lines a row and multiplied 72.6 -> 61.7 us / 38.7 -> 36.8 us so ordered; wiki-Vote 2.7 / 2.0,
/// 70.7 -> 66.5 / 50.5 -> 48.9 us; astro-ph 2.4 / 2.1, 56.4 -> 57.5 / 43.6 -> 44.2 us; email-Enron
/// 0.6 / 0.5, 61.1 -> 73.6 / 45.2 -> 54.0 us. Andrews and ca-CondMat (5.0-7.4 lines a row) are
/// ordered under either bound (1.18-1.48x of cuSPARSE so). The bound lies between the fp64 losses
/// and gains; in fp32 the gains and the loss are within 5% and interleave (MIT8 and wiki-Vote below
/// astro-ph), and the one bound leaves them as they were. (It replaces a bound of 0.7 lines a
/// nonzero and a 2x cut, from the H100 runs of suites v1 and v7, before the gather of x was chained
/// to the multiply and read x in stretches: that bound left MIT8_facebook100 and wiki-Vote
/// unordered.) Deciding computes RCM wherever the rows read at least 2.5 lines each, also where
/// it is then left out: the reorder stage of astro-ph, email-Enron fp64, MIT8_facebook100 fp32
/// and wiki-Vote fp32 x16M took 0.19-0.32 s (bench/results/2026-11-30-h200-rcm-rule/
/// picks-rcm-rule.json, 16-core host), 0.02-0.04 s under the old bound; a caller expecting fewer
/// than kRcmMinMultiplies multiplies skips it.
constexpr double kMinLinesSavedPerRow = 2.5;
/// Where csr_stream's split rows pay on the matrix as it stands (fp32 pattern graphs on a GPU
/// that takes them: CsrStreamFormat::split_rows_pay), RCM in the caller's order must save this
/// many instead: under RCM the empty rows go last (the pipeline's packed rows), a tile's rows
/// get two lanes each and split rows no longer pay, so the order must beat split rows in place.
/// Measured on the H200, fp32 x16M (bench/results/2026-12-02-h200-split-in-place/forced.txt):
/// wiki-Vote, whose RCM saves 2.64 lines a row, multiplied in 41.5 us with split rows in place
/// against 44.0 us RCM-ordered (0.94x); ca-CondMat, whose RCM saves 4.71, in 80.0 us in place
/// against 74.0 us RCM-ordered (1.08x). Where the ratio crosses 1 between the two, linearly in
/// the lines saved: 3.5.
constexpr double kMinLinesSavedPerRowSplit = 3.5;
/// A column gathered into the order costs this much of a row written through the row map: as
/// passes of their own on the H200, the gather of x took 0.49-0.65 of the row map's writes of y
/// on four x16M graphs (bench/results/2026-11-30-h200-chained-launches/rcm-caller-cost.txt). A
/// graph whose columns are not all read gathers fewer (spmvc::columns_gathered), so the lines an
/// order must save are counted per row of its traffic: (rows + this x columns gathered) / (1 +
/// this), the rows themselves where every column is read.
constexpr double kGatheredColumnWeight = 0.5;
/// Renumbered columns cost a gather of x per multiply (x read through the map, x' written:
/// about 2 values and an index per row), paid per row while the saving comes per nonzero: below
/// this many nonzeros per row it does not repay (between the short-row matrix that lost under
/// RCM in suite v7 and the longer-row ones that gained).
constexpr double kMinNonzerosPerRow = 6.0;

// Hub graphs (power-law column counts: the most read column at least kHubSkew times the mean)
// are ordered by degree groups instead, where that cuts the gathers that miss L1
// (x_gather_miss_share) by at least kHubMissCut from at least kHubMissShare. Measured on the H200
// (bench/results/2026-11-29-h200-hub-order/): on Kronecker scale 21, fp32, dbg with renumbered
// columns took hyb from 0.97x to 1.17x of the best cuSPARSE (bro_coo 1.13x, csr_stream with
// 512-nonzero tiles 1.12x; csr with a warp per row fell to 0.42x, the hubs' long rows now side
// by side), as the modelled misses fell from 0.70 to 0.39 of the gathers; in fp64, where they
// fell from 0.70 to 0.52, hyb so ordered measured 1.04x (bench/results/2026-11-29-h200-g-class/).
//
// In the caller's order the hub order moves the columns alone: the gain is in
// x's gathers, which the renumbered columns pack, while moving the rows too only scatters the
// writes of y through the row map. On the H200, rows kept against rows moved, hyb under dbg
// (bench/results/2026-11-30-h200-columns-alone/): Kronecker scale 21 fp64 245 -> 227 us (1.04x
// -> 1.11x of cuSPARSE), fp32 190 -> 185 us (1.23x -> 1.28x); scale 22 fp64 566 -> 515 us
// (0.96x -> 1.04x), fp32 430 -> 418 us (1.11x -> 1.13x). In the plan's order the rows move
// with the columns, so that y can be the next x.
constexpr double kHubSkew = 64.0;
constexpr double kHubMissShare = 0.5;
/// On Kronecker scale 22 in fp64 dbg cut the modelled misses from 0.759 to 0.610 (by 19.6%), and
/// hyb so ordered measured 1.11x of cuSPARSE with x and y in the plan's order
/// (bench/results/2026-11-29-h200-plan-order/) and 1.04x with the columns alone in the caller's.
constexpr double kHubMissCut = 0.15;
/// The rule holds for an x up to the largest measured: scale 22 in fp64 (32 MiB, two thirds of
/// the H200's 50 MB L2), faster so ordered in both orders (above). With the rows moved too, in
/// the caller's order, it had lost there with every format (hyb 0.96x, csr_stream 0.95x, bro_coo
/// 0.95x; bench/results/2026-11-29-h200-kronecker-f64/). ncu on scale 22 in fp64: cuSPARSE's
/// kernel and hyb's COO part both keep the L1 and L2 over 88% busy with 59% and 49% of their L2
/// lookups hitting (bench/results/2026-11-29-h200-g-class/): the gathers' throughput bounds both.
constexpr double kHubMaxXBytes = 32.0 * 1024 * 1024;
/// A caller expecting fewer multiplies does not get the hub order. On Kronecker scale 21 (H200)
/// the order with the columns alone saved 52 us a multiply against cuSPARSE in fp32 (236.5 ->
/// 184.5 us) and 24 us in fp64 (251 -> 227 us); its host time (the order, its checks and the
/// permuted copy) is 1.28 s fp32 / 1.31 s fp64 on the H200's 16-core host
/// (bench/results/2026-11-30-h200-reorder-host/reorder-stage.txt; 2.1-3.7 s before permute and
/// the checks shared the hubs' rows among the threads, 1.47-1.61 s before permute sorted 64-bit
/// keys): about 25,000 and 55,000 multiplies to repay.
constexpr std::int64_t kHubMinMultiplies32 = 25'000;
constexpr std::int64_t kHubMinMultiplies64 = 55'000;
/// In the plan's order the order saved 68 us a multiply in fp32 (237 -> 169 us) and 47 us in fp64
/// (254 -> 207 us, bench/results/2026-11-29-h200-plan-order/): about 19,000 and 28,000
/// multiplies.
constexpr std::int64_t kHubMinMultipliesPlanOrder32 = 19'000;
constexpr std::int64_t kHubMinMultipliesPlanOrder64 = 28'000;
/// In the plan's order an ordering costs nothing per multiply, and RCM is taken wherever it makes
/// x's accesses more local: where a warp's 32 rows touch at least kPlanOrderMinLines lines of x
/// and RCM cuts that by kPlanOrderRequiredGain. Measured on the H200 against each matrix's pick in
/// the caller's order (bench/results/2026-11-29-h200-plan-order/rcm-plan-order.txt, suite v13's
/// replicated matrices, fp32 and fp64): faster on all 13 so cut (1.17-7.7x fewer lines), by
/// 3-4% (email-Enron, 1.3x fewer lines) to 3.4x (wing, 7.6x fewer; bro_ell's deltas shrink too);
/// the census graphs 10-26%, astro-ph 21-26%, wiki-Vote 23-31%. The floor on lines keeps the
/// already-local matrices (the stencils' 7-8 lines a warp, which a diagonal format reads best)
/// as they are.
constexpr double kPlanOrderMinLines = 12.0;
constexpr double kPlanOrderRequiredGain = 1.15;

// A random-like graph (spmvc::tree_likeness: rows that share almost no short cycles, in an
// expander) gets no RCM in either order, and RCM is not computed, where the most it could save,
// its breadth-first tree's edges made local (TreeLikeness::rcm_lines_left), falls short of what
// the order's rule asks. On the 113 shared matrices and random graphs that bound was never below
// what RCM measured (random 1M x 16: at most 1.067x fewer lines of x, RCM 1.059x; random 100K x 6:
// 1.200x and 1.170x, which the plan's order takes; 100K x 3: 1.500x and 1.396x; p2p-Gnutella05:
// 1.385x and 1.087x), and it flags only random graphs and p2p-Gnutella05/06 among them.
// Deciding so spares the reorder stage RCM's time, for an order the rule then left out: on
// random 1M x 16 on the H200's host 2.03 / 1.95 s -> 0.08-0.12 s (fp64 / fp32), its break-even
// against cuSPARSE 230,300 / 220,207 -> 21,963-24,926 / 19,893-23,844 multiplies, the same pick
// (bench/results/2026-11-30-h200-random-like/random-like.txt); a sample of 256 rows takes
// milliseconds.

/// Why a random-like graph gets no RCM (RCM not computed): `bound` the most it could cut.
std::string tree_like_why(const TreeLikeness& t, const std::string& bound) {
  return fmt::format(
      "not reordered: a random-like graph ({:.2f}% of the column pairs of neighbouring rows "
      "close a triangle or a 4-cycle, and a row's columns' rows reach {:.1f} times as many "
      "rows): RCM can make local only its breadth-first tree's edges, one in {:.1f}, {} (RCM not "
      "computed)",
      100 * t.closure, t.growth, t.mean_degree / 2, bound);
}
/// A caller expecting fewer multiplies does not get RCM, in either order: its host time (the
/// order, the locality checks and the permuted copy: 0.39-0.95 s on 16 of suite v13's
/// 16-23M-nonzero entries on the H200's 16-core host, median 0.61 s) was repaid by the faster
/// multiply after 9,675 multiplies at the soonest (wing x16M fp64 in the plan's order) and 40,855
/// at the median, against each matrix's pick in the caller's order
/// (bench/results/2026-11-30-h200-reorder-host/reorder-stage.txt; with Boost's RCM and a sorted
/// count of lines, 0.63-1.93 s, 12,707 and 55,369, bench/results/2026-11-29-h200-rcm-components/;
/// with the components ordered one after another, 33,525 and 187,811 over 32 picks,
/// bench/results/2026-11-29-h200-plan-order/rcm-break-even.txt). In the caller's order the
/// multiply saves less (the gather of x and the row map's writes stay), so the order repays
/// later still.
constexpr std::int64_t kRcmMinMultiplies = 9'500;
/// The formats the hub order is taken for. Both split the nonzeros evenly whatever the rows'
/// lengths, which the hubs' long rows, numbered together, need: hyb's COO part, and csr_warp's
/// chunks and pieces. csr_warp sums in a fixed order (hyb's COO part adds with atomics). In the
/// caller's order both read x in two parts (codegen::split_x_reads: the hub columns gathered,
/// the rest in place), and there csr_warp is the faster: on the H200, against x gathered whole,
/// it measured 225 -> 211 us on Kronecker scale 21 fp64 (1.13x -> 1.20x of cuSPARSE) and 183 ->
/// 168 us fp32 (1.27x -> 1.36x), against hyb's 222 and 181 us, and 379 us on scale 22 fp32
/// against hyb's 389; on scale 22 fp64 hyb's 494 us against 502
/// (bench/results/2026-11-30-h200-hub-split/). In the plan's order, with no gather at all, hyb
/// stays the faster (1.23x / 1.40x on scale 21, csr_warp 1.15x / 1.40x:
/// bench/results/2026-11-29-h200-csr-warp/), so it is the format there but for callers who ask
/// for bitwise-reproducible sums.
constexpr std::string_view kHubFormat = "hyb";
constexpr std::string_view kHubDeterministicFormat = "csr_warp";

// How far a square matrix is a hub graph: its most read column against the mean, and (where that
// is at least kHubSkew) the share of x's gathers that miss L1 in its order. A hub graph whose
// gathers mostly miss (a scattered hub) gets the hub order or none: RCM cut the Kronecker graphs'
// lines of x per 32 rows 2-2.6x, yet on the H200 csr_stream so ordered measured 0.68-0.77x of
// cuSPARSE in the caller's order and 0.80-0.89x in the plan's, where the hub order's hyb measured
// 1.04-1.23x (bench/results/2026-11-30-h200-reorder-host/kronecker-rcm.txt); and RCM on scale 22
// took 7.5 s of the planner's time, to give way to cuSPARSE.
struct HubShape {
  double skew = 0;
  double miss_share = 0;
  std::int64_t columns_read = 0;  ///< columns that at least one entry reads
  bool hub() const { return skew >= kHubSkew; }
  bool scattered_hub() const { return hub() && miss_share >= kHubMissShare; }
};

HubShape hub_shape(const CsrMatrix& a, int vb) {
  std::vector<std::int64_t> count(static_cast<std::size_t>(a.ncols), 0);
  for (const std::int32_t c : a.col_idx) ++count[static_cast<std::size_t>(c)];
  const double mean = static_cast<double>(a.nnz()) / static_cast<double>(a.ncols);
  HubShape h;
  h.skew = static_cast<double>(*std::max_element(count.begin(), count.end())) / mean;
  h.columns_read = std::count_if(count.begin(), count.end(), [](std::int64_t k) { return k > 0; });
  if (h.hub()) h.miss_share = x_gather_miss_share(a, vb);
  return h;
}

// The hub rule, or nothing where it does not apply (then the RCM rule decides).
std::optional<OrderingChoice> hub_order(const CsrMatrix& a, Precision precision, double per_row,
                                        const HubShape& shape, std::string_view format,
                                        bool plan_order) {
  const int vb = value_bytes(precision);
  if (!hub_order_x_fits(a.ncols, precision)) return std::nullopt;
  if (!shape.scattered_hub()) return std::nullopt;
  const double before = shape.miss_share;
  // In the caller's order the rows keep their order: y is written in place, and only x is
  // gathered into the order.
  Ordering dbg = compute_ordering(a, "dbg");
  if (!plan_order) dbg = columns_only(std::move(dbg));
  const double after = x_gather_miss_share(a, dbg, vb);
  if (!hub_order_cuts_enough(before, after)) return std::nullopt;
  OrderingChoice c;
  c.why = fmt::format(
      "dbg, {}, for {}: a hub graph (its most read column {:.0f} times the mean, {:.1f} nonzeros "
      "per row) whose gathers of x mostly miss L1 ({:.2f} modelled); grouping the hubs brings "
      "that to {:.2f} ({}: a gain the cost model has no term for, so cuSPARSE is not weighed)",
      plan_order ? "rows and columns renumbered" : "columns renumbered, rows in the caller's order",
      format, shape.skew, per_row, before, after,
      plan_order ? (format == kHubDeterministicFormat
                        ? "on Kronecker scale 21 so ordered, with x and y in the plan's order, "
                          "csr_warp, which sums in a fixed order, measured 1.15x of cuSPARSE in "
                          "fp64 and 1.40x in fp32 on the H200"
                        : "on Kronecker scale 21 so ordered, with x and y in the plan's order, "
                          "hyb measured 1.23x of cuSPARSE in fp64 and 1.40x in fp32 on the H200")
      : format == kHubDeterministicFormat
          ? "on Kronecker scale 21 so ordered, csr_warp, which sums in a fixed order and gathers "
            "the hub columns alone, measured 1.20x of cuSPARSE in fp64 and 1.36x in fp32 on the "
            "H200"
          : "on Kronecker scale 21 so ordered, hyb, gathering the hub columns alone, measured "
            "1.15x of cuSPARSE in fp64 and 1.28x in fp32 on the H200");
  c.renumber_columns = true;
  c.format = std::string(format);
  c.ordering = std::move(dbg);
  return c;
}

// RCM of `a`, taken (columns renumbered) where keep(x's lines per 32 rows after it, values of
// `vb` bytes) holds; why(taken, lines after, RCM's seconds) says why either way. RCM moves the
// rows with the columns in either order: its gain is in neighbouring rows reading neighbouring
// columns, and on the columns alone it lost most of it (H200, caller's order: Andrews x16M
// 1.45x -> 1.12x of cuSPARSE fp32, 1.43x -> 1.04x fp64, ca-CondMat x16M fp64 1.33x -> 1.24x;
// bench/results/2026-11-30-h200-columns-alone/rcm-columns-alone.txt).
OrderingChoice rcm_if(const CsrMatrix& a, int vb, const std::function<bool(double)>& keep,
                      const std::function<std::string(bool, double, double)>& why) {
  OrderingChoice c;
  Ordering rcm = compute_ordering(a, "rcm");
  const double after = lines_per_warp(a, rcm, vb);
  const bool taken = keep(after);
  c.why = why(taken, after, rcm.seconds);
  if (taken) {
    c.renumber_columns = true;
    c.ordering = std::move(rcm);
  }
  return c;
}

// The RCM rule for a caller in the plan's order (Options::plan_order).
OrderingChoice rcm_in_plan_order(const CsrMatrix& a, int vb, double before,
                                 const TreeLikeness& tree) {
  if (before < kPlanOrderMinLines) {
    OrderingChoice c;
    c.why = fmt::format(
        "not reordered: x accesses are already local ({:.1f} lines of x per 32 rows, below "
        "{:.0f})",
        before, kPlanOrderMinLines);
    return c;
  }
  // Even RCM's best, before x rcm_lines_left() lines, would not be kPlanOrderRequiredGain fewer.
  if (tree.tree_like() && kPlanOrderRequiredGain * tree.rcm_lines_left() > 1) {
    OrderingChoice c;
    c.why = tree_like_why(tree, fmt::format("at most {:.3f}x fewer lines of x, short of {:.2f}x",
                                            1 / tree.rcm_lines_left(), kPlanOrderRequiredGain));
    return c;
  }
  return rcm_if(
      a, vb, [&](double after) { return after * kPlanOrderRequiredGain <= before; },
      [&](bool taken, double after, double seconds) {
        if (!taken)
          return fmt::format(
              "not reordered: RCM brings x's {:.1f} lines per 32 rows only to "
              "{:.1f}, short of {:.2f}x fewer",
              before, after, kPlanOrderRequiredGain);
        return fmt::format(
            "rcm, columns renumbered, vectors in the plan's order: RCM brings "
            "x's lines per 32 rows from {:.1f} to {:.1f} in {:.2f} s, and in the "
            "plan's order the order costs no traffic per multiply (on the H200 "
            "each of the 13 suite v13 matrices so cut that were timed multiplied "
            "faster than its pick in the caller's order)",
            before, after, seconds);
      });
}

}  // namespace

bool hub_order_x_fits(std::int64_t ncols, Precision precision) {
  return static_cast<double>(ncols) * value_bytes(precision) <= kHubMaxXBytes;
}

bool hub_order_cuts_enough(double before, double after) {
  return after <= (1 - kHubMissCut) * before;
}

std::string_view hub_order_format(std::string_view arch, std::string_view gpu, Precision precision,
                                  bool deterministic, bool plan_order) {
  if (plan_order && !deterministic) return kHubFormat;
  if (has_time_factor(find_calibration(arch, gpu), kHubDeterministicFormat, precision))
    return kHubDeterministicFormat;
  return deterministic ? std::string_view{} : kHubFormat;
}

bool split_rows_measured(std::string_view arch, std::string_view gpu) {
  const GpuCalibration* calibration = find_calibration(arch, gpu);
  return calibration != nullptr && calibration->stream_split > 0;
}

OrderingChoice choose_ordering(const CsrMatrix& a, Precision precision, bool format_free,
                               std::optional<std::int64_t> multiplies, std::string_view hub_format,
                               bool plan_order, bool split_rows) {
  OrderingChoice c;
  if (a.nrows != a.ncols || a.nnz() == 0) {
    c.why = "not reordered: only square matrices get a symmetric ordering";
    return c;
  }
  const int vb = value_bytes(precision);
  const double per_row = static_cast<double>(a.nnz()) / static_cast<double>(a.nrows);
  // The gather of x that renumbered columns cost per multiply is not there in the plan's order.
  if (!plan_order && per_row < kMinNonzerosPerRow) {
    c.why = fmt::format(
        "not reordered: {:.1f} nonzeros per row, below {:.0f}: the gather of x that renumbered "
        "columns need each multiply would cost more than local x accesses save",
        per_row, kMinNonzerosPerRow);
    return c;
  }
  const std::int64_t hub_multiplies =
      plan_order ? (vb == 4 ? kHubMinMultipliesPlanOrder32 : kHubMinMultipliesPlanOrder64)
                 : (vb == 4 ? kHubMinMultiplies32 : kHubMinMultiplies64);
  const bool hub_rule =
      format_free && !hub_format.empty() && (!multiplies || *multiplies >= hub_multiplies);
  const bool rcm_rule = !multiplies || *multiplies >= kRcmMinMultiplies;
  const auto too_few = [&] {
    c.why = fmt::format(
        "not reordered: {} multiplies expected, fewer than the {} from which RCM's host time was "
        "repaid at the soonest on the H200",
        *multiplies, kRcmMinMultiplies);
    return c;
  };
  if (!hub_rule && !rcm_rule) return too_few();
  const HubShape shape = hub_shape(a, vb);
  if (hub_rule) {
    if (std::optional<OrderingChoice> hub =
            hub_order(a, precision, per_row, shape, hub_format, plan_order))
      return *hub;
  }
  if (shape.scattered_hub()) {
    c.why = fmt::format(
        "not reordered: a hub graph (its most read column {:.0f} times the mean) whose gathers of "
        "x mostly miss L1 ({:.2f} modelled), where RCM does not pay: on Kronecker scale 21 and "
        "22 on the H200, RCM-ordered csr_stream measured 0.68-0.77x of cuSPARSE in the caller's "
        "order and 0.80-0.89x in the plan's, though RCM cut x's lines per 32 rows 2-2.6x",
        shape.skew, shape.miss_share);
    return c;
  }
  if (!rcm_rule) return too_few();
  // Nor does RCM pay a hub graph whose gathers mostly hit, in the caller's order (H200,
  // bench/results/2026-11-30-h200-read-columns/rcm-rmat.txt; email-Enron in
  // bench/results/2026-11-30-h200-rcm-rule/rcm-caller-order.txt); deciding so before computing
  // it spares the host RCM's time (on R-MAT scale 18, a reorder stage of 0.44-0.47 s on a
  // 2-core host for an order the planner then dropped for cuSPARSE).
  if (!plan_order && shape.hub()) {
    c.why = fmt::format(
        "not reordered: a hub graph (its most read column {:.0f} times the mean), where RCM in the "
        "caller's order does not pay: on the H200, RCM-ordered csr_stream measured 0.73-0.86x of "
        "cuSPARSE on R-MAT scale 18 and 0.74-0.79x on scale 19, though it cut x's lines per 32 "
        "rows 2.5-3x, and slowed email-Enron x16M from 61.1 to 73.6 us in fp64",
        shape.skew);
    return c;
  }
  const double before = lines_per_warp(a, vb);
  const TreeLikeness tree = tree_likeness(a);
  if (plan_order) return rcm_in_plan_order(a, vb, before, tree);
  // The order's traffic a multiply, counted in rows: each row written through the row map,
  // and each column gathered at half a row (kGatheredColumnWeight), only the columns read where
  // few enough are (codegen::attach_reordering). Where every column is read it is the rows.
  const double order_rows =
      (static_cast<double>(a.nrows) +
       kGatheredColumnWeight * static_cast<double>(columns_gathered(a.ncols, shape.columns_read))) /
      (1 + kGatheredColumnWeight);
  const double per_order_row = static_cast<double>(a.nrows) / order_rows / 32.0;
  // Split rows in place raise the bar (kMinLinesSavedPerRowSplit); the rows alone are inspected
  // to tell, in a fraction of RCM's time, and only where the plain bar could be met.
  const bool split_in_place =
      split_rows && precision == Precision::f32 && before * per_order_row >= kMinLinesSavedPerRow &&
      formats::CsrStreamFormat::split_rows_pay(inspect(a, InspectDepth::row_lengths), precision);
  const double must_save = split_in_place ? kMinLinesSavedPerRowSplit : kMinLinesSavedPerRow;
  const std::string against =
      split_in_place
          ? fmt::format(
                "the {:.1f} an order must save to beat csr_stream's split rows, which pay "
                "in this order (the order would pack the empty rows last, where they do "
                "not), and repay the gather of x and the row map's writes",
                must_save)
          : fmt::format(
                "the {:.1f} an order must save to repay the gather of x and the row "
                "map's writes",
                must_save);
  // RCM cannot save more lines than the rows read.
  if (before * per_order_row < must_save) {
    c.why = fmt::format(
        "not reordered: x accesses are already local ({:.1f} lines of x per 32 rows, {:.2f} a "
        "row of the order's traffic: fewer than {})",
        before, before * per_order_row, against);
    return c;
  }
  if (const double most = before * (1 - tree.rcm_lines_left()) * per_order_row;
      tree.tree_like() && most < must_save) {
    c.why = tree_like_why(tree, fmt::format("at most {:.2f} fewer lines of x a row of the order's "
                                            "traffic, short of {}",
                                            most, against));
    return c;
  }
  const std::string traffic =
      order_rows < static_cast<double>(a.nrows)
          ? fmt::format(
                " ({} of {} columns read and gathered: the order's traffic is that of "
                "{:.0f} rows, not {})",
                shape.columns_read, a.ncols, order_rows, a.nrows)
          : std::string();
  return rcm_if(
      a, vb, [&](double after) { return (before - after) * per_order_row >= must_save; },
      [&](bool taken, double after, double seconds) {
        const double saved = (before - after) * per_order_row;
        if (!taken)
          return fmt::format(
              "not reordered: RCM brings x's {:.1f} lines per 32 rows only to {:.1f}, {:.2f} "
              "fewer a row{}, short of {}",
              before, after, saved, traffic, against);
        return fmt::format(
            "rcm, columns renumbered: x accesses were scattered ({:.1f} lines of x per 32 "
            "rows); RCM brings them to {:.1f} in {:.2f} s, {:.2f} fewer a row{} (at least {})",
            before, after, seconds, saved, traffic, against);
      });
}

}  // namespace spmvc::compiler
