// The host pipeline (spmvc/build.hpp): the one place the stage sequence is written.
#include <chrono>
#include <numeric>
#include <utility>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/values/values.hpp"
#include "spmvc/build.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"

namespace spmvc {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The ordering step: "auto" asks the planner, a name or a precomputed Ordering forces one. The
// kernels then run on the reordered matrix and the row map hides it. A symmetric ordering moves
// the rows, and renumbers the columns only when asked (x is then gathered once per multiply);
// otherwise the reordered matrix keeps the caller's column numbers and x is read in place. A
// columns_only ordering (the hub order in the caller's order, or keep_row_order) renumbers the
// columns alone: the row map is the identity and y is written in place.
// Returns the format the planner's ordering was chosen for ("" any; compiler::OrderingChoice).
std::string order(const CsrMatrix& a, const Options& options, const BuildTarget& target, Build& b) {
  // Checked before any ordering is computed, so that it does not depend on the matrix.
  if (options.keep_row_order && options.plan_order)
    throw InputError("keep_row_order", 0,
                     "the plan's order (plan_order) moves x and y alike: keep_row_order would "
                     "leave y in the caller's order and x in the plan's");
  std::optional<Ordering> picked;
  bool renumber_columns = options.renumber_columns;
  b.plan.reorder = "none";
  std::string format;
  if (options.ordering) {
    picked = options.ordering;
    b.plan.reorder_why = "given by the caller";
  } else if (options.reorder == "auto") {
    // The planner ranks formats (none forced, cuSPARSE not asked for), all of them or csr_stream's.
    const bool ranked = !options.params && !options.csr && options.cusparse != "always";
    const bool format_free = ranked && options.format == "auto";
    // csr_stream's split rows can be the plan: the GPU takes them, the values may be coded away
    // (they are proposed with unit values only) and the caller left csr_stream among the formats.
    const bool split_rows = ranked && (format_free || options.format == "csr_stream") &&
                            options.value_coding &&
                            compiler::split_rows_measured(target.arch, target.gpu);
    compiler::OrderingChoice choice = compiler::choose_ordering(
        a, options.precision, format_free, options.multiplies,
        compiler::hub_order_format(target.arch, target.gpu, options.precision,
                                   options.deterministic, options.plan_order),
        options.plan_order, split_rows);
    b.plan.reorder_why = std::move(choice.why);
    picked = std::move(choice.ordering);
    renumber_columns = choice.renumber_columns;
    format = std::move(choice.format);
  } else if (!options.reorder.empty() && options.reorder != "none") {
    picked = compute_ordering(a, options.reorder, options.reorder_options);
    b.plan.reorder_why = "forced by the caller";
  } else {
    b.plan.reorder_why = "not asked (reorder \"auto\" lets the planner choose)";
  }
  if (!picked) return format;
  Ordering ordering = std::move(*picked);
  check_ordering(a, ordering, "ordering '" + ordering.name + "'");
  if (options.keep_row_order && ordering.kind != PermutationKind::columns_only) {
    if (ordering.kind != PermutationKind::symmetric || !renumber_columns)
      throw InputError(
          "keep_row_order", 0,
          fmt::format("ordering '{}' renumbers no columns here ({}): keep_row_order "
                      "needs a symmetric ordering with renumber_columns",
                      ordering.name,
                      ordering.kind == PermutationKind::symmetric ? "renumber_columns is off"
                                                                  : "it moves rows only"));
    ordering = columns_only(std::move(ordering));
  }
  RowColumnMap& map = b.map.emplace();
  if (ordering.kind == PermutationKind::columns_only) {
    map.rows.resize(static_cast<std::size_t>(a.nrows));
    std::iota(map.rows.begin(), map.rows.end(), 0);
    map.cols = ordering.perm;
    map.hub_columns = ordering.hub_columns;
    b.plan.reorder = ordering.name + " (columns)";
  } else if (ordering.kind == PermutationKind::symmetric && renumber_columns) {
    map.rows = ordering.perm;
    map.cols = ordering.perm;
    map.hub_columns = ordering.hub_columns;
    b.plan.reorder = ordering.name + " (rows and columns)";
  } else {
    map.rows = ordering.perm;
    ordering.kind = PermutationKind::rows_only;
    b.plan.reorder = ordering.name + " (rows)";
  }
  b.reordered = permute(a, ordering);
  // In the caller's order x is gathered into the new column order every multiply. Where few of
  // the columns are read (spmvc::columns_gathered), the ones read go first, so that the gather
  // fills one dense stretch and the kernels' reads of x share more lines: on the H200, RCM's
  // pick on wiki-Vote x16M (29% read) took 47.6-48.0 -> 46.1-46.2 us fp32 and 64.9-65.0 ->
  // 60.8-61.1 us fp64. Where most are read (R-MAT scale 18, 57%; p2p-Gnutella05, 99%) x is
  // gathered whole as before, which measured as fast or up to 3.5% faster than packed
  // (bench/results/2026-12-01-h200-packed-columns/). The hub order gathers its hubs alone and
  // the plan's order moves x and y alike: neither is packed.
  // Its rows with no entry go last, after the ones with work, so that the kernels' blocks hold
  // only rows with work: fewer rows a block, more lanes a row (wiki-Vote x16M, a quarter of its
  // rows empty: 46.2 -> 44.0 us fp32, 61.0 -> 58.3 us fp64). The empty rows' blocks at the end
  // write their zeros through the row map as before.
  if (!options.plan_order && ordering.kind == PermutationKind::symmetric && renumber_columns &&
      map.hub_columns == 0) {
    const std::vector<std::int32_t> read = columns_read(*b.reordered);
    const auto k = static_cast<std::int64_t>(read.size());
    if (columns_gathered(a.ncols, k) < a.ncols) {
      map.ordering = ordering.perm;
      const std::vector<std::int32_t> order = pack_read_columns(*b.reordered, read);
      std::vector<std::int32_t> cols(order.size());
      for (std::size_t j = 0; j < order.size(); ++j)
        cols[j] = map.cols[static_cast<std::size_t>(order[j])];
      map.cols = std::move(cols);
      map.packed_columns = k;
      b.plan.reorder_why += fmt::format("; the {} of {} columns read numbered first", k, a.ncols);
    }
    // With no empty row, or only empty ones, the order found is the identity and nothing moved.
    std::int64_t nonempty = 0;
    const std::vector<std::int32_t> rows = nonempty_rows_first(*b.reordered, &nonempty);
    if (nonempty > 0 && nonempty < a.nrows) {
      if (map.ordering.empty()) map.ordering = ordering.perm;
      std::vector<std::int32_t> moved(rows.size());
      for (std::size_t i = 0; i < moved.size(); ++i)
        moved[i] = map.rows[static_cast<std::size_t>(rows[i])];
      map.rows = std::move(moved);
      map.packed_rows = nonempty;
      b.plan.reorder_why += fmt::format("; its {} empty rows last", a.nrows - nonempty);
    }
  }
  return format;
}

}  // namespace

