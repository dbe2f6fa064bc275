// compile(DeviceCsr): building on the GPU from a matrix already in device memory. The product
// matches the host reference; the row statistics equal inspect()'s; the row blocks cut on the
// GPU are the host's partition, shape by shape, and so are the 16-bit columns' narrow blocks;
// faulty arrays and unsupported options are refused with the fault named; operators keep working
// when another sharing their kernels is gone.
#include <doctest/doctest.h>

#include <algorithm>
#include <tuple>

#include "device.hpp"
#include "device_csr.hpp"
#include "formats/csr_stream/csr_stream_format.hpp"
#include "formats/values/values.hpp"
#include "gpu_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_block.hpp"
#include "spmvc/compiler/device_ell.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

using namespace spmvc;
using test::check;
using test::have_device;
using test::tolerance;

namespace {

Options device_options(Precision p) {
  Options o;
  o.precision = p;
  o.disk_cache = false;
  return o;
}

CsrMatrix awkward(std::int64_t n) { return test::short_and_long_rows(n, false); }

std::vector<CsrMatrix> matrices() {
  CsrMatrix no_nonzeros;
  no_nonzeros.nrows = 1000;
  no_nonzeros.ncols = 700;
  no_nonzeros.row_ptr.assign(1001, 0);
  CsrMatrix pattern = gen::rmat(15, 12);
  std::fill(pattern.values.begin(), pattern.values.end(), 1.0);
  CsrMatrix odd = gen::stencil_3d_27pt(30, 30, 30);  // then one nonzero fewer: nnz is odd
  odd.col_idx.pop_back();
  odd.values.pop_back();
  --odd.row_ptr.back();
  validate(odd);
  CsrMatrix trailing = gen::rmat(14, 8);  // then 3,000 empty rows
  trailing.nrows += 3000;
  trailing.row_ptr.resize(static_cast<std::size_t>(trailing.nrows) + 1, trailing.row_ptr.back());
  validate(trailing);
  return {awkward(30000),
          gen::rmat(16, 16),
          gen::stencil_2d_5pt(300, 200),
          gen::random_uniform(50000, 40000, 9),
          no_nonzeros,
          pattern,
          odd,
          trailing};
}

}  // namespace

TEST_CASE("gpu: compile(DeviceCsr) multiplies right, and sees the rows inspect() sees") {
  if (!have_device()) return;
  for (const CsrMatrix& a : matrices()) {
    const Profile host = inspect(a, InspectDepth::rows);
    for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
      CAPTURE(a.nrows);
      CAPTURE(to_string(p));
      const runtime::ResidentCsr r = runtime::upload_csr(a, p);
      const Operator op = compile(r.view, device_options(p));
      CHECK((op.plan().format == "csr" || op.plan().format == "csr_stream" ||
             codegen::device_ell_family(op.plan().format) || op.plan().format.starts_with("bro_") ||
             codegen::device_block_family(op.plan().format)));
      // Vector loads only where they stay inside the caller's arrays.
      if (const auto* csr = std::get_if<CsrParams>(&op.plan().params))
        CHECK(a.nnz() % csr->vector_width == 0);
      // Values: all ones or not, and distinct patterns up to a 16-bit table's 65,536 (65,537
      // past it; as floats in f32, where two doubles may round to one).
      CHECK(op.profile().unit_values == (host.unit_values == host.nnz ? host.nnz : 0));
      // Exact in fp32: all or none, in fp64 (fp32 values are, trivially).
      CHECK(op.profile().fp32_exact_values ==
            (p != Precision::f64 || host.fp32_exact_values == host.nnz ? host.nnz : 0));
      if (p == Precision::f64) {
        CHECK(op.profile().distinct_values == host.distinct_values);
      } else {
        CHECK(op.profile().distinct_values <= host.distinct_values);
      }
      CHECK(op.profile().depth == InspectDepth::row_lengths);
      CHECK(op.profile().row_max == host.row_max);
      CHECK(op.profile().row_min == host.row_min);
      CHECK(op.profile().empty_rows == host.empty_rows);
      CHECK(op.profile().trailing_empty_rows == host.trailing_empty_rows);
      CHECK(op.profile().row_stddev == doctest::Approx(host.row_stddev).epsilon(1e-9));
      CHECK(op.profile().row_histogram.size() == host.row_histogram.size());
      CHECK(op.timings().upload == 0.0);
      CHECK(check(a, op) <= tolerance(p));
      CHECK(check(a, op, -0.5, 1.25) <= tolerance(p));
    }
  }
}

