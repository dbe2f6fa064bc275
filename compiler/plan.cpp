#include <charconv>
#include <type_traits>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "spmvc/error.hpp"
#include "spmvc/plan.hpp"

namespace spmvc {

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::f64:
      return "f64";
    case Precision::f32:
      return "f32";
    case Precision::f32_acc64:
      return "f32acc64";
  }
  throw InternalError("unknown precision");
}

Precision parse_precision(std::string_view text) {
  if (text == "f64" || text == "double") return Precision::f64;
  if (text == "f32" || text == "float") return Precision::f32;
  if (text == "f32acc64") return Precision::f32_acc64;
  throw InputError("--precision", 0,
                   fmt::format("unknown precision '{}' (expected f64, f32 or f32acc64)", text));
}

int value_bytes(Precision p) { return p == Precision::f64 ? 8 : 4; }

std::string_view to_string(MixedPrecision m) {
  switch (m) {
    case MixedPrecision::off:
      return "off";
    case MixedPrecision::f32:
      return "f32";
    case MixedPrecision::bf16:
      return "bf16";
  }
  throw InternalError("unknown mixed precision");
}

MixedPrecision parse_mixed_precision(std::string_view text) {
  if (text == "off" || text == "none") return MixedPrecision::off;
  if (text == "f32") return MixedPrecision::f32;
  if (text == "bf16") return MixedPrecision::bf16;
  throw InputError("--mixed-precision", 0,
                   fmt::format("unknown mixed precision '{}' (expected f32 for an fp64 operator, "
                               "bf16 for an fp32 one, or off)",
                               text));
}

namespace {

template <typename P>
std::string describe_one(const P& p) {
  static const P defaults{};
  std::string out;
  out.reserve(48);
  const auto add = [&out](std::string_view text) {
    if (!out.empty()) out += ' ';
    out += text;
  };
  // Bools print only where they differ from the default ("o64", "no-aligned"); so do the value
  // coding ("val=1"), which most plans leave plain, and csr_stream's split rows ("split=16").
  P::fields(p, [&](std::string_view name, std::string_view label, const auto& value) {
    using V = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<V, bool>) {
      bool def = false;
      P::fields(defaults, [&](std::string_view, std::string_view l2, const auto& d) {
        if constexpr (std::is_same_v<std::decay_t<decltype(d)>, bool>) {
          if (l2 == label) def = d;
        }
      });
      if (value != def) add(value ? std::string(label) : "no-" + std::string(label));
    } else if ((name != "values" && name != "split") || value != 0) {
      // Appended in place (the planner labels every candidate it weighs: a formatted string
      // per field was a fifth of its time).
      static_assert(std::is_integral_v<V>, "parameters are integers or bools");
      if (!out.empty()) out += ' ';
      out += label;
      out += '=';
      char digits[24];
      out.append(digits, std::to_chars(digits, digits + sizeof digits, value).ptr);
    }
  });
  return out;
}

template <typename P>
nlohmann::ordered_json json_one(const P& p) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  P::fields(p, [&](std::string_view name, std::string_view, const auto& value) {
    j[std::string(name)] = value;
  });
  return j;
}

nlohmann::ordered_json params_json(const FormatParams& params) {
  return std::visit([](const auto& p) { return json_one(p); }, params);
}

template <std::size_t I = 0>
FormatParams default_for(std::string_view format) {
  if constexpr (I < std::variant_size_v<FormatParams>) {
    using P = std::variant_alternative_t<I, FormatParams>;
    if (P::kFormat == format) return P{};
    return default_for<I + 1>(format);
  } else {
    throw InputError("--format", 0, fmt::format("no parameters are known for format '{}'", format));
  }
}

bool parse_bool(std::string_view text, bool& out) {
  if (text == "1" || text == "true" || text == "yes") return out = true, true;
  if (text == "0" || text == "false" || text == "no") return out = false, true;
  return false;
}

}  // namespace

std::string describe(const FormatParams& params) {
  return std::visit([](const auto& p) { return describe_one(p); }, params);
}

std::string to_assignments(const FormatParams& params) {
  std::string out;
  std::visit(
      [&](const auto& p) {
        std::decay_t<decltype(p)>::fields(
            p, [&](std::string_view name, std::string_view, const auto& value) {
              out += fmt::format("{}{}={}", out.empty() ? "" : ",", name, static_cast<int>(value));
            });
      },
      params);
  return out;
}

std::string_view format_of(const FormatParams& params) {
  return std::visit([](const auto& p) { return std::decay_t<decltype(p)>::kFormat; }, params);
}

