// The host half of building ell, sell and hyb from device arrays: the index arithmetic of
// templates/device_ell_index.cuh (the kernels' own functions, compiled for the host) run pass by
// pass as the GPU runs them lays out exactly the host encoders' arrays, byte for byte, for every
// slice height, sorting window and lane count; the per-slice padding pass gives inspect()'s
// Profile::slice_longest; the planner offers ell, sell and hyb for device arrays, charges their
// GPU encode by the bytes it writes and refuses what the GPU build cannot do, naming why; and
// the kernel generated from the sizes alone is the host pipeline's. The kernels run in
// tests/gpu/test_device_ell_gpu.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "codegen/codegen.hpp"
#include "edge_matrices.hpp"
#include "formats/arrays.hpp"
#include "formats/ell/ell_format.hpp"
#include "formats/format.hpp"
#include "formats/hyb/hyb_format.hpp"
#include "formats/values/values.hpp"
#include "heuristics.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_ell.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

#define SPMVC_HD inline
#include "../../templates/device_ell_index.cuh"

using namespace spmvc;
namespace de = spmvc::device_ell;

namespace {

std::int64_t row_len(const CsrMatrix& a, std::int64_t r) {
  return a.row_ptr[static_cast<std::size_t>(r + 1)] - a.row_ptr[static_cast<std::size_t>(r)];
}

template <typename T>
EncodedArray array_of(const std::string& name, ElemType type, const std::vector<T>& v) {
  EncodedArray out{name, type, {}};
  out.bytes.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.bytes.data(), v.data(), out.bytes.size());
  return out;
}

// The caller's values as the device holds them (double, or float for f32 and f32_acc64).
template <typename Value>
std::vector<Value> stored(const CsrMatrix& a) {
  return std::vector<Value>(a.values.begin(), a.values.end());
}

// ell_fill, thread by thread: the part of width `width` (hyb's with prefix "ell_").
template <typename Value>
void emulate_ell_part(const CsrMatrix& a, std::int64_t width, int t, bool row_lengths,
                      const std::string& prefix, std::vector<EncodedArray>& out) {
  const long long pitch = de::ell_pitch(a.nrows);
  const auto slots = static_cast<std::size_t>(de::padded_width(width, t) * pitch);
  std::vector<std::int32_t> lens(static_cast<std::size_t>(a.nrows)), col(slots, -1);
  std::vector<Value> val(slots, Value(0));
  const std::vector<Value> src = stored<Value>(a);
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    const std::int64_t start = a.row_ptr[static_cast<std::size_t>(r)];
    const long long len = de::ell_part_length(row_len(a, r), width);
    lens[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(len);
    for (long long k = 0; k < len; ++k) {
      const auto pos = static_cast<std::size_t>(de::ell_slot(k, r, t, pitch));
      col[pos] = a.col_idx[static_cast<std::size_t>(start + k)];
      val[pos] = src[static_cast<std::size_t>(start + k)];
    }
  }
  const ElemType vt = sizeof(Value) == 8 ? ElemType::f64 : ElemType::f32;
  if (row_lengths) out.push_back(array_of(prefix + "row_lengths", ElemType::i32, lens));
  out.push_back(array_of(prefix + "col_idx", ElemType::i32, col));
  out.push_back(array_of(prefix + "values", vt, val));
}

// hyb_tails, the scan and hyb_coo_fill.
template <typename Value>
void emulate_coo(const CsrMatrix& a, std::int64_t width, std::vector<EncodedArray>& out) {
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(a.nrows + 1), 0);
  for (std::int64_t r = 0; r < a.nrows; ++r)
    offsets[static_cast<std::size_t>(r + 1)] = de::coo_part_length(row_len(a, r), width);
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  const auto n = static_cast<std::size_t>(offsets.back());
  std::vector<std::int32_t> rows(n), cols(n);
  std::vector<Value> vals(n);
  const std::vector<Value> src = stored<Value>(a);
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    const std::int64_t start = a.row_ptr[static_cast<std::size_t>(r)] + width;
    const std::int64_t end = a.row_ptr[static_cast<std::size_t>(r + 1)];
    for (std::int64_t j = start; j < end; ++j) {
      const auto o = static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)] + j - start);
      rows[o] = static_cast<std::int32_t>(r);
      cols[o] = a.col_idx[static_cast<std::size_t>(j)];
      vals[o] = src[static_cast<std::size_t>(j)];
    }
  }
  out.push_back(array_of("coo_row", ElemType::i32, rows));
  out.push_back(array_of("coo_col", ElemType::i32, cols));
  out.push_back(array_of("coo_values", sizeof(Value) == 8 ? ElemType::f64 : ElemType::f32, vals));
}