TEST_CASE("gpu: the row blocks cut on the GPU are the host's, shape by shape") {
  if (!have_device()) return;
  const runtime::DeviceInfo device = runtime::probe_device(0);
  runtime::KernelCache cache({});
  const runtime::DeviceCsrKernels kernels = runtime::load_device_csr_kernels(cache, device);
  for (const CsrMatrix& a : matrices()) {
    const runtime::ResidentCsr r = runtime::upload_csr(a, Precision::f64);
    for (const auto& [block, tile] :
         {std::pair{256, 1024}, {256, 2048}, {128, 512}, {64, 64}, {1024, 4096}}) {
      CAPTURE(a.nrows);
      CAPTURE(block);
      CAPTURE(tile);
      const std::vector<std::int32_t> want = formats::CsrStreamFormat::row_blocks(a, tile, block);
      runtime::DeviceRowBlocks got =
          runtime::stream_row_blocks(r.view.row_ptr, a.nrows, tile, block, kernels);
      REQUIRE(got.nblocks + 1 == static_cast<std::int64_t>(want.size()));
      std::vector<std::int32_t> starts(want.size());
      got.starts.download(starts.data(), starts.size() * 4);
      CHECK(starts == want);
    }
  }
}

TEST_CASE("gpu: split rows' blocks and lane descriptors cut on the GPU are the host's") {
  if (!have_device()) return;
  const runtime::DeviceInfo device = runtime::probe_device(0);
  runtime::KernelCache cache({});
  const runtime::DeviceCsrKernels kernels = runtime::load_device_csr_kernels(cache, device);
  std::vector<CsrMatrix> all = matrices();
  all.push_back(gen::replicate(gen::rmat(12, 12), 8));
  for (const CsrMatrix& a : all) {
    const runtime::ResidentCsr r = runtime::upload_csr(a, Precision::f32);
    for (const auto& [block, tile, split] :
         {std::tuple{256, 2048, 16}, {256, 1024, 8}, {128, 2048, 24}, {64, 512, 32}}) {
      CAPTURE(a.nrows);
      CAPTURE(block);
      CAPTURE(tile);
      CAPTURE(split);
      std::vector<std::uint32_t> want_lanes;
      const std::vector<std::int32_t> want =
          formats::CsrStreamFormat::split_row_blocks(a, tile, block, split, want_lanes);
      runtime::DeviceRowBlocks got =
          runtime::stream_row_blocks(r.view.row_ptr, a.nrows, tile, block, kernels, split);
      REQUIRE(got.nblocks + 1 == static_cast<std::int64_t>(want.size()));
      std::vector<std::int32_t> starts(want.size());
      got.starts.download(starts.data(), starts.size() * 4);
      CHECK(starts == want);
      REQUIRE(got.lanes.bytes() == want_lanes.size() * 4);
      std::vector<std::uint32_t> lanes(want_lanes.size());
      got.lanes.download(lanes.data(), lanes.size() * 4);
      CHECK(lanes == want_lanes);
    }
  }
}

