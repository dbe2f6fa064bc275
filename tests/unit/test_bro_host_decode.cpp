// The BRO kernel templates' decode loops run on the host: templates/bro_ell.cuh and bro_coo.cuh
// compiled as C++ with stand-ins for the CUDA built-ins, every thread of the grid run one after
// another over the real encodings. With one lane per row (T = 1) threads share nothing, so this
// is the device code's arithmetic exactly (the shuffle reduction of T > 1 is csr's, tested on
// the GPU). Checks the bit reader (32- and 64-bit symbols), prefetch, unroll, the baked
// compile-time schedule and the COO interval walk against plain CSR.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>

#include "formats/arrays.hpp"
#include "formats/bro_ell/bro_ell_codec.hpp"
#include "formats/format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/generators.hpp"

// Stand-ins for what CUDA provides.
#define SPMVC_BRO_HOST_TEST 1
#define __device__
#define __host__
#define __forceinline__ inline
namespace {
struct HostDim3 {
  unsigned int x = 0, y = 0, z = 0;
};
HostDim3 blockIdx, threadIdx;
template <typename T>
T atomicAdd(T* p, T v) {
  const T old = *p;
  *p = old + v;
  return old;
}
}  // namespace

// What the templates take from common.cuh (whose #pragma unroll a host compiler warns about),
// with the same meaning for one lane per row.
namespace spmvc {
template <typename T>
T load_ro(const T* p) {
  return *p;
}
template <typename T>
T load_stream(const T* p) {
  return *p;
}
template <int kGroup, typename Acc>
Acc group_sum(Acc v) {
  static_assert(kGroup == 1, "the host run has one lane per row");
  return v;
}
inline long long y_row(long long row) { return row; }  // no row map in the host run
template <typename Value, typename Acc>
void store_y(Value* y, long long row, Acc sum, Acc alpha, Acc beta) {
  Acc out = alpha * sum;
  if (beta != Acc(0)) out += beta * static_cast<Acc>(y[row]);
  y[row] = static_cast<Value>(out);
}
}  // namespace spmvc

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-parameter"
// clang-format off
#include "../../templates/bro_ell.cuh"
#include "../../templates/bro_coo.cuh"
// clang-format on
#pragma GCC diagnostic pop

using namespace spmvc;

namespace {

template <typename T>
const T* arr(const Encoded& e, const char* name) {
  return formats::typed<T>(e.array(name));
}

// 64-bit arrays as the kernels take them (int64_t is long here, long long there).
const long long* ll(const Encoded& e, const char* name) {
  return reinterpret_cast<const long long*>(e.array(name).bytes.data());
}

// Runs `thread()` for every thread of a grid of `grid` blocks of `block` threads.
template <typename F>
void run_grid(std::int64_t grid, int block, F&& thread) {
  for (std::int64_t b = 0; b < grid; ++b) {
    blockIdx.x = static_cast<unsigned int>(b);
    for (int t = 0; t < block; ++t) {
      threadIdx.x = static_cast<unsigned int>(t);
      thread();
    }
  }
}

template <int kH, int kSym, int kU, bool kPf>
std::vector<double> run_ell(const CsrMatrix& a, int tables, const std::vector<double>& x,
                            std::vector<double> y, double alpha, double beta) {
  using Word = typename bro::SymbolWord<kSym>::type;
  const BroEllParams p{kH, kSym, 1, 256, kU, kPf, tables};
  const Encoded e = formats::find_format("bro_ell").encode(a, p, Precision::f64);
  const std::int64_t nslices = (a.nrows + kH - 1) / kH;
  const std::int64_t grid = (nslices * kH + 255) / 256;
  run_grid(grid, 256, [&] {
    bro::spmv<kH, 1, kSym, 256, kU, kPf>(a.nrows, ll(e, "col_ptr"), ll(e, "sym_ptr"),
                                         bro::GlobalWidths{arr<unsigned char>(e, "widths")},
                                         arr<Word>(e, "symbols"), arr<double>(e, "values"),
                                         x.data(), y.data(), alpha, beta);
  });
  return y;
}

std::vector<double> csr(const CsrMatrix& a, const std::vector<double>& x, std::vector<double> y,
                        double alpha, double beta) {
  compiler::csr_reference_spmv(a, x, y, alpha, beta);
  return y;
}

std::vector<double> start_y(const CsrMatrix& a) {
  std::vector<double> y(static_cast<std::size_t>(a.nrows));
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = 0.25 * static_cast<double>(i % 5) - 0.5;
  return y;
}

}  // namespace

