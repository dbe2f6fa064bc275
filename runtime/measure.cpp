// Measure mode: the model's best few candidates built, compiled and timed on the GPU, with
// cuSPARSE's CSR SpMV beside them where the planner would weigh it, the fastest kept (cuSPARSE
// unless a generated kernel beats it: measure_decision.hpp); the decision remembered on disk by
// the matrix's contents, so the next compile() of the same matrix on the same device skips the
// timing.
#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>

#include <fmt/format.h>
#include <xxhash.h>

#include "measure_decision.hpp"
#include "operator_impl.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/profile.hpp"

namespace spmvc {

namespace {

using runtime::Clock;
using runtime::seconds_since;

// The winner per (matrix contents, precision, forced format, value coding, deterministic mode,
// mixed precision, cusparse option, device, spmvc), one small text file per decision under
// <cache dir>/decisions/ (measure_decision.hpp's record).
std::string decision_key(const CsrMatrix& a, const Options& options,
                         const runtime::DeviceInfo& device) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  auto add = [&](const void* p, std::size_t n) { XXH3_128bits_update(st, p, n); };
  // A decision timed on a reordered matrix (and in the plan's order, without the reorder's
  // traffic) is another matrix's: its own key (the key of an unordered decision is as before).
  const std::string order = options.ordering ? std::string("given") : options.reorder;
  const std::string tag = fmt::format(
      "spmvc-decision-2|{}|{}|{}|{}|{}|cusparse-{}{}{}{}{}", to_string(options.precision),
      options.format, device.name, device.arch(), a.nrows, options.cusparse,
      options.value_coding ? "" : "|plain-values", options.deterministic ? "|deterministic" : "",
      // A mixed-precision decision stores rounded values: never one for a caller who did not
      // ask (the key of a plain decision is as before). One weighed against full precision
      // timed more candidates than one insisted on (whose key is as before).
      options.mixed_precision == MixedPrecision::off
          ? std::string()
          : fmt::format("|mixed-{}{}", to_string(options.mixed_precision),
                        options.mixed_fallback ? "|vs-full" : ""),
      order.empty() || order == "none"
          ? std::string()
          : fmt::format("|order-{}{}{}", order, options.renumber_columns ? "|renumbered" : "",
                        options.plan_order ? "|plan-order" : ""));
  add(tag.data(), tag.size());
  add(&a.ncols, sizeof a.ncols);
  add(a.row_ptr.data(), a.row_ptr.size() * sizeof(std::int64_t));
  add(a.col_idx.data(), a.col_idx.size() * sizeof(std::int32_t));
  add(a.values.data(), a.values.size() * sizeof(double));
  const XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

std::optional<runtime::MeasuredDecision> read_decision(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return runtime::parse_decision(text);
}

void write_decision(const std::filesystem::path& path, const runtime::MeasuredDecision& d) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << runtime::decision_text(d);
    if (!out) return;  // a read-only cache only costs a re-measurement next time
  }
  std::filesystem::rename(tmp, path, ec);
}

// The build cuSPARSE's plan is realized in: `build` itself, or, where the pipeline reordered the
// matrix (an ordering reorder "auto" chose; one the caller asked for is a refusal), `plain`, the
// caller's order inspected again (cuSPARSE has no row map; csr's parameters depend on row
// lengths only, which no ordering changes).
Build& caller_order(const CsrMatrix& a, Build& build, Build& plain, const Options& options) {
  if (!build.map) return build;
  plain.profile = inspect(a, options.full_inspection ? InspectDepth::full : InspectDepth::rows);
  return plain;
}

// `model` handed to cuSPARSE in `b` (caller_order's), its ordering dropped where it had one.
Plan cusparse_candidate(const Plan& model, const Build& b, const compiler::PlanOptions& popts,
                        bool dropped_ordering) {
  std::optional<Plan> handed = compiler::cusparse_plan(model, b.profile, popts);
  if (!handed) throw InternalError("measure mode: cuSPARSE timed without plain csr arrays");
  Plan p = std::move(*handed);
  if (dropped_ordering) {
    p.reorder_why =
        fmt::format("{}; not used by cuSPARSE, which runs the caller's order", model.reorder_why);
    p.reorder = "none";
  }
  return p;
}