TEST_CASE("gpu: compile(DeviceCsr) builds split rows on the GPU and multiplies right") {
  if (!have_device()) return;
  CsrMatrix pattern = gen::rmat(15, 12);
  std::fill(pattern.values.begin(), pattern.values.end(), 1.0);
  int tested = 0;
  for (const CsrMatrix& a : {pattern, gen::rmat(16, 16), awkward(30000)}) {
    for (Precision p : {Precision::f32, Precision::f64}) {
      CAPTURE(a.nrows);
      CAPTURE(to_string(p));
      const runtime::ResidentCsr r = runtime::upload_csr(a, p);
      Options o = device_options(p);
      o.format = "csr_stream";
      CsrStreamParams params;
      params.split = 16;
      o.params = params;
      const Operator op = compile(r.view, o);
      REQUIRE(std::get<CsrStreamParams>(op.plan().params).split == 16);
      CHECK(op.timings().upload == 0.0);
      CHECK(check(a, op) <= tolerance(p));
      CHECK(check(a, op, -0.5, 1.25) <= tolerance(p));
      ++tested;
    }
  }
  CHECK(tested == 6);
}

TEST_CASE("gpu: compile(DeviceCsr) names the fault in bad arrays and refuses what it cannot do") {
  if (!have_device()) return;
  const CsrMatrix a = gen::stencil_2d_5pt(100, 80);
  auto refused = [](const DeviceCsr& view, const Options& o) {
    try {
      (void)compile(view, o);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const Options o = device_options(Precision::f64);
  {
    CsrMatrix bad = a;
    bad.col_idx[1234] = static_cast<std::int32_t>(a.ncols);
    const runtime::ResidentCsr r = runtime::upload_csr(bad, Precision::f64);
    CHECK(refused(r.view, o).find("1 column indices are outside 0..7999, the first at nonzero "
                                  "1234") != std::string::npos);
  }
  {
    CsrMatrix bad = a;
    bad.row_ptr[501] = bad.row_ptr[503];
    const runtime::ResidentCsr r = runtime::upload_csr(bad, Precision::f64);
    CHECK(refused(r.view, o).find("first at row 501") != std::string::npos);
  }
  {
    const runtime::ResidentCsr r = runtime::upload_csr(a, Precision::f64);
    DeviceCsr short_nnz = r.view;
    short_nnz.nnz -= 1;
    CHECK(refused(short_nnz, o).find("row_ptr[8000] is") != std::string::npos);
    DeviceCsr host_rows = r.view;
    std::vector<std::int32_t> host(a.row_ptr.begin(), a.row_ptr.end());
    host_rows.row_ptr = host.data();
    CHECK(refused(host_rows, o).find("row_ptr is not a device") != std::string::npos);
    Options measure = o;
    measure.planner = PlannerMode::measure;
    CHECK(refused(r.view, measure).find("measure mode") != std::string::npos);
    Options cci = o;
    cci.format = "cci";
    CHECK(refused(r.view, cci).find("from device arrays only csr, csr_stream") !=
          std::string::npos);
    Options mixed = o;  // rounded values: an encoding the device-array build does not make
    mixed.mixed_precision = MixedPrecision::f32;
    CHECK(refused(r.view, mixed).find("mixed precision rounds the values") != std::string::npos);
    Options reordered = o;
    reordered.reorder = "rcm";
    CHECK(refused(r.view, reordered).find("reordering") != std::string::npos);
  }
}

TEST_CASE("gpu: compile(DeviceCsr) drops all-ones values and keeps vector loads inside") {
  if (!have_device()) return;
  const std::vector<CsrMatrix> all = matrices();
  const CsrMatrix& pattern = all[5];
  const CsrMatrix& odd = all[6];
  {
    const runtime::ResidentCsr r = runtime::upload_csr(pattern, Precision::f32);
    Options o = device_options(Precision::f32);
    const Operator op = compile(r.view, o);
    CHECK(formats::value_coding_of(op.plan().params) == formats::kValuesUnit);
    CHECK(check(pattern, op) <= tolerance(Precision::f32));
    o.value_coding = false;
    CHECK(formats::value_coding_of(compile(r.view, o).plan().params) == formats::kValuesPlain);
  }
  {
    REQUIRE(odd.nnz() % 2 == 1);
    const runtime::ResidentCsr r = runtime::upload_csr(odd, Precision::f64);
    Options o = device_options(Precision::f64);
    o.csr = CsrParams{4, 2, 256, 1, true, false};
    try {
      (void)compile(r.view, o);
      FAIL("2-wide loads past an odd nnz were accepted");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find("read past the") != std::string::npos);
    }
    o.csr = CsrParams{4, 1, 256, 1, true, false};
    CHECK(check(odd, compile(r.view, o)) <= tolerance(Precision::f64));
  }
}

TEST_CASE("gpu: compile(DeviceCsr) codes few distinct values in a byte, on the GPU") {
  if (!have_device()) return;
  const runtime::DeviceInfo device = runtime::probe_device(0);
  runtime::KernelCache cache({});
  const runtime::DeviceCsrKernels kernels = runtime::load_device_csr_kernels(cache, device);
  CsrMatrix few = gen::rmat(14, 8);  // 255 distinct values, in an order of their own
  for (std::size_t k = 0; k < few.values.size(); ++k)
    few.values[k] = 0.25 * static_cast<double>((k * 7919) % 255) - 30.0;
  for (const CsrMatrix& a : {gen::stencil_2d_5pt(300, 200), few}) {
    for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
      CAPTURE(a.nrows);
      CAPTURE(to_string(p));
      const runtime::ResidentCsr r = runtime::upload_csr(a, p);
      // The codes name each value's entry in the table.
      const runtime::DeviceInspection seen = runtime::inspect_device(r.view, p, kernels);
      REQUIRE(!seen.value_patterns.empty());
      CHECK(seen.profile.distinct_values == inspect(a).distinct_values);
      {
        // Freed memory full of 0xff, which the pool hands out again: the codes' padding must
        // still come back as code 0.
        runtime::DeviceBuffer dirty(static_cast<std::size_t>((a.nnz() + 15) / 16 * 16 + 16));
        dirty.fill_bytes(0xff);
      }
      runtime::DeviceValueCodes coded =
          runtime::code_values_device(r.view, p, seen.value_patterns, kernels);
      std::vector<std::uint8_t> padded(coded.codes.bytes());
      coded.codes.download(padded.data(), padded.size());
      CHECK(std::all_of(padded.begin() + a.nnz(), padded.end(),
                        [](std::uint8_t c) { return c == 0; }));
      std::vector<std::uint8_t> codes(padded.begin(), padded.begin() + a.nnz());
      std::vector<double> decoded(codes.size());
      if (p == Precision::f64) {
        std::vector<double> table(seen.value_patterns.size());
        coded.table.download(table.data(), table.size() * 8);
        for (std::size_t k = 0; k < codes.size(); ++k) decoded[k] = table.at(codes[k]);
        CHECK(decoded == a.values);
      } else {
        std::vector<float> table(seen.value_patterns.size());
        coded.table.download(table.data(), table.size() * 4);
        std::vector<double> want(a.values.size());
        for (std::size_t k = 0; k < codes.size(); ++k) {
          decoded[k] = table.at(codes[k]);
          want[k] = static_cast<float>(a.values[k]);
        }
        CHECK(decoded == want);
      }
      // A table that lacks a value is caught.
      std::vector<std::uint64_t> short_table(seen.value_patterns.begin() + 1,
                                             seen.value_patterns.end());
      if (!short_table.empty())
        CHECK_THROWS_AS(runtime::code_values_device(r.view, p, short_table, kernels), InputError);
      // The planner codes them by itself, and forced codings multiply right in both formats.
      const Operator chosen = compile(r.view, device_options(p));
      CHECK(formats::value_coding_of(chosen.plan().params) == formats::kValuesTable8);
      CHECK(check(a, chosen) <= tolerance(p));
      Options o = device_options(p);
      o.csr = CsrParams{2, 1, 256, 1, true, false};
      o.csr->values = formats::kValuesTable8;
      const Operator csr = compile(r.view, o);
      CHECK(csr.device_bytes() < static_cast<std::int64_t>(a.nnz() * (4 + value_bytes(p))));
      CHECK(check(a, csr, -0.5, 1.25) <= tolerance(p));
      o.csr.reset();
      CsrStreamParams stream;
      stream.values = formats::kValuesTable8;
      o.params = stream;
      CHECK(check(a, compile(r.view, o)) <= tolerance(p));
    }
  }
  // More than 65,536 distinct values: format auto, and a format with 16-bit codes asked for,
  // count up to 65,536 and code none; a format without 16-bit tables counts no further than 256.
  const CsrMatrix many = gen::random_uniform(50000, 40000, 9);
  const runtime::ResidentCsr r = runtime::upload_csr(many, Precision::f64);
  const Operator op = compile(r.view, device_options(Precision::f64));
  CHECK(op.profile().distinct_values == kDistinctValuesCap + 1);
  CHECK(formats::value_coding_of(op.plan().params) == formats::kValuesPlain);
  Options stream = device_options(Precision::f64);
  stream.format = "csr_stream";
  const Operator counted = compile(r.view, stream);
  CHECK(counted.profile().distinct_values == kDistinctValuesCap + 1);
  CHECK(formats::value_coding_of(counted.plan().params) == formats::kValuesPlain);
  Options sell = device_options(Precision::f64);
  sell.format = "sell";
  CHECK(compile(r.view, sell).profile().distinct_values == 257);
}

