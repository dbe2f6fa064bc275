#include "commands.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "codegen/codegen.hpp"
#include "codegen/emit.hpp"
#include "codegen/test_vector.hpp"
#include "compiler.hpp"
#include "spmvc/generators.hpp"
#ifdef SPMVC_HAVE_TOOLING
#include "formats/format.hpp"
#include "tooling/explain.hpp"
#include "tooling/flatten.hpp"
#endif

namespace spmvc::cli {

namespace {

compiler::PlanOptions plan_options(const Options& o) {
  compiler::PlanOptions p;
  p.precision = o.precision;
  p.format = o.format;
  p.csr = o.csr;
  p.params = o.params;
  return p;
}

double tolerance(Precision p) { return p == Precision::f64 ? 1e-12 : 1e-5; }

}  // namespace

int run_inspect(const MatrixArgs& args) {
  const CsrMatrix a = load_matrix(args);
  const Profile profile = inspect(a);
  fmt::print("{}\n", args.json ? to_json(profile) : to_report(profile));
  if (args.blocks) fmt::print("{}", to_report(inspect_blocks(a)));
  return 0;
}

int run_plan(const MatrixArgs& args) {
  const CsrMatrix a = load_matrix(args);
  const Profile profile = inspect(a);
  const Plan plan = compiler::make_plan(profile, plan_options(make_options(args)));
  if (args.json) {
    fmt::print("{}\n", to_json(plan));
  } else {
    fmt::print("{}", to_report(plan));
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
  tooling::ExplainReport report;
  const std::filesystem::path path = args.matrix;
  if (path.extension() == ".cu" || path.extension() == ".cuh") {
    // A kernel on disk, e.g. from `spmvc emit`: its headers are read from beside it.
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(args.matrix, 0, "cannot read file");
    std::stringstream text;
    text << in.rdbuf();
    KernelSource src;
    src.source = text.str();
    src.file_name = path.filename().string();
    const std::string dir = std::filesystem::absolute(path).parent_path().string();
    options.include_dirs.push_back(dir);
    report = tooling::explain(src, options);
  } else {
    const CsrMatrix a = load_matrix(args);
    const Profile profile = inspect(a);
    const Plan plan = compiler::make_plan(profile, plan_options(make_options(args)));
    const Encoded encoded = compiler::encode(a, plan);
    const KernelSource src = codegen::generate(plan, encoded, profile);
    std::int64_t stored = 0;
    for (const auto& array : encoded.arrays) stored = std::max(stored, array.count());
    options.shape = tooling::MatrixShape{a.nrows, a.nnz(), stored};
    report = tooling::explain(src, options);
    const formats::Cost cost =
        formats::find_format(plan.format).cost(profile, plan.params, plan.precision);
    report.planner_bytes_per_nonzero = cost.matrix_bytes / static_cast<double>(a.nnz());
  }
  fmt::print("{}\n", args.json ? tooling::to_json(report) : tooling::to_report(report));
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
  const Profile profile = inspect(a);
  const Options options = make_options(args);
  const Plan plan = compiler::make_plan(profile, plan_options(options));
  const Encoded encoded = compiler::encode(a, plan);
  const KernelSource generated = codegen::generate(plan, encoded, profile);
  // The flattened kernel replaces the template one: same entry point, so the harness and the
  // runtime load it unchanged.
  const KernelSource source =
      emit.flatten ? flatten_kernel(generated, emit.inline_helpers) : generated;
  const std::vector<double> x = codegen::test_vector(a.ncols, plan.precision);
  std::vector<double> y(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x, y);
  const auto written = codegen::emit(plan, encoded, source, y, out_dir);
  if (args.json) {
    nlohmann::ordered_json j;
    j["kernel"] = source.kernel_name;
    j["files"] = nlohmann::ordered_json::array();
    for (const auto& p : written) j["files"].push_back(p.string());
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("emitted {} ({}) into {}:\n", source.kernel_name, describe(plan.params), out_dir);
    for (const auto& p : written) fmt::print("  {}\n", p.string());
    fmt::print(
        "build and run offline:\n  cd {} && nvcc -O3 -std=c++17 -arch=sm_90 -I. harness.cu "
        "-o harness && ./harness\n",
        out_dir);
  }
  return 0;
}

int run_run(const MatrixArgs& args) {
  const CsrMatrix a = load_matrix(args);
  const Options options = make_options(args);
  Operator op = compile(a, options);
  const Precision p = op.plan().precision;
  const std::vector<double> x = codegen::test_vector(a.ncols, p);
  std::vector<double> y(static_cast<std::size_t>(a.nrows),
                        std::numeric_limits<double>::quiet_NaN());
  op.apply_host(x, y);
  std::vector<double> ref(y.size());
  compiler::csr_reference_spmv(a, x, ref);
  const double err = compiler::relative_error(y, ref);
  double checksum = 0;
  for (double v : y) checksum += v;
  const bool ok = err <= tolerance(p) && !std::isnan(err);
  const CompileTimings& t = op.timings();
  if (args.json) {
    nlohmann::ordered_json j;
    j["kernel"] = op.source().kernel_name;
    j["plan"] = nlohmann::json::parse(to_json(op.plan()));
    j["relative_error"] = err;
    j["tolerance"] = tolerance(p);
    j["checksum"] = checksum;
    j["passed"] = ok;
    j["timings"] = {{"inspect", t.inspect},
                    {"plan", t.plan},
                    {"encode", t.encode},
                    {"codegen", t.codegen},
                    {"compile", t.compile},
                    {"upload", t.upload},
                    {"kernel_origin", t.kernel_origin},
                    {"registers", t.registers},
                    {"spill_bytes", t.spill_bytes}};
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("kernel          {}\n", op.source().kernel_name);
    fmt::print("relative error  {:.3e}\n", err);
    fmt::print("checksum        {:.17g}\n", checksum);
    fmt::print(
        "one-time cost   inspect {:.1f} ms, plan {:.1f} ms, encode {:.1f} ms, codegen {:.1f} ms, "
        "compile {:.1f} ms ({}), upload {:.1f} ms\n",
        t.inspect * 1e3, t.plan * 1e3, t.encode * 1e3, t.codegen * 1e3, t.compile * 1e3,
        t.kernel_origin, t.upload * 1e3);
    fmt::print("registers       {} ({} bytes spilled)\n", t.registers, t.spill_bytes);
    if (args.verbose) fmt::print("NVRTC log:\n{}\n", t.compile_log);
    fmt::print("{}   (tolerance {:.0e}, {})\n", ok ? "PASSED" : "FAILED", tolerance(p),
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
