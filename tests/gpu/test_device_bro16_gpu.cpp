// bro_ell, bro_coo and bro_hyb with 16-bit value codes built on the GPU from device arrays
// (runtime/device_build_bro.cpp, the codes from runtime/device_values.cpp): on edge cases and on
// the public matrices with 257 to 65,535 distinct values, fp64 and fp32, every array equals the
// host codec's for the same plan (the codes compared through their tables: the GPU's lists the
// patterns ascending, the host's in order of first occurrence), the operators multiply as the
// host reference does (bro_ell, which adds no atomics, bitwise as the host-built operator of the
// same plan), and format auto from device arrays plans a BRO format with a 16-bit table where
// the host planner does, for the same matrix.
#include <doctest/doctest.h>

#include <cstring>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "device_bro_support.hpp"

using namespace spmvc;
using namespace spmvc::test::bro_gpu;
using test::check;
using test::have_device;
using test::tolerance;
using test::with_distinct;

namespace {

// Edge cases past an 8-bit table: empty rows among long ones, with and without 0.0 among the
// values; one long row; many rows and a table of 20,000 values; no nonzeros at all.
std::vector<CsrMatrix> many_valued() {
  return {with_distinct(test::short_and_long_rows(6000, true), 3000, false),
          with_distinct(test::short_and_long_rows(6000, true), 3000, true),
          with_distinct(one_long_row(), 700, false),
          with_distinct(gen::random_uniform(40000, 3000, 5), 20000, false), no_nonzeros()};
}

// Distinct bit patterns of a's values in `p`'s type.
std::int64_t distinct_values(const CsrMatrix& a, Precision p) {
  std::set<std::uint64_t> seen;
  for (const double v : a.values) {
    std::uint64_t bits = 0;
    if (p == Precision::f64) {
      std::memcpy(&bits, &v, 8);
    } else {
      const auto f = static_cast<float>(v);
      std::memcpy(&bits, &f, 4);
    }
    seen.insert(bits);
  }
  return static_cast<std::int64_t>(seen.size());
}

BroCooParams coo16(int interval, int symbol_bits) {
  BroCooParams p;
  p.interval = interval;
  p.symbol_bits = symbol_bits;
  p.values = formats::kValuesTable16;
  return p;
}

// bro_hyb's proposals for `a` with a 16-bit table, and a narrow split.
std::vector<BroHybParams> hyb16(const Profile& profile, Precision precision) {
  BroHybParams narrow;
  narrow.width = 2;
  narrow.symbol_bits = 64;
  narrow.threads_per_row = 2;
  narrow.slice_height = 16;
  narrow.values = formats::kValuesTable16;
  std::vector<BroHybParams> out{narrow};
  for (const Candidate& c : formats::BroHybFormat{}.propose(profile, precision))
    if (c.applicable && formats::value_coding_of(c.params) == formats::kValuesTable16)
      out.push_back(std::get<BroHybParams>(c.params));
  return out;
}

// y of `op` for the test vector (beta 0), as check() computes it.
std::vector<double> product(const CsrMatrix& a, const Operator& op) {
  const std::vector<double> x = codegen::test_vector(a.ncols, op.plan().precision);
  std::vector<double> y(static_cast<std::size_t>(a.nrows), 0.0);
  op.apply_host(x, y, 1.0, 0.0);
  return y;
}

// The operator built on the GPU from device arrays with `params` (a 16-bit table) multiplies as
// the host reference does; bro_ell's gives bitwise the y of the host-built operator.
void check_operator(const CsrMatrix& a, const FormatParams& params, Precision precision) {
  CAPTURE(describe(params));
  CAPTURE(to_string(precision));
  const runtime::ResidentCsr r = runtime::upload_csr(a, precision);
  // The specialised kernel from the first multiply: the generic tier's sums differ in rounding.
  Options o = test::forced(precision, params);
  o.tiered = false;
  const Operator op = compile(r.view, o);
  CHECK(op.plan().format == format_of(params));
  CHECK(formats::value_coding_of(op.plan().params) == formats::kValuesTable16);
  CHECK(op.timings().build == "device");
  CHECK(check(a, op) <= tolerance(precision));
  CHECK(check(a, op, -0.5, 1.25) <= tolerance(precision));
  if (std::holds_alternative<BroEllParams>(params)) {
    const Operator host = compile(a, o);
    CHECK(host.timings().build == "host");
    CHECK(product(a, op) == product(a, host));
  }
}

}  // namespace

