// ell, sell and hyb built on the GPU from device arrays (runtime/device_build_ell.cpp): every
// array equals the host encoder's for the same parameters, entry by entry (value codes through
// their tables: the device's table lists the patterns sorted, the host's in order of first
// occurrence), for every slice height and sorting window, on edge matrices and every public
// matrix; the per-slice padding equals inspect()'s; and the operators compile(DeviceCsr) makes
// with them multiply as the host reference does.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "device.hpp"
#include "device_csr.hpp"
#include "device_ell.hpp"
#include "edge_matrices.hpp"
#include "formats/arrays.hpp"
#include "formats/ell/ell_format.hpp"
#include "formats/format.hpp"
#include "formats/hyb/hyb_format.hpp"
#include "formats/values/values.hpp"
#include "gpu_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_ell.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

using namespace spmvc;
using test::check;
using test::have_device;
using test::tolerance;

namespace {

struct Kernels {
  runtime::KernelCache cache{{}};
  runtime::DeviceCsrKernels csr;
  runtime::DeviceEllKernels ell;
  Kernels() {
    const runtime::DeviceInfo device = runtime::probe_device(0);
    csr = runtime::load_device_csr_kernels(cache, device);
    ell = runtime::load_device_ell_kernels(cache, device);
  }
};

// The column array whose -1 entries mark the padding of value array `name`.
std::string columns_of(const std::string& name) {
  if (name == "coo_values") return "coo_col";
  return name.substr(0, name.size() - std::string("values").size()) + "col_idx";
}

template <typename Value, typename Code>
std::vector<Value> decode(const std::vector<std::byte>& codes,
                          const std::vector<std::byte>& table) {
  std::vector<Value> out(codes.size() / sizeof(Code));
  const auto entries = table.size() / sizeof(Value);
  for (std::size_t i = 0; i < out.size(); ++i) {
    Code c;
    std::memcpy(&c, codes.data() + i * sizeof(Code), sizeof c);
    REQUIRE(static_cast<std::size_t>(c) < entries);
    std::memcpy(&out[i], table.data() + c * sizeof(Value), sizeof(Value));
  }
  return out;
}

// Every array the GPU builds for `params` against the host encoder's: the same names, sizes and
// bytes; table-coded values compared as the values they decode to, in every slot that holds a
// nonzero (padding may name any entry).
void check_arrays(const CsrMatrix& a, const runtime::ResidentCsr& r, const FormatParams& params,
                  Precision p, const Kernels& k) {
  CAPTURE(describe(params));
  CAPTURE(to_string(p));
  const runtime::DeviceInspection seen = runtime::inspect_device(r.view, p, k.csr);
  Plan plan;
  plan.format = std::string(format_of(params));
  plan.params = params;
  plan.precision = p;
  const Encoded want = formats::find_format(plan.format).encode(a, params, p);
  runtime::DeviceEllBuild got = runtime::build_ell_family_device(r.view, plan, seen.profile,
                                                                 seen.value_patterns, k.csr, k.ell);
  REQUIRE(got.arrays.size() == want.arrays.size());
  auto download = [&](const std::string& name) {
    const auto it = std::find_if(got.arrays.begin(), got.arrays.end(),
                                 [&](const auto& e) { return e.first == name; });
    REQUIRE(it != got.arrays.end());
    std::vector<std::byte> bytes(it->second.bytes());
    if (!bytes.empty()) it->second.download(bytes.data(), bytes.size());
    return bytes;
  };
  const int coding = formats::value_coding_of(params);
  const bool table = coding == formats::kValuesTable8;
  for (const EncodedArray& h : want.arrays) {
    CAPTURE(h.name);
    if (table && h.name.ends_with("_table")) continue;  // compared through the codes below
    const std::vector<std::byte> d = download(h.name);
    REQUIRE(d.size() == h.bytes.size());
    if (!(table && h.name.ends_with("values"))) {
      CHECK(std::memcmp(d.data(), h.bytes.data(), d.size()) == 0);
      continue;
    }
    const std::vector<std::byte> host_table(want.array(h.name + "_table").bytes.begin(),
                                            want.array(h.name + "_table").bytes.end());
    const std::vector<std::byte> dev_table = download(h.name + "_table");
    const std::vector<std::byte> host_codes(h.bytes.begin(), h.bytes.end());
    const EncodedArray& cols = want.array(columns_of(h.name));
    const auto* col = reinterpret_cast<const std::int32_t*>(cols.bytes.data());
    std::int64_t differ = 0;
    if (p == Precision::f64) {
      const auto hv = decode<double, std::uint8_t>(host_codes, host_table);
      const auto dv = decode<double, std::uint8_t>(d, dev_table);
      for (std::size_t i = 0; i < hv.size(); ++i)
        differ += col[i] >= 0 && std::memcmp(&hv[i], &dv[i], 8) != 0 ? 1 : 0;
    } else {
      const auto hv = decode<float, std::uint8_t>(host_codes, host_table);
      const auto dv = decode<float, std::uint8_t>(d, dev_table);
      for (std::size_t i = 0; i < hv.size(); ++i)
        differ += col[i] >= 0 && std::memcmp(&hv[i], &dv[i], 4) != 0 ? 1 : 0;
    }
    CHECK(differ == 0);
  }
  if (std::holds_alternative<EllParams>(params))
    CHECK(got.width == formats::ell_part::stored_width(want, ""));
  if (std::holds_alternative<HybParams>(params)) {
    CHECK(got.width == formats::ell_part::stored_width(want, "ell_"));
    CHECK(got.coo == want.array("coo_row").count());
  }
}

// The operator compile(DeviceCsr) builds with `params` multiplies as the host reference does
// (skipped where the format cannot implement the matrix: ell past its padding limit).
void check_product(const CsrMatrix& a, const runtime::ResidentCsr& r, const FormatParams& params,
                   Precision p) {
  CAPTURE(describe(params));
  CAPTURE(to_string(p));
  const Profile profile = inspect(a, InspectDepth::rows);
  if (formats::find_format(format_of(params)).cannot_implement(profile, params, p)) return;
  const Operator op = compile(r.view, test::forced(p, params));
  CHECK(op.plan().format == format_of(params));
  CHECK(op.timings().upload == 0.0);
  CHECK(check(a, op) <= tolerance(p));
  CHECK(check(a, op, -0.5, 1.25) <= tolerance(p));
}

bool implementable(const Profile& profile, const FormatParams& params, Precision p) {
  return !formats::find_format(format_of(params)).cannot_implement(profile, params, p);
}

// The parameter sets checked on a matrix: ell with 1 and 4 lanes, ELL-R and not; hyb at the
// Bell-Garland split, at 0 (all COO) and 3; sell at every slice height, unsorted and in windows
// of 1024 and 4096 rows (`every_height`), else at the planner's height 32 and at 1 and 256; each
// also with the value coding the profile allows (8-bit codes, all ones, fp32), where one does.
std::vector<FormatParams> parameter_sets(const Profile& profile, Precision p, bool every_height) {
  std::vector<FormatParams> out;
  const int coding = formats::best_value_coding(profile, p);
  std::vector<int> codings = {formats::kValuesPlain};
  if (coding != formats::kValuesPlain && coding != formats::kValuesTable16)
    codings.push_back(coding);
  for (int values : codings) {
    for (int t : {1, 4}) {
      for (bool r : {true, false}) {
        EllParams e;
        e.width = static_cast<int>(profile.row_max);
        e.threads_per_row = t;
        e.row_lengths = r;
        e.values = values;
        if (implementable(profile, e, p)) out.emplace_back(e);
      }
      for (std::int64_t k : {formats::hyb_split_width(profile), std::int64_t{0}, std::int64_t{3}}) {
        HybParams h;
        h.width = static_cast<int>(k);
        h.threads_per_row = t;
        h.row_lengths = k == 3;
        h.values = values;
        out.emplace_back(h);
      }
    }
  }
  const std::vector<int> heights = every_height ? std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128, 256}
                                                : std::vector<int>{1, 32, 256};
  for (int c : heights) {
    for (int sigma : {1, 1024, 4096}) {
      for (int t : {1, 2}) {
        SellParams s;
        s.slice_height = c;
        s.sigma = sigma;
        s.threads_per_row = t;
        if (implementable(profile, s, p)) out.emplace_back(s);
      }
    }
  }
  return out;
}

