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

namespace {

struct Describe {
  std::string operator()(const CsrParams& p) const {
    return fmt::format("T={} V={} b={} u={}{}{}", p.threads_per_row, p.vector_width, p.block_size,
                       p.unroll, p.aligned ? "" : " unaligned", p.offsets64 ? " o64" : "");
  }
};

struct ToJson {
  nlohmann::ordered_json operator()(const CsrParams& p) const {
    return {{"threads_per_row", p.threads_per_row},
            {"vector_width", p.vector_width},
            {"block_size", p.block_size},
            {"unroll", p.unroll},
            {"aligned", p.aligned},
            {"offsets64", p.offsets64}};
  }
};

}  // namespace

std::string describe(const FormatParams& params) { return std::visit(Describe{}, params); }

std::string to_json(const Plan& plan) {
  nlohmann::ordered_json j;
  j["format"] = plan.format;
  j["params"] = std::visit(ToJson{}, plan.params);
  j["precision"] = std::string(to_string(plan.precision));
  j["reorder"] = plan.reorder;
  j["predicted_bytes"] = plan.predicted_bytes;
  j["predicted_seconds"] = plan.predicted_seconds;
  j["why"] = plan.why;
  auto& cands = j["candidates"] = nlohmann::ordered_json::array();
  for (const Candidate& c : plan.candidates) {
    cands.push_back({{"format", c.format},
                     {"label", c.label},
                     {"params", std::visit(ToJson{}, c.params)},
                     {"applicable", c.applicable},
                     {"reason", c.reason},
                     {"predicted_bytes", c.predicted_bytes},
                     {"predicted_seconds", c.predicted_seconds}});
  }
  return j.dump(2);
}

std::string to_report(const Plan& plan) {
  std::string out;
  out += fmt::format("plan: {} [{}]  precision {}  reorder {}\n", plan.format,
                     describe(plan.params), to_string(plan.precision), plan.reorder);
  out += fmt::format("  predicted: {:.3f} MB per multiply, {:.2f} us\n", plan.predicted_bytes / 1e6,
                     plan.predicted_seconds * 1e6);
  out += "  why: " + plan.why + "\n";
  out += "candidates (best first):\n";
  out += fmt::format("  {:<3} {:<8} {:<28} {:>10} {:>10}  {}\n", "#", "format", "parameters", "MB",
                     "us", "notes");
  int rank = 0;
  for (const Candidate& c : plan.candidates) {
    ++rank;
    if (c.applicable) {
      out += fmt::format("  {:<3} {:<8} {:<28} {:>10.3f} {:>10.2f}  {}\n", rank, c.format, c.label,
                         c.predicted_bytes / 1e6, c.predicted_seconds * 1e6, c.reason);
    } else {
      out += fmt::format("  {:<3} {:<8} {:<28} {:>10} {:>10}  rejected: {}\n", rank, c.format,
                         c.label, "-", "-", c.reason);
    }
  }
  return out;
}

}  // namespace spmvc
