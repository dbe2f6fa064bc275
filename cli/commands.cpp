#include "commands.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <type_traits>
#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "spmvc/build.hpp"
#include "spmvc/compiler/build_choice.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/emit.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/reorder.hpp"
#ifdef SPMVC_HAVE_TOOLING
#include "spmvc/tooling/explain.hpp"
#include "spmvc/tooling/flatten.hpp"
#endif

namespace spmvc::cli {

namespace {

std::string with_commas(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

// `inspect --reorder X`: the ordering, and the locality measures before and after it.
struct ReorderComparison {
  Ordering ordering;
  LocalityStats before, after;
};

ReorderComparison compare_reordering(const CsrMatrix& a, const std::string& name,
                                     bool columns_alone) {
  ReorderComparison c{compute_ordering(a, name), locality(a), {}};
  if (columns_alone) {
    if (c.ordering.kind != PermutationKind::symmetric)
      throw InputError(
          "--keep-row-order", 0,
          fmt::format("ordering '{}' moves rows only: no columns to move alone", name));
    c.ordering = columns_only(std::move(c.ordering));
  }
  c.after = locality(permute(a, c.ordering));
  return c;
}

const char* kind_name(PermutationKind k) {
  return k == PermutationKind::symmetric      ? "symmetric"
         : k == PermutationKind::columns_only ? "columns_only"
                                              : "rows_only";
}

nlohmann::ordered_json comparison_json(const ReorderComparison& c) {
  auto stats = [](const LocalityStats& s) {
    return nlohmann::ordered_json{{"bandwidth", s.bandwidth},
                                  {"profile", s.profile},
                                  {"bro_eta", s.bro_eta},
                                  {"lines_per_warp", s.lines_per_warp}};
  };
  const Ordering& o = c.ordering;
  return {{"ordering", o.name}, {"kind", kind_name(o.kind)}, {"seconds", o.seconds},
          {"note", o.note},     {"before", stats(c.before)}, {"after", stats(c.after)}};
}

void print_table(const ReorderComparison& c) {
  const Ordering& o = c.ordering;
  fmt::print("Reordering {} ({}): {:.3f} s{}\n", o.name, kind_name(o.kind), o.seconds,
             o.note.empty() ? "" : "; " + o.note);
  fmt::print("  {:<28} {:>15} {:>15}\n", "", "before", "after");
  fmt::print("  {:<28} {:>15} {:>15}\n", "bandwidth", with_commas(c.before.bandwidth),
             with_commas(c.after.bandwidth));
  fmt::print("  {:<28} {:>15} {:>15}\n", "profile", with_commas(c.before.profile),
             with_commas(c.after.profile));
  fmt::print("  {:<28} {:>14.1f}% {:>14.1f}%\n", "BRO index saving (eta)", 100 * c.before.bro_eta,
             100 * c.after.bro_eta);
  fmt::print("  {:<28} {:>15.2f} {:>15.2f}\n", "x lines (128 B) per 32 rows",
             c.before.lines_per_warp, c.after.lines_per_warp);
}

}  // namespace

namespace {

// Each format's encoding of `a` with the parameters the planner would pick for it, side by side:
// encoded bytes, the index part of them (everything but the value arrays), and the index space
// saved against CSR's 32-bit column indices, eta = 1 - index bytes / (4 nnz).
std::string format_sizes(const CsrMatrix& a, const Profile& profile, Precision precision, bool json,
                         bool quiet) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::string text = fmt::format(
      "\nFormats ({}; each with the planner's parameters for it; eta = index bytes saved against "
      "4 B per nonzero)\n  {:<9} {:<34} {:>12} {:>12} {:>8} {:>8}  {:>12}  {}\n",
      to_string(precision), "format", "parameters", "bytes", "index bytes", "B/nnz", "eta",
      "predicted", "paper's measure");
  auto progress = [quiet](std::string_view format) {
    if (!quiet) fmt::print(stderr, "encoding {} ...\n", format);
  };
  const double nnz = std::max<double>(1.0, static_cast<double>(a.nnz()));
  for (const compiler::FormatSize& f : compiler::format_sizes(a, profile, precision, progress)) {
    if (!f.applicable) {
      // The planner lists every rejected parameter set on its own line: one line per format here.
      std::string reasons = f.reason;
      const std::string lead = "no format can implement this matrix:\n  ";
      if (reasons.rfind(lead, 0) == 0) reasons = reasons.substr(lead.size());
      for (std::size_t at; (at = reasons.find("\n  ")) != std::string::npos;)
        reasons.replace(at, 3, "; ");
      text += fmt::format("  {:<9} does not apply: {}\n", f.format, reasons);
      rows.push_back({{"format", f.format}, {"applicable", false}, {"reason", f.reason}});
      continue;
    }
    const double eta = 1.0 - static_cast<double>(f.index_bytes) / (4.0 * nnz);
    text +=
        fmt::format("  {:<9} {:<34} {:>12} {:>12} {:>8.2f} {:>7.1f}%  {:>9.2f} us  {}\n", f.format,
                    f.params, f.bytes, f.index_bytes, static_cast<double>(f.bytes) / nnz,
                    100.0 * eta, f.predicted_seconds * 1e6, f.paper_measure);
    rows.push_back({{"format", f.format},
                    {"applicable", true},
                    {"params", f.params},
                    {"bytes", f.bytes},
                    {"index_bytes", f.index_bytes},
                    {"eta", eta},
                    {"paper_measure", f.paper_measure},
                    {"predicted_seconds", f.predicted_seconds}});
  }
  return json ? rows.dump(2) : text;
}

}  // namespace

int run_inspect(const MatrixArgs& args) {
  const CsrMatrix a = load_matrix(args);
  const Profile profile = inspect(a);
  const Precision precision = parse_precision(args.precision);
  std::optional<ReorderComparison> c;
  if (!args.reorder.empty()) c = compare_reordering(a, args.reorder, args.keep_row_order);
  if (args.json) {
    nlohmann::ordered_json doc = nlohmann::ordered_json::parse(to_json(profile));
    if (c) doc["reorder"] = comparison_json(*c);
    // The formats table as one more key.
    if (!args.no_formats)
      doc["formats"] =
          nlohmann::ordered_json::parse(format_sizes(a, profile, precision, true, args.quiet));
    fmt::print("{}\n", doc.dump(2));
  } else {
    fmt::print("{}", to_report(profile));
    if (c) {
      fmt::print("\n");
      print_table(*c);
    }
    if (!args.no_formats) fmt::print("{}", format_sizes(a, profile, precision, false, args.quiet));
  }
  if (args.blocks && !args.json) fmt::print("\n{}", to_report(inspect_blocks(a)));
  return 0;
}

namespace {

// Where compile() builds this matrix with these options (Options::build), for plan and
// explain, which show the host pipeline's plan.
std::string build_note(const CsrMatrix& a, const Options& options) {
  const compiler::BuildChoice choice = compiler::choose_build(options, {a.nrows, a.ncols, a.nnz()});
  if (choice.path == compiler::BuildPath::host) return fmt::format("build: host ({})", choice.why);
  return fmt::format(
      "build: device ({}); the plan above is the host pipeline's (--build host): compile() plans "
      "from the GPU inspection, and `spmvc run -v` shows its pick",
      choice.why);
}

}  // namespace

int run_plan(const MatrixArgs& args) {
  const CsrMatrix a = load_matrix(args);
  const Options options = make_options(args);
  BuildTarget target;
  target.cost_model = args.cost_model;
  target.gpu = args.gpu;
  target.until = BuildStage::plan;
  // main.cpp accepts only a calibrated --gpu.
  const compiler::CalibrationInfo calibration = compiler::calibration_for(target.arch, target.gpu);
  const Build b = build(a, options, target);
  const Profile& profile = b.profile;
  const Plan& plan = b.plan;
  const compiler::PlanOptions popts = compiler::plan_options(options, target);
  const compiler::Prediction chosen = compiler::predict(profile, plan.params, popts);
  if (args.json) {
    // Beside the plan: the cost model that ranked, the traffic model's bytes by kind, and each
    // applicable candidate's time under both models (scripts/model/traffic-report.py reads them).
    auto traffic_json = [](const compiler::TrafficBytes& t) {
      return nlohmann::ordered_json{{"matrix", t.matrix},
                                    {"x", t.x},
                                    {"y", t.y},
                                    {"y_atomic", t.y_atomic},
                                    {"total", t.total()}};
    };
    nlohmann::ordered_json doc = nlohmann::ordered_json::parse(to_json(plan));
    doc["cost_model"] = std::string(compiler::to_string(popts.cost_model));
    doc["calibration"] = {{"gpu", calibration.model},
                          {"read_bandwidth", calibration.read_bandwidth}};
    doc["traffic"] = traffic_json(chosen.traffic);
    auto& cands = doc["candidates"];
    for (std::size_t i = 0; i < plan.candidates.size(); ++i) {
      const Candidate& c = plan.candidates[i];
      // Applicable candidates, and those left out with a prediction (a format the GPU's
      // calibration has no row for: its first row is fitted from it).
      if (!c.applicable && !(c.predicted_seconds > 0)) continue;
      const compiler::Prediction p = compiler::predict(profile, c.params, popts);
      cands[i]["seconds_by_model"] = {{"compulsory", p.compulsory_seconds},
                                      {"traffic", p.traffic_seconds}};
      cands[i]["time_factor"] = p.time_factor;
      cands[i]["traffic"] = traffic_json(p.traffic);
      cands[i]["build"] = {{"inspect", p.build.inspect},
                           {"encode", p.build.encode},
                           {"upload", p.build.upload},
                           {"compile", p.build.compile}};
    }
    const compiler::BuildChoice choice =
        compiler::choose_build(options, {a.nrows, a.ncols, a.nnz()});
    doc["build"] = {{"path", choice.path == compiler::BuildPath::device ? "device" : "host"},
                    {"why", choice.why}};
    doc["stage_seconds"] = {
        {"reorder", b.timings.reorder}, {"inspect", b.timings.inspect}, {"plan", b.timings.plan}};
    fmt::print("{}\n", doc.dump(2));
  } else {
    fmt::print("{}", to_report(plan));
    fmt::print("cost model: {}; traffic model for the plan: {}\n",
               compiler::to_string(popts.cost_model), chosen.traffic.describe());
    fmt::print("calibration: {} ({:.2f} TB/s read)\n", calibration.model,
               calibration.read_bandwidth / 1e12);
    fmt::print("one-time cost of the plan (predicted): {}\n", chosen.build.describe());
    fmt::print("{}\n", build_note(a, options));
    if (args.verbose)
      fmt::print(
          "host stages of this run: reorder {:.1f} ms, inspect {:.1f} ms, plan {:.2f} ms ({} "
          "candidates)\n",
          b.timings.reorder * 1e3, b.timings.inspect * 1e3, b.timings.plan * 1e3,
          plan.candidates.size());
  }
  return 0;
}

[[maybe_unused]] Error no_tooling(const std::string& what) {
  return Error(
      "this spmvc was built without tooling/ (Clang 14 libTooling: install "
      "libclang-14-dev and libclang-cpp14-dev, then reconfigure), so it cannot " +
      what);
}

KernelSource flatten_kernel(const KernelSource& source, bool inline_helpers) {
#ifdef SPMVC_HAVE_TOOLING
  tooling::FlattenOptions options;
  options.inline_helpers = inline_helpers;
  return tooling::flatten(source, options);
#else
  (void)source;
  (void)inline_helpers;
  throw no_tooling("flatten kernels");
#endif
}

int run_explain(const MatrixArgs& args, const std::string& arch) {
#ifdef SPMVC_HAVE_TOOLING
  tooling::ExplainOptions options;
  options.arch = arch;
  tooling::UnitReport report;
  std::optional<ValueRounding> rounding;
  std::optional<MixedFallback> fallback;  // mixed precision asked for, full precision kept
  std::string engine;                     // what runs apply() where it is not the unit's kernel
  std::string build_line;                 // where compile() builds (Options::build)
  const std::filesystem::path path = args.matrix;
  if (path.extension() == ".cu" || path.extension() == ".cuh") {
    // A kernel on disk, e.g. from `spmvc emit`: its headers are read from beside it, and every
    // kernel it defines is reported (roles from their uses: the file has no launch list).
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(args.matrix, 0, "cannot read file");
    std::stringstream text;
    text << in.rdbuf();
    KernelSource src;
    src.source = text.str();
    src.file_name = path.filename().string();
    const std::string dir = std::filesystem::absolute(path).parent_path().string();
    options.include_dirs.push_back(dir);
    report = tooling::explain_unit(src, options);
  } else {
    // The whole unit the planner builds: each kernel in launch order, roles from the unit's
    // parameter list, the encoded arrays' sizes and the tables baked in.
    const CsrMatrix a = load_matrix(args);
    const Build b = build(a, make_options(args));
    std::int64_t stored = 0;
    for (const auto& array : b.encoded.arrays) stored = std::max(stored, array.count());
    options.shape = tooling::MatrixShape{a.nrows, a.nnz(), stored};
    options.encoded = &b.encoded;
    options.format = b.plan.format;
    options.planner_bytes_per_nonzero = compiler::matrix_bytes_per_nonzero(b.profile, b.plan);
    report = tooling::explain_unit(b.source, options);
    build_line = build_note(a, make_options(args));
    rounding = b.plan.rounding;
    fallback = b.plan.mixed_fallback;
    if (b.plan.engine == Engine::cusparse)
      // The multiply is cuSPARSE's; the unit's kernel is what SpMM and A^T x run on its arrays.
      engine =
          "cusparse: apply() runs cuSPARSE's CSR SpMV (ALG1, preprocessed) on the csr arrays "
          "below; the csr kernel reported serves SpMM and the transposed multiply";
  }
  // Mixed precision: what the stored values' rounding costs in y (the plan's bound).
  if (args.json) {
    std::string text = tooling::to_json(report);
    if (rounding || fallback || !engine.empty() || !build_line.empty()) {
      nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
      if (!engine.empty()) j["engine"] = engine;
      if (!build_line.empty()) j["build"] = build_line;
      if (rounding)
        j["mixed_precision"] = {{"mode", std::string(to_string(rounding->mode))},
                                {"value_error", rounding->value_error},
                                {"longest_row", rounding->longest_row},
                                {"y_error_bound", rounding->y_error_bound}};
      if (fallback) j["mixed_fallback"] = describe(*fallback);
      text = j.dump(2);
    }
    fmt::print("{}\n", text);
  } else {
    if (!engine.empty()) fmt::print("engine: {}\n", engine);
    if (!build_line.empty()) fmt::print("{}\n", build_line);
    fmt::print("{}\n", tooling::to_report(report));
    if (rounding) fmt::print("{}\n", describe(*rounding));
    if (fallback) fmt::print("{}\n", describe(*fallback));
  }
  return 0;
#else
  (void)args;
  (void)arch;
  throw no_tooling("explain kernels");
#endif
}

int run_emit(const MatrixArgs& args, const EmitArgs& emit) {
  const std::string& out_dir = emit.out_dir;
  const CsrMatrix a = load_matrix(args);
  Options options = make_options(args);
  // The flattened kernel replaces the template one: same entry point, so the harness and the
  // runtime load it unchanged.
  if (emit.flatten) {
    const bool inline_helpers = emit.inline_helpers;
    options.transform_source = [inline_helpers](const KernelSource& generated) {
      return flatten_kernel(generated, inline_helpers);
    };
  }
  const Build b = build(a, options);
  const Plan& plan = b.plan;
  const KernelSource& source = b.source;
  const std::vector<double> x = codegen::test_vector(a.ncols, plan.precision);
  std::vector<double> y(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x, y);
  // y in the caller's order: a reordered unit writes it there through its row map.
  const auto written = codegen::emit(plan, b.encoded, source, y, out_dir);
  if (args.json) {
    nlohmann::ordered_json j;
    j["kernel"] = source.kernel_name;
    j["files"] = nlohmann::ordered_json::array();
    for (const auto& p : written) j["files"].push_back(p.string());
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("emitted {} ({}, reorder {}) into {}:\n", source.kernel_name, describe(plan.params),
               plan.reorder, out_dir);
    for (const auto& p : written) fmt::print("  {}\n", p.string());
    fmt::print(
        "build and run offline:\n  cd {} && nvcc -O3 -std=c++17 -arch=sm_90 -I. harness.cu "
        "-o harness && ./harness\n",
        out_dir);
  }
  return 0;
}

std::vector<double> updated_values(std::span<const double> values) {
  std::vector<double> out(values.begin(), values.end());
  for (std::size_t k = 0; k < out.size(); ++k) out[k] *= 1.0 + static_cast<double>(k % 3) / 4.0;
  return out;
}

std::vector<double> into_plan_order(std::span<const double> v, std::span<const std::int32_t> map) {
  if (map.empty()) return {v.begin(), v.end()};
  std::vector<double> out(map.size());
  for (std::size_t i = 0; i < map.size(); ++i) out[i] = v[static_cast<std::size_t>(map[i])];
  return out;
}

std::vector<double> out_of_plan_order(std::span<const double> v,
                                      std::span<const std::int32_t> map) {
  if (map.empty()) return {v.begin(), v.end()};
  std::vector<double> out(map.size());
  for (std::size_t i = 0; i < map.size(); ++i) out[static_cast<std::size_t>(map[i])] = v[i];
  return out;
}

int run_run(const MatrixArgs& args) {
  CsrMatrix a = load_matrix(args);
  const Options options = make_options(args);
  Operator op = compile(a, options);
  const Precision p = op.plan().precision;
  const std::vector<double> x = codegen::test_vector(a.ncols, p);
  const std::vector<double> poison(static_cast<std::size_t>(a.nrows),
                                   std::numeric_limits<double>::quiet_NaN());
  std::vector<double> ref(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x, ref);
  // --plan-order: x goes in, and y comes out, in the operator's order (Options::plan_order),
  // permuted here on the host with the operator's map.
  auto multiply = [&] {
    std::vector<double> y(static_cast<std::size_t>(a.nrows),
                          std::numeric_limits<double>::quiet_NaN());
    op.apply_host(into_plan_order(x, op.plan_columns()), y);
    return out_of_plan_order(y, op.plan_rows());
  };
  std::vector<double> y = multiply();
  // A tiered compile with the kernel not cached ran the first multiply on the generic tier:
  // check it, then wait for the specialised kernel and check that too.
  const bool first_generic = op.timings().tier == "generic";
  const double generic_err = first_generic ? compiler::relative_error(y, ref) : 0.0;
  if (first_generic) {
    op.wait_specialised();
    y = multiply();
  }
  const double err = compiler::relative_error(y, ref);
  double checksum = 0;
  for (double v : y) checksum += v;
  const double tol = compiler::result_tolerance(p);
  // Mixed precision: the specialised kernel's y is judged by the plan's bound on its error
  // relative to |A||x| (the generic tier multiplies the values unrounded).
  const bool mixed = op.plan().rounding.has_value();
  const double mixed_tol = compiler::mixed_error_tolerance(op.plan());
  const double mixed_err = mixed ? compiler::mixed_error(a, x, y, ref).componentwise : 0.0;
  bool ok = (mixed ? mixed_err <= mixed_tol : err <= tol && !std::isnan(err)) &&
            generic_err <= tol && !std::isnan(generic_err);
  const CompileTimings t = op.timings();
  // --deterministic: the same x again, bit for bit the same y each time.
  constexpr int kRepeats = 100;
  int first_difference = -1;
  if (options.deterministic) {
    for (int i = 0; i < kRepeats && first_difference < 0; ++i) {
      std::vector<double> again = poison;
      op.apply_host(into_plan_order(x, op.plan_columns()), again);
      again = out_of_plan_order(again, op.plan_rows());
      if (std::memcmp(again.data(), y.data(), y.size() * sizeof(double)) != 0)
        first_difference = i + 1;
    }
    ok = ok && first_difference < 0;
  }
  // --update-values: new values for the same pattern, then the multiply checked again.
  std::optional<ValueUpdate> update;
  double update_err = 0;
  if (args.update_values) {
    a.values = updated_values(a.values);
    update = op.update_values(a.values);
    std::vector<double> y2 = poison;
    op.apply_host(into_plan_order(x, op.plan_columns()), y2);
    y2 = out_of_plan_order(y2, op.plan_rows());
    compiler::csr_reference_spmv(a, x, ref);
    update_err = compiler::relative_error(y2, ref);
    if (op.plan().rounding) {
      update_err = compiler::mixed_error(a, x, y2, ref).componentwise;
      ok = ok && update_err <= compiler::mixed_error_tolerance(op.plan());
    } else {
      ok = ok && update_err <= tol && !std::isnan(update_err);
    }
  }
  if (args.json) {
    nlohmann::ordered_json j;
    j["kernel"] = op.source().kernel_name;
    j["plan"] = nlohmann::json::parse(to_json(op.plan()));
    j["relative_error"] = err;
    j["tolerance"] = tol;
    j["checksum"] = checksum;
    j["plan_order"] = op.plan_order();
    if (mixed) {
      j["mixed_precision"] = {{"max_error", mixed_err},
                              {"tolerance", mixed_tol},
                              {"within_bound", mixed_err <= mixed_tol}};
    }
    if (options.deterministic) {
      j["deterministic"] = {{"repeats", kRepeats}, {"bitwise_identical", first_difference < 0}};
    }
    if (update) {
      j["update_values"] = {{"seconds", update->seconds},
                            {"replanned", update->replanned},
                            {"why", update->why},
                            {"relative_error", update_err}};
    }
    j["passed"] = ok;
    j["timings"] = {{"inspect", t.inspect},
                    {"plan", t.plan},
                    {"encode", t.encode},
                    {"codegen", t.codegen},
                    {"compile", t.compile},
                    {"upload", t.upload},
                    {"build", t.build},
                    {"build_why", t.build_why},
                    {"build_units", t.build_units},
                    {"kernel_origin", t.kernel_origin},
                    {"cache_note", t.cache_note},
                    {"registers", t.registers},
                    {"spill_bytes", t.spill_bytes},
                    {"early_launches", t.early_launches}};
    j["tiers"] = {{"first_multiply", first_generic ? "generic" : "specialised"},
                  {"generic_relative_error",
                   first_generic ? nlohmann::json(generic_err) : nlohmann::json(nullptr)},
                  {"generic_applies", t.generic_applies},
                  {"generic_setup", t.generic_setup},
                  {"specialised_ready", t.specialised_ready},
                  {"switched", t.switched},
                  {"tier", t.tier}};
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("kernel          {}\n", op.source().kernel_name);
    if (op.plan_order())
      fmt::print("vectors         in the plan's order ({}), permuted outside the multiply\n",
                 op.plan().reorder);
    fmt::print("relative error  {:.3e}\n", err);
    fmt::print("checksum        {:.17g}\n", checksum);
    if (mixed) {
      fmt::print("rounding        {}\n", describe(*op.plan().rounding));
      fmt::print(
          "                measured max |y_i - (Ax)_i| / (|A||x|)_i = {:.3e} (bound {:.3e})\n",
          mixed_err, mixed_tol);
    }
    if (op.plan().mixed_fallback)
      fmt::print("rounding        none: {}\n", describe(*op.plan().mixed_fallback));
    fmt::print(
        "one-time cost   inspect {:.1f} ms, plan {:.1f} ms, encode {:.1f} ms, codegen {:.1f} ms, "
        "compile {:.1f} ms ({}), upload {:.1f} ms\n",
        t.inspect * 1e3, t.plan * 1e3, t.encode * 1e3, t.codegen * 1e3, t.compile * 1e3,
        t.kernel_origin, t.upload * 1e3);
    fmt::print("registers       {} ({} bytes spilled)\n", t.registers, t.spill_bytes);
    if (t.early_launches > 0)
      fmt::print("launches        {}, each after the first started before the previous ends\n",
                 t.early_launches + 1);
    if (args.verbose)
      fmt::print("build           {}{}: {}\n", t.build,
                 t.build_units.empty() ? "" : fmt::format(" (build kernels: {})", t.build_units),
                 t.build_why);
    if (options.deterministic) {
      if (first_difference < 0) {
        fmt::print("deterministic   y bitwise identical over {} more multiplies\n", kRepeats);
      } else {
        fmt::print("deterministic   y DIFFERS in multiply {} after the first\n", first_difference);
      }
    }
    if (update) {
      fmt::print("update_values   {:.2f} ms, {}; relative error after {:.3e}\n",
                 update->seconds * 1e3,
                 update->replanned ? "re-planned, now " + op.source().kernel_name
                                   : std::string("values gathered in place, no recompile"),
                 update_err);
      if (args.verbose && update->replanned) fmt::print("                {}\n", update->why);
    }
    if (args.verbose) {
      if (first_generic) {
        fmt::print(
            "tiers           multiplies 1-{} on the generic tier (set up in {:.1f} ms; relative "
            "error {:.3e}); the specialised kernel was ready {:.1f} ms after compile() was "
            "called and took over at multiply {}, {:.1f} ms after it\n",
            t.generic_applies, t.generic_setup * 1e3, generic_err, t.specialised_ready * 1e3,
            t.generic_applies + 1, t.switched * 1e3);
      } else {
        fmt::print("tiers           every multiply on the specialised kernel ({})\n",
                   t.kernel_origin == "nvrtc" ? "blocking compile" : "kernel was cached");
      }
    }
    if (args.verbose && !t.cache_note.empty()) fmt::print("kernel cache    {}\n", t.cache_note);
    if (args.verbose) fmt::print("NVRTC log:\n{}\n", t.compile_log);
    fmt::print("{}   (tolerance {:.0e}, {})\n", ok ? "PASSED" : "FAILED", mixed ? mixed_tol : tol,
               to_string(p));
  }
  return ok ? 0 : 1;
}

int run_gen(const std::string& spec, const std::string& out, std::int64_t replicate) {
  CsrMatrix a = gen::from_spec(spec);
  if (replicate > 1) a = gen::replicate(a, replicate);
  if (out.empty() || out == "-") {
    fmt::print("{}", to_matrix_market(a));
  } else {
    write_matrix_market(a, out);
    fmt::print(stderr, "wrote {}: {} x {}, {} nonzeros\n", out, a.nrows, a.ncols, a.nnz());
  }
  return 0;
}

}  // namespace spmvc::cli