std::vector<std::pair<std::string, CsrMatrix>> small_matrices() {
  std::vector<std::pair<std::string, CsrMatrix>> all;
  for (auto& [name, m] : test::edge_matrices()) {
    if (m.nrows > 0 && m.ncols > 0) all.emplace_back(name, std::move(m));
  }
  all.emplace_back("short and long rows", test::short_and_long_rows(30000, true));
  all.emplace_back("power law", gen::rmat(14, 8));
  all.emplace_back("rectangular", gen::random_uniform(30000, 7000, 7));
  all.emplace_back("wide", gen::random_uniform(5000, 90000, 12));
  CsrMatrix pattern = gen::rmat(13, 6);
  std::fill(pattern.values.begin(), pattern.values.end(), 1.0);
  all.emplace_back("pattern", pattern);
  all.emplace_back("two values", gen::stencil_2d_5pt(300, 200));
  CsrMatrix exact = gen::random_uniform(20000, 20000, 9);  // fp32-exact, many distinct
  for (std::size_t k = 0; k < exact.values.size(); ++k)
    exact.values[k] = 0.375 * static_cast<double>(k % 100000) - 9000.0;
  all.emplace_back("fp32-exact values", exact);
  return all;
}

}  // namespace

TEST_CASE("gpu: ell, sell and hyb built on the GPU equal the host encodings, array by array") {
  if (!have_device()) return;
  const Kernels k;
  for (const auto& [name, a] : small_matrices()) {
    CAPTURE(name);
    for (Precision p : {Precision::f64, Precision::f32}) {
      const runtime::ResidentCsr r = runtime::upload_csr(a, p);
      const Profile profile = inspect(a, InspectDepth::rows);
      for (const FormatParams& params : parameter_sets(profile, p, true))
        check_arrays(a, r, params, p, k);
    }
  }
}

