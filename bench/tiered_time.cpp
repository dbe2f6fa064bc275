// Tiered compile with an empty kernel cache: how soon the first multiply is done after compile()
// is called, and how soon the specialised kernel takes over, from a host CSR matrix and from
// device arrays.
//
//   spmvc_bench_tiered SPEC [--replicate-to NNZ] [--precision f64|f32|f32acc64] [--runs N]
//                      [--path host|device|both] [--host-build host|auto] [--warm-units yes|no]
//                      [--warm-up yes|no]
//
// SPEC is a generator spec or Matrix Market file. Each run compiles into a fresh cache directory
// (so the chosen kernel is in neither cache level), then multiplies back to back, waiting for
// each multiply, until one runs on the specialised kernel. With --warm-units yes the GPU build's
// own kernels are cached and loaded first, by a build of a small matrix in the other precision
// (one unit per installation, not the chosen kernel); with no (the default) the first run pays
// what a fresh process pays once its CUDA context exists: the build units' module loads (and
// their compile where the library holds no nvcc image for the GPU), the generic kernel's load,
// and on the host path the process's first upload (the staging buffers' pinning). With --warm-up
// yes, spmvc::warm_up runs on a thread of its own from the start, while the matrix is generated or
// read, and is joined before the first run (as an application would overlap it). Each line is
// followed by compile()'s stages. Times in milliseconds from the compile() call. --host-build picks
// Options::build for the host-CSR path: host (this benchmark's default, the host pipeline) or auto
// (the GPU build on the uploaded CSR where the options allow it; its build kernels are cached
// first, as for the device path).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "device.hpp"
#include "device_csr.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/spmvc.hpp"

namespace {

namespace fs = std::filesystem;
namespace rt = spmvc::runtime;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return 1e3 * std::chrono::duration<double>(Clock::now() - t0).count();
}

spmvc::CsrMatrix load(const std::string& spec) {
  if (spmvc::gen::is_spec(spec)) return spmvc::gen::from_spec(spec);
  return spmvc::read_matrix_market(spec);
}

fs::path fresh_dir(int run) {
  const fs::path dir = fs::temp_directory_path() /
                       fmt::format("spmvc-bench-tiered-{}-{}", static_cast<long>(::getpid()), run);
  fs::remove_all(dir);
  return dir;
}

// `a` on the device through plain copies, not spmvc's staged upload: the warm-up below leaves
// the staging buffers to the measured compile, whose first upload is then the process's.
rt::ResidentCsr plain_upload(const spmvc::CsrMatrix& a, spmvc::Precision p) {
  rt::ResidentCsr r;
  const std::vector<std::int32_t> rows(a.row_ptr.begin(), a.row_ptr.end());
  r.row_ptr = rt::DeviceBuffer(rows.size() * 4);
  r.row_ptr.upload(rows.data(), rows.size() * 4);
  r.col_idx = rt::DeviceBuffer(std::max<std::size_t>(a.col_idx.size() * 4, 4));
  r.col_idx.upload(a.col_idx.data(), a.col_idx.size() * 4);
  r.values = rt::DeviceBuffer(std::max<std::size_t>(a.values.size() * 8, 8));
  if (p == spmvc::Precision::f64) {
    r.values.upload(a.values.data(), a.values.size() * 8);
  } else {
    const std::vector<float> f(a.values.begin(), a.values.end());
    r.values.upload(f.data(), f.size() * 4);
  }
  r.view = rt::view_of(r, a);
  return r;
}

struct Run {
  double returned = 0, first_done = 0, took_over = 0, ready = 0;
  std::int64_t generic_multiplies = 0;
  double generic_ms = 0, specialised_ms = 0;
  spmvc::CompileTimings first;   // the timings after the first multiply: its tier
  spmvc::CompileTimings stages;  // the timings once the specialised kernel took over
};

