// compile(CsrMatrix) building on the GPU (Options::build): on every public matrix of at least 10k
// nonzeros, the GPU build's operator gives bitwise the y of the host-built operator of the same
// plan (within rounding where the format adds with atomics), both match the host reference,
// and timings() name the build, its reason, where the build's kernels came from and the upload.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "build_units.hpp"
#include "device.hpp"
#include "formats/csr/csr_format.hpp"
#include "formats/format.hpp"
#include "gpu_support.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/generators.hpp"

using namespace spmvc;
using test::check;
using test::have_device;
using test::tolerance;

namespace {

std::vector<double> product(const CsrMatrix& a, const Operator& op) {
  const std::vector<double> x = codegen::test_vector(a.ncols, op.plan().precision);
  std::vector<double> y(static_cast<std::size_t>(a.nrows),
                        std::numeric_limits<double>::quiet_NaN());
  op.apply_host(x, y);
  return y;
}

// csr_stream with 16-bit columns and plain values, built on the GPU.
Options narrow_stream_options(Precision p) {
  Options o;
  o.disk_cache = false;
  o.tiered = false;
  o.precision = p;
  o.value_coding = false;
  CsrStreamParams stream;
  stream.narrow_columns = true;
  o.params = stream;
  o.build = BuildMode::device;
  return o;
}

// The build's kernels come from the fatbin where it serves this GPU, else from NVRTC.
std::string expected_units() {
  const runtime::DeviceInfo device = runtime::probe_device(0);
  const bool embedded = !runtime::build_unit_fatbin(runtime::BuildUnit::device_csr).empty() &&
                        runtime::embedded_image_serves(runtime::build_unit_archs(),
                                                       runtime::sm_number(device.arch()));
  return embedded ? "nvcc" : "nvrtc";
}

}  // namespace

TEST_CASE(
    "gpu: the host path's GPU build equals the host build of the same plan, public matrices") {
  if (!have_device()) return;
  const auto matrices = test::public_matrices(10000);
  if (matrices.empty()) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  const std::string units = expected_units();
  int bitwise = 0, atomic = 0;
  for (const auto& [name, path] : matrices) {
    CAPTURE(name);
    const CsrMatrix a = read_matrix_market(path);
    Options o;
    o.disk_cache = false;
    o.tiered = false;
    o.build = BuildMode::device;
    const Operator gpu = compile(a, o);
    const CompileTimings& t = gpu.timings();
    CHECK(t.build == "device");
    CHECK(t.build_why.find("build = device") != std::string::npos);
    CHECK(t.build_units == units);
    CHECK(t.upload > 0);
    CHECK(check(a, gpu) <= tolerance(o.precision));

    Options h = o;
    h.build = BuildMode::host;
    h.format = gpu.plan().format;
    h.params = gpu.plan().params;
    const Operator host = compile(a, h);
    CAPTURE(gpu.plan().format);
    CAPTURE(describe(gpu.plan().params));
    CHECK(host.timings().build == "host");
    CHECK(host.timings().build_units.empty());
    REQUIRE(host.plan().format == gpu.plan().format);
    REQUIRE(describe(host.plan().params) == describe(gpu.plan().params));
    const std::vector<double> y_gpu = product(a, gpu), y_host = product(a, host);
    if (formats::find_format(gpu.plan().format).nondeterminism(gpu.plan().params)) {
      ++atomic;
      CHECK(compiler::relative_error(y_gpu, y_host) <= tolerance(o.precision));
    } else {
      ++bitwise;
      CHECK(y_gpu == y_host);
    }
  }
  MESSAGE(bitwise << " plans compared bit for bit, " << atomic << " (atomics) to rounding");
  CHECK(bitwise > 0);
}

TEST_CASE("gpu: compile(CsrMatrix) with build auto builds on the GPU, on the host where it must") {
  if (!have_device()) return;
  const CsrMatrix a = gen::from_spec("stencil27:n=24");
  Options o;
  o.disk_cache = false;
  o.tiered = false;
  CHECK(o.build == BuildMode::automatic);  // the default
  const Operator by_default = compile(a, o);
  CHECK(by_default.timings().build == "device");
  CHECK(by_default.timings().build_why.find("build = auto") != std::string::npos);
  CHECK(check(a, by_default) <= tolerance(o.precision));
  // An ordering needs the host pipeline: auto says so.
  Options rcm = o;
  rcm.reorder = "rcm";
  const Operator reordered = compile(a, rcm);
  CHECK(reordered.timings().build == "host");
  CHECK(reordered.timings().build_why.find("reorder") != std::string::npos);
  CHECK(check(a, reordered) <= tolerance(o.precision));
  // ... and build = device refuses it, naming the option.
  rcm.build = BuildMode::device;
  try {
    (void)compile(a, rcm);
    FAIL("build = device with an ordering compiled");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("reorder") != std::string::npos);
  }
  // New values on a GPU-built operator: built again on the GPU from the copy it keeps.
  Operator op = compile(a, o);
  CsrMatrix b = a;
  for (std::size_t k = 0; k < b.values.size(); ++k) b.values[k] = 1.0 + 0.001 * double(k % 997);
  (void)op.update_values(b.values);  // the stencil's two values were coded: it re-plans
  CHECK(check(b, op) <= tolerance(o.precision));
  // A faulty matrix is an error naming the caller's matrix, not a device array.
  CsrMatrix bad = a;
  bad.col_idx[5] = static_cast<std::int32_t>(a.ncols + 3);
  try {
    (void)compile(bad, o);
    FAIL("a column past ncols compiled");
  } catch (const InputError& e) {
    CHECK(e.source() == "CsrMatrix");
  }
}

