// The device layer on a real GPU: memory, CUBIN load (one library, several kernels) and launch,
// events, cuSPARSE, bandwidth. Every case returns early (and the run exits 77, skipped) when there
// is no device.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "device.hpp"
#include "kernel_cache.hpp"
#include "nvrtc_compiler.hpp"
#include "spmvc/bench/bandwidth.hpp"
#include "spmvc/bench/cusparse.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "test_kernels.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace spmvc;
using namespace spmvc::runtime;
using namespace spmvc::bench;

#define SPMVC_REQUIRE_DEVICE()            \
  try {                                   \
    (void)probe_device();                 \
  } catch (const spmvc::NoDeviceError&) { \
    spmvc::test::mark_device_missing();   \
    return;                               \
  }

namespace {

using spmvc::test::axpy_source;

// Runs the axpy kernel on n elements and checks every output.
void run_axpy(const LoadedKernel& k, long long n) {
  std::vector<double> x(static_cast<std::size_t>(n)), y(x.size(), -1.0);
  for (long long i = 0; i < n; ++i)
    x[static_cast<std::size_t>(i)] = 0.5 * static_cast<double>(i) - 3;
  DeviceBuffer dx(x.size() * sizeof(double)), dy(y.size() * sizeof(double));
  dx.upload(x.data(), dx.bytes());
  dy.fill_bytes(0xff);  // NaN everywhere, so an unwritten element cannot pass
  void* px = dx.get();
  void* py = dy.get();
  void* args[] = {&px, &py, &n};
  const int block = 128;
  k.launch((n + block - 1) / block, block, 0, args, nullptr);
  check_last_launch("spmvc_test_axpy");
  synchronize();
  dy.download(y.data(), dy.bytes());
  int wrong = 0;
  for (long long i = 0; i < n; ++i) {
    const auto u = static_cast<std::size_t>(i);
    if (y[u] != 2.0 * x[u] + static_cast<double>(i)) ++wrong;
  }
  CHECK(wrong == 0);
}

struct TempDir {
  fs::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() /
           ("spmvc-test-gpu-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// 5x5, row 2 empty, row 4 full-ish: small enough to check by hand.
CsrMatrix small_matrix() {
  CsrMatrix a;
  a.nrows = 5;
  a.ncols = 5;
  a.row_ptr = {0, 2, 5, 5, 7, 11};
  a.col_idx = {0, 3, 1, 2, 4, 0, 4, 1, 2, 3, 4};
  a.values = {1, 2, 3, -1, 0.5, 4, -2, 1.5, 2.5, -3, 1};
  return a;
}

// Deterministic matrix larger than a warp with skewed rows: most rows short, every 97th long,
// some empty.
CsrMatrix skewed_matrix() {
  CsrMatrix a;
  a.nrows = 2000;
  a.ncols = 1500;
  a.row_ptr = {0};
  std::uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(state >> 33);
  };
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    const std::int64_t len =
        r % 97 == 0 ? 900 : (r % 13 == 0 ? 0 : static_cast<std::int64_t>(next() % 12));
    std::vector<bool> used(static_cast<std::size_t>(a.ncols), false);
    std::vector<std::int32_t> cols;
    while (static_cast<std::int64_t>(cols.size()) < len) {
      const auto c = static_cast<std::int32_t>(next() % static_cast<std::uint32_t>(a.ncols));
      if (!used[static_cast<std::size_t>(c)]) {
        used[static_cast<std::size_t>(c)] = true;
        cols.push_back(c);
      }
    }
    std::sort(cols.begin(), cols.end());
    for (const auto c : cols) {
      a.col_idx.push_back(c);
      a.values.push_back(static_cast<double>(next() % 2001) / 1000.0 - 1.0);
    }
    a.row_ptr.push_back(static_cast<std::int64_t>(a.col_idx.size()));
  }
  return a;
}

std::vector<double> cpu_spmv(const CsrMatrix& a, const std::vector<double>& x,
                             const std::vector<double>& y0, double alpha, double beta) {
  std::vector<double> y(static_cast<std::size_t>(a.nrows));
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    double s = 0;
    for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      s += a.values[static_cast<std::size_t>(k)] * x[static_cast<std::size_t>(a.col_idx[k])];
    }
    y[r] = alpha * s + beta * y0[r];
  }
  return y;
}