// Median microseconds of a few multiplies: enough to rank candidates, not a benchmark.
double quick_time_us(const std::function<void()>& run) {
  run();
  runtime::synchronize();
  runtime::EventTimer timer;
  std::vector<double> samples;
  for (int r = 0; r < 5; ++r) {
    timer.start();
    for (int i = 0; i < 4; ++i) run();
    samples.push_back(1e3 * static_cast<double>(timer.stop_ms()) / 4);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace

Operator compile_measured(const CsrMatrix& a, Build build, const Options& options,
                          const BuildTarget& target, const runtime::DeviceInfo& device,
                          const CompileTimings& timings) {
  using Impl = Operator::Impl;
  const auto t0 = Clock::now();
  const compiler::PlanOptions popts = compiler::plan_options(options, target);
  const Plan model = build.plan;
  const std::optional<std::string> no_cusparse =
      runtime::measure_cusparse_refusal(options, model, build.profile, popts);
  const bool reordered = build.map.has_value();
  Build plain;
  const std::filesystem::path dir = runtime::cache_dir_of(options);
  // Decisions live beside the kernels, under the same rule: none from a directory the kernel
  // cache will not use (another user's could steer the choice).
  const bool disk_ok = !dir.empty() && runtime::cache_for(dir).disk_off_reason().empty();
  const std::filesystem::path decision =
      !disk_ok ? std::filesystem::path()
               : dir / "decisions" / (decision_key(a, options, device) + ".txt");
  std::optional<runtime::MeasuredDecision> remembered;
  if (!decision.empty()) remembered = read_decision(decision);
  // A cuSPARSE decision stands only where cuSPARSE may still run: otherwise measure again.
  if (remembered && remembered->engine == Engine::cusparse && no_cusparse) remembered.reset();
  // Mixed precision asked for with the planner free to choose: the full-precision best is
  // timed beside the mixed-precision candidates and kept where it is faster.
  const bool weigh_full = compiler::weighs_full_precision(popts);
  if (remembered) {
    compiler::PlanOptions forced = popts;
    forced.params = remembered->params;
    // A full-precision decision (plain values, or cuSPARSE's arrays) is planned as one.
    const bool full = weigh_full && !compiler::is_mixed_candidate(remembered->params);
    if (full) forced.mixed_precision = MixedPrecision::off;
    Plan chosen = compiler::make_plan(build.profile, forced);
    Build* target_build = &build;
    if (remembered->engine == Engine::cusparse) {
      target_build = &caller_order(a, build, plain, options);
      chosen = cusparse_candidate(chosen, *target_build, popts, reordered);
    } else {
      chosen.reorder = model.reorder;
      chosen.reorder_why = model.reorder_why;
    }
    chosen.candidates = model.candidates;
    chosen.why = fmt::format("measured fastest earlier on this matrix and device (decision {}{})",
                             decision.filename().string(),
                             remembered->engine == Engine::cusparse ? ": cuSPARSE's CSR SpMV" : "");
    if (full) {
      // Where the model had no mixed-precision candidate, none was timed either.
      const bool none = model.mixed_fallback && model.mixed_fallback->mixed_best.empty();
      chosen.rounding.reset();
      chosen.mixed_fallback =
          MixedFallback{options.mixed_precision,
                        none ? "" : "the mixed-precision candidates timed earlier", 0, 0, true};
      chosen.why = fmt::format(
          "mixed precision {} was asked for, but {}: kept, its values exact; {}",
          to_string(options.mixed_precision),
          none ? "no mixed-precision candidate applies"
               : "this full-precision plan measured faster than the mixed-precision candidates",
          chosen.why);
    }
    CompileTimings t = timings;
    t.plan += seconds_since(t0);
    realize(a, *target_build, chosen, options);
    return Impl::wrap(Impl::from_build(*target_build, options, device, t));
  }
  // The best candidate of each of the model's first formats, plus csr's, the fallback the
  // planner must never lose to; cuSPARSE "always" times nothing else.
  // Where mixed precision is weighed against full precision, those are the mixed-precision
  // candidates, and the best full-precision one is timed after them.
  std::vector<const Candidate*> picks;
  const int want = std::max(1, options.measure_candidates);
  const bool cusparse_alone = options.cusparse == "always" && !no_cusparse;
  for (const Candidate& c : model.candidates) {
    if (!c.applicable || cusparse_alone) continue;
    if (weigh_full && !compiler::is_mixed_candidate(c.params)) continue;
    const bool new_format = std::none_of(picks.begin(), picks.end(),
                                         [&](const Candidate* p) { return p->format == c.format; });
    if (new_format && (static_cast<int>(picks.size()) < want || c.format == "csr"))
      picks.push_back(&c);
  }
  if (weigh_full && !cusparse_alone) {
    const auto full = std::find_if(
        model.candidates.begin(), model.candidates.end(),
        [](const Candidate& c) { return c.applicable && !compiler::is_mixed_candidate(c.params); });
    if (full != model.candidates.end()) picks.push_back(&*full);
  }
  const std::size_t vb = static_cast<std::size_t>(value_bytes(options.precision));
  runtime::DeviceBuffer dx(std::max<std::size_t>(static_cast<std::size_t>(a.ncols) * vb, 1));
  runtime::DeviceBuffer dy(std::max<std::size_t>(static_cast<std::size_t>(a.nrows) * vb, 1));
  dx.fill_bytes(0);
  std::unique_ptr<Impl> best;
  std::vector<runtime::MeasuredTime> times;
  std::vector<std::string> names;  // "format [label]" of each timing
  std::string report;
  // Times `probe` and keeps it where it wins so far (runtime::measured_winner's rule).
  const auto time_probe = [&](Operator probe, Engine engine, const std::string& name,
                              const std::string& label, double predicted_seconds, bool mixed) {
    const double us = quick_time_us([&] { probe.apply(dx.get(), dy.get(), 1.0, 0.0, nullptr); });
    report += fmt::format("{}{} [{}] {:.2f} us (model {:.2f})", report.empty() ? "" : ", ", name,
                          label, us, predicted_seconds * 1e6);
    times.push_back({engine, us, mixed});
    names.push_back(fmt::format("{} [{}]", name, label));
    if (runtime::measured_winner(times) == times.size() - 1) best = Impl::unwrap(std::move(probe));
  };
  for (const Candidate* c : picks) {
    Plan p = model;
    p.engine = Engine::kernel;  // the model may have handed the multiply to cuSPARSE
    p.format = c->format;
    p.params = c->params;
    p.predicted_bytes = c->predicted_bytes;
    p.predicted_seconds = c->predicted_seconds;
    p.predicted_build_seconds = c->build_seconds;
    p.rounding = compiler::plan_rounding(build.profile, popts, c->params, Engine::kernel);
    p.mixed_fallback.reset();
    realize(a, build, p, options);
    time_probe(
        Impl::wrap(Impl::from_build(build, options, device, timings)), Engine::kernel, c->format,
        c->label, c->predicted_seconds,
        options.mixed_precision != MixedPrecision::off && compiler::is_mixed_candidate(c->params));
  }
  if (!no_cusparse) {
    Build& b = caller_order(a, build, plain, options);
    Plan p = cusparse_candidate(model, b, popts, reordered);
    p.mixed_fallback.reset();
    realize(a, b, p, options);
    time_probe(Impl::wrap(Impl::from_build(b, options, device, timings)), Engine::cusparse,
               "cusparse", "csr alg1", p.predicted_seconds, false);
  }
  if (!best) throw InternalError("measure mode: no candidate to time");
  const bool cusparse_won = best->plan.engine == Engine::cusparse;
  best->plan.why =
      fmt::format("measured fastest of the model's best candidates{}: {}{}",
                  no_cusparse ? "" : " and cuSPARSE's CSR SpMV",
                  cusparse_won ? "cuSPARSE, no generated candidate faster; " : "", report);
  if (no_cusparse && options.cusparse != "never")
    best->plan.why += fmt::format(" (cuSPARSE not timed: {})", *no_cusparse);
  const std::size_t won = runtime::measured_winner(times);
  if (weigh_full && !times[won].mixed) {
    // The fastest mixed-precision timing, which the full-precision winner beat.
    std::optional<std::size_t> mixed;
    for (std::size_t i = 0; i < times.size(); ++i)
      if (times[i].mixed && (!mixed || times[i].us < times[*mixed].us)) mixed = i;
    MixedFallback f{options.mixed_precision, "", 0, times[won].us * 1e-6, true};
    if (mixed) {
      f.mixed_best = names[*mixed];
      f.mixed_seconds = times[*mixed].us * 1e-6;
    }
    best->plan.why =
        mixed
            ? fmt::format(
                  "mixed precision {} was asked for, but the full-precision {} measured {:.2f}x "
                  "faster than the best mixed-precision candidate, {} ({:.2f} us): kept, its "
                  "values exact; {}",
                  to_string(options.mixed_precision), names[won], times[*mixed].us / times[won].us,
                  f.mixed_best, times[*mixed].us, best->plan.why)
            : fmt::format(
                  "mixed precision {} was asked for, but no mixed-precision candidate applies: "
                  "full precision; {}",
                  to_string(options.mixed_precision), best->plan.why);
    best->plan.rounding.reset();
    best->plan.mixed_fallback = std::move(f);
  }
  best->timings.measure = seconds_since(t0);
  if (!decision.empty()) write_decision(decision, {best->plan.params, best->plan.engine});
  return Impl::wrap(std::move(best));
}

}  // namespace spmvc