TEST_CASE("gpu: fp64 values exact in fp32 are stored as fp32 on the GPU, and only those") {
  if (!have_device()) return;
  const runtime::DeviceInfo device = runtime::probe_device(0);
  runtime::KernelCache cache({});
  const runtime::DeviceCsrKernels kernels = runtime::load_device_csr_kernels(cache, device);
  // 100000 distinct values (no table), each exact in fp32; power-law rows and short ones.
  for (CsrMatrix a : {gen::rmat(16, 16), gen::random_uniform(60000, 50000, 9)}) {
    for (std::size_t k = 0; k < a.values.size(); ++k)
      a.values[k] = 0.375 * static_cast<double>(k % 100000) - 9000.0;
    CAPTURE(a.nrows);
    const runtime::ResidentCsr r = runtime::upload_csr(a, Precision::f64);
    const runtime::DeviceInspection seen = runtime::inspect_device(r.view, Precision::f64, kernels);
    CHECK(seen.profile.fp32_exact_values == a.nnz());
    CHECK(seen.value_patterns.empty());
    // The fp32 array holds every value, bit for bit once widened.
    const runtime::DeviceBuffer narrow = runtime::narrow_values_device(r.view, kernels);
    CHECK(narrow.bytes() >= static_cast<std::size_t>(a.nnz()) * 4);
    std::vector<float> stored(static_cast<std::size_t>(a.nnz()));
    narrow.download(stored.data(), stored.size() * 4);
    std::vector<double> widened(stored.begin(), stored.end());
    CHECK(widened == a.values);
    // The planner picks fp32 storage by itself; forced, both formats multiply right.
    const Operator chosen = compile(r.view, device_options(Precision::f64));
    CHECK(formats::value_coding_of(chosen.plan().params) == formats::kValuesF32);
    CHECK(chosen.device_bytes() < static_cast<std::int64_t>(a.nnz() * (4 + 8)));
    CHECK(check(a, chosen) <= tolerance(Precision::f64));
    Options o = device_options(Precision::f64);
    o.csr = CsrParams{4, 1, 256, 1, true, false};
    o.csr->values = formats::kValuesF32;
    CHECK(check(a, compile(r.view, o), -0.5, 1.25) <= tolerance(Precision::f64));
    o.csr.reset();
    CsrStreamParams stream;
    stream.values = formats::kValuesF32;
    o.params = stream;
    CHECK(check(a, compile(r.view, o)) <= tolerance(Precision::f64));

    // One value fp32 cannot hold: none are stored as fp32, a forced plan is refused, and the
    // conversion names the count when called anyway.
    a.values[a.values.size() / 2] = 0.1;
    const runtime::ResidentCsr bad = runtime::upload_csr(a, Precision::f64);
    CHECK(runtime::inspect_device(bad.view, Precision::f64, kernels).profile.fp32_exact_values ==
          0);
    const Operator plain = compile(bad.view, device_options(Precision::f64));
    CHECK(formats::value_coding_of(plain.plan().params) == formats::kValuesPlain);
    CHECK(check(a, plain) <= tolerance(Precision::f64));
    CHECK_THROWS_WITH_AS(compile(bad.view, o), doctest::Contains("exact in fp32"), InputError);
    CHECK_THROWS_WITH_AS(runtime::narrow_values_device(bad.view, kernels),
                         doctest::Contains("1 values are not exact in fp32"), InputError);
  }
}