// Host vector in the device's value type (double for f64, float otherwise), as bytes.
std::vector<unsigned char> as_device_values(const std::vector<double>& v, Precision p) {
  std::vector<unsigned char> out;
  if (p == Precision::f64) {
    out.resize(v.size() * sizeof(double));
    std::memcpy(out.data(), v.data(), out.size());
  } else {
    std::vector<float> f(v.begin(), v.end());
    out.resize(f.size() * sizeof(float));
    std::memcpy(out.data(), f.data(), out.size());
  }
  return out;
}

std::vector<double> from_device_values(const std::vector<unsigned char>& bytes, Precision p) {
  if (p == Precision::f64) {
    std::vector<double> v(bytes.size() / sizeof(double));
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  }
  std::vector<float> f(bytes.size() / sizeof(float));
  std::memcpy(f.data(), bytes.data(), bytes.size());
  return {f.begin(), f.end()};
}

// Runs cuSPARSE with `alg` in `p` on `a` and compares with the CPU product.
void check_cusparse(const CsrMatrix& a, Precision p, CusparseAlg alg) {
  CAPTURE(static_cast<int>(p));
  CAPTURE(to_string(alg));
  std::vector<double> x(static_cast<std::size_t>(a.ncols)), y0(static_cast<std::size_t>(a.nrows));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0 + static_cast<double>(i % 7) * 0.25;
  for (std::size_t i = 0; i < y0.size(); ++i) y0[i] = static_cast<double>(i % 5) - 2.0;
  const double alpha = 2.0, beta = 0.5;
  const std::vector<double> want = cpu_spmv(a, x, y0, alpha, beta);

  const auto hx = as_device_values(x, p);
  const auto hy = as_device_values(y0, p);
  DeviceBuffer dx(hx.size()), dy(hy.size()), dy2(hy.size());
  dx.upload(hx.data(), hx.size());
  dy.upload(hy.data(), hy.size());
  dy2.upload(hy.data(), hy.size());

  CusparseCsr m(a, p);
  m.prepare(alg, dx.get(), dy.get());
  m.spmv(alg, dx.get(), dy.get(), alpha, beta, nullptr);
  // A second output vector: the descriptors follow the new pointer.
  m.spmv(alg, dx.get(), dy2.get(), alpha, beta, nullptr);
  synchronize();

  const double tol = compiler::result_tolerance(p);
  for (DeviceBuffer* out : {&dy, &dy2}) {
    std::vector<unsigned char> bytes(hy.size());
    out->download(bytes.data(), bytes.size());
    const std::vector<double> got = from_device_values(bytes, p);
    double scale = 1;
    for (const double w : want) scale = std::max(scale, std::fabs(w));
    int wrong = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (!(std::fabs(got[i] - want[i]) <= tol * scale * 8)) ++wrong;
    }
    CHECK(wrong == 0);
  }
}

}  // namespace

TEST_CASE("probe_device describes the GPU") {
  SPMVC_REQUIRE_DEVICE();
  const DeviceInfo info = probe_device();
  CHECK_FALSE(info.name.empty());
  CHECK(info.cc_major >= 7);
  CHECK(info.sm_count > 0);
  CHECK(info.global_bytes > (std::int64_t{1} << 30));
  CHECK(info.l2_bytes > 0);
  CHECK(info.driver_version > 0);
  CHECK(info.runtime_version >= 12000);
  CHECK(info.arch() == arch_name(info.cc_major, info.cc_minor));
  set_device(info.ordinal);
  CHECK_THROWS_AS(probe_device(1 << 20), NoDeviceError);
}

TEST_CASE("DeviceBuffer uploads, downloads, fills and checks ranges") {
  SPMVC_REQUIRE_DEVICE();
  std::vector<int> host(1000);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<int>(i * 3);
  DeviceBuffer b(host.size() * sizeof(int));
  CHECK(b.get() != nullptr);
  b.fill_bytes(0);
  b.upload(host.data() + 10, 20 * sizeof(int), 10 * sizeof(int));
  std::vector<int> back(host.size(), -1);
  b.download(back.data(), back.size() * sizeof(int));
  for (std::size_t i = 0; i < back.size(); ++i) {
    CHECK(back[i] == (i >= 10 && i < 30 ? host[i] : 0));
  }
  CHECK_THROWS_AS(b.upload(host.data(), 8, b.bytes() - 4), InternalError);
  CHECK_THROWS_AS(b.download(back.data(), b.bytes() + 1), InternalError);

  DeviceBuffer moved(std::move(b));
  CHECK(b.get() == nullptr);
  CHECK(moved.bytes() == host.size() * sizeof(int));
  DeviceBuffer empty(0);
  CHECK(empty.get() == nullptr);
}