template <class Compile>
Run measure(const Compile& compile_op, std::int64_t nrows, std::int64_t ncols, spmvc::Precision p) {
  const std::size_t vb = p == spmvc::Precision::f64 ? 8 : 4;
  rt::DeviceBuffer dx(std::max<std::size_t>(static_cast<std::size_t>(ncols) * vb, 1));
  rt::DeviceBuffer dy(std::max<std::size_t>(static_cast<std::size_t>(nrows) * vb, 1));
  const std::vector<double> x = spmvc::codegen::test_vector(ncols, p);
  if (p == spmvc::Precision::f64) {
    dx.upload(x.data(), x.size() * vb);
  } else {
    const std::vector<float> xf(x.begin(), x.end());
    dx.upload(xf.data(), xf.size() * vb);
  }
  rt::synchronize();

  Run r;
  const auto t0 = Clock::now();
  const spmvc::Operator op = compile_op();
  r.returned = ms_since(t0);
  op.apply(dx.get(), dy.get());
  rt::synchronize();
  r.first_done = ms_since(t0);
  r.first = op.timings();
  double generic_total = r.first_done - r.returned;
  while (op.timings().tier != "specialised") {
    if (!op.timings().tier_error.empty()) op.wait_specialised();  // rethrows the compile's error
    const auto t1 = Clock::now();
    op.apply(dx.get(), dy.get());
    rt::synchronize();
    if (op.timings().tier == "generic") generic_total += ms_since(t1);
  }
  r.took_over = ms_since(t0);
  const spmvc::CompileTimings& t = op.timings();
  r.stages = t;
  r.ready = 1e3 * t.specialised_ready;
  r.generic_multiplies = t.generic_applies;
  r.generic_ms = t.generic_applies > 0 ? generic_total / static_cast<double>(t.generic_applies) : 0;
  constexpr int kTimed = 20;
  const auto t2 = Clock::now();
  for (int i = 0; i < kTimed; ++i) op.apply(dx.get(), dy.get());
  rt::synchronize();
  r.specialised_ms = ms_since(t2) / kTimed;
  return r;
}

