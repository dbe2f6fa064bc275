// Host cost of the planner alone: make_plan on one inspected Profile, repeated, and each
// format's share (make_plan with that format forced by name).
//
//   spmvc_bench_plan_time SPEC [REPEATS] [--device [GPU]] [--cold] [--list] [--precision P]
//                         [--replicate-to NNZ]
//
// SPEC is a generator spec or Matrix Market file as the CLI takes it (e.g.
// stencil27:nx=126,ny=126,nz=126); --replicate-to makes it I_k (x) A with at least NNZ nonzeros,
// as the suite's " x16M" entries are, and --precision plans f64 (the default) or f32. --list
// prints the first call's candidates with their predicted times and cuSPARSE's. The Profile is
// inspected once at the pipeline's depth (InspectDepth::rows). The first call is shown apart: it
// is what a compile() pays, and it fills the caches that later calls find (cci's code tables);
// then the median and the best of REPEATS (default 50) further calls (0: the first call only,
// e.g. under callgrind).
// Under callgrind, `--toggle-collect='spmvc::compiler::make_plan*'` counts the planner only.
// --device plans as compile(DeviceCsr) does (compiler::plan_device_csr over the device build's
// formats, the matrix's host arrays standing in for device ones: the planner reads only their
// sizes and alignment), for the GPU named (default H100: its calibration), with the Profile the
// GPU inspection fills (row lengths, the BRO column pass's fields, no block shapes); under
// callgrind, toggle on 'spmvc::compiler::plan_device_csr*'. With --device, --cold also times
// each planning after 512 MiB of other data has been written (the caches and TLBs hold none of
// the planner's code and tables, as in a build, where the GPU passes and the driver ran since
// the last planning): format auto and each device format alone, the median of 7 against the
// median of 20 back to back.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "formats/format.hpp"
#include "spmvc/build.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/options.hpp"
#include "spmvc/profile.hpp"