TEST_CASE("gpu: the per-slice padding measured on the GPU is inspect()'s") {
  if (!have_device()) return;
  const Kernels k;
  for (const auto& [name, a] : small_matrices()) {
    CAPTURE(name);
    const runtime::ResidentCsr r = runtime::upload_csr(a, Precision::f64);
    CHECK(runtime::slice_longest_device(r.view, k.ell) ==
          inspect(a, InspectDepth::rows).slice_longest);
    // compile(DeviceCsr) hands it to the planner.
    Options o;
    o.disk_cache = false;
    CHECK(compile(r.view, o).profile().slice_longest ==
          inspect(a, InspectDepth::rows).slice_longest);
  }
}

TEST_CASE("gpu: the GPU scan sums in place across chunks") {
  if (!have_device()) return;
  const Kernels k;
  for (const std::int64_t n : {1, 7, 2048, 2049, 100000, 3000001}) {
    CAPTURE(n);
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>((i * 7919) % 1000);
    runtime::DeviceBuffer b(v.size() * 8);
    b.upload(v.data(), v.size() * 8);
    runtime::scan_device(static_cast<std::int64_t*>(b.get()), n, k.ell);
    std::vector<std::int64_t> got(v.size());
    b.download(got.data(), got.size() * 8);
    std::partial_sum(v.begin(), v.end(), v.begin());
    CHECK(got == v);
  }
}

TEST_CASE("gpu: compile(DeviceCsr) with ell, sell and hyb multiplies right") {
  if (!have_device()) return;
  for (const auto& [name, a] : small_matrices()) {
    CAPTURE(name);
    // NaN and infinities propagate (tests/gpu/test_edge_gpu.cpp); relative errors need finite y.
    if (!std::all_of(a.values.begin(), a.values.end(), [](double v) { return std::isfinite(v); }))
      continue;
    for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
      const runtime::ResidentCsr r = runtime::upload_csr(a, p);
      const Profile profile = inspect(a, InspectDepth::rows);
      const int coding = formats::best_value_coding(profile, p);
      EllParams e;
      e.width = static_cast<int>(profile.row_max);
      e.threads_per_row = 2;
      HybParams h;
      h.width = static_cast<int>(formats::hyb_split_width(profile));
      SellParams s8;
      s8.slice_height = 8;
      SellParams s32;
      s32.sigma = 1024;
      for (const FormatParams& params :
           {FormatParams{e}, FormatParams{h}, FormatParams{s8}, FormatParams{s32}})
        check_product(a, r, params, p);
      if (coding != formats::kValuesPlain && coding != formats::kValuesTable16) {
        e.values = coding;
        h.values = coding;
        check_product(a, r, e, p);
        check_product(a, r, h, p);
      }
      // Unforced, the planner weighs them with the others and its pick multiplies right.
      Options o;
      o.precision = p;
      o.disk_cache = false;
      const Operator op = compile(r.view, o);
      CHECK(check(a, op) <= tolerance(p));
      const auto& c = op.plan().candidates;
      CHECK(std::any_of(c.begin(), c.end(), [](const Candidate& x) { return x.format == "sell"; }));
    }
  }
}

TEST_CASE("gpu: ell, sell and hyb from device arrays on every public matrix") {
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
    const Profile profile = inspect(a, InspectDepth::rows);
    for (Precision p : {Precision::f64, Precision::f32}) {
      const runtime::ResidentCsr r = runtime::upload_csr(a, p);
      CHECK(runtime::slice_longest_device(r.view, k.ell) == profile.slice_longest);
      for (const FormatParams& params : parameter_sets(profile, p, false))
        check_arrays(a, r, params, p, k);
      EllParams e;
      e.width = static_cast<int>(profile.row_max);
      HybParams h;
      h.width = static_cast<int>(formats::hyb_split_width(profile));
      SellParams s;
      s.sigma = 1024;
      for (const FormatParams& params : {FormatParams{e}, FormatParams{h}, FormatParams{s}})
        check_product(a, r, params, p);
    }
  }
}