Build build(const CsrMatrix& a, const Options& options, const BuildTarget& target) {
  Build b;
  auto t0 = Clock::now();
  const std::string ordered_for = order(a, options, target, b);
  b.timings.reorder = seconds_since(t0);

  t0 = Clock::now();
  b.profile =
      inspect(b.matrix(a), options.full_inspection ? InspectDepth::full : InspectDepth::rows);
  b.timings.inspect = seconds_since(t0);

  t0 = Clock::now();
  compiler::PlanOptions popts = compiler::plan_options(options, target);
  // cuSPARSE multiplies in the order it is given: a reordered plan needs the kernels' row map.
  // An ordering the planner chose itself (reorder "auto") is dropped where cuSPARSE on the
  // caller's order is predicted faster than the plan on the reordered matrix; one the caller
  // asked for stands, and the kernels run.
  const bool chosen_ordering = b.map && !options.ordering && options.reorder == "auto";
  if (b.map && popts.cusparse == "always" && !chosen_ordering)
    throw InputError("cusparse", 0,
                     "cuSPARSE runs the caller's order only: not with a reordered matrix");
  if (b.map && !chosen_ordering) popts.cusparse = "never";
  // An ordering chosen for one format (the hub rule) plans that format; a named format is not
  // weighed against cuSPARSE, which would run the caller's order: the order's gain is what the
  // model lacks.
  if (b.map && !ordered_for.empty()) popts.format = ordered_for;
  Plan plan = compiler::make_plan(b.profile, popts);
  if (b.map && plan.engine == Engine::cusparse) {
    plan.reorder_why = fmt::format(
        "{}; not used: cuSPARSE on the caller's order is predicted faster than the plan on the "
        "reordered matrix",
        b.plan.reorder_why);
    b.plan.reorder = "none";
    b.map.reset();
    b.reordered.reset();
    // The plan's csr parameters depend on row lengths only, which no ordering changes; the
    // Profile is the caller's matrix's again.
    b.profile = inspect(a, options.full_inspection ? InspectDepth::full : InspectDepth::rows);
  } else {
    plan.reorder_why = std::move(b.plan.reorder_why);
  }
  plan.reorder = std::move(b.plan.reorder);
  b.timings.plan = seconds_since(t0);

  if (target.until == BuildStage::plan) {
    b.plan = std::move(plan);
    return b;
  }
  realize(a, b, plan, options);
  return b;
}