TEST_CASE("freed DeviceBuffers stay in the device's pool, and reused memory holds new data") {
  SPMVC_REQUIRE_DEVICE();
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  {
    DeviceBuffer big(kBytes);
    big.fill_bytes(0xab);
  }
  synchronize();
  const std::uint64_t kept = pool_reserved_bytes();
  if (kept == 0) {
    MESSAGE("this device allocates without a pool: nothing to check");
    return;
  }
  // The freed 64 MiB is still reserved (below kPoolKeepBytes), not given back to the device.
  CHECK(kept >= kBytes);
  DeviceBuffer again(kBytes);
  CHECK(pool_reserved_bytes() <= kept);  // served from what was kept
  std::vector<unsigned char> host(kBytes, 0x5c);
  again.upload(host.data(), host.size());
  std::vector<unsigned char> back(kBytes, 0);
  again.download(back.data(), back.size());
  CHECK(back == host);
}

TEST_CASE("an NVRTC CUBIN loads and runs: y = 2x + i") {
  SPMVC_REQUIRE_DEVICE();
  const DeviceInfo info = probe_device();
  const Cubin c = compile_cubin(axpy_source(), info.arch());
  LoadedKernel k(c.image, "spmvc_test_axpy");
  CHECK(k.name() == "spmvc_test_axpy");
  run_axpy(k, 1000);     // a partial last block
  run_axpy(k, 1 << 20);  // many blocks

  LoadedKernel moved(std::move(k));
  run_axpy(moved, 77);

  EventTimer timer;
  timer.start();
  run_axpy(moved, 4096);
  const float ms = timer.stop_ms();
  CHECK(ms >= 0);
  CHECK(std::isfinite(ms));
}

TEST_CASE("kernels taken from one loaded library run, resolved at their first use") {
  SPMVC_REQUIRE_DEVICE();
  const DeviceInfo info = probe_device();
  const Cubin c = compile_cubin(axpy_source(), info.arch());
  const LoadedLibrary library = load_library(c.image, "axpy image");
  {
    const LoadedKernel first(library, "spmvc_test_axpy", /*resolve=*/false);
    const LoadedKernel second(library, "spmvc_test_axpy", /*resolve=*/false);
    CHECK(library.use_count() == 3);
    run_axpy(first, 1000);  // loaded onto the device by its launch
    // Unlaunched, its attributes are asked of the driver when they are read.
    CHECK(second.registers() > 0);
    CHECK(second.registers() == first.registers());
    CHECK(second.local_bytes() >= 0);
    try {
      const LoadedKernel missing(library, "no_such_kernel", /*resolve=*/false);
      FAIL("a missing entry of a shared library loaded");
    } catch (const DeviceError& e) {
      CHECK(std::string(e.what()).find("no_such_kernel") != std::string::npos);
    }
  }
  // The kernels let go; the library stays loaded for its holder.
  CHECK(library.use_count() == 1);
  run_axpy(LoadedKernel(library, "spmvc_test_axpy"), 5000);
}

TEST_CASE("a CUBIN read back from the disk cache runs") {
  SPMVC_REQUIRE_DEVICE();
  const DeviceInfo info = probe_device();
  TempDir tmp;
  { KernelCache(tmp.path).get(axpy_source(), info.arch()); }
  const CachedKernel k = KernelCache(tmp.path).get(axpy_source(), info.arch());
  REQUIRE(k.origin == CacheOrigin::disk);
  run_axpy(LoadedKernel(k.cubin.image, "spmvc_test_axpy"), 5000);
}

TEST_CASE("load and launch errors are reported, not crashed on") {
  SPMVC_REQUIRE_DEVICE();
  const DeviceInfo info = probe_device();
  const Cubin c = compile_cubin(axpy_source(), info.arch());
  try {
    LoadedKernel bad(c.image, "no_such_kernel");
    FAIL("loading a missing kernel succeeded");
  } catch (const NoDeviceError&) {
    FAIL("a missing kernel was reported as a missing device");
  } catch (const DeviceError& e) {
    CHECK(std::string(e.what()).find("no_such_kernel") != std::string::npos);
  }
  // NUL-terminated: cudart takes an image that is neither ELF nor fatbin for PTX text.
  std::vector<char> garbage(4096, 'x');
  garbage.back() = '\0';
  CHECK_THROWS_AS(LoadedKernel(garbage, "spmvc_test_axpy"), DeviceError);

  LoadedKernel k(c.image, "spmvc_test_axpy");
  void* p = nullptr;
  long long n = 0;
  void* args[] = {&p, &p, &n};
  CHECK_THROWS_AS(k.launch(std::int64_t{1} << 31, 128, 0, args, nullptr), InputError);
  CHECK_THROWS_AS(k.launch(0, 128, 0, args, nullptr), InputError);
  CHECK_THROWS_AS(k.launch(1, 0, 0, args, nullptr), InternalError);
  CHECK_THROWS_AS(k.launch(1, 2048, 0, args, nullptr), InternalError);
  // More dynamic shared memory than any GPU has.
  CHECK_THROWS_AS(k.launch(1, 128, std::size_t{1} << 22, args, nullptr), DeviceError);
  // The rejected launches left no error behind for the next one.
  check_last_launch("after rejected launches");
  run_axpy(k, 100);
}