TEST_CASE("bro_ell kernel template decodes like the encoder encodes (host run, T = 1)") {
  for (const char* spec : {"stencil27:n=7", "rmat:scale=10,ef=8", "random:n=1500,per_row=11",
                           "random:nrows=300,ncols=100000,per_row=40"}) {
    const CsrMatrix a = gen::from_spec(spec);
    const auto x = codegen::test_vector(a.ncols, Precision::f64);
    const auto y0 = start_y(a);
    const auto ref = csr(a, x, y0, 1.25, -0.5);
    CAPTURE(spec);
    CHECK(compiler::relative_error(run_ell<32, 32, 1, false>(a, 0, x, y0, 1.25, -0.5), ref) <=
          1e-13);
    CHECK(compiler::relative_error(run_ell<32, 64, 1, false>(a, 0, x, y0, 1.25, -0.5), ref) <=
          1e-13);
    CHECK(compiler::relative_error(run_ell<256, 32, 2, true>(a, 0, x, y0, 1.25, -0.5), ref) <=
          1e-13);
    CHECK(compiler::relative_error(run_ell<64, 64, 4, true>(a, 0, x, y0, 1.25, -0.5), ref) <=
          1e-13);
    CHECK(compiler::relative_error(run_ell<32, 32, 8, false>(a, 0, x, y0, 1.25, -0.5), ref) <=
          1e-13);
    // beta = 0 never reads y.
    std::vector<double> nan_y(y0.size(), std::numeric_limits<double>::quiet_NaN());
    CHECK(compiler::relative_error(run_ell<32, 64, 2, true>(a, 0, x, nan_y, 2.0, 0.0),
                                   csr(a, x, y0, 2.0, 0.0)) <= 1e-13);
  }
}

TEST_CASE("bro_ell baked kernel template: compile-time schedule over a fixed pattern") {
  // The paper's example in one warp slice: widths {3, 2, 2} (see test_bro_formats.cpp), plus
  // rows padded to 32: 7 bits per lane, one symbol.
  CsrMatrix a;
  a.nrows = 4;
  a.ncols = 5;
  a.row_ptr = {0, 2, 5, 8, 10};
  a.col_idx = {0, 2, 0, 1, 2, 1, 2, 4, 3, 4};
  a.values = {3, 2, 2, 6, 5, 1, 9, 7, 8, 3};
  // A pattern that spans symbols: 40 rows of 12 nonzeros spread over 4000 columns.
  CsrMatrix b;
  b.nrows = 40;
  b.ncols = 4000;
  for (std::int64_t r = 0; r < b.nrows; ++r) {
    for (int k = 0; k < 12; ++k) {
      b.col_idx.push_back(static_cast<std::int32_t>(1000 + k * 250 + (r * 7 + k) % 200));
      b.values.push_back(0.5 + static_cast<double>(r + k));
    }
    b.row_ptr.push_back(b.nnz());
  }
  const auto& unit = formats::find_format("bro_ell");
  auto run = [&](const CsrMatrix& m, auto pattern_tag, auto sym_tag) {
    using Pattern = decltype(pattern_tag);
    constexpr int kSym = decltype(sym_tag)::value;
    using Word = typename bro::SymbolWord<kSym>::type;
    const BroEllParams p{32, kSym, 1, 256, 1, false, 2};
    const Encoded e = unit.encode(m, p, Precision::f64);
    const auto x = codegen::test_vector(m.ncols, Precision::f64);
    auto y = start_y(m);
    const auto ref = csr(m, x, y, -1.5, 0.25);
    const std::int64_t grid = ((m.nrows + 31) / 32 * 32 + 255) / 256;
    run_grid(grid, 256, [&] {
      bro::spmv_baked<32, 1, kSym, 256, Pattern>(m.nrows, ll(e, "col_ptr"), ll(e, "sym_ptr"),
                                                 arr<Word>(e, "symbols"), arr<double>(e, "values"),
                                                 x.data(), y.data(), -1.5, 0.25);
    });
    return compiler::relative_error(y, ref);
  };
  const Encoded ea = unit.encode(a, BroEllParams{32, 32, 1, 256, 1, false, 2}, Precision::f64);
  REQUIRE(formats::bro::baked_pattern(ea, "") == std::vector<int>{3, 2, 2});
  CHECK(run(a, bro::WidthPattern<3, 2, 2>{}, std::integral_constant<int, 32>{}) <= 1e-14);
  CHECK(run(a, bro::WidthPattern<3, 2, 2>{}, std::integral_constant<int, 64>{}) <= 1e-14);
  const Encoded eb = unit.encode(b, BroEllParams{32, 32, 1, 256, 1, false, 2}, Precision::f64);
  const std::vector<int> pb = formats::bro::baked_pattern(eb, "");
  // First column 1000..1199 (11 bits), then deltas of 51 or 251 (8 bits): 99 bits, fields
  // crossing symbol boundaries.
  REQUIRE(pb == std::vector<int>{11, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8});
  using PB = bro::WidthPattern<11, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8>;
  CHECK(run(b, PB{}, std::integral_constant<int, 32>{}) <= 1e-14);
  CHECK(run(b, PB{}, std::integral_constant<int, 64>{}) <= 1e-14);
}

