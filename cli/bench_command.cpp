// `spmvc bench`: our kernel against cuSPARSE cusparseSpMV (CSR ALG1 with preprocess, and ALG2)
// in one process, on the same matrix, x and GPU (../shared/docs/BENCHMARKING.md).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "spmvc/bench/bandwidth.hpp"
#include "spmvc/bench/cusparse.hpp"
#include "spmvc/bench/gpu.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"

namespace spmvc::cli {

namespace {

namespace fs = std::filesystem;

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
};

}  // namespace

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

int run_bench(const MatrixArgs& args, const BenchArgs& b) {
  const bench::Gpu device = bench::open_gpu(0);
  std::string label;
  const CsrMatrix a = load_matrix(args, &label);
  Options options = make_options(args);
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
  if (p == Precision::f64) {
    dx.upload(x_host.data(), xb);
  } else {
    std::vector<float> xf(x_host.begin(), x_host.end());
    dx.upload(xf.data(), xb);
  }
  auto check = [&](const std::function<void()>& fn) {
    dy.fill_bytes(0xff);  // NaN poison: unwritten rows fail the check
    fn();
    bench::synchronize();
    std::vector<double> y(static_cast<std::size_t>(a.nrows));
    if (p == Precision::f64) {
      dy.download(y.data(), yb);
    } else {
      std::vector<float> yf(y.size());
      dy.download(yf.data(), yb);
      std::copy(yf.begin(), yf.end(), y.begin());
    }
    return compiler::relative_error(y, ref);
  };

  std::vector<Measured> results;
  auto ours = [&] { op.apply(dx.get(), dy.get()); };
  results.push_back({"spmvc " + op.plan().format, 0, check(ours)});
  results.back().ms = median_ms(ours, b);

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
          o.csr = CsrParams{t, v, 256, u, true, a.nnz() > std::numeric_limits<std::int32_t>::max()};
          const Operator variant = compile(a, o);
          auto fn = [&] { variant.apply(dx.get(), dy.get()); };
          sweep.push_back({fmt::format("T={} V={} u={}", t, v, u), 0, check(fn)});
          sweep.back().ms = median_ms(fn, b);
        }
      }
    }
  }

  bench::CusparseCsr cusparse(a, p);
  for (bench::CusparseAlg alg : {bench::CusparseAlg::csr_alg1, bench::CusparseAlg::csr_alg2,
                                 bench::CusparseAlg::sell_alg1}) {
    if (cusparse.not_applicable(alg)) continue;
    cusparse.prepare(alg, dx.get(), dy.get());
    auto fn = [&] { cusparse.spmv(alg, dx.get(), dy.get(), 1.0, 0.0, nullptr); };
    results.push_back({fmt::format("cusparse {}", bench::to_string(alg)), 0, check(fn)});
    results.back().ms = median_ms(fn, b);
  }

  const double nnz = static_cast<double>(a.nnz());
  const double csr_bytes =
      static_cast<double>(a.nrows + 1) * 4 + nnz * (4 + vb) + static_cast<double>(xb + yb);
  const double own_bytes =
      static_cast<double>(op.device_bytes() + static_cast<std::int64_t>(xb + yb));
  const double tol = compiler::result_tolerance(p);
  double best_cusparse = std::numeric_limits<double>::infinity();
  for (const Measured& m : results) {
    if (m.name.rfind("cusparse", 0) == 0 && m.rel_error <= tol)
      best_cusparse = std::min(best_cusparse, m.ms);
  }
  const double ours_ms = results[0].ms;
  const double one_time =
      cold.inspect + cold.plan + cold.encode + cold.codegen + from_disk.seconds + cold.upload;
  const double saving = (best_cusparse - ours_ms) * 1e-3;
  const double break_even =
      saving > 0 ? one_time / saving : std::numeric_limits<double>::infinity();
  const bool correct = std::all_of(results.begin(), results.end(), [&](const Measured& m) {
    return m.name.rfind("spmvc", 0) != 0 || m.rel_error <= tol;
  });

  if (args.json) {
    nlohmann::ordered_json j;
    j["matrix"] = label;
    j["nrows"] = a.nrows;
    j["ncols"] = a.ncols;
    j["nnz"] = a.nnz();
    j["precision"] = std::string(to_string(p));
    j["gpu"] = device.name;
    j["arch"] = device.arch;
    j["nvrtc"] = bench::nvrtc_version();
    j["cusparse"] = bench::CusparseCsr::version();
    j["read_bandwidth"] = read_bw;
    j["read_bandwidth_measured"] = bw_measured;
    j["kernel"] = op.source().kernel_name;
    j["plan"] = describe(op.plan().params);
    j["results"] = nlohmann::ordered_json::array();
    for (const Measured& m : results) {
      const bool is_ours = m.name.rfind("spmvc", 0) == 0;
      const double s = m.ms * 1e-3;
      j["results"].push_back(
          {{"name", m.name},
           {"ms", m.ms},
           {"relative_error", m.rel_error},
           {"gflops", 2 * nnz / s / 1e9},
           {"csr_equiv_gbs", csr_bytes / s / 1e9},
           {"own_gbs", (is_ours ? own_bytes : csr_bytes) / s / 1e9},
           {"pct_read_bw", 100 * (is_ours ? own_bytes : csr_bytes) / s / read_bw},
           {"speedup_vs_best_cusparse", best_cusparse / m.ms}});
    }
    j["one_time"] = {{"inspect", cold.inspect},
                     {"plan", cold.plan},
                     {"encode", cold.encode},
                     {"codegen", cold.codegen},
                     {"compile_cold", cold.compile},
                     {"compile_memory", from_memory.seconds},
                     {"compile_disk", from_disk.seconds},
                     {"upload", cold.upload},
                     {"registers", cold.registers},
                     {"spill_bytes", cold.spill_bytes}};
    j["break_even_multiplies"] = std::isinf(break_even) ? nlohmann::ordered_json(nullptr)
                                                        : nlohmann::ordered_json(break_even);
    j["correct"] = correct;
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
    fmt::print("{:<22} {:>10} {:>9} {:>10} {:>9} {:>7} {:>8} {:>9}\n", "", "us", "GFLOP/s",
               "CSR GB/s", "own GB/s", "%read", "vs best", "rel err");
    for (const Measured& m : results) {
      const bool is_ours = m.name.rfind("spmvc", 0) == 0;
      const double s = m.ms * 1e-3;
      const double own = (is_ours ? own_bytes : csr_bytes) / s;
      fmt::print("{:<22} {:>10.2f} {:>9.1f} {:>10.1f} {:>9.1f} {:>6.1f}% {:>7.3f}x {:>9.1e}\n",
                 m.name, m.ms * 1e3, 2 * nnz / s / 1e9, csr_bytes / s / 1e9, own / 1e9,
                 100 * own / read_bw, best_cusparse / m.ms, m.rel_error);
    }
    fmt::print(
        "one-time: inspect {:.1f} ms, plan {:.2f} ms, encode {:.1f} ms, codegen {:.2f} ms, "
        "compile cold {:.1f} ms / memory {:.3f} ms / disk {:.2f} ms, upload {:.1f} ms\n",
        cold.inspect * 1e3, cold.plan * 1e3, cold.encode * 1e3, cold.codegen * 1e3,
        cold.compile * 1e3, from_memory.seconds * 1e3, from_disk.seconds * 1e3, cold.upload * 1e3);
    if (std::isinf(break_even)) {
      fmt::print("break-even: never (not faster than the best cuSPARSE)\n");
    } else {
      fmt::print("break-even: {:.0f} multiplies (cached kernel)\n", break_even);
    }
    for (const Measured& m : sweep)
      fmt::print("  sweep {:<12} {:>10.2f} us {:>7.3f}x  rel err {:.1e}\n", m.name, m.ms * 1e3,
                 best_cusparse / m.ms, m.rel_error);
    if (!correct) fmt::print("FAILED: spmvc result outside tolerance {:.0e}\n", tol);
  }
  return correct ? 0 : 1;
}

}  // namespace spmvc::cli
