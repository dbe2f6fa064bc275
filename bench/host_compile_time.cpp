// One-time host cost of compile() without a GPU: inspection (both depths), planning, and the
// encoder of each format, at several host thread counts (spmvc/parallel.hpp). With --gpu, the
// same matrix through compile(CsrMatrix) on the device instead, stage by stage, built by the
// host pipeline (Options::build host) and by the GPU build (device): upload, inspect, plan,
// encode, codegen and kernel load, the kernels cached (a first compile warms the cache).
//
//   spmvc_bench_host_compile SPEC [THREADS...] [--format NAME]...
//   spmvc_bench_host_compile SPEC --gpu [--format NAME] [--precision f64|f32]
//
// SPEC is a generator spec or Matrix Market file as the CLI takes it (e.g. stencil27:n=85,
// about 16.6M nonzeros). THREADS defaults to 1 and the machine's core count. Each figure is the
// best of three runs. Encoded arrays are compared across thread counts (they must be identical).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "formats/format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/parallel.hpp"
#include "spmvc/profile.hpp"
#include "spmvc/spmvc.hpp"

namespace {

double best_of(int runs, const std::function<void()>& fn) {
  double best = 1e30;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

spmvc::CsrMatrix load(const std::string& spec) {
  try {
    return spmvc::gen::from_spec(spec);
  } catch (const spmvc::InputError&) {
    return spmvc::read_matrix_market(spec);
  }
}

// --gpu: compile(CsrMatrix)'s one-time stages on the device for each build path, best of three
// (stage by stage) after a compile that fills the kernel cache. Returns the exit code.
int gpu_stages(const spmvc::CsrMatrix& a, const std::string& format, spmvc::Precision precision) {
  std::string why;
  if (!spmvc::device_available(&why)) {
    std::fprintf(stderr, "--gpu: %s\n", why.c_str());
    return 1;
  }
  constexpr int kRuns = 3;
  fmt::print("{:<8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  {}\n", "build", "upload", "inspect",
             "plan", "encode", "codegen", "load", "total", "plan picked (ms)");
  for (const spmvc::BuildMode mode : {spmvc::BuildMode::host, spmvc::BuildMode::device}) {
    spmvc::Options o;
    o.precision = precision;
    o.format = format;
    o.tiered = false;
    o.build = mode;
    spmvc::CompileTimings best;
    double best_total = 1e30;
    std::string picked;
    {
      const spmvc::Operator warm = spmvc::compile(a, o);  // the kernels into the cache
      (void)warm;
    }
    for (int i = 0; i < kRuns; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const spmvc::Operator op = spmvc::compile(a, o);
      const double total =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (total < best_total) {
        best_total = total;
        best = op.timings();
        picked = fmt::format("{} [{}]", op.plan().format, spmvc::describe(op.plan().params));
      }
    }
    fmt::print("{:<8} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.2f}  {}\n",
               best.build, best.upload * 1e3, best.inspect * 1e3, best.plan * 1e3,
               best.encode * 1e3, best.codegen * 1e3, best.compile * 1e3, best_total * 1e3, picked);
    fmt::print(
        "         {}{}\n", best.build_why,
        best.build_units.empty() ? "" : fmt::format("; build kernels: {}", best.build_units));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::fputs(
        "usage: spmvc_bench_host_compile SPEC [THREADS...] [--format NAME]...\n"
        "       spmvc_bench_host_compile SPEC --gpu [--format NAME] [--precision f64|f32]\n",
        stderr);
    return 2;
  }
  const std::string spec = argv[1];
  std::vector<int> threads;
  std::vector<std::string> formats;
  bool gpu = false;
  spmvc::Precision precision = spmvc::Precision::f64;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--gpu") {
      gpu = true;
    } else if (arg == "--precision" && i + 1 < argc) {
      precision = spmvc::parse_precision(argv[++i]);
    } else if (arg == "--format" && i + 1 < argc) {
      formats.push_back(argv[++i]);
    } else {
      threads.push_back(std::stoi(arg));
    }
  }
  if (gpu) {
    const auto t0 = std::chrono::steady_clock::now();
    const spmvc::CsrMatrix a = load(spec);
    fmt::print("{}: {} x {}, {} nonzeros (loaded in {:.2f} s)\n", spec, a.nrows, a.ncols, a.nnz(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return gpu_stages(a, formats.empty() ? "auto" : formats.front(), precision);
  }
  if (threads.empty()) threads = {1, static_cast<int>(std::thread::hardware_concurrency())};
  if (formats.empty()) {
    for (const spmvc::formats::FormatUnit* f : spmvc::formats::registry())
      formats.emplace_back(f->name());
  }

  const auto t0 = std::chrono::steady_clock::now();
  const spmvc::CsrMatrix a = load(spec);
  fmt::print("{}: {} x {}, {} nonzeros (loaded in {:.2f} s)\n", spec, a.nrows, a.ncols, a.nnz(),
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());

  constexpr int kRuns = 3;
  // Per thread count, per format: a hash of each encoded array.
  std::vector<std::vector<std::vector<std::size_t>>> hashes(threads.size());
  std::vector<std::string> hashed_formats;
  fmt::print("{:<28}", "stage (ms, best of 3)");
  for (const int t : threads) fmt::print(" {:>9}", fmt::format("{} thr", t));
  fmt::print("\n");

  auto row = [&](const std::string& name, const std::function<void(std::size_t)>& fn,
                 const std::function<void(std::size_t)>& after) {
    fmt::print("{:<28}", name);
    for (std::size_t i = 0; i < threads.size(); ++i) {
      spmvc::set_host_parallelism({.threads = threads[i]});
      fmt::print(" {:>9.1f}", 1e3 * best_of(kRuns, [&] { fn(i); }));
      std::fflush(stdout);
      after(i);
    }
    fmt::print("\n");
  };
  const auto nothing = [](std::size_t) {};

  spmvc::Profile profile;
  row(
      "inspect (rows)",
      [&](std::size_t) { profile = spmvc::inspect(a, spmvc::InspectDepth::rows); }, nothing);
  row(
      "inspect (full)", [&](std::size_t) { (void)spmvc::inspect(a); }, nothing);
  for (const std::string& format : formats) {
    spmvc::compiler::PlanOptions options;
    options.format = format;
    spmvc::Plan plan;
    try {
      plan = spmvc::compiler::make_plan(profile, options);
    } catch (const spmvc::Error& e) {
      fmt::print("{:<28} (cannot implement: {})\n", format, e.what());
      continue;
    }
    spmvc::Encoded last;
    hashed_formats.push_back(format);
    row(
        fmt::format("encode {} {}", format, spmvc::describe(plan.params)).substr(0, 28),
        [&](std::size_t) { last = spmvc::compiler::encode(a, plan); },
        [&](std::size_t i) {
          std::vector<std::size_t> h;
          for (const spmvc::EncodedArray& arr : last.arrays)
            h.push_back(std::hash<std::string_view>{}(std::string_view(
                reinterpret_cast<const char*>(arr.bytes.data()), arr.bytes.size())));
          hashes[i].push_back(std::move(h));
          last = {};
        });
  }
  // Every thread count must give the same arrays.
  int mismatches = 0;
  for (std::size_t i = 1; i < threads.size(); ++i) {
    for (std::size_t k = 0; k < hashed_formats.size(); ++k) {
      if (hashes[i][k] != hashes[0][k]) {
        ++mismatches;
        fmt::print("MISMATCH: {} with {} threads\n", hashed_formats[k], threads[i]);
      }
    }
  }
  return mismatches == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
