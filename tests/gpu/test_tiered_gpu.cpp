// Tiered compile (Options::tiered) on the GPU. Each case compiles into a fresh cache directory,
// so the kernel is in neither level and the operator starts on the generic tier: its multiplies
// must agree with the specialised kernel's, the switch must happen at an apply() with every
// multiply around it complete and correct, and the blocking compile must never use the generic
// tier. With nothing cached, the GPU build of format auto plans on the tiers' thread: compile()
// returns once the arrays are checked, and what the operator reports waits for the plan.
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "device.hpp"
#include "gpu_support.hpp"
#include "kernel_cache.hpp"
#include "operator_impl.hpp"
#include "spmvc/bench/gpu.hpp"
#include "spmvc/generators.hpp"

namespace fs = std::filesystem;
using namespace spmvc;
using spmvc::test::check;
using spmvc::test::have_device;
using spmvc::test::tolerance;

namespace {

// Tiering asked for explicitly (the test main turns the default off), kernels cached in `dir`.
Options tiered_options(Precision p, const fs::path& dir, bool tiered = true) {
  Options o;
  o.precision = p;
  o.tiered = tiered;
  o.cache_dir = dir.string();
  return o;
}

// Rows of very different lengths (Kronecker graph), so the generic tier's lanes-per-row choice
// and the specialised plan differ.
CsrMatrix skewed() { return gen::rmat(13, 12, 7); }

// y = A x on the device through `op`, returned on the host (x = codegen's test vector).
std::vector<double> multiply(const CsrMatrix& a, const Operator& op) {
  const std::vector<double> x = codegen::test_vector(a.ncols, op.plan().precision);
  std::vector<double> y(static_cast<std::size_t>(a.nrows));
  op.apply_host(x, y);
  return y;
}

}  // namespace

TEST_CASE("gpu: tiered, empty cache: the generic tier runs first and agrees with the specialised") {
  if (!have_device()) return;
  const CsrMatrix a = skewed();
  for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
    CAPTURE(to_string(p));
    spmvc::test::TempDir dir("tiered");
    const Operator op = compile(a, tiered_options(p, dir.path()));
    CHECK(op.timings().tier == "generic");
    CHECK(op.timings().generic_setup > 0);
    // The first multiply follows compile() by microseconds; NVRTC takes tens of milliseconds.
    // alpha and beta, so the generic kernel's y update is checked too.
    CHECK(check(a, op, 1.5, -0.5) <= tolerance(p));
    CHECK(op.timings().tier == "generic");
    CHECK(op.timings().generic_applies == 1);
    CHECK(op.timings().switched < 0);
    const std::vector<double> generic = multiply(a, op);
    REQUIRE(op.timings().tier == "generic");

    op.wait_specialised();
    CHECK(op.timings().specialised_ready > 0);
    CHECK(op.timings().kernel_origin == "nvrtc");
    CHECK(op.timings().compile > 0);
    CHECK(op.timings().registers > 0);
    const std::vector<double> specialised = multiply(a, op);
    CHECK(op.timings().tier == "specialised");
    CHECK(op.timings().generic_applies == 2);
    CHECK(op.timings().switched >= op.timings().specialised_ready);
    CHECK(compiler::relative_error(generic, specialised) <= tolerance(p));
    CHECK(check(a, op) <= tolerance(p));
    CHECK(op.timings().generic_applies == 2);
    CHECK(op.timings().tier_error.empty());
  }
}