TEST_CASE("gpu: operators sharing loaded kernels outlive each other") {
  if (!have_device()) return;
  const CsrMatrix a = gen::rmat(14, 8), b = gen::stencil_2d_5pt(120, 90);
  const runtime::ResidentCsr ra = runtime::upload_csr(a, Precision::f64);
  const runtime::ResidentCsr rb = runtime::upload_csr(b, Precision::f64);
  std::optional<Operator> first(compile(ra.view, device_options(Precision::f64)));
  const Operator second = compile(rb.view, device_options(Precision::f64));
  const Operator third = compile(ra.view, device_options(Precision::f64));
  CHECK(third.timings().kernel_origin == "memory");
  first.reset();
  CHECK(check(b, second) <= tolerance(Precision::f64));
  CHECK(check(a, third) <= tolerance(Precision::f64));
}

TEST_CASE("gpu: compile(DeviceCsr) on every public matrix") {
  if (!have_device()) return;
  const auto list = test::public_matrices(10000);
  if (list.empty()) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  for (const auto& [name, path] : list) {
    const CsrMatrix a = read_matrix_market(path);
    for (Precision p : {Precision::f64, Precision::f32}) {
      CAPTURE(name);
      CAPTURE(to_string(p));
      const runtime::ResidentCsr r = runtime::upload_csr(a, p);
      const Operator op = compile(r.view, device_options(p));
      CHECK(check(a, op, 1.0, 0.5) <= tolerance(p));
    }
  }
}

