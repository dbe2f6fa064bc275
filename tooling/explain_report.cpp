// Explain's report as text and JSON (no Clang headers here: they cost 25 s a unit to compile).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "spmvc/tooling/explain.hpp"

namespace spmvc::tooling {

namespace {

constexpr const char* kModel =
    "every matrix array read once: arrays loaded in the per-nonzero loop cost their element "
    "size per stored nonzero, the row pointer its element size per row (+1); x and y are not "
    "matrix bytes (x is gathered through the cache)";

std::string trip(const LoopSite& l) {
  if (l.trip_count)
    return fmt::format("{} iteration{}", *l.trip_count, *l.trip_count == 1 ? "" : "s");
  return l.per_nonzero ? "per nonzero (trip count from the row pointer)" : "not constant";
}

// The kernel's own sections: parameters, accesses, loops, shared memory, atomics and shuffles.
std::string kernel_sections(const ExplainReport& r) {
  std::string out = fmt::format("Kernel {}", r.kernel_name);
  if (r.launch_bounds > 0) out += fmt::format(", __launch_bounds__({})", r.launch_bounds);
  out += "\n\nParameters\n";
  std::size_t width = 0;
  for (const auto& p : r.params) width = std::max(width, p.name.size());
  for (const auto& p : r.params) {
    out += fmt::format("  {:<{}}  {:<32} {}\n", p.name, width, p.type, p.role);
  }
  out += "\nGlobal memory accesses (after constant folding)\n";
  for (const auto& a : r.accesses) {
    out += fmt::format("  {:<5} {:<{}} {:>2} B {:<14} {}{}  at {}\n", a.store ? "store" : "load",
                       a.array, width, a.bytes, a.element_type,
                       a.per_nonzero ? "per nonzero" : "           ", a.gather ? " (gather)" : "",
                       a.where);
  }
  out += "\nLoops\n";
  for (const auto& l : r.loops) {
    out +=
        fmt::format("  {:<46} {}{}\n", l.where, trip(l), l.unroll.empty() ? "" : ", " + l.unroll);
  }
  out += fmt::format("\nShared memory: {}", r.shared.empty() ? "none" : "");
  for (const auto& s : r.shared) out += fmt::format("{} ({} B) ", s.name, s.bytes);
  out += fmt::format("\nAtomics: {} site(s); warp shuffles: {} site(s)\n", r.atomics, r.shuffles);
  if (r.resources) {
    const Resources& s = *r.resources;
    out += fmt::format(
        "NVRTC ({}): {} registers, {} B spill stores, {} B spill loads, {} B stack, {} B "
        "shared\n",
        s.arch, s.registers, s.spill_store_bytes, s.spill_load_bytes, s.stack_bytes,
        s.shared_bytes);
  }
  return out;
}

nlohmann::ordered_json kernel_json(const ExplainReport& r);

}  // namespace

std::string to_report(const ExplainReport& r) {
  std::string out = kernel_sections(r);

  out +=
      "\nMatrix bytes moved. Model: every matrix array is read once; arrays loaded in the\n"
      "per-nonzero loop cost their element size per stored nonzero (a vector load covers\n"
      "several), the row pointer its element size per row (+1). x and y are not matrix\n"
      "bytes.\n";
  out +=
      fmt::format("  per stored nonzero: {:g} B; per row: {:g} B\n", r.nonzero_bytes, r.row_bytes);
  if (r.shape) {
    out += fmt::format("  on this matrix ({} rows, {} nonzeros, {} stored): {:.4f} B per nonzero\n",
                       r.shape->nrows, r.shape->nnz, r.shape->stored_nnz,
                       r.matrix_bytes_per_nonzero());
  }
  if (r.planner_bytes_per_nonzero) {
    const double diff = r.matrix_bytes_per_nonzero() - *r.planner_bytes_per_nonzero;
    out += fmt::format("  planner's cost model (matrix bytes / nnz): {:.4f} B per nonzero ({})\n",
                       *r.planner_bytes_per_nonzero,
                       std::abs(diff) <= 1e-9 * *r.planner_bytes_per_nonzero
                           ? "agrees"
                           : fmt::format("differs by {:+.4f}", diff));
  }
  return out;
}

namespace {

nlohmann::ordered_json kernel_json(const ExplainReport& r) {
  nlohmann::ordered_json j;
  j["kernel"] = r.kernel_name;
  j["launch_bounds"] = r.launch_bounds;
  j["params"] = nlohmann::ordered_json::array();
  for (const auto& p : r.params)
    j["params"].push_back({{"name", p.name}, {"type", p.type}, {"role", p.role}});
  j["accesses"] = nlohmann::ordered_json::array();
  for (const auto& a : r.accesses) {
    j["accesses"].push_back({{"kind", a.store ? "store" : "load"},
                             {"array", a.array},
                             {"element_type", a.element_type},
                             {"bytes", a.bytes},
                             {"per_nonzero", a.per_nonzero},
                             {"gather", a.gather},
                             {"where", a.where}});
  }
  j["loops"] = nlohmann::ordered_json::array();
  for (const auto& l : r.loops) {
    nlohmann::ordered_json e = {
        {"where", l.where}, {"per_nonzero", l.per_nonzero}, {"unroll", l.unroll}};
    e["trip_count"] =
        l.trip_count ? nlohmann::ordered_json(*l.trip_count) : nlohmann::ordered_json();
    j["loops"].push_back(e);
  }
  j["shared"] = nlohmann::ordered_json::array();
  for (const auto& s : r.shared) j["shared"].push_back({{"name", s.name}, {"bytes", s.bytes}});
  j["atomics"] = r.atomics;
  j["shuffles"] = r.shuffles;
  j["model"] = kModel;
  j["bytes_per_stored_nonzero"] = r.nonzero_bytes;
  j["bytes_per_row"] = r.row_bytes;
  if (r.shape) {
    j["matrix"] = {
        {"nrows", r.shape->nrows}, {"nnz", r.shape->nnz}, {"stored_nnz", r.shape->stored_nnz}};
    j["matrix_bytes_per_nonzero"] = r.matrix_bytes_per_nonzero();
  }
  if (r.planner_bytes_per_nonzero)
    j["planner_matrix_bytes_per_nonzero"] = *r.planner_bytes_per_nonzero;
  if (r.resources) {
    j["nvrtc"] = {{"arch", r.resources->arch},
                  {"registers", r.resources->registers},
                  {"spill_store_bytes", r.resources->spill_store_bytes},
                  {"spill_load_bytes", r.resources->spill_load_bytes},
                  {"stack_bytes", r.resources->stack_bytes},
                  {"shared_bytes", r.resources->shared_bytes}};
  }
  return j;
}

std::string names(const std::vector<std::string>& kernels) {
  std::string out;
  for (const auto& k : kernels) out += (out.empty() ? "" : ", ") + k;
  return out;
}

}  // namespace

std::string to_json(const ExplainReport& r) { return kernel_json(r).dump(2); }

std::string to_report(const UnitReport& u) {
  std::string out;
  if (u.kernels.size() > 1) {
    out += fmt::format("Unit of {} kernels, in launch order:", u.kernels.size());
    for (const auto& k : u.kernels) out += " " + k.kernel_name;
    out += "\n\n";
  }
  for (std::size_t i = 0; i < u.kernels.size(); ++i) {
    if (u.kernels.size() > 1) out += fmt::format("[{}/{}] ", i + 1, u.kernels.size());
    out += kernel_sections(u.kernels[i]) + "\n";
  }
  if (!u.arrays.empty()) {
    out += "Arrays of the encoded matrix\n";
    std::size_t width = 0;
    for (const auto& a : u.arrays) width = std::max(width, a.name.size());
    for (const auto& a : u.arrays) {
      std::string use;
      if (!a.read_by.empty()) use += "read by " + names(a.read_by);
      if (!a.written_by.empty())
        use += std::string(use.empty() ? "" : "; ") + "written by " + names(a.written_by);
      if (use.empty()) use = a.bytes == 0 ? "empty" : "not read by any kernel";
      out += fmt::format("  {:<{}} {:>4} x {:>9} = {:>10} B{}  {}\n", a.name, width, a.type,
                         a.elements, a.bytes, a.scratch ? " (workspace)" : "", use);
    }
    out += "\n";
  }
  if (!u.baked.empty()) {
    out += "Tables\n";
    for (const auto& b : u.baked)
      out += fmt::format("  {}: {}\n    {}\n", b.name, b.what, b.content);
    out += "\n";
  }
  out +=
      "Matrix bytes per multiply: every array some kernel reads, read once (workspace and x, y\n"
      "excluded).\n";
  if (u.bytes_per_nonzero && u.shape) {
    out += fmt::format("  on this matrix ({} rows, {} nonzeros): {:.4f} B per nonzero\n",
                       u.shape->nrows, u.shape->nnz, *u.bytes_per_nonzero);
  } else {
    out += "  (no matrix: run explain on a matrix for the unit's bytes)\n";
  }
  if (u.planner_bytes_per_nonzero) {
    out += fmt::format(
        "  planner's cost model: {:.4f} B per nonzero ({})\n", *u.planner_bytes_per_nonzero,
        u.agrees() || !u.bytes_per_nonzero
            ? "agrees"
            : fmt::format("differs by {:+.4f}: {}",
                          *u.planner_bytes_per_nonzero - *u.bytes_per_nonzero, u.difference));
  }
  return out;
}

std::string to_json(const UnitReport& u) {
  nlohmann::ordered_json j;
  j["kernels"] = nlohmann::ordered_json::array();
  for (const auto& k : u.kernels) j["kernels"].push_back(kernel_json(k));
  j["arrays"] = nlohmann::ordered_json::array();
  for (const auto& a : u.arrays) {
    j["arrays"].push_back({{"name", a.name},
                           {"type", a.type},
                           {"elements", a.elements},
                           {"bytes", a.bytes},
                           {"scratch", a.scratch},
                           {"read_by", a.read_by},
                           {"written_by", a.written_by}});
  }
  j["tables"] = nlohmann::ordered_json::array();
  for (const auto& b : u.baked)
    j["tables"].push_back({{"name", b.name}, {"what", b.what}, {"content", b.content}});
  if (u.shape) {
    j["matrix"] = {
        {"nrows", u.shape->nrows}, {"nnz", u.shape->nnz}, {"stored_nnz", u.shape->stored_nnz}};
  }
  if (u.bytes_per_nonzero) j["matrix_bytes_per_nonzero"] = *u.bytes_per_nonzero;
  if (u.planner_bytes_per_nonzero)
    j["planner_matrix_bytes_per_nonzero"] = *u.planner_bytes_per_nonzero;
  j["agrees"] = u.agrees();
  if (!u.difference.empty()) j["difference"] = u.difference;
  return j.dump(2);
}

}  // namespace spmvc::tooling