TEST_CASE("gpu: tiered off, or the kernel cached: every multiply on the specialised kernel") {
  if (!have_device()) return;
  const CsrMatrix a = skewed();
  spmvc::test::TempDir dir("tiered");
  {
    const Operator op = compile(a, tiered_options(Precision::f64, dir.path(), /*tiered=*/false));
    CHECK(op.timings().tier == "specialised");
    CHECK(op.timings().kernel_origin == "nvrtc");
    CHECK(check(a, op) <= tolerance(Precision::f64));
    CHECK(op.timings().tier == "specialised");
    CHECK(op.timings().generic_applies == 0);
    CHECK(op.timings().specialised_ready < 0);
  }
  // Tiered, the kernel in the cache now: the plan comes first (the cache holds a kernel), and
  // its kernel, cached, runs every multiply.
  const Operator cached = compile(a, tiered_options(Precision::f64, dir.path()));
  CHECK(cached.timings().tier == "specialised");
  CHECK(cached.timings().kernel_origin == "memory");
  CHECK(check(a, cached) <= tolerance(Precision::f64));
  CHECK(cached.timings().generic_applies == 0);
  // So does a named plan's, cached by a blocking compile first (its passes differ from format
  // auto's, and so may its source).
  Options named = tiered_options(Precision::f64, dir.path(), /*tiered=*/false);
  named.params = cached.plan().params;
  (void)compile(a, named);
  named.tiered = true;
  const Operator forced = compile(a, named);
  CHECK(forced.timings().tier == "specialised");
  CHECK(forced.timings().kernel_origin == "memory");
  CHECK(check(a, forced) <= tolerance(Precision::f64));
  CHECK(forced.timings().generic_applies == 0);
  // A fresh process with the disk entry: planned first too, the kernel from disk.
  runtime::cache_for(dir.path()).clear_memory();
  const Operator from_disk = compile(a, tiered_options(Precision::f64, dir.path()));
  CHECK(from_disk.timings().tier == "specialised");
  CHECK(from_disk.timings().kernel_origin == "disk");
}

TEST_CASE("gpu: tiered, empty cache: bad arrays are still compile()'s InputError") {
  if (!have_device()) return;
  const CsrMatrix a = skewed();
  // Bad arrays are still compile()'s InputError, from the GPU's row pass, on both paths.
  spmvc::test::TempDir dir("tiered");
  CsrMatrix bad = a;
  bad.col_idx[100] = static_cast<std::int32_t>(a.ncols);
  const bench::ResidentCsr resident(bad, Precision::f64);
  CHECK_THROWS_WITH_AS(compile(resident.view(), tiered_options(Precision::f64, dir.path())),
                       doctest::Contains("outside 0.."), InputError);
  Options host_csr = tiered_options(Precision::f64, dir.path());
  host_csr.build = BuildMode::device;
  CHECK_THROWS_WITH_AS(compile(bad, host_csr), doctest::Contains("first at nonzero 100"),
                       InputError);
}

TEST_CASE("gpu: tiered GPU build: the transpose, SpMM and new values right after compile()") {
  if (!have_device()) return;
  // Each call below comes before anything waited for the tiers' thread: it must wait for the
  // plan (or the specialised tier) and give the right result.
  const CsrMatrix a = skewed();
  const double tol = tolerance(Precision::f64);
  const auto n = static_cast<std::size_t>(a.nrows), m = static_cast<std::size_t>(a.ncols);
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = 1.0 + static_cast<double>(i % 13) / 8;
  const bench::ResidentCsr resident(a, Precision::f64);
  {
    spmvc::test::TempDir dir("tiered");
    const Operator op = compile(resident.view(), tiered_options(Precision::f64, dir.path()));
    std::vector<double> got(m), ref(m, 0.0);
    for (std::size_t i = 0; i < n; ++i)
      for (auto k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k)
        ref[static_cast<std::size_t>(a.col_idx[static_cast<std::size_t>(k)])] +=
            a.values[static_cast<std::size_t>(k)] * x[i];
    op.apply_transpose_host(x, got);
    CHECK(compiler::relative_error(got, ref) <= tol);
  }
  {
    spmvc::test::TempDir dir("tiered");
    const Operator op = compile(resident.view(), tiered_options(Precision::f64, dir.path()));
    // Two vectors, column-major: x and x reversed.
    std::vector<double> xs(2 * m), ys(2 * n), ref0(n), ref1(n);
    for (std::size_t j = 0; j < m; ++j) {
      xs[j] = 1.0 + static_cast<double>(j % 7) / 4;
      xs[m + j] = xs[m - 1 - j];
    }
    op.apply_many_host(xs, ys, 2, DenseLayout::col_major);
    compiler::csr_reference_spmv(a, std::span<const double>(xs).first(m), ref0);
    compiler::csr_reference_spmv(a, std::span<const double>(xs).subspan(m), ref1);
    CHECK(compiler::relative_error(std::span<const double>(ys).first(n), ref0) <= tol);
    CHECK(compiler::relative_error(std::span<const double>(ys).subspan(n), ref1) <= tol);
  }
  {
    // Host CSR through the GPU build: the new values go into its own upload.
    spmvc::test::TempDir dir("tiered");
    Operator op = compile(a, tiered_options(Precision::f64, dir.path()));
    CsrMatrix b = a;
    for (double& v : b.values) v = 2 * v + 1;
    const ValueUpdate u = op.update_values(b.values);
    CHECK(check(b, op) <= tol);
    // In place: the specialised tier it switched to (a re-plan is a new tiered operator).
    if (!u.replanned) CHECK(op.timings().tier == "specialised");
  }
}

