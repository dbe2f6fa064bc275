// 16-bit value codes built on the GPU from device arrays (runtime/device_values.cpp): the set
// pass finds the values' distinct bit patterns (up to 65,536, none past that), also where its
// early exit and block filter act (3.2M nonzeros all distinct, a few hot values, small integers,
// exactly 65,536 and 65,537 values each repeated), the codes name
// every value exactly, ell's and hyb's coded arrays equal the host encoder's (codes compared
// through their tables: the device's lists the patterns sorted, the host's in order of first
// occurrence), compile(DeviceCsr) sees the distinct values and multiplies right with 16-bit
// tables in csr, csr_stream, ell and hyb; on every public matrix of 10k nonzeros or more, the
// patterns are the values' own and csr with a 16-bit table multiplies right.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <set>

#include "device.hpp"
#include "device_csr.hpp"
#include "device_ell.hpp"
#include "device_values.hpp"
#include "formats/arrays.hpp"
#include "formats/format.hpp"
#include "formats/values/values.hpp"
#include "gpu_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

using namespace spmvc;
using test::check;
using test::have_device;
using test::tolerance;

namespace {

// `a` with `distinct` distinct values, 1 + (k % distinct) / 8 (exact in fp32 below 2^21).
CsrMatrix with_distinct(CsrMatrix a, std::int64_t distinct) {
  for (std::size_t k = 0; k < a.values.size(); ++k)
    a.values[k] = 1.0 + static_cast<double>(static_cast<std::int64_t>(k) % distinct) / 8.0;
  return a;
}

std::uint64_t pattern(double v, Precision p) {
  return test::stored_pattern(v, p != Precision::f64);
}

std::vector<std::byte> download(const runtime::DeviceBuffer& b) {
  std::vector<std::byte> out(b.bytes());
  if (!out.empty()) b.download(out.data(), out.size());
  return out;
}

// Value i of a table of `p`'s type, as its bit pattern.
std::uint64_t table_entry(const std::vector<std::byte>& table, std::size_t i, Precision p) {
  if (p == Precision::f64) {
    std::uint64_t v;
    std::memcpy(&v, table.data() + i * 8, 8);
    return v;
  }
  std::uint32_t v;
  std::memcpy(&v, table.data() + i * 4, 4);
  return v;
}

struct Kernels {
  runtime::KernelCache cache{{}};
  runtime::DeviceCsrKernels csr;
  runtime::DeviceEllKernels ell;
  runtime::DeviceValueKernels values;
  Kernels() {
    const runtime::DeviceInfo device = runtime::probe_device(0);
    csr = runtime::load_device_csr_kernels(cache, device);
    ell = runtime::load_device_ell_kernels(cache, device);
    values = runtime::load_device_value_kernels(cache, device);
  }
};

}  // namespace

