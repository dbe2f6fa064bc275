// One-time cost of compile(DeviceCsr) on the GPU, stage by stage: what an application whose matrix
// is already in device memory pays per matrix once the kernels are cached.
//
//   spmvc_bench_device_build SPEC [--replicate-to NNZ] [--precision f64|f32] [--runs N]
//                            [--format F]
//
// SPEC is a generator spec or Matrix Market file as the CLI takes it. The CSR arrays are uploaded
// once (not counted); compile(DeviceCsr) runs once to warm the kernel cache, then N times (default
// 15). Each figure is a median in microseconds. The build steps are also timed alone, each
// followed by a device synchronisation: the inspection pass, csr_stream's row-block cut at each
// tile the planner proposes, the value table where the values allow one, and past 256 distinct
// values the 16-bit value count (and its codes where at most 65,536). With --format ell,
// sell or hyb, compile(DeviceCsr) is asked for that format, and its GPU build is timed stage by
// stage too: the per-slice padding pass, and the build's value coding, layout (sell's sort and
// slice offsets, hyb's COO offsets) and fill; with a bro_ell plan (--format bro_ell, or the
// planner's pick), the column inspection and the bro_ell encode; with a bcsr or bellpack plan
// (--format bcsr|bellpack, or the planner's pick), the block inspection and the block encode.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "device.hpp"
#include "device_block.hpp"
#include "device_bro.hpp"
#include "device_csr.hpp"
#include "device_ell.hpp"
#include "device_values.hpp"
#include "kernel_cache.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_block.hpp"
#include "spmvc/compiler/device_build.hpp"
#include "spmvc/compiler/device_ell.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/spmvc.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double median_us(int runs, const std::function<void()>& fn) {
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    fn();
    spmvc::runtime::synchronize();
    t.push_back(1e6 * std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

spmvc::CsrMatrix load(const std::string& spec) {
  if (spmvc::gen::is_spec(spec)) return spmvc::gen::from_spec(spec);
  return spmvc::read_matrix_market(spec);
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::fputs(
        "usage: spmvc_bench_device_build SPEC [--replicate-to NNZ] [--precision f64|f32] "
        "[--runs N] [--format F]\n",
        stderr);
    return 2;
  }
  const std::string spec = argv[1];
  std::int64_t replicate_to = 0;
  spmvc::Precision precision = spmvc::Precision::f64;
  int runs = 15;
  std::string format = "auto";
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) throw spmvc::InputError(arg, 0, "needs a value");
    const std::string value = argv[++i];
    if (arg == "--replicate-to") {
      replicate_to = std::stoll(value);
    } else if (arg == "--precision") {
      precision = spmvc::parse_precision(value);
    } else if (arg == "--format") {
      format = value;
    } else if (arg == "--runs") {
      runs = std::max(1, std::stoi(value));
    } else {
      throw spmvc::InputError(arg, 0, "unknown option");
    }
  }

  spmvc::CsrMatrix a = load(spec);
  if (replicate_to > a.nnz() && a.nnz() > 0)
    a = spmvc::gen::replicate(a, (replicate_to + a.nnz() - 1) / a.nnz());
  fmt::print("{}: {} x {}, {} nonzeros, {}\n", spec, a.nrows, a.ncols, a.nnz(),
             spmvc::to_string(precision));

  namespace rt = spmvc::runtime;
  const rt::DeviceInfo device = rt::probe_device(0);
  const rt::ResidentCsr resident = rt::upload_csr(a, precision);
  const spmvc::DeviceCsr& view = resident.view;

  spmvc::Options options;
  options.precision = precision;
  options.format = format;
  const spmvc::Operator warm = spmvc::compile(view, options);
  fmt::print("plan: {} {}\n", warm.plan().format, spmvc::describe(warm.plan().params));

  std::vector<double> total, compile, inspect, plan, encode, codegen;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    const spmvc::Operator op = spmvc::compile(view, options);
    total.push_back(1e6 * std::chrono::duration<double>(Clock::now() - t0).count());
    const spmvc::CompileTimings& t = op.timings();
    compile.push_back(1e6 * t.compile);
    inspect.push_back(1e6 * t.inspect);
    plan.push_back(1e6 * t.plan);
    encode.push_back(1e6 * t.encode);
    codegen.push_back(1e6 * t.codegen);
  }
  fmt::print(
      "compile(DeviceCsr), median of {} (us): total {:.0f} = kernels {:.0f} + inspect {:.0f}"
      " + plan {:.0f} + encode {:.0f} + codegen {:.0f}\n",
      runs, median_of(total), median_of(compile), median_of(inspect), median_of(plan),
      median_of(encode), median_of(codegen));

  rt::KernelCache cache(rt::KernelCache::default_dir());
  const rt::DeviceCsrKernels kernels = rt::load_device_csr_kernels(cache, device);
  fmt::print("steps alone (us): inspect {:.0f}",
             median_us(runs, [&] { (void)rt::inspect_device(view, precision, kernels); }));
  for (const int tile : {1024, 2048}) {
    fmt::print(", row blocks tile={} {:.0f}", tile, median_us(runs, [&] {
                 (void)rt::stream_row_blocks(view.row_ptr, view.nrows, tile, 256, kernels);
               }));
  }
  const rt::DeviceInspection inspection = rt::inspect_device(view, precision, kernels);
  if (!inspection.value_patterns.empty() &&
      inspection.value_patterns.size() < static_cast<std::size_t>(spmvc::codegen::kDeviceValueCap))
    fmt::print(", 8-bit value codes ({} values) {:.0f}", inspection.value_patterns.size(),
               median_us(runs, [&] {
                 (void)rt::code_values_device(view, precision, inspection.value_patterns, kernels);
               }));
  // A 16-bit table's patterns and unit, for the steps below that code values in 16 bits.
  const rt::DeviceValueKernels value_kernels = rt::load_device_value_kernels(cache, device);
  rt::DeviceValues16 values16;
  values16.kernels = &value_kernels;
  values16.patterns = inspection.value_patterns;
  if (inspection.value_patterns.empty() && a.nnz() > 0) {
    // More than 256 distinct values: the 16-bit count the build runs (format auto, csr,
    // csr_stream, ell, hyb, the BRO formats), then the code pass where the values fit a 16-bit
    // table.
    const auto found = rt::value_patterns16_device(view, precision, value_kernels);
    if (found) values16.patterns = *found;
    fmt::print(", 16-bit value count ({}) {:.0f}",
               found ? fmt::format("{} values", found->size()) : "more than 65536",
               median_us(runs, [&] {
                 (void)rt::value_patterns16_device(view, precision, value_kernels);
               }));
    if (found && !found->empty())
      fmt::print(", 16-bit value codes {:.0f}", median_us(runs, [&] {
                   (void)rt::code_values16_device(view, precision, *found, value_kernels);
                 }));
  }
  fmt::print(", empty alloc+free {:.0f}", median_us(runs, [] { rt::DeviceBuffer b(64); }));
  fmt::print(", nnz-byte alloc+free {:.0f}\n",
             median_us(runs, [&] { rt::DeviceBuffer b(static_cast<std::size_t>(a.nnz())); }));
  if (spmvc::codegen::device_ell_family(warm.plan().format)) {
    const rt::DeviceEllKernels ell = rt::load_device_ell_kernels(cache, device);
    std::vector<double> values, layout, fill;
    for (int i = 0; i < runs; ++i) {
      const rt::DeviceEllBuild built = rt::build_ell_family_device(
          view, warm.plan(), warm.profile(), inspection.value_patterns, kernels, ell, &values16);
      values.push_back(1e6 * built.timings.values);
      layout.push_back(1e6 * built.timings.layout);
      fill.push_back(1e6 * built.timings.fill);
    }
    fmt::print(
        "{} build on the GPU (us): slice padding pass {:.0f}, value coding {:.0f}, layout {:.0f}, "
        "fill {:.0f}; encoded {:.1f} MB\n",
        warm.plan().format, median_us(runs, [&] { (void)rt::slice_longest_device(view, ell); }),
        median_of(values), median_of(layout), median_of(fill),
        static_cast<double>(warm.device_bytes()) / 1e6);
  }
  {
    rt::DeviceBuffer out(sizeof(spmvc::codegen::RowStats));
    std::vector<double> ms;
    rt::EventTimer timer;
    for (int i = 0; i < runs; ++i) {
      const spmvc::codegen::RowStats init = spmvc::codegen::initial_row_stats();
      out.upload(init.data(), sizeof init);
      timer.start();
      rt::launch_row_stats(view, precision, out.get(), kernels);
      ms.push_back(1e3 * static_cast<double>(timer.stop_ms()));
    }
    fmt::print("row_stats kernel alone (events, us): {:.0f}\n", median_of(ms));
  }
  if (const auto* bro = std::get_if<spmvc::BroEllParams>(&warm.plan().params)) {
    const rt::DeviceBroKernels bro_kernels = rt::load_device_bro_kernels(cache, device);
    spmvc::Profile profile = inspection.profile;
    fmt::print("bro_ell steps alone (us): column inspection {:.0f}",
               median_us(runs, [&] { (void)rt::inspect_bro_device(view, bro_kernels, profile); }));
    fmt::print(", encode {} {:.0f}\n", spmvc::describe(*bro), median_us(runs, [&] {
                 (void)rt::encode_bro_ell_device(view, *bro, precision, inspection.value_patterns,
                                                 profile.row_max, bro_kernels, &values16);
               }));
  }
  if (spmvc::codegen::device_block_family(warm.plan().format)) {
    const rt::DeviceEllKernels ell = rt::load_device_ell_kernels(cache, device);
    const rt::DeviceBlockKernels block = rt::load_device_block_kernels(cache, device);
    fmt::print("{} steps alone (us): block inspection {:.0f}", warm.plan().format,
               median_us(runs, [&] { (void)rt::inspect_blocks_device(view, block); }));
    fmt::print(", encode {} {:.0f}\n", spmvc::describe(warm.plan().params), median_us(runs, [&] {
                 (void)rt::build_block_device(view, warm.plan(), block, ell);
               }));
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "spmvc_bench_device_build: %s\n", e.what());
  return 1;
}