TEST_CASE("gpu: many applies on a stream across the switch are all complete and correct") {
  if (!have_device()) return;
  // Small integer values and x: every product and sum is exact in fp64, so y after n
  // accumulating multiplies is exactly n * A x whichever tier ran each one. A multiply lost,
  // repeated or run on a half-built tier would show.
  CsrMatrix a = gen::stencil_3d_27pt(40, 40, 40);
  for (std::size_t k = 0; k < a.values.size(); ++k) a.values[k] = static_cast<double>(k % 7) - 3;
  std::vector<double> x(static_cast<std::size_t>(a.ncols));
  for (std::size_t j = 0; j < x.size(); ++j) x[j] = static_cast<double>(j % 5) - 2;
  std::vector<double> ax(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x, ax);

  spmvc::test::TempDir dir("tiered");
  const Operator op = compile(a, tiered_options(Precision::f64, dir.path()));
  REQUIRE(op.timings().tier == "generic");
  runtime::DeviceBuffer dx(x.size() * sizeof(double)), dy(ax.size() * sizeof(double));
  dx.upload(x.data(), x.size() * sizeof(double));
  dy.fill_bytes(0);
  runtime::synchronize();  // the copies above are on the default stream, the applies not
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  // Until the switch and 100 multiplies past it; the cap only stops a run that never switches.
  long long n = 0, after_switch = 0;
  while (after_switch < 100 && n < 2'000'000) {
    op.apply(dx.get(), dy.get(), 1.0, 1.0, stream);
    ++n;
    if (op.timings().tier == "specialised") ++after_switch;
  }
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
  CHECK(after_switch == 100);
  const std::int64_t generic = op.timings().generic_applies;
  CHECK(generic > 0);
  CHECK(generic == n - after_switch);
  std::vector<double> y(ax.size());
  dy.download(y.data(), y.size() * sizeof(double));
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < y.size(); ++i)
    if (y[i] != static_cast<double>(n) * ax[i]) ++wrong;
  CAPTURE(n);
  CAPTURE(generic);
  CHECK(wrong == 0);
}

TEST_CASE(
    "gpu: tiered from device arrays, empty cache: the generic tier reads the caller's arrays") {
  if (!have_device()) return;
  const CsrMatrix a = skewed();
  for (Precision p : {Precision::f64, Precision::f32}) {
    CAPTURE(to_string(p));
    const bench::ResidentCsr resident(a, p);
    spmvc::test::TempDir dir("tiered");
    const Operator op = compile(resident.view(), tiered_options(p, dir.path()));
    // compile() returned once the row pass checked the arrays; the plan, the encoding and the
    // kernel come on the tiers' thread, and NVRTC takes tens of milliseconds.
    CHECK(check(a, op) <= tolerance(p));
    CHECK(op.timings().tier == "generic");
    CHECK(op.timings().generic_applies == 1);
    // plan() waits for the thread to settle the operator; its stages are in timings() then.
    CHECK(op.plan().format != "");
    CHECK(op.timings().inspect > 0);
    CHECK(op.timings().plan > 0);
    CHECK(op.timings().build == "device");
    CHECK(op.device_bytes() > 0);
    op.wait_specialised();
    CHECK(op.timings().kernel_origin == "nvrtc");
    CHECK(check(a, op) <= tolerance(p));
    CHECK(op.timings().tier == "specialised");
    CHECK(op.timings().generic_applies == 1);
  }
}