namespace {

spmvc::CsrMatrix load(const std::string& spec) {
  try {
    return spmvc::gen::from_spec(spec);
  } catch (const spmvc::InputError&) {
    return spmvc::read_matrix_market(spec);
  }
}

// Median and least seconds of `repeats` calls of fn.
std::pair<double, double> timed(int repeats, const std::function<void()>& fn) {
  std::vector<double> s;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(s.begin(), s.end());
  return {s[s.size() / 2], s.front()};
}

// compile(DeviceCsr)'s planning, timed: the first call apart, then the median and best of
// `repeats` more.
// The plan's applicable candidates, best first (--list), and cuSPARSE's predicted time.
void print_candidates(const spmvc::Plan& plan) {
  if (plan.cusparse_seconds > 0)
    fmt::print("  cuSPARSE predicted {:.2f} us\n", plan.cusparse_seconds * 1e6);
  for (const spmvc::Candidate& c : plan.candidates)
    if (c.applicable)
      fmt::print("  {:<10} {:<40} {:9.2f} us  {}\n", c.format, c.label, c.predicted_seconds * 1e6,
                 c.reason);
}

int plan_device(const spmvc::CsrMatrix& a, const std::string& gpu, int repeats, bool cold,
                bool list, spmvc::Options options) {
  spmvc::Profile profile = spmvc::inspect(a, spmvc::InspectDepth::rows);
  profile.block_shapes.clear();  // format auto from device arrays runs no block pass
  const std::vector<std::int32_t> row_ptr(a.row_ptr.begin(), a.row_ptr.end());
  const spmvc::DeviceCsr d{a.nrows,        a.ncols,          a.nnz(),
                           row_ptr.data(), a.col_idx.data(), a.values.data()};
  spmvc::BuildTarget target;
  target.gpu = gpu;
  spmvc::Plan plan;
  const auto [first, unused] =
      timed(1, [&] { plan = spmvc::compiler::plan_device_csr(d, profile, options, target); });
  fmt::print("plan_device_csr ({}): first call {:.1f} us, {} candidates; plan {} [{}]{}\n", gpu,
             first * 1e6, plan.candidates.size(), plan.format, spmvc::describe(plan.params),
             plan.engine == spmvc::Engine::cusparse ? " on cuSPARSE" : "");
  if (list) print_candidates(plan);
  if (repeats == 0) return 0;
  const auto [median, best] =
      timed(repeats, [&] { plan = spmvc::compiler::plan_device_csr(d, profile, options, target); });
  fmt::print("plan_device_csr ({}): median {:.1f} us, best {:.1f} us\n", gpu, median * 1e6,
             best * 1e6);
  if (!cold) return 0;
  std::vector<unsigned char> other(std::size_t{512} << 20);
  unsigned char round = 0;
  for (const char* format :
       {"auto", "csr", "csr_stream", "ell", "sell", "hyb", "bro_ell", "bro_coo", "bro_hyb"}) {
    spmvc::Options o = options;
    o.format = format;
    std::vector<double> after_other;
    for (int k = 0; k < 7; ++k) {
      ++round;
      for (std::size_t i = 0; i < other.size(); i += 64) other[i] = round;
      after_other.push_back(
          timed(1, [&] { plan = spmvc::compiler::plan_device_csr(d, profile, o, target); }).first);
    }
    std::sort(after_other.begin(), after_other.end());
    const double warm =
        timed(20, [&] { plan = spmvc::compiler::plan_device_csr(d, profile, o, target); }).first;
    fmt::print("  {:<11} caches cold {:7.1f} us, warm {:7.1f} us\n", format, after_other[3] * 1e6,
               warm * 1e6);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::fputs(
        "usage: spmvc_bench_plan_time SPEC [REPEATS] [--device [GPU]] [--cold] [--list] "
        "[--precision P] [--replicate-to NNZ]\n",
        stderr);
    return 2;
  }
  const std::string spec = argv[1];
  int repeats = 50;
  std::string device_gpu;  // empty: the host planner
  bool cold = false;
  bool list = false;
  spmvc::Options options;
  std::int64_t replicate_to = 0;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--precision" || arg == "--replicate-to") && i + 1 == argc) {
      fmt::print(stderr, "error: {} needs a value\n", arg);
      return 2;
    }
    if (arg == "--cold") {
      cold = true;
    } else if (arg == "--list") {
      list = true;
    } else if (arg == "--precision") {
      options.precision = spmvc::parse_precision(argv[++i]);
    } else if (arg == "--replicate-to") {
      const std::string value = argv[++i];
      std::size_t used = 0;
      try {
        replicate_to = std::stoll(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != value.size() || replicate_to < 1) {
        fmt::print(stderr, "error: --replicate-to: '{}' is not a positive count of nonzeros\n",
                   value);
        return 2;
      }
    } else if (arg == "--device") {
      device_gpu = i + 1 < argc && argv[i + 1][0] != '-' && !std::isdigit(argv[i + 1][0])
                       ? argv[++i]
                       : "H100";
    } else {
      repeats = std::max(0, std::stoi(arg));
    }
  }
  spmvc::CsrMatrix a = load(spec);
  if (replicate_to > a.nnz() && a.nnz() > 0)
    a = spmvc::gen::replicate(a, (replicate_to + a.nnz() - 1) / a.nnz());
  fmt::print("{}: {} x {}, {} nonzeros, {}\n", spec, a.nrows, a.ncols, a.nnz(),
             spmvc::to_string(options.precision));
  if (cold && device_gpu.empty()) {
    std::fputs("error: --cold times the device planner: give --device too\n", stderr);
    return 2;
  }
  if (!device_gpu.empty()) return plan_device(a, device_gpu, repeats, cold, list, options);
  const spmvc::Profile profile = spmvc::inspect(a, spmvc::InspectDepth::rows);

  spmvc::compiler::PlanOptions plan_options;
  plan_options.precision = options.precision;
  spmvc::Plan plan;
  const auto [first, unused] =
      timed(1, [&] { plan = spmvc::compiler::make_plan(profile, plan_options); });
  fmt::print("make_plan: first call {:.1f} us, {} candidates; plan {} [{}]\n", first * 1e6,
             plan.candidates.size(), plan.format, spmvc::describe(plan.params));
  if (list) print_candidates(plan);
  if (repeats == 0) return 0;
  const auto [median, best] =
      timed(repeats, [&] { plan = spmvc::compiler::make_plan(profile, plan_options); });
  fmt::print("make_plan: median {:.1f} us, best {:.1f} us, {} candidates; plan {} [{}]\n",
             median * 1e6, best * 1e6, plan.candidates.size(), plan.format,
             spmvc::describe(plan.params));
  for (const spmvc::formats::FormatUnit* f : spmvc::formats::registry()) {
    spmvc::compiler::PlanOptions one = plan_options;
    one.format = std::string(f->name());
    try {
      const auto [m, b] = timed(repeats, [&] { (void)spmvc::compiler::make_plan(profile, one); });
      fmt::print("  {:<12} median {:8.1f} us, best {:8.1f} us\n", f->name(), m * 1e6, b * 1e6);
    } catch (const spmvc::Error& e) {
      fmt::print("  {:<12} (cannot implement: {})\n", f->name(), e.what());
    }
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