// sell_sort, sell_widths, the scan and sell_fill.
template <typename Value>
void emulate_sell(const CsrMatrix& a, const SellParams& p, std::vector<EncodedArray>& out) {
  const int c = p.slice_height, t = p.threads_per_row;
  std::vector<std::int32_t> perm(static_cast<std::size_t>(a.nrows));
  std::iota(perm.begin(), perm.end(), 0);
  if (p.sigma > 1) {
    for (std::int64_t start = 0; start < a.nrows; start += p.sigma) {
      const int n = static_cast<int>(std::min<std::int64_t>(p.sigma, a.nrows - start));
      std::vector<int> lens(static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i)
        lens[static_cast<std::size_t>(i)] = static_cast<int>(row_len(a, start + i));
      for (int i = 0; i < n; ++i)
        perm[static_cast<std::size_t>(start + de::window_rank(lens.data(), n, i))] =
            static_cast<std::int32_t>(start + i);
    }
  }
  const std::int64_t slices = (a.nrows + c - 1) / c;
  std::vector<std::int64_t> slice_ptr(static_cast<std::size_t>(slices + 1), 0);
  for (std::int64_t s = 0; s < slices; ++s) {
    long long longest = 0;
    for (std::int64_t i = s * c; i < std::min(a.nrows, (s + 1) * c); ++i)
      longest = std::max<long long>(longest, row_len(a, perm[static_cast<std::size_t>(i)]));
    slice_ptr[static_cast<std::size_t>(s + 1)] = de::padded_width(longest, t) * c;
  }
  std::partial_sum(slice_ptr.begin(), slice_ptr.end(), slice_ptr.begin());
  const auto slots = static_cast<std::size_t>(slice_ptr.back());
  std::vector<std::int32_t> col(slots, -1);
  std::vector<Value> val(slots, Value(0));
  const std::vector<Value> src = stored<Value>(a);
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    const std::int64_t r = perm[static_cast<std::size_t>(i)];
    const std::int64_t start = a.row_ptr[static_cast<std::size_t>(r)];
    const long long base = slice_ptr[static_cast<std::size_t>(i / c)];
    for (long long k = 0; k < row_len(a, r); ++k) {
      const auto pos = static_cast<std::size_t>(de::sell_slot(base, i % c, k, c, t));
      col[pos] = a.col_idx[static_cast<std::size_t>(start + k)];
      val[pos] = src[static_cast<std::size_t>(start + k)];
    }
  }
  out.push_back(array_of("slice_ptr", ElemType::i64, slice_ptr));
  if (p.sigma > 1) out.push_back(array_of("perm", ElemType::i32, perm));
  out.push_back(array_of("col_idx", ElemType::i32, col));
  out.push_back(array_of("values", sizeof(Value) == 8 ? ElemType::f64 : ElemType::f32, val));
}

template <typename Value>
std::vector<EncodedArray> emulate(const CsrMatrix& a, const FormatParams& params) {
  std::vector<EncodedArray> out;
  std::int64_t longest = 0;
  for (std::int64_t r = 0; r < a.nrows; ++r) longest = std::max(longest, row_len(a, r));
  if (const auto* p = std::get_if<EllParams>(&params)) {
    emulate_ell_part<Value>(a, p->width == 0 ? longest : p->width, p->threads_per_row,
                            p->row_lengths, "", out);
  } else if (const auto* q = std::get_if<HybParams>(&params)) {
    emulate_ell_part<Value>(a, q->width, q->threads_per_row, q->row_lengths, "ell_", out);
    emulate_coo<Value>(a, q->width, out);
  } else {
    emulate_sell<Value>(a, std::get<SellParams>(params), out);
  }
  return out;
}