TEST_CASE("gpu: the value set finds the distinct patterns up to 65536, and the codes name them") {
  if (!have_device()) return;
  const Kernels k;
  for (const std::int64_t distinct : {std::int64_t{300}, std::int64_t{5000}, std::int64_t{65536},
                                      std::int64_t{65537}, std::int64_t{200000}}) {
    const CsrMatrix a = with_distinct(gen::random_uniform(50000, 50000, 6), distinct);
    for (Precision p : {Precision::f64, Precision::f32}) {
      CAPTURE(distinct);
      CAPTURE(to_string(p));
      std::set<std::uint64_t> want;
      for (double v : a.values) want.insert(pattern(v, p));
      const runtime::ResidentCsr r = runtime::upload_csr(a, p);
      const auto got = runtime::value_patterns16_device(r.view, p, k.values);
      if (want.size() > 65536) {
        CHECK_FALSE(got.has_value());
        continue;
      }
      REQUIRE(got.has_value());
      CHECK(*got == std::vector<std::uint64_t>(want.begin(), want.end()));
      const runtime::DeviceValueCodes coded =
          runtime::code_values16_device(r.view, p, *got, k.values);
      const std::vector<std::byte> codes = download(coded.codes);
      const std::vector<std::byte> table = download(coded.table);
      REQUIRE(codes.size() >= a.values.size() * 2);
      CHECK(codes.size() % 16 == 0);
      std::int64_t wrong = 0;
      for (std::size_t i = 0; i < a.values.size(); ++i) {
        std::uint16_t c;
        std::memcpy(&c, codes.data() + 2 * i, 2);
        wrong += table_entry(table, c, p) == pattern(a.values[i], p) ? 0 : 1;
      }
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("gpu: the value set's early exits and filter leave its answer exact") {
  if (!have_device()) return;
  const Kernels k;
  struct Case {
    const char* name;
    std::function<double(std::int64_t)> value;
  };
  const std::vector<Case> cases = {
      // Every value distinct: past the cap within the first wave of threads.
      {"all distinct", [](std::int64_t i) { return 1.0 + static_cast<double>(i) / 1024.0; }},
      // Three values on nearly every nonzero, 1000 others now and then: the block filters.
      {"few hot values",
       [](std::int64_t i) {
         return i % 997 == 0 ? 100.0 + static_cast<double>(i % 1000)
                             : 0.5 * static_cast<double>(i % 3) - 1.0;
       }},
      // Small integers (short mantissas: the patterns differ in their high bits only).
      {"small integers", [](std::int64_t i) { return static_cast<double>(i % 40000); }},
      // Exactly the cap, and one past it, each value on many nonzeros.
      {"65536 repeated", [](std::int64_t i) { return 2.0 + static_cast<double>(i % 65536) / 4.0; }},
      {"65537 repeated", [](std::int64_t i) { return 2.0 + static_cast<double>(i % 65537) / 4.0; }},
  };
  CsrMatrix a = gen::random_uniform(400000, 400000, 8);  // 3.2M nonzeros
  for (const Case& c : cases) {
    for (std::size_t i = 0; i < a.values.size(); ++i)
      a.values[i] = c.value(static_cast<std::int64_t>(i));
    for (Precision p : {Precision::f64, Precision::f32}) {
      CAPTURE(c.name);
      CAPTURE(to_string(p));
      std::set<std::uint64_t> want;
      for (double v : a.values) want.insert(pattern(v, p));
      const runtime::ResidentCsr r = runtime::upload_csr(a, p);
      const auto got = runtime::value_patterns16_device(r.view, p, k.values);
      CHECK(got.has_value() == (want.size() <= 65536));
      if (got) CHECK(*got == std::vector<std::uint64_t>(want.begin(), want.end()));
    }
  }
}

TEST_CASE("gpu: ell and hyb with 16-bit tables built on the GPU equal the host encodings") {
  if (!have_device()) return;
  const Kernels k;
  const CsrMatrix a = with_distinct(test::short_and_long_rows(20000, true), 3000);
  const Profile profile = inspect(a, InspectDepth::rows);
  for (Precision p : {Precision::f64, Precision::f32}) {
    CAPTURE(to_string(p));
    const runtime::ResidentCsr r = runtime::upload_csr(a, p);
    const runtime::DeviceInspection seen = runtime::inspect_device(r.view, p, k.csr);
    runtime::DeviceValues16 values16;
    values16.kernels = &k.values;
    values16.patterns = *runtime::value_patterns16_device(r.view, p, k.values);
    EllParams e;
    e.width = static_cast<int>(profile.row_max);
    e.values = formats::kValuesTable16;
    HybParams h;
    h.width = 3;
    h.values = formats::kValuesTable16;
    for (const FormatParams& params : {FormatParams{e}, FormatParams{h}}) {
      CAPTURE(describe(params));
      Plan plan;
      plan.format = std::string(format_of(params));
      plan.params = params;
      plan.precision = p;
      const Encoded want = formats::find_format(plan.format).encode(a, params, p);
      runtime::DeviceEllBuild got = runtime::build_ell_family_device(
          r.view, plan, seen.profile, seen.value_patterns, k.csr, k.ell, &values16);
      REQUIRE(got.arrays.size() == want.arrays.size());
      auto device_array = [&](const std::string& name) {
        const auto it = std::find_if(got.arrays.begin(), got.arrays.end(),
                                     [&](const auto& x) { return x.first == name; });
        REQUIRE(it != got.arrays.end());
        return download(it->second);
      };
      for (const EncodedArray& arr : want.arrays) {
        CAPTURE(arr.name);
        if (arr.name.ends_with("_table")) continue;  // compared through the codes
        const std::vector<std::byte> d = device_array(arr.name);
        REQUIRE(d.size() == arr.bytes.size());
        if (!arr.name.ends_with("values")) {
          CHECK(std::memcmp(d.data(), arr.bytes.data(), d.size()) == 0);
          continue;
        }
        const std::string cols_name = arr.name == "coo_values"
                                          ? "coo_col"
                                          : arr.name.substr(0, arr.name.size() - 6) + "col_idx";
        const auto* col = reinterpret_cast<const std::int32_t*>(want.array(cols_name).bytes.data());
        const EncodedArray& host_table = want.array(arr.name + "_table");
        const std::vector<std::byte> ht(host_table.bytes.begin(), host_table.bytes.end());
        const std::vector<std::byte> dt = device_array(arr.name + "_table");
        std::int64_t differ = 0;
        for (std::size_t i = 0; i < d.size() / 2; ++i) {
          if (col[i] < 0) continue;  // padding may name any entry
          std::uint16_t hc, dc;
          std::memcpy(&hc, arr.bytes.data() + 2 * i, 2);
          std::memcpy(&dc, d.data() + 2 * i, 2);
          differ += table_entry(ht, hc, p) == table_entry(dt, dc, p) ? 0 : 1;
        }
        CHECK(differ == 0);
      }
    }
  }
}

TEST_CASE("gpu: compile(DeviceCsr) with 16-bit tables multiplies right") {
  if (!have_device()) return;
  const CsrMatrix a = with_distinct(gen::rmat(14, 8), 5000);
  const Profile profile = inspect(a, InspectDepth::rows);
  for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
    CAPTURE(to_string(p));
    const runtime::ResidentCsr r = runtime::upload_csr(a, p);
    Options o;
    o.precision = p;
    o.disk_cache = false;
    // Format auto counts past the row pass's 256, as a format with 16-bit codes does.
    const Operator any = compile(r.view, o);
    CHECK(any.profile().distinct_values == 5000);
    CHECK(check(a, any) <= tolerance(p));
    o.format = "csr";
    const Operator csr = compile(r.view, o);
    CHECK(csr.profile().distinct_values == 5000);
    CHECK(check(a, csr) <= tolerance(p));
    CsrParams c;
    c.values = formats::kValuesTable16;
    CsrStreamParams s;
    s.values = formats::kValuesTable16;
    EllParams e;
    e.width = static_cast<int>(profile.row_max);
    e.values = formats::kValuesTable16;
    HybParams h;
    h.width = static_cast<int>(formats::hyb_split_width(profile));
    h.values = formats::kValuesTable16;
    for (const FormatParams& params :
         {FormatParams{c}, FormatParams{s}, FormatParams{e}, FormatParams{h}}) {
      CAPTURE(describe(params));
      if (formats::find_format(format_of(params)).cannot_implement(profile, params, p)) continue;
      const Operator op = compile(r.view, test::forced(p, params));
      CHECK(op.plan().format == format_of(params));
      CHECK(formats::value_coding_of(op.plan().params) == formats::kValuesTable16);
      CHECK(check(a, op) <= tolerance(p));
      CHECK(check(a, op, -0.5, 1.25) <= tolerance(p));
    }
  }
}

TEST_CASE("gpu: 16-bit value codes from device arrays on every public matrix") {
  if (!have_device()) return;
  const auto list = test::public_matrices(10000);
  if (list.empty()) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  const Kernels k;
  for (const auto& [name, path] : list) {
    const CsrMatrix a = read_matrix_market(path);
    CAPTURE(name);
    for (Precision p : {Precision::f64, Precision::f32}) {
      CAPTURE(to_string(p));
      std::set<std::uint64_t> want;
      for (double v : a.values) want.insert(pattern(v, p));
      const runtime::ResidentCsr r = runtime::upload_csr(a, p);
      const auto got = runtime::value_patterns16_device(r.view, p, k.values);
      if (want.size() > 65536) {
        CHECK_FALSE(got.has_value());
        continue;
      }
      REQUIRE(got.has_value());
      CHECK(*got == std::vector<std::uint64_t>(want.begin(), want.end()));
      if (want.size() >= 65536) continue;  // no room for padding's 0
      // csr with the 16-bit table multiplies as the host reference does.
      CsrParams c;
      c.values = formats::kValuesTable16;
      const Operator op = compile(r.view, test::forced(p, c));
      CHECK(formats::value_coding_of(op.plan().params) == formats::kValuesTable16);
      CHECK(check(a, op) <= tolerance(p));
    }
  }
}