TEST_CASE("gpu: an operator destroyed mid-compile leaves the cache sound") {
  if (!have_device()) return;
  const CsrMatrix a = skewed();
  spmvc::test::TempDir dir("tiered");
  std::string key;
  {
    const Operator op = compile(a, tiered_options(Precision::f64, dir.path()));
    key = runtime::KernelCache::key(op.source(), runtime::probe_device(0).arch());
    // Destroyed at once: the destructor waits for the compile in flight, skips the upload.
  }
  // Whatever it left is a whole entry or nothing, never a temporary file.
  if (fs::exists(dir.path())) {
    for (const auto& e : fs::directory_iterator(dir.path()))
      CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
  }
  runtime::KernelCache fresh(dir.path());
  if (fs::exists(fresh.entry_path(key))) {
    const Operator cached = compile(a, tiered_options(Precision::f64, dir.path(), false));
    CHECK(check(a, cached) <= tolerance(Precision::f64));
  }
  const Operator again = compile(a, tiered_options(Precision::f64, dir.path(), false));
  CHECK(check(a, again) <= tolerance(Precision::f64));
}

TEST_CASE("gpu: a background compile that fails keeps the generic tier and says why") {
  if (!have_device()) return;
  const CsrMatrix a = skewed();
  spmvc::test::TempDir dir("tiered");
  spmvc::test::EnvVar dump("SPMVC_DUMP_DIR", dir.path().c_str());
  Options o = tiered_options(Precision::f64, dir.path() / "cache");
  o.transform_source = [](const KernelSource& s) {
    KernelSource broken = s;
    broken.source += "\nthis_is_not_cuda tiered_test_breakage;\n";
    return broken;
  };
  const Operator op = compile(a, o);
  CHECK(check(a, op) <= tolerance(Precision::f64));
  CHECK_THROWS_AS(op.wait_specialised(), CompileError);
  CHECK(op.timings().tier_error.find("this_is_not_cuda") != std::string::npos);
  CHECK(check(a, op) <= tolerance(Precision::f64));
  CHECK(op.timings().tier == "generic");
  CHECK(op.timings().generic_applies == 2);
}

TEST_CASE("gpu: two operators compiling one kernel at once share one compile") {
  if (!have_device()) return;
  const CsrMatrix a = skewed();
  spmvc::test::TempDir dir("tiered");
  // When the second compile() finds the kernel in neither level (the first's compile is still
  // in flight), both are tiered and their background threads share one NVRTC compile; when the
  // first's compile has already finished, the second loads it from memory and is not tiered.
  // Either way NVRTC runs once.
  const Operator first = compile(a, tiered_options(Precision::f64, dir.path()));
  const Operator second = compile(a, tiered_options(Precision::f64, dir.path()));
  REQUIRE(first.timings().tier == "generic");
  const bool both_tiered = second.timings().tier == "generic";
  first.wait_specialised();
  second.wait_specialised();
  const std::string origins = first.timings().kernel_origin + " " + second.timings().kernel_origin;
  CAPTURE(both_tiered);
  CHECK((origins == "nvrtc memory" || origins == "memory nvrtc"));
  CHECK(check(a, first) <= tolerance(Precision::f64));
  CHECK(check(a, second) <= tolerance(Precision::f64));
  CHECK(first.timings().tier == "specialised");
  CHECK(second.timings().tier == "specialised");
}