TEST_CASE("gpu: bro_ell with 16-bit codes built on the GPU equals the host codec's on edge cases") {
  if (!have_device()) return;
  const Units u;
  for (const CsrMatrix& a : many_valued()) {
    for (Precision precision : {Precision::f64, Precision::f32}) {
      for (const BroEllParams& shape : edge_shapes(true)) {
        BroEllParams p = shape;
        p.values = formats::kValuesTable16;
        CAPTURE(a.nrows);
        CAPTURE(a.nnz());
        CAPTURE(describe(p));
        CAPTURE(to_string(precision));
        CHECK(same_as_host(u, a, p, precision));
      }
    }
  }
}

TEST_CASE("gpu: bro_coo and bro_hyb with 16-bit codes built on the GPU equal the host codec's") {
  if (!have_device()) return;
  const Units u;
  for (const CsrMatrix& a : many_valued()) {
    const Profile profile = inspect(a, InspectDepth::rows);
    for (Precision precision : {Precision::f64, Precision::f32}) {
      CAPTURE(a.nrows);
      CAPTURE(a.nnz());
      CAPTURE(to_string(precision));
      for (int interval : {32, 1024})
        for (int L : {32, 64}) {
          CAPTURE(describe(coo16(interval, L)));
          CHECK(same_as_host(u, a, coo16(interval, L), precision));
        }
      for (const BroHybParams& p : hyb16(profile, precision)) {
        CAPTURE(describe(p));
        CHECK(same_as_host(u, a, p, precision));
      }
    }
  }
}

TEST_CASE("gpu: compile(DeviceCsr) multiplies right with BRO and 16-bit codes") {
  if (!have_device()) return;
  const CsrMatrix a = with_distinct(test::short_and_long_rows(6000, true), 3000, true);
  const Profile profile = inspect(a, InspectDepth::rows);
  for (Precision precision : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
    // Width tables per slice (tables = 1) and baked patterns (2) are refused for this matrix's
    // 5000-nonzero rows (constant memory, the baked pattern's 64 columns): on a stencil below.
    BroEllParams shared;
    shared.values = formats::kValuesTable16;
    check_operator(a, shared, precision);
    const CsrMatrix stencil = with_distinct(gen::stencil_3d_27pt(16, 16, 16), 3000, true);
    for (int tables : {0, 1, 2}) {
      BroEllParams p;
      p.tables = tables;
      p.values = formats::kValuesTable16;
      check_operator(stencil, p, precision);
    }
    check_operator(a, coo16(1024, 32), precision);
    check_operator(a, hyb16(profile, precision).back(), precision);
  }
}

// The public matrices of 10k to 2M nonzeros whose values in `precision` are past an 8-bit table
// and leave room for the padding's 0.0 in a 16-bit one (257 to 65,535 distinct values).
template <typename Each>
int for_public_many_valued(Each&& each, int most = std::numeric_limits<int>::max()) {
  int covered = 0;
  for (const auto& [name, path] : test::public_matrices(10000, 2000000)) {
    if (covered >= most) break;
    const CsrMatrix a = read_matrix_market(path);
    for (Precision precision : {Precision::f64, Precision::f32}) {
      const std::int64_t distinct = distinct_values(a, precision);
      if (distinct <= 256 || distinct >= 65536) continue;
      CAPTURE(name);
      CAPTURE(distinct);
      CAPTURE(to_string(precision));
      each(a, precision);
      ++covered;
    }
  }
  return covered;
}