FormatParams default_params(std::string_view format) { return default_for(format); }

void set_params(FormatParams& params, std::string_view assignments) {
  const std::string_view format = format_of(params);
  std::size_t pos = 0;
  while (pos < assignments.size()) {
    std::size_t end = assignments.find(',', pos);
    if (end == std::string_view::npos) end = assignments.size();
    const std::string_view item = assignments.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw InputError("--param", 0, fmt::format("'{}' is not name=value", item));
    const std::string_view key = item.substr(0, eq), text = item.substr(eq + 1);
    bool found = false;
    std::string names;
    std::visit(
        [&](auto& p) {
          using P = std::decay_t<decltype(p)>;
          P::fields(p, [&](std::string_view name, std::string_view label, auto& value) {
            names += (names.empty() ? "" : ", ") + std::string(name);
            if (found || (key != name && key != label)) return;
            found = true;
            using V = std::decay_t<decltype(value)>;
            if constexpr (std::is_same_v<V, bool>) {
              if (!parse_bool(text, value))
                throw InputError(
                    "--param", 0,
                    fmt::format("{}: '{}' is not a bool (0/1/true/false)", name, text));
            } else {
              V parsed{};
              const auto [ptr, ec] =
                  std::from_chars(text.data(), text.data() + text.size(), parsed);
              if (ec != std::errc() || ptr != text.data() + text.size())
                throw InputError("--param", 0,
                                 fmt::format("{}: '{}' is not an integer", name, text));
              value = parsed;
            }
          });
        },
        params);
    if (!found)
      throw InputError(
          "--param", 0,
          fmt::format("format {} has no parameter '{}' (it has: {})", format, key, names));
  }
}

std::string describe(const ValueRounding& r) {
  return fmt::format(
      "mixed precision {}: {}; |y_i - (Ax)_i| <= {:.3g} (|A||x|)_i for rows of up to {} "
      "nonzeros",
      to_string(r.mode),
      r.value_error > 0 ? fmt::format("values stored rounded, largest relative error of a "
                                      "value {:.3g}",
                                      r.value_error)
                        : std::string("values stored exactly (a coding that holds them)"),
      r.y_error_bound, r.longest_row);
}

std::string describe(const MixedFallback& f) {
  const std::string basis = f.measured ? "measured" : "predicted";
  if (f.mixed_best.empty())
    return fmt::format(
        "mixed precision {} asked for; full precision kept: no mixed-precision "
        "candidate applied",
        to_string(f.asked));
  if (f.mixed_seconds <= 0 || f.full_seconds <= 0)
    return fmt::format(
        "mixed precision {} asked for; full precision kept, {} faster than {}: values exact, no "
        "rounding",
        to_string(f.asked), basis, f.mixed_best);
  return fmt::format(
      "mixed precision {} asked for; full precision kept, {} {:.2f}x faster than the best "
      "mixed-precision candidate {}: values exact, no rounding",
      to_string(f.asked), basis, f.mixed_seconds / f.full_seconds, f.mixed_best);
}

std::string_view to_string(Engine engine) {
  return engine == Engine::cusparse ? "cusparse" : "kernel";
}

std::string_view to_string(CusparseAlgorithm algorithm) {
  return algorithm == CusparseAlgorithm::csr_alg2 ? "csr_alg2" : "csr_alg1";
}

