// `spmvc bench`: our kernel against cuSPARSE cusparseSpMV (CSR ALG1 with preprocess, and ALG2)
// in one process, on the same matrix, x and GPU (../shared/docs/BENCHMARKING.md); with --solve,
// the time to solution of a Krylov method with each SpMV.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <span>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "spmvc/bench/bandwidth.hpp"
#include "spmvc/bench/cusparse.hpp"
#include "spmvc/bench/gpu.hpp"
#include "spmvc/bench/krylov.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"

namespace spmvc::cli {

namespace {

namespace fs = std::filesystem;

// What every `spmvc bench --json` document starts with: the matrix, the precision and the GPU.
nlohmann::ordered_json matrix_header(const std::string& label, const CsrMatrix& a, Precision p,
                                     const bench::Gpu& device) {
  nlohmann::ordered_json j;
  j["matrix"] = label;
  j["nrows"] = a.nrows;
  j["ncols"] = a.ncols;
  j["nnz"] = a.nnz();
  j["precision"] = std::string(to_string(p));
  j["gpu"] = device.name;
  j["arch"] = device.arch;
  j["nvrtc"] = bench::nvrtc_version();
  return j;
}

fs::path fresh_temp_dir() {
  std::string pattern = (fs::temp_directory_path() / "spmvc-bench-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr)
    throw InputError(pattern, 0, "cannot create a temporary directory");
  return pattern;
}

struct Measured {
  std::string name;
  double ms = 0;
  double rel_error = 0;
  /// Why a baseline did not run (a cuSPARSE call that failed); empty when it ran.
  std::string error;
  /// How it ran, where that differs from the usual (cuSPARSE without its preprocessing).
  std::string note;
};

}  // namespace

double checked_error(bench::DeviceArray& dy, Precision precision,
                     const std::vector<double>& reference, const std::function<void()>& fn,
                     std::vector<double>* y_out) {
  dy.fill_bytes(0xff);  // NaN poison: unwritten rows fail the check
  fn();
  bench::synchronize();
  std::vector<double> y = dy.download_values(reference.size(), precision);
  const double error = compiler::relative_error(y, reference);
  if (y_out != nullptr) *y_out = std::move(y);
  return error;
}

// Median milliseconds per call of `fn` over `reps` repetitions, each long enough to time.
double median_ms(const std::function<void()>& fn, const BenchArgs& b) {
  for (int i = 0; i < 5; ++i) fn();  // warm-up: module load, first-touch, clocks
  bench::synchronize();
  bench::GpuTimer timer;
  timer.start();
  fn();
  const double single = std::max(1e-3, static_cast<double>(timer.stop_ms()));
  const int calls = static_cast<int>(std::clamp(b.min_rep_ms / single, 3.0, 5000.0));
  std::vector<double> samples;
  for (int r = 0; r < b.repetitions; ++r) {
    timer.start();
    for (int i = 0; i < calls; ++i) fn();
    samples.push_back(static_cast<double>(timer.stop_ms()) / calls);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// The mixed-precision block of `bench --json`: the rounding, y's measured error, the speed-up.
static nlohmann::ordered_json mixed_json(const Plan& plan, MixedPrecision mode,
                                         const compiler::MixedError& err, double tolerance,
                                         double full_ms, const std::string& full_plan,
                                         double mixed_ms) {
  const ValueRounding r = plan.rounding.value_or(ValueRounding{});
  // A kept full-precision plan (Plan::mixed_fallback) is the full-precision plan: speed-up 1.
  const bool fallback = plan.mixed_fallback.has_value();
  return {{"mode", std::string(to_string(mode))},
          {"fallback", fallback},
          {"fallback_why", fallback ? describe(*plan.mixed_fallback) : std::string()},
          {"plan", fmt::format("{} [{}]", plan.format, describe(plan.params))},
          {"value_error", r.value_error},
          {"y_error_bound", r.y_error_bound},
          {"tolerance", tolerance},
          {"max_error", err.componentwise},
          {"normwise_error", err.normwise},
          {"within_bound", err.componentwise <= tolerance},
          {"ms", mixed_ms},
          {"full_precision_plan", full_plan},
          {"full_precision_ms", full_ms},
          {"speedup_vs_full_precision", fallback ? 1.0 : full_ms / mixed_ms}};
}

int run_bench(const MatrixArgs& args, const BenchArgs& b) {
  const bench::Gpu device = bench::open_gpu(0);
  std::string label;
  const CsrMatrix a = load_matrix(args, &label);
  Options options = make_options(args);
  // bench times the specialised kernel and the blocking one-time cost (the generic tier is
  // `spmvc run -v`'s and bench/tiered_first_multiply's to report).
  options.tiered = false;
  const Precision p = options.precision;
  const double vb = value_bytes(p);

  // --skip-bandwidth assumes the figure measured earlier on this GPU model; a model not in the
  // table is measured all the same.
  if (!args.quiet) fmt::print(stderr, "read bandwidth ...\n");
  const bench::AssumedBandwidth bw = bench::assumed_read_bandwidth(device, b.skip_bandwidth);
  const double read_bw = bw.bytes_per_second;
  const bool bw_measured = bw.measured;

  // One-time costs: a cold compile into an empty cache directory, then the same kernel from disk
  // (a new cache object over that directory, as a new process would) and from its memory.
  const fs::path cache_dir = fresh_temp_dir();
  options.cache_dir = cache_dir.string();
  if (!args.quiet) fmt::print(stderr, "compiling (cold) ...\n");
  Operator op = compile(a, options);
  const CompileTimings cold = op.timings();
  bench::KernelCacheProbe disk_cache(cache_dir.string());
  const bench::KernelCacheProbe::Lookup from_disk = disk_cache.get(op.source(), device.arch);
  const bench::KernelCacheProbe::Lookup from_memory = disk_cache.get(op.source(), device.arch);
  fs::remove_all(cache_dir);

  const std::vector<double> x_host = codegen::test_vector(a.ncols, p);
  std::vector<double> ref(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x_host, ref);

  const std::size_t xb = static_cast<std::size_t>(a.ncols) * static_cast<std::size_t>(vb);
  const std::size_t yb = static_cast<std::size_t>(a.nrows) * static_cast<std::size_t>(vb);
  bench::DeviceArray dx(std::max<std::size_t>(xb, 1)), dy(std::max<std::size_t>(yb, 1));
  dx.upload_values(x_host, p);
  std::vector<double> last_y;  // the last check's y
  auto check = [&](const std::function<void()>& fn) {
    return checked_error(dy, p, ref, fn, &last_y);
  };

  // --plan-order: the operator's x and y in its order (Options::plan_order), in arrays of their
  // own (cuSPARSE multiplies dx and dy, in the caller's); its y goes back to the caller's order
  // for the checks below that read it.
  const bool plan_ordered = op.plan_order();
  bench::DeviceArray dx_plan(plan_ordered ? std::max<std::size_t>(xb, 1) : 1);
  bench::DeviceArray dy_plan(plan_ordered ? std::max<std::size_t>(yb, 1) : 1);
  bench::DeviceArray& op_x = plan_ordered ? dx_plan : dx;
  bench::DeviceArray& op_y = plan_ordered ? dy_plan : dy;
  if (plan_ordered) dx_plan.upload_values(into_plan_order(x_host, op.plan_columns()), p);
  const std::vector<double> ref_plan = into_plan_order(ref, op.plan_rows());

  std::vector<Measured> results;
  auto ours = [&] { op.apply(op_x.get(), op_y.get()); };
  results.push_back(
      {"spmvc " + op.plan().format, 0, checked_error(op_y, p, ref_plan, ours, &last_y), {}, {}});
  last_y = out_of_plan_order(last_y, op.plan_rows());
  // The permutations a caller in the plan's order runs once per solve, not per multiply (the
  // timed to_plan_order writes dx_plan's values again).
  double to_plan_ms = 0, from_plan_ms = 0;
  if (plan_ordered) {
    to_plan_ms = median_ms([&] { op.to_plan_order(dx.get(), dx_plan.get()); }, b);
    from_plan_ms = median_ms([&] { op.from_plan_order(dy_plan.get(), dy.get()); }, b);
  }
  // Mixed precision: y's error as the plan's bound states it, and the full-precision plan of
  // the same matrix timed beside it.
  const bool mixed = options.mixed_precision != MixedPrecision::off;
  compiler::MixedError mixed_err;
  double full_ms = 0;
  std::string full_plan;
  if (mixed && op.plan().mixed_fallback) {
    // The planner kept the full-precision plan: nothing else to time beside it.
    mixed_err = compiler::mixed_error(a, x_host, last_y, ref);
    results.back().ms = median_ms(ours, b);
    full_ms = results.back().ms;
    full_plan = fmt::format("{} [{}]", op.plan().format, describe(op.plan().params));
  } else if (mixed) {
    mixed_err = compiler::mixed_error(a, x_host, last_y, ref);
    results.back().ms = median_ms(ours, b);
    Options fo = options;
    fo.mixed_precision = MixedPrecision::off;
    fo.plan_order = false;  // it multiplies dx and dy, in the caller's order
    if (!args.quiet) fmt::print(stderr, "compiling the full-precision plan ...\n");
    const Operator full = compile(a, fo);
    auto fn = [&] { full.apply(dx.get(), dy.get()); };
    results.push_back({"spmvc full precision", 0, check(fn), {}, {}});
    results.back().ms = median_ms(fn, b);
    full_ms = results.back().ms;
    full_plan = fmt::format("{} [{}]", full.plan().format, describe(full.plan().params));
  } else {
    results.back().ms = median_ms(ours, b);
  }

  // Optional sweep over csr thread mappings and unroll depths: the data the heuristics
  // (compiler/heuristics.hpp) are calibrated from.
  std::vector<Measured> sweep;
  if (b.sweep) {
    for (int t : {1, 2, 4, 8, 16, 32}) {
      for (int v : {1, 2, 4}) {
        for (int u : {1, 2}) {
          if (v > 1 && u > 1) continue;  // vector loads already keep V elements in flight
          Options o = options;
          o.format = "csr";
          o.plan_order = false;  // dx and dy, in the caller's order
          o.csr = CsrParams{t, v, 256, u, true, a.nnz() > std::numeric_limits<std::int32_t>::max()};
          const Operator variant = compile(a, o);
          auto fn = [&] { variant.apply(dx.get(), dy.get()); };
          sweep.push_back({fmt::format("T={} V={} u={}", t, v, u), 0, check(fn), {}, {}});
          sweep.back().ms = median_ms(fn, b);
        }
      }
    }
  }

  bench::CusparseCsr cusparse(a, p);
  for (bench::CusparseAlg alg : {bench::CusparseAlg::csr_alg1, bench::CusparseAlg::csr_alg2,
                                 bench::CusparseAlg::sell_alg1}) {
    if (cusparse.not_applicable(alg)) continue;
    const std::string name = fmt::format("cusparse {}", bench::to_string(alg));
    // A baseline that fails (cuSPARSE 12.6 fails preprocessing some matrices past 2^31
    // nonzeros) is reported as such; the other baselines and our result still count.
    try {
      cusparse.prepare(alg, dx.get(), dy.get());
      auto fn = [&] { cusparse.spmv(alg, dx.get(), dy.get(), 1.0, 0.0, nullptr); };
      results.push_back({name, 0, check(fn), {}, cusparse.note(alg)});
      results.back().ms = median_ms(fn, b);
      if (!args.quiet && !results.back().note.empty())
        fmt::print(stderr, "{}: {}\n", name, results.back().note);
    } catch (const DeviceError& e) {
      const double nan = std::numeric_limits<double>::quiet_NaN();
      results.push_back({name, nan, nan, e.what(), {}});
      if (!args.quiet) fmt::print(stderr, "{} failed: {}\n", name, e.what());
    }
  }

  const double nnz = static_cast<double>(a.nnz());
  const double csr_bytes =
      static_cast<double>(a.nrows + 1) * 4 + nnz * (4 + vb) + static_cast<double>(xb + yb);
  const double own_bytes =
      static_cast<double>(op.read_bytes() + static_cast<std::int64_t>(xb + yb));
  const double tol = compiler::result_tolerance(p);
  double best_cusparse = std::numeric_limits<double>::infinity();
  for (const Measured& m : results) {
    if (m.name.rfind("cusparse", 0) == 0 && m.error.empty() && m.rel_error <= tol)
      best_cusparse = std::min(best_cusparse, m.ms);
  }
  const double ours_ms = results[0].ms;
  // The ordering (reorder auto or one asked for) and measure mode's timings are one-time too.
  const double one_time = cold.reorder + cold.measure + cold.inspect + cold.plan + cold.encode +
                          cold.codegen + from_disk.seconds + cold.upload;
  const double saving = (best_cusparse - ours_ms) * 1e-3;
  // Without a cuSPARSE result there is nothing to break even against (reported as never/null).
  const double break_even = saving > 0 && std::isfinite(best_cusparse)
                                ? one_time / saving
                                : std::numeric_limits<double>::infinity();
  const double mixed_tol = compiler::mixed_error_tolerance(op.plan());
  const bool correct = std::all_of(results.begin(), results.end(),
                                   [&](const Measured& m) {
                                     // The mixed-precision result is judged by its bound, below.
                                     if (mixed && &m == &results.front()) return true;
                                     return m.name.rfind("spmvc", 0) != 0 || m.rel_error <= tol;
                                   }) &&
                       (!mixed || mixed_err.componentwise <= mixed_tol);

  if (args.json) {
    nlohmann::ordered_json j = matrix_header(label, a, p, device);
    j["cusparse"] = bench::CusparseCsr::version();
    j["read_bandwidth"] = read_bw;
    j["read_bandwidth_measured"] = bw_measured;
    j["kernel"] = op.source().kernel_name;
    j["plan"] = describe(op.plan().params);
    j["deterministic"] = options.deterministic;
    j["reorder"] = op.plan().reorder;
    j["plan_order"] = plan_ordered;
    if (plan_ordered)
      j["plan_order_permutes"] = {{"to_plan_order_x_ms", to_plan_ms},
                                  {"from_plan_order_y_ms", from_plan_ms}};
    j["results"] = nlohmann::ordered_json::array();
    for (const Measured& m : results) {
      const bool is_ours = m.name.rfind("spmvc", 0) == 0;
      const double s = m.ms * 1e-3;
      if (!m.error.empty()) {
        j["results"].push_back({{"name", m.name}, {"error", m.error}});
        continue;
      }
      j["results"].push_back(
          {{"name", m.name},
           {"ms", m.ms},
           {"relative_error", m.rel_error},
           {"gflops", 2 * nnz / s / 1e9},
           {"csr_equiv_gbs", csr_bytes / s / 1e9},
           {"own_gbs", (is_ours ? own_bytes : csr_bytes) / s / 1e9},
           {"pct_read_bw", 100 * (is_ours ? own_bytes : csr_bytes) / s / read_bw},
           {"speedup_vs_best_cusparse", std::isinf(best_cusparse)
                                            ? nlohmann::ordered_json(nullptr)
                                            : nlohmann::ordered_json(best_cusparse / m.ms)}});
      if (!m.note.empty()) j["results"].back()["note"] = m.note;
    }
    j["one_time"] = {{"reorder", cold.reorder},
                     {"measure", cold.measure},
                     {"inspect", cold.inspect},
                     {"plan", cold.plan},
                     {"encode", cold.encode},
                     {"codegen", cold.codegen},
                     {"compile_cold", cold.compile},
                     {"compile_memory", from_memory.seconds},
                     {"compile_disk", from_disk.seconds},
                     {"upload", cold.upload},
                     {"build", cold.build},
                     {"build_why", cold.build_why},
                     {"build_units", cold.build_units},
                     {"registers", cold.registers},
                     {"spill_bytes", cold.spill_bytes}};
    j["break_even_multiplies"] = std::isinf(break_even) ? nlohmann::ordered_json(nullptr)
                                                        : nlohmann::ordered_json(break_even);
    // The planner's own estimate of the one-time cost (the compile counted cold unless
    // --cached-kernels), beside the measured stages above.
    j["predicted_one_time"] = op.plan().predicted_build_seconds;
    j["multiplies"] = op.plan().multiplies ? nlohmann::ordered_json(*op.plan().multiplies)
                                           : nlohmann::ordered_json(nullptr);
    j["correct"] = correct;
    if (mixed)
      j["mixed_precision"] = mixed_json(op.plan(), options.mixed_precision, mixed_err, mixed_tol,
                                        full_ms, full_plan, ours_ms);
    if (!sweep.empty()) {
      j["sweep"] = nlohmann::ordered_json::array();
      for (const Measured& m : sweep)
        j["sweep"].push_back({{"params", m.name},
                              {"ms", m.ms},
                              {"relative_error", m.rel_error},
                              {"speedup_vs_best_cusparse", best_cusparse / m.ms}});
    }
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{} on {} ({}), {} x {}, {} nnz, {}; read bandwidth {:.0f} GB/s{}\n", label,
               device.name, device.arch, a.nrows, a.ncols, a.nnz(), to_string(p), read_bw / 1e9,
               bw_measured ? " (measured)" : " (assumed for this GPU model)");
    fmt::print("kernel {} [{}], {} registers, {} spill bytes\n", op.source().kernel_name,
               describe(op.plan().params), cold.registers, cold.spill_bytes);
    if (plan_ordered)
      fmt::print(
          "vectors in the plan's order ({}): x and y permuted outside the multiply, "
          "to_plan_order(x) {:.1f} us, from_plan_order(y) {:.1f} us, once per solve\n",
          op.plan().reorder, 1e3 * to_plan_ms, 1e3 * from_plan_ms);
    if (options.deterministic)
      fmt::print(
          "deterministic: the plan's y is bitwise the same run to run (so is CSR ALG2's; "
          "ALG1's is not guaranteed to be)\n");
    fmt::print("{:<22} {:>10} {:>9} {:>10} {:>9} {:>7} {:>8} {:>9}\n", "", "us", "GFLOP/s",
               "CSR GB/s", "own GB/s", "%read", "vs best", "rel err");
    for (const Measured& m : results) {
      if (!m.error.empty()) {
        fmt::print("{:<22} failed: {}\n", m.name, m.error);
        continue;
      }
      const bool is_ours = m.name.rfind("spmvc", 0) == 0;
      const double s = m.ms * 1e-3;
      const double own = (is_ours ? own_bytes : csr_bytes) / s;
      fmt::print("{:<22} {:>10.2f} {:>9.1f} {:>10.1f} {:>9.1f} {:>6.1f}% {:>7.3f}x {:>9.1e}\n",
                 m.name, m.ms * 1e3, 2 * nnz / s / 1e9, csr_bytes / s / 1e9, own / 1e9,
                 100 * own / read_bw, best_cusparse / m.ms, m.rel_error);
    }
    const std::string ordered =
        cold.reorder > 0 ? fmt::format("reorder {:.1f} ms, ", cold.reorder * 1e3) : "";
    const std::string measured =
        cold.measure > 0 ? fmt::format("measure {:.1f} ms, ", cold.measure * 1e3) : "";
    fmt::print(
        "one-time: {}{}inspect {:.1f} ms, plan {:.2f} ms, encode {:.1f} ms, codegen {:.2f} ms, "
        "compile cold {:.1f} ms / memory {:.3f} ms / disk {:.2f} ms, upload {:.1f} ms\n",
        ordered, measured, cold.inspect * 1e3, cold.plan * 1e3, cold.encode * 1e3,
        cold.codegen * 1e3, cold.compile * 1e3, from_memory.seconds * 1e3, from_disk.seconds * 1e3,
        cold.upload * 1e3);
    fmt::print(
        "build: {}{} ({}); upload is {}\n", cold.build,
        cold.build_units.empty() ? "" : fmt::format(", build kernels by {}", cold.build_units),
        cold.build_why,
        cold.build == "device" ? "the CSR's, before the GPU inspects and encodes it"
                               : "the host-encoded arrays'");
    fmt::print(
        "one-time predicted by the planner: {:.1f} ms{}\n", op.plan().predicted_build_seconds * 1e3,
        op.plan().multiplies ? fmt::format(" (ranked for {} multiplies)", *op.plan().multiplies)
                             : "");
    if (std::isinf(best_cusparse)) {
      fmt::print("break-even: none (no cuSPARSE result to compare with)\n");
    } else if (std::isinf(break_even)) {
      fmt::print("break-even: never (not faster than the best cuSPARSE)\n");
    } else {
      fmt::print("break-even: {:.0f} multiplies (cached kernel)\n", break_even);
    }
    for (const Measured& m : sweep)
      fmt::print("  sweep {:<12} {:>10.2f} us {:>7.3f}x  rel err {:.1e}\n", m.name, m.ms * 1e3,
                 best_cusparse / m.ms, m.rel_error);
    if (mixed && op.plan().mixed_fallback) {
      fmt::print(
          "{}\nmixed precision: 1.000x (the full-precision plan {}, {:.2f} us); y's error against "
          "the fp64 reference: max |y_i - (Ax)_i| / (|A||x|)_i = {:.3g} (tolerance {:.3g}), "
          "normwise {:.3g}\n",
          describe(*op.plan().mixed_fallback), full_plan, full_ms * 1e3, mixed_err.componentwise,
          mixed_tol, mixed_err.normwise);
    } else if (mixed) {
      const ValueRounding r = op.plan().rounding.value_or(ValueRounding{});
      fmt::print("{}\n", describe(r));
      fmt::print(
          "mixed precision: {:.3f}x the full-precision plan {} ({:.2f} us); y's error against "
          "the fp64 reference: max |y_i - (Ax)_i| / (|A||x|)_i = {:.3g} (bound {:.3g}), "
          "normwise {:.3g}\n",
          full_ms / ours_ms, full_plan, full_ms * 1e3, mixed_err.componentwise, mixed_tol,
          mixed_err.normwise);
    }
    if (!correct)
      fmt::print("FAILED: spmvc result outside tolerance {:.0e}\n", mixed ? mixed_tol : tol);
  }
  return correct ? 0 : 1;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One side's solve: its result and accuracy, its one-time cost added.
struct SolveSide {
  bench::SolveResult result;
  bench::SolveAccuracy accuracy;
  double setup = 0;
  double total() const { return setup + result.seconds; }
};

// A solver in the plan's order (`order` not empty) gives x in that order: it is put back into the
// caller's before the accuracy is taken, and `permute_seconds` (the GPU's time for b's and x's
// permutations) is added to the solve's.
SolveSide run_side(bench::KrylovSolver& solver, const bench::DeviceSpmv& spmv, std::int64_t n,
                   double tol, double setup, const CsrMatrix& a, const std::vector<double>& rhs,
                   const std::vector<double>& x_true, std::span<const std::int32_t> order = {},
                   double permute_seconds = 0) {
  SolveSide side;
  side.result = solver.solve(spmv, n, tol);
  side.result.seconds += permute_seconds;
  if (!order.empty()) side.result.x = out_of_plan_order(side.result.x, order);
  side.setup = setup;
  side.accuracy = bench::solve_accuracy(a, side.result.x, rhs, x_true);
  return side;
}

nlohmann::ordered_json side_json(const SolveSide& s) {
  nlohmann::ordered_json j;
  j["iterations"] = s.result.iterations;
  j["stop"] = std::string(bench::to_string(s.result.stop));
  j["note"] = bench::describe(s.result.stop);
  auto finite_or_null = [](double v) {
    return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
  };
  j["relative_residual"] = finite_or_null(s.accuracy.relative_residual);
  j["relative_error"] = finite_or_null(s.accuracy.relative_error);
  j["setup_seconds"] = s.setup;
  j["solve_seconds"] = s.result.seconds;
  j["total_seconds"] = s.total();
  return j;
}

}  // namespace

int run_solve(const MatrixArgs& args, const BenchArgs& b, const SolveArgs& solve) {
  using clock = std::chrono::steady_clock;
  const bench::KrylovMethod method = bench::parse_krylov_method(solve.method);
  const std::vector<std::int64_t> counts = bench::parse_iteration_counts(solve.iterations);
  std::string label;
  const CsrMatrix a = load_matrix(args, &label);
  if (a.nrows != a.ncols) {
    throw UsageError(fmt::format("--solve {} needs a square matrix; {} is {} x {}",
                                 bench::to_string(method), label, a.nrows, a.ncols));
  }
  const bench::Gpu device = bench::open_gpu(0);
  Options options = make_options(args);
  // Both solves run their fastest SpMV from the first iteration: the blocking compile.
  options.tiered = false;
  // The operator serves these solves: unless --multiplies says otherwise, the planner weighs its
  // one-time cost (an ordering's host time above all) against the longest solve's multiplies.
  if (!options.multiplies)
    options.multiplies =
        bench::solve_multiplies(method, *std::max_element(counts.begin(), counts.end()));
  const Precision p = options.precision;
  auto progress = [&](std::string_view what) {
    if (!args.quiet) fmt::print(stderr, "{} ...\n", what);
  };

  // b = A x_true in fp64 on the host; the solver rounds it to the value type.
  const std::vector<double> x_true = codegen::test_vector(a.ncols, p);
  std::vector<double> rhs(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x_true, rhs);
  progress("loading the solver's kernels");
  bench::KrylovSolver solver(method, a.nrows, p, rhs, options.cache_dir);
  const void* in = solver.spmv_input();
  void* out = solver.spmv_output();

  // spmvc's one-time cost: compile() to the end of its upload, by the wall clock.
  progress("compiling");
  bench::synchronize();
  auto t0 = clock::now();
  const Operator op = compile(a, options);
  bench::synchronize();
  const double spmvc_setup = seconds_since(t0);
  const CompileTimings& ct = op.timings();

  // --plan-order: spmvc's solve keeps every vector in the operator's order (Options::plan_order),
  // which needs one order for the rows and the columns (reorder auto renumbers the columns; an
  // ordering asked for needs --renumber-columns). b goes into that order and x comes out of it
  // once per solve; both permutations are timed on the GPU and counted in spmvc's solve.
  const bool plan_ordered = op.plan_order();
  if (plan_ordered && !std::ranges::equal(op.plan_rows(), op.plan_columns())) {
    throw UsageError(fmt::format(
        "--solve {} with --plan-order needs the rows and columns of {} in one order; the plan "
        "reorders ({}) without renumbering the columns: add --renumber-columns",
        bench::to_string(method), label, op.plan().reorder));
  }
  const std::span<const std::int32_t> order = op.plan_rows();
  std::optional<bench::KrylovSolver> plan_solver;
  double to_plan_ms = 0, from_plan_ms = 0;
  const std::size_t vector_bytes =
      static_cast<std::size_t>(a.nrows) * (p == Precision::f64 ? 8 : 4);
  if (plan_ordered) {
    plan_solver.emplace(method, a.nrows, p, into_plan_order(rhs, order), options.cache_dir);
    bench::DeviceArray caller(vector_bytes), plan(vector_bytes);
    caller.upload_values(rhs, p);
    to_plan_ms = median_ms([&] { op.to_plan_order(caller.get(), plan.get()); }, b);
    from_plan_ms = median_ms([&] { op.from_plan_order(plan.get(), caller.get()); }, b);
  }
  bench::KrylovSolver& spmvc_solver = plan_ordered ? *plan_solver : solver;
  // The operator's A x_true against the host's b, as `spmvc bench` checks a multiply (both in the
  // plan's order where the operator's vectors are).
  const double spmv_error = [&] {
    bench::DeviceArray dx(vector_bytes), dy(vector_bytes);
    dx.upload_values(plan_ordered ? into_plan_order(x_true, order) : x_true, p);
    return checked_error(dy, p, plan_ordered ? into_plan_order(rhs, order) : rhs,
                         [&] { op.apply(dx.get(), dy.get()); });
  }();

  // cuSPARSE's: the upload of the CSR arrays and the handle, then the descriptor, buffer and
  // preprocessing of the faster of ALG1 and ALG2 (both timed as `spmvc bench` times them).
  progress("cuSPARSE upload and preprocessing");
  t0 = clock::now();
  bench::CusparseCsr cusparse(a, p);
  bench::synchronize();
  const double cusparse_upload = seconds_since(t0);
  struct AlgTime {
    bench::CusparseAlg alg;
    double prepare = 0;
    double spmv_ms = 0;
  };
  std::vector<AlgTime> algs;
  for (bench::CusparseAlg alg : {bench::CusparseAlg::csr_alg1, bench::CusparseAlg::csr_alg2}) {
    if (cusparse.not_applicable(alg)) continue;
    t0 = clock::now();
    cusparse.prepare(alg, in, out);
    bench::synchronize();
    AlgTime t{alg, seconds_since(t0), 0};
    t.spmv_ms = median_ms([&] { cusparse.spmv(alg, in, out, 1.0, 0.0, nullptr); }, b);
    algs.push_back(t);
  }
  const AlgTime best =
      *std::min_element(algs.begin(), algs.end(),
                        [](const AlgTime& x, const AlgTime& y) { return x.spmv_ms < y.spmv_ms; });
  const double cusparse_setup = cusparse_upload + best.prepare;
  const double spmvc_spmv_ms =
      median_ms([&] { op.apply(spmvc_solver.spmv_input(), spmvc_solver.spmv_output()); }, b);

  const bench::DeviceSpmv ours = [&](const void* x, void* y) { op.apply(x, y); };
  const bench::DeviceSpmv theirs = [&](const void* x, void* y) {
    cusparse.spmv(best.alg, x, y, 1.0, 0.0, nullptr);
  };
  struct Run {
    std::int64_t asked = 0;
    SolveSide spmvc, cusparse;
  };
  std::vector<Run> runs;
  for (std::int64_t n : counts) {
    progress(fmt::format("{} iterations", n));
    Run r;
    r.asked = n;
    r.spmvc = run_side(spmvc_solver, ours, n, solve.tol, spmvc_setup, a, rhs, x_true,
                       plan_ordered ? order : std::span<const std::int32_t>{},
                       (to_plan_ms + from_plan_ms) * 1e-3);
    r.cusparse = run_side(solver, theirs, n, solve.tol, cusparse_setup, a, rhs, x_true);
    runs.push_back(std::move(r));
  }
  const bool correct = spmv_error <= compiler::result_tolerance(p);

  if (args.json) {
    nlohmann::ordered_json j = matrix_header(label, a, p, device);
    j["method"] = std::string(bench::to_string(method));
    j["tol"] = solve.tol;
    j["check_every"] = bench::kKrylovCheckEvery;
    j["cusparse_version"] = bench::CusparseCsr::version();
    j["solver_kernels"] = {{"seconds", solver.kernel_load_seconds()},
                           {"origin", solver.kernel_origin()}};
    j["spmvc"] = {{"kernel", op.source().kernel_name},
                  {"plan", describe(op.plan().params)},
                  {"kernel_origin", ct.kernel_origin},
                  {"cache_note", ct.cache_note},
                  {"spmv_ms", spmvc_spmv_ms},
                  {"spmv_relative_error", spmv_error},
                  {"reorder", op.plan().reorder},
                  {"planned_multiplies", *options.multiplies},
                  {"plan_order", plan_ordered},
                  {"setup_seconds", spmvc_setup},
                  {"setup",
                   {{"reorder", ct.reorder},
                    {"inspect", ct.inspect},
                    {"plan", ct.plan},
                    {"measure", ct.measure},
                    {"encode", ct.encode},
                    {"codegen", ct.codegen},
                    {"compile", ct.compile},
                    {"upload", ct.upload}}}};
    if (plan_ordered)
      j["spmvc"]["plan_order_permutes"] = {{"to_plan_order_b_ms", to_plan_ms},
                                           {"from_plan_order_x_ms", from_plan_ms}};
    nlohmann::ordered_json alg_ms;
    for (const AlgTime& t : algs) alg_ms[std::string(bench::to_string(t.alg))] = t.spmv_ms;
    j["cusparse"] = {{"alg", std::string(bench::to_string(best.alg))},
                     {"spmv_ms", best.spmv_ms},
                     {"spmv_ms_by_alg", alg_ms},
                     {"setup_seconds", cusparse_setup},
                     {"setup", {{"upload", cusparse_upload}, {"prepare", best.prepare}}}};
    j["runs"] = nlohmann::ordered_json::array();
    for (const Run& r : runs) {
      j["runs"].push_back({{"iterations", r.asked},
                           {"spmvc", side_json(r.spmvc)},
                           {"cusparse", side_json(r.cusparse)},
                           {"ratio", r.cusparse.total() / r.spmvc.total()},
                           {"solve_ratio", r.cusparse.result.seconds / r.spmvc.result.seconds}});
    }
    j["correct"] = correct;
    fmt::print("{}\n", j.dump(2));
    return correct ? 0 : 1;
  }

  fmt::print(
      "{} on {} ({}), {} x {}, {} nnz, {}; {} from x0 = 0, b = A x_true, {}\n", label, device.name,
      device.arch, a.nrows, a.ncols, a.nnz(), to_string(p), bench::to_string(method),
      solve.tol > 0 ? fmt::format("tol {:g}", solve.tol) : std::string("tol 0 (every iteration)"));
  fmt::print(
      "spmvc {} [{}]: setup {:.3f} s (inspect {:.1f} ms, plan {:.1f} ms, encode {:.1f} ms, "
      "kernel {:.1f} ms from {}, upload {:.1f} ms); SpMV {:.2f} us; planned for {} multiplies "
      "({}), reorder {}\n",
      op.plan().format, describe(op.plan().params), spmvc_setup, ct.inspect * 1e3,
      (ct.plan + ct.measure + ct.reorder) * 1e3, ct.encode * 1e3, (ct.codegen + ct.compile) * 1e3,
      ct.kernel_origin, ct.upload * 1e3, spmvc_spmv_ms * 1e3, *options.multiplies,
      args.multiplies ? "--multiplies" : "the longest solve", op.plan().reorder);
  if (plan_ordered) {
    fmt::print(
        "spmvc solves in the plan's order ({}): b into it {:.1f} us and x out of it {:.1f} us "
        "on the GPU, once per solve, counted in its solve time\n",
        op.plan().reorder, to_plan_ms * 1e3, from_plan_ms * 1e3);
  }
  fmt::print(
      "cuSPARSE {} {}: setup {:.3f} s (upload {:.1f} ms, descriptor, buffer and preprocess "
      "{:.1f} ms); SpMV {:.2f} us\n",
      bench::CusparseCsr::version(), bench::to_string(best.alg), cusparse_setup,
      cusparse_upload * 1e3, best.prepare * 1e3, best.spmv_ms * 1e3);
  fmt::print("{:<24} {:<8} {:>11} {:>12} {:>12} {:>7} {:>10} {:>10}\n", "matrix", "method",
             "iterations", "cuSPARSE s", "spmvc s", "ratio", "res cuSP", "res spmvc");
  auto iterations = [](const Run& r) {
    const std::int64_t mine = r.spmvc.result.iterations, other = r.cusparse.result.iterations;
    return mine == other ? fmt::format("{}", mine) : fmt::format("{}/{}", other, mine);
  };
  for (const Run& r : runs) {
    fmt::print("{:<24} {:<8} {:>11} {:>12.4f} {:>12.4f} {:>6.2f}x {:>10.1e} {:>10.1e}\n", label,
               bench::to_string(method), iterations(r), r.cusparse.total(), r.spmvc.total(),
               r.cusparse.total() / r.spmvc.total(), r.cusparse.accuracy.relative_residual,
               r.spmvc.accuracy.relative_residual);
    const std::pair<const char*, const SolveSide*> sides[] = {{"cuSPARSE", &r.cusparse},
                                                              {"spmvc", &r.spmvc}};
    for (const auto& [who, side] : sides) {
      if (bench::is_breakdown(side->result.stop)) {
        fmt::print("  {} of {} iterations: {} (after {})\n", who, r.asked,
                   bench::describe(side->result.stop), side->result.iterations);
      }
    }
  }
  fmt::print(
      "times: setup + solve; cuSPARSE's setup is its upload and preprocessing, spmvc's is "
      "compile(); ratio = cuSPARSE / spmvc; iterations cuSPARSE/spmvc where they differ; res: "
      "||b - A x|| / ||b||; the stop code is read every {} iterations\n",
      bench::kKrylovCheckEvery);
  if (!correct) {
    fmt::print("FAILED: spmvc's A x_true is {:.1e} from the host's (tolerance {:.0e})\n",
               spmv_error, compiler::result_tolerance(p));
  }
  return correct ? 0 : 1;
}

}  // namespace spmvc::cli

namespace spmvc::cli {

namespace {

// Values of `precision`'s type on the device.
bench::DeviceArray device_values(std::span<const double> v, Precision precision) {
  if (precision == Precision::f64) {
    bench::DeviceArray d(std::max<std::size_t>(v.size() * 8, 1));
    d.upload(v.data(), v.size() * 8);
    return d;
  }
  const std::vector<float> f(v.begin(), v.end());
  bench::DeviceArray d(std::max<std::size_t>(f.size() * 4, 1));
  d.upload(f.data(), f.size() * 4);
  return d;
}

// Median seconds of `reps` calls of update(i) (update_values is synchronous: wall time is its
// cost), i counting from 0.
double median_update_seconds(int reps, const std::function<ValueUpdate(int)>& update,
                             int* replans) {
  std::vector<double> s;
  for (int i = 0; i < reps; ++i) {
    const ValueUpdate u = update(i);
    if (u.replanned) ++*replans;
    s.push_back(u.seconds);
  }
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

}  // namespace

int run_update_bench(const MatrixArgs& args, const BenchArgs& b) {
  const bench::Gpu device = bench::open_gpu(0);
  std::string label;
  const CsrMatrix a = load_matrix(args, &label);
  const Options options = make_options(args);
  const Precision p = options.precision;
  // Two value sets that alternate: the matrix's own, and updated_values of them.
  const std::vector<double> old_values = a.values;
  const std::vector<double> new_values = updated_values(a.values);
  const std::vector<double>* sets[] = {&new_values, &old_values};
  const int reps = std::max(3, b.repetitions);

  if (!args.quiet) fmt::print(stderr, "compiling ...\n");
  Operator op = compile(a, options);
  const std::string plan_before = describe(op.plan().params);
  // The first update traces the value order (and may re-plan, when the new values do not fit
  // the plan's value coding); it is reported apart.
  const ValueUpdate first = op.update_values(new_values);
  int host_replans = 0, device_replans = 0;
  const double host_s = median_update_seconds(
      reps, [&](int i) { return op.update_values(*sets[(i + 1) % 2]); }, &host_replans);
  const bench::DeviceArray d_old = device_values(old_values, p),
                           d_new = device_values(new_values, p);
  const void* d_sets[] = {d_new.get(), d_old.get()};
  const double device_s = median_update_seconds(
      reps, [&](int i) { return op.update_values(d_sets[(i + 1) % 2]); }, &device_replans);

  // The operator holds the last set given (old_values when reps is even): check a multiply.
  const std::vector<double>& last = *sets[reps % 2];
  CsrMatrix now = a;
  now.values = last;
  const std::vector<double> x_host = codegen::test_vector(a.ncols, p);
  std::vector<double> y(static_cast<std::size_t>(a.nrows), 0.0), ref(y.size());
  op.apply_host(x_host, y);
  compiler::csr_reference_spmv(now, x_host, ref);
  const double err = compiler::relative_error(y, ref);
  const bool correct = err <= compiler::result_tolerance(p);

  // One multiply on device vectors, for scale.
  const auto vb = static_cast<std::size_t>(value_bytes(p));
  bench::DeviceArray dx(std::max<std::size_t>(static_cast<std::size_t>(a.ncols) * vb, 1));
  bench::DeviceArray dy(std::max<std::size_t>(static_cast<std::size_t>(a.nrows) * vb, 1));
  dx.fill_bytes(0);
  const double multiply_ms = median_ms([&] { op.apply(dx.get(), dy.get()); }, b);

  // From device arrays (compile(DeviceCsr)): an update builds again on the GPU.
  std::optional<double> device_build_s;
  std::string device_build_note;
  if (a.nnz() <= std::numeric_limits<std::int32_t>::max()) {
    const std::vector<std::int32_t> row_ptr(a.row_ptr.begin(), a.row_ptr.end());
    bench::DeviceArray d_row(row_ptr.size() * 4),
        d_col(std::max<std::size_t>(a.col_idx.size() * 4, 1));
    d_row.upload(row_ptr.data(), row_ptr.size() * 4);
    d_col.upload(a.col_idx.data(), a.col_idx.size() * 4);
    const DeviceCsr dcsr{a.nrows,
                         a.ncols,
                         a.nnz(),
                         static_cast<const std::int32_t*>(d_row.get()),
                         static_cast<const std::int32_t*>(d_col.get()),
                         d_old.get()};
    Options dopt;
    dopt.precision = p;
    dopt.deterministic = options.deterministic;
    Operator dop = compile(dcsr, dopt);
    (void)dop.update_values(d_sets[0]);  // warm: the build's kernels are loaded
    int replans = 0;
    device_build_s = median_update_seconds(
        reps, [&](int i) { return dop.update_values(d_sets[(i + 1) % 2]); }, &replans);
    device_build_note = fmt::format("{} [{}]", dop.plan().format, describe(dop.plan().params));
  }

  if (args.json) {
    nlohmann::ordered_json j = matrix_header(label, a, p, device);
    j["plan"] = plan_before;
    j["first_update"] = {{"seconds", first.seconds},
                         {"replanned", first.replanned},
                         {"why", first.why},
                         {"plan_after", describe(op.plan().params)}};
    j["host_values_ms"] = host_s * 1e3;
    j["device_values_ms"] = device_s * 1e3;
    j["replans"] = host_replans + device_replans;
    j["multiply_ms"] = multiply_ms;
    j["device_build_update_ms"] = device_build_s ? nlohmann::ordered_json(*device_build_s * 1e3)
                                                 : nlohmann::ordered_json(nullptr);
    j["device_build_plan"] = device_build_note;
    j["relative_error"] = err;
    j["correct"] = correct;
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{} on {} ({}), {} x {}, {} nnz, {}\n", label, device.name, device.arch, a.nrows,
               a.ncols, a.nnz(), to_string(p));
    fmt::print("plan                      {} [{}]\n", op.plan().format, plan_before);
    fmt::print("first update              {:.2f} ms (traces the value order){}\n",
               first.seconds * 1e3, first.replanned ? "; re-planned: " + first.why : "");
    fmt::print("update_values, host span  {:.3f} ms (median of {})\n", host_s * 1e3, reps);
    fmt::print("update_values, device ptr {:.3f} ms (median of {})\n", device_s * 1e3, reps);
    if (device_build_s)
      fmt::print("from device arrays        {:.3f} ms per update ({})\n", *device_build_s * 1e3,
                 device_build_note);
    fmt::print("one multiply              {:.3f} ms\n", multiply_ms);
    if (host_replans + device_replans > 0)
      fmt::print("re-planned in {} of the timed updates\n", host_replans + device_replans);
    fmt::print("{}   (relative error after the updates {:.1e})\n", correct ? "PASSED" : "FAILED",
               err);
  }
  return correct ? 0 : 1;
}

}  // namespace spmvc::cli