void check_same_arrays(const CsrMatrix& a, const FormatParams& params, Precision precision) {
  const Encoded want = formats::find_format(format_of(params)).encode(a, params, precision);
  const std::vector<EncodedArray> got =
      precision == Precision::f64 ? emulate<double>(a, params) : emulate<float>(a, params);
  REQUIRE(got.size() == want.arrays.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(want.arrays[i].name);
    CHECK(got[i].name == want.arrays[i].name);
    CHECK(got[i].type == want.arrays[i].type);
    REQUIRE(got[i].bytes.size() == want.arrays[i].bytes.size());
    CHECK(std::memcmp(got[i].bytes.data(), want.arrays[i].bytes.data(), got[i].bytes.size()) == 0);
  }
}

std::vector<std::pair<std::string, CsrMatrix>> matrices() {
  std::vector<std::pair<std::string, CsrMatrix>> all;
  for (auto& [name, m] : test::edge_matrices()) {
    if (m.nrows <= 5000) all.emplace_back(name, std::move(m));
  }
  all.emplace_back("short and long rows", test::short_and_long_rows(6000, true));
  all.emplace_back("rmat", gen::rmat(11, 6));
  all.emplace_back("rectangular", gen::random_uniform(3000, 700, 5));
  all.emplace_back("wide", gen::random_uniform(333, 9000, 12));
  all.emplace_back("stencil", gen::stencil_2d_5pt(40, 37));
  return all;
}

// slice_longest, warp by warp: each lane's rows through lane_slice_longest, the lanes'
// longest rows combined in groups of 2..32 as the shuffles combine them.
std::array<std::int64_t, 9> emulate_slice_longest(const CsrMatrix& a) {
  std::array<unsigned long long, 9> acc{};
  for (std::int64_t s = 0; s * de::kLevelRows < a.nrows; ++s) {
    std::array<long long, 32> lane_longest{};
    for (int lane = 0; lane < 32; ++lane) {
      long long len[de::kRowsPerLane];
      for (int u = 0; u < de::kRowsPerLane; ++u) {
        const std::int64_t r = s * de::kLevelRows + lane * de::kRowsPerLane + u;
        len[u] = r < a.nrows ? row_len(a, r) : 0;
      }
      lane_longest[static_cast<std::size_t>(lane)] = de::lane_slice_longest(len, acc.data());
    }
    for (int k = 4; k < de::kSliceLevels; ++k) {
      const int group = 1 << (k - 3);
      for (int lane = 0; lane < 32; lane += group) {
        const auto first = lane_longest.begin() + lane;
        acc[static_cast<std::size_t>(k)] +=
            static_cast<unsigned long long>(*std::max_element(first, first + group));
      }
    }
  }
  std::array<std::int64_t, 9> out{};
  for (std::size_t k = 0; k < out.size(); ++k) out[k] = static_cast<std::int64_t>(acc[k]);
  return out;
}

Options device_options(Precision p) {
  Options o;
  o.precision = p;
  o.disk_cache = false;
  return o;
}

}  // namespace

TEST_CASE("device ell: the kernels' index arithmetic lays out the host encoders' arrays") {
  for (const auto& [name, a] : matrices()) {
    CAPTURE(name);
    for (Precision p : {Precision::f64, Precision::f32}) {
      CAPTURE(to_string(p));
      std::int64_t longest = 0;
      for (std::int64_t r = 0; r < a.nrows; ++r) longest = std::max(longest, row_len(a, r));
      // ELL pads every row to the longest: only where that stays small.
      const bool ell = longest * a.nrows <= (std::int64_t{1} << 22);
      for (int t : {1, 2, 4, 32}) {
        for (bool r : {true, false}) {
          if (!ell) break;
          EllParams e;
          e.threads_per_row = t;
          e.row_lengths = r;
          check_same_arrays(a, e, p);
        }
        for (const std::int64_t k : {0, 1, 3, 17}) {
          HybParams h;
          h.width = static_cast<int>(k);
          h.threads_per_row = t;
          h.row_lengths = k == 3;
          check_same_arrays(a, h, p);
        }
      }
      // Every slice height the format takes, unsorted and in windows from one slice to 4096.
      for (int c = 1; c <= 256; c *= 2) {
        for (int sigma : {1, c, 1024, 4096}) {
          if (sigma != 1 && sigma % c != 0) continue;
          for (int t : {1, 4}) {
            SellParams s;
            s.slice_height = c;
            s.sigma = sigma;
            s.threads_per_row = t;
            CAPTURE(c);
            CAPTURE(sigma);
            check_same_arrays(a, s, p);
          }
        }
      }
    }
  }
}

