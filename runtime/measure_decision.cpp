#include "measure_decision.hpp"

#include <cmath>
#include <variant>

#include <fmt/format.h>

#include "spmvc/error.hpp"

namespace spmvc::runtime {

namespace {

constexpr std::string_view kEnginePrefix = "engine ";

// The next line of `text` from `at` (without its '\n'), or nullopt at the end.
std::optional<std::string_view> next_line(std::string_view text, std::size_t& at) {
  if (at >= text.size()) return std::nullopt;
  const std::size_t end = text.find('\n', at);
  const std::string_view line =
      text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
  at = end == std::string_view::npos ? text.size() : end + 1;
  return line;
}

}  // namespace

std::string decision_text(const MeasuredDecision& decision) {
  return fmt::format("{}\n{}\n{}{}\n", format_of(decision.params), to_assignments(decision.params),
                     kEnginePrefix, to_string(decision.engine));
}

std::optional<MeasuredDecision> parse_decision(std::string_view text) {
  std::size_t at = 0;
  const std::optional<std::string_view> format = next_line(text, at);
  const std::optional<std::string_view> assignments = next_line(text, at);
  const std::optional<std::string_view> engine = next_line(text, at);
  if (!format || !assignments || !engine || next_line(text, at)) return std::nullopt;
  MeasuredDecision d;
  if (*engine == fmt::format("{}{}", kEnginePrefix, to_string(Engine::cusparse))) {
    d.engine = Engine::cusparse;
  } else if (*engine != fmt::format("{}{}", kEnginePrefix, to_string(Engine::kernel))) {
    return std::nullopt;
  }
  try {
    d.params = default_params(*format);
    set_params(d.params, *assignments);
  } catch (const InputError&) {
    return std::nullopt;  // another version's format or parameters: measure again
  }
  // cuSPARSE reads plain CSR arrays: a record that says otherwise is not trusted.
  if (d.engine == Engine::cusparse) {
    const auto* csr = std::get_if<CsrParams>(&d.params);
    if (csr == nullptr || csr->values != formats::kValuesPlain) return std::nullopt;
  }
  return d;
}

std::optional<std::string> measure_cusparse_refusal(const Options& options, const Plan& model,
                                                    const Profile& profile,
                                                    const compiler::PlanOptions& plan_options) {
  if (options.cusparse == "never") return "cusparse \"never\" keeps generated kernels only";
  if (options.format != "auto")
    return fmt::format("the format was forced ({}): generated kernels of it only", options.format);
  if (options.ordering ||
      (options.reorder != "auto" && options.reorder != "none" && !options.reorder.empty()))
    return fmt::format(
        "the caller asked for an ordering ({}): cuSPARSE runs the caller's order "
        "only",
        options.ordering ? options.ordering->name : options.reorder);
  if (std::optional<std::string> why = compiler::cusparse_refusal(profile, plan_options))
    return why;
  if (!compiler::cusparse_plan(model, profile, plan_options))
    return std::string("no plain-valued csr candidate applies: no arrays for cuSPARSE to read");
  return std::nullopt;
}

std::size_t measured_winner(std::span<const MeasuredTime> times) {
  if (times.empty()) throw InputError("measured times", 0, "no candidate was timed");
  std::size_t best = 0;
  for (std::size_t i = 0; i < times.size(); ++i) {
    const MeasuredTime& t = times[i];
    if (!std::isfinite(t.us) || t.us <= 0)
      throw InputError("measured times", 0,
                       fmt::format("candidate {} ({}) has time {} us: not a finite positive "
                                   "number",
                                   i, to_string(t.engine), t.us));
    if (i == 0) continue;
    // Equal times go to a mixed-precision candidate (the caller asked for it), then to
    // cuSPARSE (a generated kernel must beat it), then to the earlier one.
    const auto rank = [](const MeasuredTime& m) {
      return m.mixed ? 0 : m.engine == Engine::cusparse ? 1 : 2;
    };
    const MeasuredTime& b = times[best];
    if (t.us < b.us || (t.us == b.us && rank(t) < rank(b))) best = i;
  }
  return best;
}

}  // namespace spmvc::runtime