TEST_CASE("cuSPARSE ALG1, ALG2 and SELL match the CPU on a 5x5 matrix with an empty row") {
  SPMVC_REQUIRE_DEVICE();
  for (const Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
    for (const CusparseAlg alg :
         {CusparseAlg::csr_alg1, CusparseAlg::csr_alg2, CusparseAlg::sell_alg1}) {
      check_cusparse(small_matrix(), p, alg);
    }
  }
}

TEST_CASE("cuSPARSE ALG1, ALG2 and SELL match the CPU on a skewed 2000x1500 matrix") {
  SPMVC_REQUIRE_DEVICE();
  const CsrMatrix a = skewed_matrix();
  REQUIRE(a.nnz() > 20000);
  for (const Precision p : {Precision::f64, Precision::f32}) {
    for (const CusparseAlg alg :
         {CusparseAlg::csr_alg1, CusparseAlg::csr_alg2, CusparseAlg::sell_alg1}) {
      check_cusparse(a, p, alg);
    }
  }
}

TEST_CASE("cuSPARSE SELL matches the CPU across slice edges and declines heavy padding") {
  SPMVC_REQUIRE_DEVICE();
  // 1000 rows (31 full slices and a partial one) with lengths varying inside each slice.
  std::vector<std::int64_t> row_ptr{0};
  std::vector<std::int32_t> cols;
  std::vector<double> vals;
  for (std::int32_t r = 0; r < 1000; ++r) {
    for (std::int32_t j = 0; j < r % 37; ++j) {
      cols.push_back((r * 7 + j * 13) % 900);
      vals.push_back(0.5 + (r + j) % 11);
    }
    std::sort(cols.end() - r % 37, cols.end());
    cols.erase(std::unique(cols.end() - r % 37, cols.end()), cols.end());
    vals.resize(cols.size());
    row_ptr.push_back(static_cast<std::int64_t>(cols.size()));
  }
  const CsrMatrix a{1000, 900, row_ptr, cols, vals};
  for (const Precision p : {Precision::f64, Precision::f32}) {
    check_cusparse(a, p, CusparseAlg::sell_alg1);
  }

  // One row of 60000 nonzeros among 200000 rows of one: its slice alone pads to 1.9M elements,
  // far over 4x nnz, so SELL is declined with the reason instead of timed.
  CsrMatrix heavy;
  heavy.nrows = 200000;
  heavy.ncols = 200000;
  for (std::int32_t r = 0; r < heavy.nrows; ++r) {
    const std::int32_t len = r == 5 ? 60000 : 1;
    for (std::int32_t j = 0; j < len; ++j) {
      heavy.col_idx.push_back(len == 1 ? r : j);
      heavy.values.push_back(1.0);
    }
    heavy.row_ptr.push_back(static_cast<std::int64_t>(heavy.col_idx.size()));
  }
  CusparseCsr m(heavy, Precision::f64);
  const auto why = m.not_applicable(CusparseAlg::sell_alg1);
  REQUIRE(why.has_value());
  CHECK(why->find("Sliced ELL pads") != std::string::npos);
  CHECK_FALSE(m.not_applicable(CusparseAlg::csr_alg2).has_value());
  DeviceBuffer dx(static_cast<std::size_t>(heavy.ncols) * 8),
      dy(static_cast<std::size_t>(heavy.nrows) * 8);
  CHECK_THROWS_AS(m.prepare(CusparseAlg::sell_alg1, dx.get(), dy.get()), InputError);
}

TEST_CASE("measured bandwidths are positive and finite") {
  SPMVC_REQUIRE_DEVICE();
  const double read = measure_read_bandwidth();
  CHECK(read > 0);
  CHECK(std::isfinite(read));
  const double copy = measure_copy_bandwidth(std::int64_t{1} << 28, 5);
  CHECK(copy > 0);
  CHECK(std::isfinite(copy));
  MESSAGE("read " << read / 1e12 << " TB/s, copy " << copy / 1e12 << " TB/s");
}