TEST_CASE("device ell: the window rank is a stable sort by decreasing length") {
  const std::vector<int> lens = {3, 0, 7, 3, 7, 1, 0, 3};
  std::vector<int> order(lens.size());
  for (int i = 0; i < static_cast<int>(lens.size()); ++i)
    order[static_cast<std::size_t>(de::window_rank(lens.data(), 8, i))] = i;
  CHECK(order == std::vector<int>{2, 4, 0, 3, 7, 5, 1, 6});
}

TEST_CASE("device ell: slice_longest's lanes and warps give inspect()'s per-slice padding") {
  for (const auto& [name, a] : matrices()) {
    CAPTURE(name);
    const std::array<std::int64_t, 9> want = inspect(a, InspectDepth::rows).slice_longest;
    CHECK(emulate_slice_longest(a) == want);
    if (a.nrows > 0) {
      CHECK(want[0] == a.nnz());  // slices of one row: every row's own length
    }
  }
}

TEST_CASE("device ell: the planner offers ell, sell and hyb for device arrays") {
  const CsrMatrix a = gen::stencil_2d_5pt(300, 300);
  const test::HostDeviceCsr d(a);
  Profile profile = inspect(a, InspectDepth::rows);
  BuildTarget target;
  const Plan plan =
      compiler::plan_device_csr(d.view, profile, device_options(Precision::f64), target);
  for (const char* format : {"csr", "csr_stream", "ell", "sell", "hyb"}) {
    CAPTURE(format);
    CHECK(std::any_of(plan.candidates.begin(), plan.candidates.end(),
                      [&](const Candidate& c) { return c.format == format && c.applicable; }));
  }
  // Each forced ell-family parameter set is planned as asked.
  Options o = device_options(Precision::f32);
  SellParams s;
  s.slice_height = 8;
  s.sigma = 4096;
  o.params = s;
  CHECK(compiler::plan_device_csr(d.view, profile, o, target).format == "sell");
  o.format = "hyb";
  o.params.reset();
  CHECK(compiler::plan_device_csr(d.view, profile, o, target).format == "hyb");
}

TEST_CASE("device ell: a format that cannot implement the matrix is listed, not fatal") {
  // Power-law rows: ELL pads past its limit, so none of its candidates applies; the planner from
  // device arrays still plans, and lists them with the reason.
  const CsrMatrix a = gen::rmat(14, 16);
  const test::HostDeviceCsr d(a);
  const Profile profile = inspect(a, InspectDepth::rows);
  BuildTarget target;
  const Plan plan =
      compiler::plan_device_csr(d.view, profile, device_options(Precision::f64), target);
  CHECK(plan.format != "ell");
  std::int64_t ell = 0;
  for (const Candidate& c : plan.candidates) {
    if (c.format != "ell") continue;
    ++ell;
    CHECK(!c.applicable);
    CHECK(c.reason.find("pads to") != std::string::npos);
  }
  CHECK(ell > 0);
  // Asked for by name, the format's refusal is the caller's error.
  Options o = device_options(Precision::f64);
  o.format = "ell";
  CHECK_THROWS_AS(compiler::plan_device_csr(d.view, profile, o, target), InputError);
}