TEST_CASE("gpu: read_bytes counts the arrays a multiply reads, not the GPU build's kept CSR copy") {
  if (!have_device()) return;
  // 40,000 columns: every row block's columns span less than 2^16, so all take 16-bit columns.
  const CsrMatrix a = gen::random_uniform(30000, 40000, 12);
  const std::int64_t nnz = a.nnz();
  for (const Precision p : {Precision::f32, Precision::f64}) {
    CAPTURE(to_string(p));
    const std::int64_t vb = p == Precision::f64 ? 8 : 4;
    Options o = narrow_stream_options(p);
    const Operator gpu = compile(a, o);
    REQUIRE(gpu.plan().format == "csr_stream");
    // The unit reads its row blocks, block bases and 16-bit columns, and the kept copy's row_ptr
    // and values; the copy's col_idx only for wide blocks, of which there are none here.
    const std::int64_t nblocks = gpu.source().grid;
    const std::int64_t read =
        (nblocks + 1) * 4 + nblocks * 4 + nnz * 2 + (a.nrows + 1) * 4 + nnz * vb;
    CHECK(gpu.read_bytes() == read);
    CHECK(gpu.device_bytes() - gpu.read_bytes() == nnz * 4);
    CHECK(check(a, gpu) <= tolerance(p));

    // Built on the host, the unit reads every array it uploaded: the same arrays, with a
    // one-element wide-column array in place of the copy's unread col_idx.
    o.build = BuildMode::host;
    const Operator host = compile(a, o);
    REQUIRE(describe(host.plan().params) == describe(gpu.plan().params));
    CHECK(host.read_bytes() == host.device_bytes());
    CHECK(host.read_bytes() == read + 4);

    // cuSPARSE as the engine reads the CSR arrays it multiplies: the host encoding's, whose
    // col_idx and values carry the csr kernel's zero padding (the kernel serves SpMM there).
    Options c;
    c.disk_cache = false;
    c.tiered = false;
    c.precision = p;
    c.build = BuildMode::host;
    c.cusparse = "always";
    const Operator engine = compile(a, c);
    REQUIRE(engine.plan().engine == Engine::cusparse);
    const std::int64_t padded = formats::CsrFormat::padded_nnz(nnz);
    REQUIRE(padded - nnz < 1024);
    CHECK(engine.read_bytes() == (a.nrows + 1) * 4 + padded * (4 + vb));
  }
}

TEST_CASE("gpu: read_bytes counts the caller's col_idx that the GPU build's wide blocks read") {
  if (!have_device()) return;
  // The first 20,000 rows take columns below 40,000 (16-bit blocks); the rest spread over
  // 300,000 columns, so their blocks span more than 2^16 and read 32-bit columns.
  constexpr std::int32_t kRows = 40000, kPerRow = 12, kCols = 300000;
  std::vector<std::int32_t> row_ptr(kRows + 1), col_idx;
  std::vector<double> values;
  std::uint32_t state = 12345;
  const auto next = [&] { return state = state * 1664525u + 1013904223u; };
  for (std::int32_t r = 0; r < kRows; ++r) {
    const std::uint32_t span = r < kRows / 2 ? 40000u : static_cast<std::uint32_t>(kCols);
    for (int k = 0; k < kPerRow; ++k) {
      col_idx.push_back(static_cast<std::int32_t>((next() >> 8) % span));
      values.push_back(1.0 + static_cast<double>(next() >> 16) / 65536.0);
    }
    row_ptr[r + 1] = static_cast<std::int32_t>(col_idx.size());
  }
  const CsrMatrix a = csr_from_arrays(kRows, kCols, row_ptr, col_idx, values);
  const std::int64_t nnz = a.nnz();
  Options o = narrow_stream_options(Precision::f32);
  const Operator gpu = compile(a, o);
  REQUIRE(gpu.plan().format == "csr_stream");
  CHECK(check(a, gpu) <= tolerance(Precision::f32));
  // Without the wide blocks' columns: row blocks, block codes, 16-bit columns, row_ptr, values.
  const std::int64_t nblocks = gpu.source().grid;
  const std::int64_t narrow_only =
      (nblocks + 1) * 4 + nblocks * 4 + nnz * 2 + (a.nrows + 1) * 4 + nnz * 4;
  const std::int64_t wide = gpu.read_bytes() - narrow_only;
  // About half the nonzeros are in wide blocks (a block may straddle the halves).
  CHECK(wide % 4 == 0);
  CHECK(wide / 4 >= nnz / 2 - 4096);
  CHECK(wide / 4 <= nnz / 2 + 4096);
  // The host encoding of the same plan stores exactly those blocks' columns in its col_wide.
  o.build = BuildMode::host;
  const Operator host = compile(a, o);
  REQUIRE(describe(host.plan().params) == describe(gpu.plan().params));
  CHECK(host.read_bytes() == host.device_bytes());
  CHECK(gpu.read_bytes() == host.read_bytes());
}