std::string to_json(const Plan& plan) {
  nlohmann::ordered_json j;
  j["format"] = plan.format;
  j["params"] = params_json(plan.params);
  j["precision"] = std::string(to_string(plan.precision));
  j["reorder"] = plan.reorder;
  if (!plan.reorder_why.empty()) j["reorder_why"] = plan.reorder_why;
  j["predicted_bytes"] = plan.predicted_bytes;
  j["predicted_seconds"] = plan.predicted_seconds;
  j["predicted_build_seconds"] = plan.predicted_build_seconds;
  j["multiplies"] = plan.multiplies ? nlohmann::ordered_json(*plan.multiplies) : nullptr;
  if (plan.multiplies)
    j["predicted_total_seconds"] = plan.predicted_build_seconds +
                                   static_cast<double>(*plan.multiplies) * plan.predicted_seconds;
  j["why"] = plan.why;
  if (plan.rounding) {
    const ValueRounding& r = *plan.rounding;
    j["mixed_precision"] = {{"mode", std::string(to_string(r.mode))},
                            {"value_error", r.value_error},
                            {"longest_row", r.longest_row},
                            {"y_error_bound", r.y_error_bound}};
  }
  if (plan.mixed_fallback) {
    const MixedFallback& f = *plan.mixed_fallback;
    j["mixed_fallback"] = {{"asked", std::string(to_string(f.asked))},
                           {"basis", f.measured ? "measured" : "model"},
                           {"mixed_best", f.mixed_best},
                           {"mixed_seconds", f.mixed_seconds},
                           {"full_seconds", f.full_seconds}};
  }
  j["engine"] = std::string(to_string(plan.engine));
  if (plan.engine == Engine::cusparse)
    j["cusparse_algorithm"] = std::string(to_string(plan.cusparse_algorithm));
  if (plan.cusparse_seconds > 0) j["cusparse_seconds"] = plan.cusparse_seconds;
  auto& cands = j["candidates"] = nlohmann::ordered_json::array();
  for (const Candidate& c : plan.candidates) {
    cands.push_back({{"format", c.format},
                     {"label", c.label},
                     {"params", params_json(c.params)},
                     {"applicable", c.applicable},
                     {"reason", c.reason},
                     {"predicted_bytes", c.predicted_bytes},
                     {"predicted_seconds", c.predicted_seconds},
                     {"build_seconds", c.build_seconds}});
    if (plan.multiplies && c.applicable) cands.back()["total_seconds"] = c.total_seconds;
  }
  return j.dump(2);
}

std::string to_report(const Plan& plan) {
  std::string out;
  out += fmt::format("plan: {} [{}]  precision {}  reorder {}\n", plan.format,
                     describe(plan.params), to_string(plan.precision), plan.reorder);
  if (!plan.reorder_why.empty()) out += "  ordering: " + plan.reorder_why + "\n";
  out += fmt::format("  predicted: {:.3f} MB per multiply, {:.2f} us; one-time {:.1f} ms\n",
                     plan.predicted_bytes / 1e6, plan.predicted_seconds * 1e6,
                     plan.predicted_build_seconds * 1e3);
  if (plan.multiplies) {
    const double n = static_cast<double>(*plan.multiplies);
    out += fmt::format(
        "  for {} multiplies: {:.1f} ms one-time + {:.1f} ms multiplying = {:.1f} ms\n",
        *plan.multiplies, plan.predicted_build_seconds * 1e3, n * plan.predicted_seconds * 1e3,
        (plan.predicted_build_seconds + n * plan.predicted_seconds) * 1e3);
  } else {
    out += "  ranked by multiply time (no multiply count given)\n";
  }
  out += "  why: " + plan.why + "\n";
  if (plan.rounding) out += "  " + describe(*plan.rounding) + "\n";
  if (plan.mixed_fallback) out += "  " + describe(*plan.mixed_fallback) + "\n";
  if (plan.engine == Engine::cusparse)
    out += fmt::format("  engine: cusparse ({}, preprocessed) on the {} arrays above\n",
                       plan.cusparse_algorithm == CusparseAlgorithm::csr_alg2
                           ? "CSR ALG2, bitwise deterministic"
                           : "CSR ALG1",
                       plan.format);
  if (plan.cusparse_seconds > 0)
    out += fmt::format("  cuSPARSE CSR SpMV predicted: {:.2f} us\n", plan.cusparse_seconds * 1e6);
  out += "candidates (best first):\n";
  // The one-time column and, with a multiply count, the total the candidates were ranked by.
  const bool totals = plan.multiplies.has_value();
  out += fmt::format("  {:<3} {:<8} {:<28} {:>10} {:>10} {:>10}{}  {}\n", "#", "format",
                     "parameters", "MB", "us", "build ms",
                     totals ? fmt::format(" {:>11}", "total ms") : "", "notes");
  int rank = 0;
  for (const Candidate& c : plan.candidates) {
    ++rank;
    if (c.applicable) {
      out += fmt::format("  {:<3} {:<8} {:<28} {:>10.3f} {:>10.2f} {:>10.1f}{}  {}\n", rank,
                         c.format, c.label, c.predicted_bytes / 1e6, c.predicted_seconds * 1e6,
                         c.build_seconds * 1e3,
                         totals ? fmt::format(" {:>11.1f}", c.total_seconds * 1e3) : "", c.reason);
    } else {
      out +=
          fmt::format("  {:<3} {:<8} {:<28} {:>10} {:>10} {:>10}{}  rejected: {}\n", rank, c.format,
                      c.label, "-", "-", "-", totals ? fmt::format(" {:>11}", "-") : "", c.reason);
    }
  }
  return out;
}

}  // namespace spmvc