TEST_CASE("bro_coo kernel template: interval walk with atomic row sums (host run)") {
  for (const char* spec : {"rmat:scale=10,ef=8", "stencil2d:n=40", "random:n=700,per_row=3"}) {
    const CsrMatrix a = gen::from_spec(spec);
    const auto x = codegen::test_vector(a.ncols, Precision::f64);
    for (int sym : {32, 64}) {
      for (int interval : {32, 1024}) {
        const Encoded e = formats::find_format("bro_coo").encode(
            a, BroCooParams{interval, sym, 256}, Precision::f64);
        auto y = start_y(a);
        const auto ref = csr(a, x, y, 0.75, -2.0);
        const std::int64_t count = ll(e, "count")[0];
        const std::int64_t grid =
            std::max<std::int64_t>(1, ((count + interval - 1) / interval * 32 + 255) / 256);
        run_grid((a.nrows + 255) / 256, 256, [&] { bro::scale_y<256>(a.nrows, y.data(), -2.0); });
        auto body = [&](auto sym_tag, auto interval_tag) {
          constexpr int kSym = decltype(sym_tag)::value;
          constexpr int kInterval = decltype(interval_tag)::value;
          using Word = typename bro::SymbolWord<kSym>::type;
          run_grid(grid, 256, [&] {
            bro::spmv_coo<kInterval, kSym, 256>(
                ll(e, "count"), arr<std::int32_t>(e, "row_base"), arr<unsigned char>(e, "widths"),
                ll(e, "sym_ptr"), arr<Word>(e, "symbols"), arr<std::int32_t>(e, "col_idx"),
                arr<double>(e, "values"), x.data(), y.data(), 0.75);
          });
        };
        using I32 = std::integral_constant<int, 32>;
        using I1024 = std::integral_constant<int, 1024>;
        using S32 = std::integral_constant<int, 32>;
        using S64 = std::integral_constant<int, 64>;
        if (sym == 32 && interval == 32) body(S32{}, I32{});
        if (sym == 32 && interval == 1024) body(S32{}, I1024{});
        if (sym == 64 && interval == 32) body(S64{}, I32{});
        if (sym == 64 && interval == 1024) body(S64{}, I1024{});
        CAPTURE(spec);
        CAPTURE(sym);
        CAPTURE(interval);
        CHECK(compiler::relative_error(y, ref) <= 1e-13);
      }
    }
  }
}