void report(const char* path, int run, const Run& r) {
  fmt::print(
      "{} run {} ({} build): compile() returned {:.2f} ms, first multiply done {:.2f} ms ({}), "
      "specialised "
      "ready {:.1f} ms, took over {:.1f} ms after {} generic multiplies; multiply generic "
      "{:.3f} ms, specialised {:.3f} ms\n",
      path, run, r.first.build, r.returned, r.first_done, r.first.tier, r.ready, r.took_over,
      r.generic_multiplies, r.generic_ms, r.specialised_ms);
  // A GPU build of format auto that tiers plans and encodes after compile() returns (on the
  // tiers' thread): its stages are not all before the return.
  const spmvc::CompileTimings& s = r.stages;
  fmt::print(
      "  stages (ms): upload {:.2f}, inspect {:.2f}, plan {:.2f}, encode {:.2f}, generic setup "
      "{:.2f}; compile() returned {:.2f} after upload and generic setup\n",
      1e3 * s.upload, 1e3 * s.inspect, 1e3 * s.plan, 1e3 * s.encode, 1e3 * s.generic_setup,
      r.returned - 1e3 * (s.upload + s.generic_setup));
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::fputs(
        "usage: spmvc_bench_tiered SPEC [--replicate-to NNZ] [--precision f64|f32|f32acc64] "
        "[--runs N] [--path host|device|both] [--host-build host|auto] [--warm-units yes|no] "
        "[--warm-up yes|no]\n",
        stderr);
    return 2;
  }
  const std::string spec = argv[1];
  std::int64_t replicate_to = 0;
  spmvc::Precision precision = spmvc::Precision::f64;
  int runs = 3;
  std::string path = "both";
  spmvc::BuildMode host_build = spmvc::BuildMode::host;
  bool warm_units = false;
  bool warm_up = false;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) throw spmvc::InputError(arg, 0, "needs a value");
    const std::string value = argv[++i];
    if (arg == "--replicate-to") {
      replicate_to = std::stoll(value);
    } else if (arg == "--precision") {
      precision = spmvc::parse_precision(value);
    } else if (arg == "--runs") {
      runs = std::max(1, std::stoi(value));
    } else if (arg == "--path") {
      if (value != "host" && value != "device" && value != "both")
        throw spmvc::InputError(arg, 0, "'" + value + "' is not host, device or both");
      path = value;
    } else if (arg == "--host-build") {
      if (value != "host" && value != "auto")
        throw spmvc::InputError(arg, 0, "'" + value + "' is not host or auto");
      host_build = value == "host" ? spmvc::BuildMode::host : spmvc::BuildMode::automatic;
    } else if (arg == "--warm-units") {
      if (value != "yes" && value != "no")
        throw spmvc::InputError(arg, 0, "'" + value + "' is not yes or no");
      warm_units = value == "yes";
    } else if (arg == "--warm-up") {
      if (value != "yes" && value != "no")
        throw spmvc::InputError(arg, 0, "'" + value + "' is not yes or no");
      warm_up = value == "yes";
    } else {
      throw spmvc::InputError(arg, 0, "unknown option");
    }
  }

  // The warm-up takes the options the runs compile with (their precision, tiered).
  std::jthread warming;  // joined below, or on the way out of an error
  double warm_up_ms = 0;
  if (warm_up) {
    spmvc::Options w;
    w.precision = precision;
    w.tiered = true;
    warming = std::jthread([w, &warm_up_ms] {
      const auto t0 = Clock::now();
      try {
        spmvc::warm_up(w);
      } catch (const std::exception& e) {  // the runs report the same error
        std::fprintf(stderr, "spmvc_bench_tiered: warm_up: %s\n", e.what());
      }
      warm_up_ms = ms_since(t0);
    });
  }
  spmvc::CsrMatrix a = load(spec);
  if (replicate_to > a.nnz() && a.nnz() > 0)
    a = spmvc::gen::replicate(a, (replicate_to + a.nnz() - 1) / a.nnz());
  if (warming.joinable()) warming.join();
  const rt::DeviceInfo device = rt::probe_device(0);
  fmt::print("{}: {} x {}, {} nonzeros, {}, {}\n", spec, a.nrows, a.ncols, a.nnz(),
             spmvc::to_string(precision), device.name);
  if (warm_up)
    fmt::print("warm_up: {:.1f} ms on its thread, beside the matrix's loading\n", warm_up_ms);

  spmvc::Options options;
  options.precision = precision;
  options.tiered = true;
  // The device build's own kernels (one unit for every precision), cached in `options`'s
  // directory first by a build in another precision, whose kernel cannot be the one measured.
  const spmvc::CsrMatrix small = spmvc::gen::from_spec("stencil2d:n=16");
  const auto warm_build_kernels = [&] {
    const spmvc::Precision other =
        precision == spmvc::Precision::f64 ? spmvc::Precision::f32 : spmvc::Precision::f64;
    const rt::ResidentCsr warm = plain_upload(small, other);
    spmvc::Options w = options;
    w.precision = other;
    w.tiered = false;
    (void)spmvc::compile(warm.view, w);
  };
  if (path != "device") {
    spmvc::Options host = options;
    host.build = host_build;
    const char* name =
        host_build == spmvc::BuildMode::host ? "host CSR" : "host CSR (--host-build auto)";
    for (int run = 0; run < runs; ++run) {
      const fs::path dir = fresh_dir(run);
      options.cache_dir = dir.string();
      host.cache_dir = dir.string();
      if (warm_units && host_build != spmvc::BuildMode::host) warm_build_kernels();
      report(name, run,
             measure([&] { return spmvc::compile(a, host); }, a.nrows, a.ncols, precision));
      fs::remove_all(dir);
    }
  }
  if (path != "host") {
    const rt::ResidentCsr resident = rt::upload_csr(a, precision);
    for (int run = 0; run < runs; ++run) {
      const fs::path dir = fresh_dir(run);
      options.cache_dir = dir.string();
      if (warm_units) warm_build_kernels();
      report("device arrays", run,
             measure([&] { return spmvc::compile(resident.view, options); }, a.nrows, a.ncols,
                     precision));
      fs::remove_all(dir);
    }
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "spmvc_bench_tiered: %s\n", e.what());
  return 1;
}
