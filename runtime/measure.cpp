// Measure mode: the model's best few candidates built, compiled and timed on the GPU, the fastest
// kept; the decision remembered on disk by the matrix's contents, so the next compile() of the
// same matrix on the same device skips the timing.
#include <algorithm>
#include <fstream>
#include <functional>
#include <optional>

#include <fmt/format.h>
#include <xxhash.h>

#include "operator_impl.hpp"
#include "spmvc/compiler/compiler.hpp"

namespace spmvc {

namespace {

using runtime::Clock;
using runtime::seconds_since;

// The winner per (matrix contents, precision, forced format, value coding, deterministic mode,
// mixed precision, device, spmvc), one small text file per decision under <cache dir>/decisions/.
std::string decision_key(const CsrMatrix& a, const Options& options,
                         const runtime::DeviceInfo& device) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  auto add = [&](const void* p, std::size_t n) { XXH3_128bits_update(st, p, n); };
  const std::string tag = fmt::format(
      "spmvc-decision-1|{}|{}|{}|{}|{}{}{}{}", to_string(options.precision), options.format,
      device.name, device.arch(), a.nrows, options.value_coding ? "" : "|plain-values",
      options.deterministic ? "|deterministic" : "",
      // A mixed-precision decision stores rounded values: never one for a caller who did not
      // ask (the key of a plain decision is as before).
      options.mixed_precision == MixedPrecision::off
          ? std::string()
          : fmt::format("|mixed-{}", to_string(options.mixed_precision)));
  add(tag.data(), tag.size());
  add(&a.ncols, sizeof a.ncols);
  add(a.row_ptr.data(), a.row_ptr.size() * sizeof(std::int64_t));
  add(a.col_idx.data(), a.col_idx.size() * sizeof(std::int32_t));
  add(a.values.data(), a.values.size() * sizeof(double));
  const XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

std::optional<FormatParams> read_decision(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string format, assignments;
  if (!in || !std::getline(in, format) || !std::getline(in, assignments)) return std::nullopt;
  try {
    FormatParams p = default_params(format);
    set_params(p, assignments);
    return p;
  } catch (const InputError&) {
    return std::nullopt;  // written by another version: measure again
  }
}

void write_decision(const std::filesystem::path& path, const FormatParams& params) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp);
    out << format_of(params) << "\n" << to_assignments(params) << "\n";
    if (!out) return;  // a read-only cache only costs a re-measurement next time
  }
  std::filesystem::rename(tmp, path, ec);
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
  const std::filesystem::path dir = runtime::cache_dir_of(options);
  // Decisions live beside the kernels, under the same rule: none from a directory the kernel
  // cache will not use (another user's could steer the choice).
  const bool disk_ok = !dir.empty() && runtime::cache_for(dir).disk_off_reason().empty();
  const std::filesystem::path decision =
      !disk_ok ? std::filesystem::path()
               : dir / "decisions" / (decision_key(a, options, device) + ".txt");
  if (!decision.empty()) {
    if (std::optional<FormatParams> remembered = read_decision(decision)) {
      compiler::PlanOptions forced = compiler::plan_options(options, target);
      forced.params = *remembered;
      Plan chosen = compiler::make_plan(build.profile, forced);
      chosen.reorder = build.plan.reorder;
      chosen.reorder_why = build.plan.reorder_why;
      chosen.candidates = build.plan.candidates;
      chosen.why = fmt::format("measured fastest earlier on this matrix and device (decision {})",
                               decision.filename().string());
      CompileTimings t = timings;
      t.plan += seconds_since(t0);
      realize(a, build, chosen, options);
      return Impl::wrap(Impl::from_build(build, options, device, t));
    }
  }
  // The best candidate of each of the model's first formats, plus csr's, the fallback the
  // planner must never lose to.
  const Plan model = build.plan;
  std::vector<const Candidate*> picks;
  const int want = std::max(1, options.measure_candidates);
  for (const Candidate& c : model.candidates) {
    if (!c.applicable) continue;
    const bool new_format = std::none_of(picks.begin(), picks.end(),
                                         [&](const Candidate* p) { return p->format == c.format; });
    if (new_format && (static_cast<int>(picks.size()) < want || c.format == "csr"))
      picks.push_back(&c);
  }
  const std::size_t vb = static_cast<std::size_t>(value_bytes(options.precision));
  runtime::DeviceBuffer dx(std::max<std::size_t>(static_cast<std::size_t>(a.ncols) * vb, 1));
  runtime::DeviceBuffer dy(std::max<std::size_t>(static_cast<std::size_t>(a.nrows) * vb, 1));
  dx.fill_bytes(0);
  std::unique_ptr<Impl> best;
  double best_us = 0;
  std::string report;
  for (const Candidate* c : picks) {
    Plan p = model;
    p.format = c->format;
    p.params = c->params;
    p.predicted_bytes = c->predicted_bytes;
    p.predicted_seconds = c->predicted_seconds;
    p.predicted_build_seconds = c->build_seconds;
    realize(a, build, p, options);
    Operator probe = Impl::wrap(Impl::from_build(build, options, device, timings));
    const double us = quick_time_us([&] { probe.apply(dx.get(), dy.get(), 1.0, 0.0, nullptr); });
    report += fmt::format("{}{} [{}] {:.2f} us (model {:.2f})", report.empty() ? "" : ", ",
                          c->format, c->label, us, c->predicted_seconds * 1e6);
    if (!best || us < best_us) {
      best_us = us;
      best = Impl::unwrap(std::move(probe));
    }
  }
  best->plan.why = "measured fastest of the model's best candidates: " + report;
  best->timings.measure = seconds_since(t0);
  if (!decision.empty()) write_decision(decision, best->plan.params);
  return Impl::wrap(std::move(best));
}

}  // namespace spmvc