TEST_CASE(
    "gpu: 16-bit columns from device arrays: the slices and x sectors inspect() counts, the "
    "host's blocks") {
  if (!have_device()) return;
  const runtime::DeviceInfo device = runtime::probe_device(0);
  runtime::KernelCache cache({});
  const runtime::DeviceCsrKernels kernels = runtime::load_device_csr_kernels(cache, device);
  // 20 copies of a 3000 x 50000 matrix with scattered columns: blocks within a copy are narrow,
  // blocks that meet two copies are wide. Its twin with each row's columns reversed (device
  // arrays need not be sorted) spans the same columns per slice.
  const CsrMatrix mixed = gen::replicate(gen::random_uniform(3000, 50000, 12), 20);
  CsrMatrix reversed = mixed;
  for (std::int64_t r = 0; r < reversed.nrows; ++r) {
    std::reverse(reversed.col_idx.begin() + reversed.row_ptr[r],
                 reversed.col_idx.begin() + reversed.row_ptr[r + 1]);
    std::reverse(reversed.values.begin() + reversed.row_ptr[r],
                 reversed.values.begin() + reversed.row_ptr[r + 1]);
  }
  std::vector<CsrMatrix> all = matrices();
  all.push_back(mixed);
  all.push_back(gen::random_uniform(100000, 300000, 8));  // all wide
  for (const CsrMatrix& a : all) {
    CAPTURE(a.nrows);
    const runtime::ResidentCsr r = runtime::upload_csr(a, Precision::f32);
    const Profile on_gpu = runtime::inspect_device(r.view, Precision::f32, kernels).profile;
    const Profile host = inspect(a, InspectDepth::rows);
    CHECK(on_gpu.narrow_slice_nnz == host.narrow_slice_nnz);
    // The row pass counts x's sectors as inspect() does, sorted columns or not.
    CHECK(on_gpu.x_sectors == host.x_sectors);
  }
  const std::int64_t want_slices = inspect(mixed, InspectDepth::rows).narrow_slice_nnz;
  CHECK(want_slices > mixed.nnz() / 2);
  CHECK(want_slices < mixed.nnz());
  {
    const runtime::ResidentCsr r = runtime::upload_csr(reversed, Precision::f32);
    const Profile on_gpu = runtime::inspect_device(r.view, Precision::f32, kernels).profile;
    CHECK(on_gpu.narrow_slice_nnz == want_slices);
    // (inspect() reads a row's span from its first and last columns: sorted columns only.)
    CHECK(on_gpu.x_sectors == inspect(reversed, InspectDepth::rows).x_sectors);
  }

  // The blocks' bases and offsets are the host encoding's; wide blocks point into col_idx.
  const formats::CsrStreamFormat unit;
  for (const int tile : {1024, 2048}) {
    CAPTURE(tile);
    CsrStreamParams p;
    p.tile = tile;
    p.narrow_columns = true;
    const Encoded e = unit.encode(mixed, p, Precision::f32);
    const auto* host_base = reinterpret_cast<const std::int32_t*>(e.array("col_base").bytes.data());
    const auto* host16 = reinterpret_cast<const std::uint16_t*>(e.array("col16").bytes.data());
    const runtime::ResidentCsr r = runtime::upload_csr(mixed, Precision::f32);
    runtime::DeviceRowBlocks blocks =
        runtime::stream_row_blocks(r.view.row_ptr, mixed.nrows, tile, p.block_size, kernels);
    const runtime::DeviceNarrowColumns got =
        runtime::narrow_columns_device(r.view, blocks.starts, blocks.nblocks, kernels);
    std::vector<std::int32_t> starts(static_cast<std::size_t>(blocks.nblocks + 1));
    blocks.starts.download(starts.data(), starts.size() * 4);
    std::vector<std::int32_t> base(static_cast<std::size_t>(blocks.nblocks));
    got.base.download(base.data(), base.size() * 4);
    std::vector<std::uint16_t> col16(static_cast<std::size_t>(mixed.nnz()));
    got.col16.download(col16.data(), col16.size() * 2);
    std::int64_t narrow = 0, wide = 0, mismatched = 0;
    for (std::size_t b = 0; b < base.size(); ++b) {
      const std::int64_t lo = mixed.row_ptr[starts[b]], hi = mixed.row_ptr[starts[b + 1]];
      if (host_base[b] >= 0) {
        ++narrow;
        CHECK(base[b] == host_base[b]);
        for (std::int64_t k = lo; k < hi; ++k) mismatched += col16[k] != host16[k] ? 1 : 0;
      } else {
        ++wide;
        CHECK(base[b] == -1 - lo);
      }
    }
    CHECK(mismatched == 0);
    CHECK(narrow > 0);
    CHECK(wide > 0);
    // Array for array: the wide blocks' unused slots are 0 on both sides.
    CHECK(std::equal(col16.begin(), col16.end(), host16));
  }

  // The kernel multiplies right with them, forced and as the planner's pick.
  for (const CsrMatrix* a : {&mixed, static_cast<const CsrMatrix*>(&reversed)}) {
    for (Precision precision : {Precision::f64, Precision::f32}) {
      CAPTURE(to_string(precision));
      const runtime::ResidentCsr r = runtime::upload_csr(*a, precision);
      Options o = device_options(precision);
      CsrStreamParams p;
      p.tile = 2048;
      p.narrow_columns = true;
      o.params = p;
      const Operator op = compile(r.view, o);
      CHECK(op.source().kernel_name.find("_c16") != std::string::npos);
      CHECK(check(*a, op) <= tolerance(precision));
      CHECK(check(*a, op, -0.5, 1.25) <= tolerance(precision));
    }
  }
  const runtime::ResidentCsr r = runtime::upload_csr(mixed, Precision::f32);
  const Operator op = compile(r.view, device_options(Precision::f32));
  const auto c16 = std::count_if(op.plan().candidates.begin(), op.plan().candidates.end(),
                                 [](const Candidate& c) {
                                   const auto* q = std::get_if<CsrStreamParams>(&c.params);
                                   return c.applicable && q != nullptr && q->narrow_columns;
                                 });
  CHECK(c16 > 0);
  CHECK(check(mixed, op) <= tolerance(Precision::f32));
}