TEST_CASE("device ell: what the GPU build cannot do is refused with the reason") {
  const CsrMatrix a = gen::stencil_2d_5pt(100, 90);
  const test::HostDeviceCsr d(a);
  const Profile profile = inspect(a, InspectDepth::rows);
  BuildTarget target;
  Options o = device_options(Precision::f64);
  SellParams s;
  s.slice_height = 32;
  s.sigma = 8192;
  o.params = s;
  CHECK_THROWS_WITH_AS(compiler::plan_device_csr(d.view, profile, o, target),
                       doctest::Contains("sorting windows of 8192 rows: the GPU sorts windows of "
                                         "at most 4096"),
                       InputError);
  Options cci = device_options(Precision::f64);
  cci.format = "cci";
  CHECK_THROWS_WITH_AS(compiler::check_device_options(cci),
                       doctest::Contains("cci needs an encoding the GPU does not build yet"),
                       InputError);
  cci.format = "ell";
  CHECK_NOTHROW(compiler::check_device_options(cci));
}

TEST_CASE("device ell: the device build of the ell family is charged by the bytes it writes") {
  const CsrMatrix a = gen::random_uniform(20000, 20000, 9);
  const Profile profile = inspect(a, InspectDepth::rows);
  compiler::PlanOptions po;
  po.gpu = "H100";
  po.cached_kernels = true;
  po.build_path = compiler::BuildPath::device;
  EllParams e;
  e.width = static_cast<int>(profile.row_max);
  HybParams h;
  h.width = 6;
  SellParams s;
  for (const FormatParams& params : {FormatParams{e}, FormatParams{h}, FormatParams{s}}) {
    CAPTURE(format_of(params));
    const double bytes =
        formats::find_format(format_of(params)).cost(profile, params, Precision::f64).matrix_bytes;
    const compiler::Prediction pr = compiler::predict(profile, params, po);
    CHECK(pr.build.encode == doctest::Approx(bytes * heuristics::kDeviceEncodeSecondsPerByte));
    CHECK(pr.build.upload == 0.0);
    // The host path pays its own encoder and the upload instead.
    compiler::PlanOptions host = po;
    host.build_path = compiler::BuildPath::host;
    CHECK(compiler::predict(profile, params, host).build.upload > 0.0);
  }
  // csr writes nothing of its own: its calibrated per-nonzero figure stays.
  const compiler::Prediction csr = compiler::predict(profile, CsrParams{}, po);
  CHECK(csr.build.encode < 1e-6);
}

TEST_CASE("device ell: the kernel from the sizes alone is the host pipeline's") {
  CsrMatrix coded = gen::stencil_2d_5pt(50, 40);  // two distinct values: 8-bit codes apply
  CsrMatrix long_rows = test::short_and_long_rows(3000, true);
  for (const CsrMatrix* a : {&coded, &long_rows}) {
    const Profile profile = inspect(*a, InspectDepth::rows);
    std::vector<FormatParams> all;
    for (int coding : {formats::kValuesPlain, formats::kValuesTable8, formats::kValuesF32}) {
      EllParams e;
      e.width = static_cast<int>(profile.row_max);
      e.threads_per_row = 2;
      e.values = coding;
      all.emplace_back(e);
      HybParams h;
      h.width = 2;
      h.values = coding;
      all.emplace_back(h);
    }
    SellParams s;
    s.sigma = 64;
    all.emplace_back(s);
    for (const FormatParams& params : all) {
      for (Precision p : {Precision::f64, Precision::f32}) {
        if (formats::value_coding_of(params) == formats::kValuesF32 && p != Precision::f64)
          continue;
        CAPTURE(describe(params));
        Plan plan;
        plan.format = std::string(format_of(params));
        plan.params = params;
        plan.precision = p;
        const Encoded e = compiler::encode(*a, plan);
        const KernelSource want = codegen::generate(plan, e, profile);
        std::int64_t width = 0, coo = 0;
        if (plan.format == "ell") width = formats::ell_part::stored_width(e, "");
        if (plan.format == "hyb") {
          width = formats::ell_part::stored_width(e, "ell_");
          coo = e.array("coo_row").count();
        }
        const KernelSource got = compiler::generate_device_ell(plan, profile, width, coo);
        CHECK(got.source == want.source);
        CHECK(got.kernel_name == want.kernel_name);
        CHECK(got.grid == want.grid);
        REQUIRE(got.post_launches.size() == want.post_launches.size());
        for (std::size_t i = 0; i < got.post_launches.size(); ++i)
          CHECK(got.post_launches[i].grid == want.post_launches[i].grid);
      }
    }
  }
}
