// One-time host cost of compile() without a GPU: inspection (both depths), planning, and the
// encoder of each format, at several host thread counts (spmvc/parallel.hpp). With --gpu, the
// same matrix through compile(CsrMatrix) on the device instead, stage by stage, built by the
// host pipeline (Options::build host) and by the GPU build (device): upload, inspect, plan,
// encode, codegen and kernel load, the kernels cached (a first compile warms the cache). Then
// the break-even against cuSPARSE from the same host CSR: cuSPARSE's setup as a caller does it
// (cudaMalloc and cudaMemcpy of the arrays, cusparseCreateCsr, SpMV_bufferSize and, for ALG1,
// SpMV_preprocess) and again with spmvc's staged upload, each algorithm's multiply, and
// compile(CsrMatrix)'s (build auto) one-time cost and multiply; the break-even is the number
// of multiplies after which compile() plus N multiplies is no slower than the fastest cuSPARSE
// algorithm's setup plus N multiplies, each side counting its own upload.
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

#include "device.hpp"
#include "formats/format.hpp"
#include "spmvc/bench/break_even.hpp"
#include "spmvc/bench/cusparse.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
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

namespace rt = spmvc::runtime;
namespace sb = spmvc::bench;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Seconds per multiply of `multiply`, each batch waited for at its end: best of three batches
// (after one warm-up multiply).
double per_multiply(const std::function<void()>& multiply) {
  constexpr int kBatch = 50;
  multiply();
  rt::synchronize();
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < kBatch; ++i) multiply();
    rt::synchronize();
    best = std::min(best, seconds_since(t0) / kBatch);
  }
  return best;
}

// The break-even table (see the top of the file). Returns the exit code.
int gpu_break_even(const spmvc::CsrMatrix& a, const std::string& format,
                   spmvc::Precision precision) {
  constexpr int kRuns = 3;
  const std::size_t vb = precision == spmvc::Precision::f64 ? 8 : 4;
  rt::DeviceBuffer dx(std::max<std::size_t>(static_cast<std::size_t>(a.ncols) * vb, 8));
  rt::DeviceBuffer dy(std::max<std::size_t>(static_cast<std::size_t>(a.nrows) * vb, 8));
  const std::vector<double> x = spmvc::codegen::test_vector(a.ncols, precision);
  if (precision == spmvc::Precision::f64) {
    dx.upload(x.data(), x.size() * 8);
  } else {
    const std::vector<float> xf(x.begin(), x.end());
    dx.upload(xf.data(), xf.size() * 4);
  }
  rt::synchronize();

  // Ours: compile(CsrMatrix) with the GPU build where it applies, the kernels cached (the
  // stage table's runs warmed the cache), no tiering: the specialised kernel from the start.
  spmvc::Options o;
  o.precision = precision;
  o.format = format;
  o.tiered = false;
  o.build = spmvc::BuildMode::automatic;
  sb::SetupCost ours{1e30, 0};
  std::string ours_build;
  for (int i = 0; i < kRuns; ++i) {
    const auto t0 = Clock::now();
    const spmvc::Operator op = spmvc::compile(a, o);
    rt::synchronize();
    const double once = seconds_since(t0);
    if (once < ours.once) {
      ours.once = once;
      ours_build = op.timings().build;
    }
    if (i == kRuns - 1) ours.per_multiply = per_multiply([&] { op.apply(dx.get(), dy.get()); });
  }
  fmt::print("\nbreak-even from host CSR (ms; setup best of {}):\n", kRuns);
  fmt::print("{:<34} {:>9} {:>9}\n", "side", "setup", "multiply");
  fmt::print("{:<34} {:>9.3f} {:>9.4f}\n", fmt::format("spmvc compile ({} build)", ours_build),
             ours.once * 1e3, ours.per_multiply * 1e3);

  struct Side {
    std::string name;
    sb::SetupCost cost;
  };
  std::vector<Side> plain, staged;
  for (const sb::CusparseUpload how : {sb::CusparseUpload::plain, sb::CusparseUpload::staged}) {
    for (const sb::CusparseAlg alg : {sb::CusparseAlg::csr_alg1, sb::CusparseAlg::csr_alg2}) {
      sb::SetupCost c{1e30, 0};
      for (int i = 0; i < kRuns; ++i) {
        const auto t0 = Clock::now();
        sb::CusparseCsr cs(a, precision, how);
        cs.prepare(alg, dx.get(), dy.get());
        rt::synchronize();
        c.once = std::min(c.once, seconds_since(t0));
        if (i == kRuns - 1) {
          c.per_multiply =
              per_multiply([&] { cs.spmv(alg, dx.get(), dy.get(), 1.0, 0.0, nullptr); });
        }
      }
      const std::string name =
          fmt::format("cuSPARSE {} ({} upload)", sb::to_string(alg),
                      how == sb::CusparseUpload::plain ? "cudaMemcpy" : "staged");
      fmt::print("{:<34} {:>9.3f} {:>9.4f}\n", name, c.once * 1e3, c.per_multiply * 1e3);
      (how == sb::CusparseUpload::plain ? plain : staged).push_back({name, c});
    }
  }
  // The baseline: the algorithm with the faster multiply, with its own setup.
  const auto fastest = [](const std::vector<Side>& sides) {
    return *std::min_element(sides.begin(), sides.end(), [](const Side& l, const Side& r) {
      return l.cost.per_multiply < r.cost.per_multiply;
    });
  };
  for (const auto& [reading, sides] :
       {std::pair<const char*, const std::vector<Side>*>{"each side its own upload", &plain},
        std::pair<const char*, const std::vector<Side>*>{"both sides the staged upload",
                                                         &staged}}) {
    const Side best = fastest(*sides);
    fmt::print("break-even, {}: {} multiplies (against {})\n", reading,
               sb::describe_break_even(ours, best.cost), best.name);
  }
  return 0;
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
    const std::string format = formats.empty() ? "auto" : formats.front();
    const int rc = gpu_stages(a, format, precision);
    return rc != 0 ? rc : gpu_break_even(a, format, precision);
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