void realize(const CsrMatrix& a, Build& b, const Plan& plan, const Options& options) {
  auto t0 = Clock::now();
  b.plan = plan;
  b.encoded = compiler::encode(b.matrix(a), b.plan);
  b.timings.encode = seconds_since(t0);

  t0 = Clock::now();
  // In the caller's order, a unit whose columns were renumbered reads x in two parts where its
  // format allows: the hubs gathered, the rest in place (the kernels are generated for that).
  if (b.map && !options.plan_order) codegen::split_x_reads(b.encoded, *b.map);
  b.source = codegen::generate(b.plan, b.encoded, b.profile);
  // In the plan's order (Options::plan_order) the unit is the reordered matrix's own: the caller
  // permutes the vectors, with the map the operator keeps.
  if (b.map && !options.plan_order) {
    // x gathered whole into the order: only the columns read need to be (a column that no
    // entry reads, as a directed graph's vertex that no edge points to, is left out). A symmetric
    // ordering without hubs had its read columns counted in order(): packed where few are read,
    // and where most are, the list would go unused (attach_reordering gathers all of x then), so
    // it is not counted again.
    const bool counted =
        b.map->hub_columns == 0 && (!b.map->ordering.empty() || b.map->cols == b.map->rows);
    const bool gathers_whole = !b.map->cols.empty() && !codegen::splits_x(b.encoded) &&
                               b.map->packed_columns == 0 && !counted;
    codegen::attach_reordering(
        b.source, b.encoded, *b.map,
        gathers_whole ? columns_read(b.matrix(a)) : std::vector<std::int32_t>{});
  }
  if (options.transform_source) b.source = options.transform_source(b.source);
  b.timings.codegen = seconds_since(t0);
}

namespace compiler {

int value_coding(const Plan& plan) { return formats::value_coding_of(plan.params); }

PlanOptions plan_options(const Options& options, const BuildTarget& target) {
  PlanOptions p;
  p.precision = options.precision;
  p.format = options.format;
  p.csr = options.csr;
  p.params = options.params;
  p.value_coding = options.value_coding;
  p.deterministic = options.deterministic;
  p.mixed_precision = options.mixed_precision;
  p.mixed_fallback = options.mixed_fallback;
  p.cusparse = options.cusparse;
  p.arch = target.arch;
  p.gpu = target.gpu;
  p.cost_model = parse_cost_model(target.cost_model);
  if (options.multiplies && *options.multiplies < 1)
    throw InputError("multiplies", 0,
                     fmt::format("must be at least 1 (the multiplies the caller expects), got {}",
                                 *options.multiplies));
  p.multiplies = options.multiplies;
  p.cached_kernels = options.cached_kernels;
  return p;
}

}  // namespace compiler

}  // namespace spmvc