TEST_CASE("gpu: BRO with 16-bit codes on the public matrices of 257 to 65535 values: arrays") {
  if (!have_device()) return;
  if (test::public_matrices(10000, 2000000).empty()) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  const Units u;
  const int covered = for_public_many_valued([&](const CsrMatrix& a, Precision precision) {
    const Profile profile = inspect(a, InspectDepth::rows);
    // bro_ell: the planner's 16-bit candidates, in every width-table mode it proposes.
    bool ell = false;
    for (const Candidate& c : formats::BroEllFormat{}.propose(profile, precision)) {
      if (!c.applicable || formats::value_coding_of(c.params) != formats::kValuesTable16) continue;
      CAPTURE(c.label);
      CHECK(same_as_host(u, a, std::get<BroEllParams>(c.params), precision));
      ell = true;
    }
    CHECK(ell);
    CHECK(same_as_host(u, a, coo16(1024, 32), precision));
    CHECK(same_as_host(u, a, coo16(32, 64), precision));
    for (const BroHybParams& p : hyb16(profile, precision)) {
      CAPTURE(describe(p));
      CHECK(same_as_host(u, a, p, precision));
    }
  });
  MESSAGE(covered << " public matrix and precision pairs with 257 to 65,535 values");
  CHECK(covered > 0);
}

TEST_CASE("gpu: BRO with 16-bit codes on the public matrices of 257 to 65535 values: products") {
  if (!have_device()) return;
  if (test::public_matrices(10000, 2000000).empty()) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  // Each pair compiles four kernels: the first few pairs keep the case short.
  const int covered = for_public_many_valued(
      [&](const CsrMatrix& a, Precision precision) {
        const Profile profile = inspect(a, InspectDepth::rows);
        BroEllParams p;
        p.values = formats::kValuesTable16;
        check_operator(a, p, precision);
        check_operator(a, coo16(1024, 32), precision);
        check_operator(a, hyb16(profile, precision).back(), precision);
      },
      6);
  CHECK(covered > 0);
}

TEST_CASE("gpu: format auto from device arrays plans as the host build on a grid of 723 values") {
  if (!have_device()) return;
  // G3_circuit's count at x16M: past an 8-bit table; the host planner's pick there is bro_ell
  // with a 16-bit table, which the device-array build now makes too.
  CsrMatrix a = gen::stencil_2d_5pt(500, 500);
  for (std::size_t k = 0; k < a.values.size(); ++k)
    a.values[k] = 1.0 + static_cast<double>(static_cast<std::int64_t>(k) % 723) / 7.0;
  for (Precision precision : {Precision::f64, Precision::f32}) {
    CAPTURE(to_string(precision));
    Options o;
    o.precision = precision;
    o.disk_cache = false;
    o.tiered = false;
    o.cusparse = "never";
    const runtime::ResidentCsr r = runtime::upload_csr(a, precision);
    const Operator device = compile(r.view, o);
    Options h = o;
    h.build = BuildMode::host;
    const Operator host = compile(a, h);
    MESSAGE(to_string(precision) << ": device-array build " << device.plan().format << " ["
                                 << describe(device.plan().params) << "], host build "
                                 << host.plan().format << " [" << describe(host.plan().params)
                                 << "]");
    CHECK(device.timings().build == "device");
    CHECK(host.timings().build == "host");
    CHECK(device.profile().distinct_values == 723);
    CHECK(device.plan().format == host.plan().format);
    CHECK(describe(device.plan().params) == describe(host.plan().params));
    CHECK(check(a, device) <= tolerance(precision));
    if (device.plan().format == "bro_ell" && host.plan().format == "bro_ell")
      CHECK(product(a, device) == product(a, host));
  }
}
