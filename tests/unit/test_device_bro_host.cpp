// bro_ell built on the GPU, what can be checked without one: the per-slice and per-lane steps of
// templates/device_bro.cuh (the same functions the kernels call), run on the host pass by pass
// as the kernels run them, give the host codec's arrays byte for byte for every shape and
// width-table mode; the column inspection's counters become the Profile fields inspect() fills;
// the device planner scores bro_ell with the host's model and refuses it where the columns
// were not found sorted; a GPU encode is charged as one.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "../../templates/device_bro.cuh"
#include "formats/bro_coo/bro_coo_format.hpp"
#include "formats/bro_ell/bro_ell_codec.hpp"
#include "formats/bro_ell/bro_ell_format.hpp"
#include "formats/bro_hyb/bro_hyb_format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_bro.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;
namespace db = spmvc::device_bro;

namespace {

// One row of 5000 nonzeros among empty ones, wider than it is tall.
CsrMatrix one_long_row() {
  CsrMatrix a;
  a.nrows = 300;
  a.ncols = 20000;
  a.row_ptr.assign(301, 0);
  for (std::int32_t c = 0; c < 20000; c += 4) a.col_idx.push_back(c);
  for (std::int64_t r = 101; r <= 300; ++r) a.row_ptr[r] = 5000;
  a.values.assign(5000, 0.0);
  for (std::size_t k = 0; k < a.values.size(); ++k) a.values[k] = 1.0 + static_cast<double>(k % 7);
  validate(a);
  return a;
}

CsrMatrix no_nonzeros() {
  CsrMatrix a;
  a.nrows = 70;
  a.ncols = 50;
  a.row_ptr.assign(71, 0);
  return a;
}

std::vector<CsrMatrix> matrices() {
  return {test::short_and_long_rows(4000, true),
          gen::random_uniform(777, 3000, 6),
          gen::stencil_2d_5pt(40, 30),
          gen::rmat(10, 8),
          one_long_row(),
          no_nonzeros()};
}

std::vector<BroEllParams> shapes() {
  std::vector<BroEllParams> out;
  for (const auto& [h, T] : {std::pair{32, 1}, {16, 2}, {8, 4}, {1, 32}, {256, 1}, {64, 2}})
    for (int L : {32, 64})
      for (int tables : {0, 1, 2}) {
        BroEllParams p;
        p.slice_height = h;
        p.threads_per_row = T;
        p.symbol_bits = L;
        p.block_size = std::max(256, h * T);
        p.unroll = 1;
        p.tables = tables;
        out.push_back(p);
      }
  return out;
}

// The GPU encoder's passes on the host, through device_bro.cuh's functions: the arrays it writes.
struct Emulated {
  std::vector<std::int64_t> col_ptr, sym_ptr;
  std::vector<std::uint8_t> widths;
  std::vector<std::byte> symbols;
  std::vector<double> values;
};

template <typename Word>
Emulated emulate(const CsrMatrix& a, const BroEllParams& p,
                 long long limit = std::numeric_limits<long long>::max()) {
  const std::vector<int> row_ptr(a.row_ptr.begin(), a.row_ptr.end());
  const db::Shape sh{a.nrows, p.slice_height, p.threads_per_row, limit};
  const std::int64_t nslices = sh.nslices(), S = sh.lanes();
  Emulated e;
  // ell_columns, then the scan.
  e.col_ptr.assign(static_cast<std::size_t>(nslices) + 1, 0);
  for (std::int64_t s = 0; s < nslices; ++s)
    e.col_ptr[static_cast<std::size_t>(s) + 1] = db::slice_columns(row_ptr.data(), sh, s);
  std::partial_sum(e.col_ptr.begin(), e.col_ptr.end(), e.col_ptr.begin());
  const std::int64_t columns = e.col_ptr.back();
  // ell_widths: every lane's field widths, the widest per slice column and per position.
  std::vector<unsigned> widths32(static_cast<std::size_t>(columns), 0), pattern32;
  for (std::int64_t s = 0; s < nslices; ++s) {
    const std::int64_t c0 = e.col_ptr[static_cast<std::size_t>(s)];
    const std::int64_t ncol = e.col_ptr[static_cast<std::size_t>(s) + 1] - c0;
    if (static_cast<std::int64_t>(pattern32.size()) < ncol)
      pattern32.resize(static_cast<std::size_t>(ncol), 0);
    for (int v = 0; v < S; ++v) {
      db::LaneCursor cursor;
      cursor.start(row_ptr.data(), a.col_idx.data(), sh, s, v);
      for (std::int64_t j = 0; j < ncol; ++j) {
        const auto b = static_cast<unsigned>(db::bit_width(cursor.next()));
        unsigned& w = widths32[static_cast<std::size_t>(c0 + j)];
        w = std::max(w, b);
        pattern32[static_cast<std::size_t>(j)] =
            std::max(pattern32[static_cast<std::size_t>(j)], b);
      }
    }
  }
  // ell_slice, then the scan.
  e.widths.assign(static_cast<std::size_t>(columns), 0);
  e.sym_ptr.assign(static_cast<std::size_t>(nslices) + 1, 0);
  for (std::int64_t s = 0; s < nslices; ++s) {
    const std::int64_t c0 = e.col_ptr[static_cast<std::size_t>(s)];
    const std::int64_t c1 = e.col_ptr[static_cast<std::size_t>(s) + 1];
    for (std::int64_t i = c0; i < c1; ++i)
      e.widths[static_cast<std::size_t>(i)] =
          static_cast<std::uint8_t>(p.tables == 2 ? pattern32[static_cast<std::size_t>(i - c0)]
                                                  : widths32[static_cast<std::size_t>(i)]);
    e.sym_ptr[static_cast<std::size_t>(s) + 1] =
        db::slice_symbols(e.widths.data(), c0, c1, p.symbol_bits);
  }
  std::partial_sum(e.sym_ptr.begin(), e.sym_ptr.end(), e.sym_ptr.begin());
  std::int64_t pad_rows = 1;
  if (p.tables == 2) {
    const std::int64_t bits = std::accumulate(pattern32.begin(), pattern32.end(), std::int64_t{0});
    pad_rows = std::max<std::int64_t>(1, (bits + p.symbol_bits - 1) / p.symbol_bits);
  }
  // ell_fill: every lane's stream and value slots.
  std::vector<Word> symbols(static_cast<std::size_t>((e.sym_ptr.back() + pad_rows) * S), 0);
  e.values.assign(static_cast<std::size_t>(columns * S), -1.0);  // every slot is written
  for (std::int64_t s = 0; s < nslices; ++s) {
    const std::int64_t c0 = e.col_ptr[static_cast<std::size_t>(s)];
    const std::int64_t ncol = e.col_ptr[static_cast<std::size_t>(s) + 1] - c0;
    for (int v = 0; v < S; ++v) {
      db::LaneCursor cursor;
      cursor.start(row_ptr.data(), a.col_idx.data(), sh, s, v);
      db::StreamWriter<Word> out;
      out.start(symbols.data() + e.sym_ptr[static_cast<std::size_t>(s)] * S + v, S);
      for (std::int64_t j = 0; j < ncol; ++j) {
        const bool own = cursor.own();
        const std::int64_t k = cursor.at();
        out.put(cursor.next(), e.widths[static_cast<std::size_t>(c0 + j)]);
        e.values[static_cast<std::size_t>((c0 + j) * S + v)] =
            own ? a.values[static_cast<std::size_t>(k)] : 0.0;
      }
      out.finish(e.sym_ptr[static_cast<std::size_t>(s) + 1] -
                 e.sym_ptr[static_cast<std::size_t>(s)]);
    }
  }
  e.symbols.resize(symbols.size() * sizeof(Word));
  if (!symbols.empty()) std::memcpy(e.symbols.data(), symbols.data(), e.symbols.size());
  return e;
}

template <typename T>
std::vector<T> contents(const EncodedArray& a) {
  std::vector<T> out(static_cast<std::size_t>(a.count()));
  if (!out.empty()) std::memcpy(out.data(), a.bytes.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace

TEST_CASE("device bro: the kernels' steps, run on the host, give the host codec's arrays") {
  const formats::BroEllFormat unit;
  for (const CsrMatrix& a : matrices()) {
    for (const BroEllParams& p : shapes()) {
      CAPTURE(a.nrows);
      CAPTURE(a.nnz());
      CAPTURE(describe(p));
      const Encoded host = unit.encode(a, p, Precision::f64);
      const Emulated gpu =
          p.symbol_bits == 64 ? emulate<std::uint64_t>(a, p) : emulate<std::uint32_t>(a, p);
      CHECK(gpu.col_ptr == contents<std::int64_t>(host.array("col_ptr")));
      CHECK(gpu.sym_ptr == contents<std::int64_t>(host.array("sym_ptr")));
      CHECK(gpu.widths == contents<std::uint8_t>(host.array("widths")));
      CHECK(gpu.values == contents<double>(host.array("values")));
      const EncodedArray& symbols = host.array("symbols");
      REQUIRE(gpu.symbols.size() == symbols.bytes.size());
      CHECK(std::memcmp(gpu.symbols.data(), symbols.bytes.data(), gpu.symbols.size()) == 0);
    }
  }
}

// The GPU's bro_coo passes on the host: the arrays they write (values plain).
template <typename Word>
std::vector<EncodedArray> emulate_coo(const CsrMatrix& a, int interval, std::int64_t skip = 0,
                                      const std::string& prefix = "") {
  // coo_counts, the scan and coo_select: each entry's row and nonzero.
  std::vector<int> rows;
  std::vector<std::int64_t> at;
  for (std::int64_t r = 0; r < a.nrows; ++r)
    for (std::int64_t k = a.row_ptr[r] + skip; k < a.row_ptr[r + 1]; ++k) {
      rows.push_back(static_cast<int>(r));
      at.push_back(k);
    }
  const db::CooEntries en{rows.data(), static_cast<long long>(rows.size())};
  const std::int64_t n = en.n, intervals = (n + interval - 1) / interval;
  // coo_widths: each lane's widths, the widest of the 32.
  std::vector<std::int32_t> row_base(static_cast<std::size_t>(intervals));
  std::vector<std::uint8_t> widths(2 * static_cast<std::size_t>(intervals));
  std::vector<std::int64_t> sym_ptr(static_cast<std::size_t>(intervals) + 1, 0);
  const int L = 8 * static_cast<int>(sizeof(Word));
  for (std::int64_t k = 0; k < intervals; ++k) {
    int first = 0, rest = 0;
    for (int l = 0; l < 32; ++l) {
      int f = 0, r = 0;
      db::coo_lane_widths(en, k, interval, l, f, r);
      first = std::max(first, f);
      rest = std::max(rest, r);
    }
    row_base[static_cast<std::size_t>(k)] = en.row_at(k * interval);
    widths[2 * static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(first);
    widths[2 * static_cast<std::size_t>(k) + 1] = static_cast<std::uint8_t>(rest);
    sym_ptr[static_cast<std::size_t>(k) + 1] = db::coo_symbols(first, rest, interval, L);
  }
  std::partial_sum(sym_ptr.begin(), sym_ptr.end(), sym_ptr.begin());
  // coo_fill: each lane's stream, columns and values.
  std::vector<Word> symbols(static_cast<std::size_t>((sym_ptr.back() + 1) * 32), 0);
  std::vector<std::int32_t> cols(static_cast<std::size_t>(intervals * interval), -1);
  std::vector<double> values(cols.size(), -1.0);
  const int per_lane = interval / 32;
  for (std::int64_t k = 0; k < intervals; ++k) {
    const auto kk = static_cast<std::size_t>(k);
    for (int l = 0; l < 32; ++l) {
      db::coo_lane_stream<Word>(en, k, interval, l, widths[2 * kk], widths[2 * kk + 1],
                                symbols.data() + sym_ptr[kk] * 32 + l,
                                sym_ptr[kk + 1] - sym_ptr[kk]);
      for (int e = 0; e < per_lane; ++e) {
        const std::int64_t i = k * interval + static_cast<std::int64_t>(l) * per_lane + e;
        const auto slot = static_cast<std::size_t>(k * interval + e * 32 + l);
        const auto nz = static_cast<std::size_t>(i < n ? at[static_cast<std::size_t>(i)] : 0);
        cols[slot] = i < n ? a.col_idx[nz] : 0;
        values[slot] = i < n ? a.values[nz] : 0.0;
      }
    }
  }
  auto array = [&](const char* name, ElemType type, const auto& v) {
    EncodedArray out{prefix + name, type, {}};
    out.bytes.resize(v.size() * sizeof(v[0]));
    if (!v.empty()) std::memcpy(out.bytes.data(), v.data(), out.bytes.size());
    return out;
  };
  return {array("count", ElemType::i64, std::vector<std::int64_t>{n}),
          array("row_base", ElemType::i32, row_base),
          array("widths", ElemType::u8, widths),
          array("sym_ptr", ElemType::i64, sym_ptr),
          array("symbols", L == 64 ? ElemType::u64 : ElemType::u32, symbols),
          array("col_idx", ElemType::i32, cols),
          array("values", ElemType::f64, values)};
}

TEST_CASE("device bro: the bro_coo kernels' steps, run on the host, give the host codec's") {
  const formats::BroCooFormat unit;
  for (const CsrMatrix& a : matrices()) {
    for (int interval : {32, 256, 1024}) {
      for (int L : {32, 64}) {
        BroCooParams p;
        p.interval = interval;
        p.symbol_bits = L;
        CAPTURE(a.nrows);
        CAPTURE(describe(p));
        const Encoded host = unit.encode(a, p, Precision::f64);
        const std::vector<EncodedArray> gpu = L == 64 ? emulate_coo<std::uint64_t>(a, interval)
                                                      : emulate_coo<std::uint32_t>(a, interval);
        REQUIRE(gpu.size() == host.arrays.size());
        for (std::size_t i = 0; i < gpu.size(); ++i) {
          CAPTURE(gpu[i].name);
          CHECK(gpu[i].name == host.arrays[i].name);
          CHECK(gpu[i].type == host.arrays[i].type);
          REQUIRE(gpu[i].bytes.size() == host.arrays[i].bytes.size());
          CHECK(
              (gpu[i].bytes.empty() || std::memcmp(gpu[i].bytes.data(), host.arrays[i].bytes.data(),
                                                   gpu[i].bytes.size()) == 0));
        }
      }
    }
  }
}

TEST_CASE("device bro: bro_hyb's two parts, by the same steps, give the host codec's") {
  const formats::BroHybFormat unit;
  for (const CsrMatrix& a : matrices()) {
    for (int width : {0, 1, 3, 8}) {
      for (const BroEllParams& shape : shapes()) {
        if (shape.slice_height == 256 || shape.symbol_bits == 64) continue;
        BroHybParams p;
        p.width = width;
        p.slice_height = shape.slice_height;
        p.threads_per_row = shape.threads_per_row;
        p.symbol_bits = shape.symbol_bits;
        p.block_size = shape.block_size;
        p.tables = shape.tables;
        p.interval = 256;
        CAPTURE(a.nrows);
        CAPTURE(describe(p));
        const Encoded host = unit.encode(a, p, Precision::f64);
        const Emulated ell = emulate<std::uint32_t>(a, shape, width);
        CHECK(ell.col_ptr == contents<std::int64_t>(host.array("ell_col_ptr")));
        CHECK(ell.sym_ptr == contents<std::int64_t>(host.array("ell_sym_ptr")));
        CHECK(ell.widths == contents<std::uint8_t>(host.array("ell_widths")));
        CHECK(ell.values == contents<double>(host.array("ell_values")));
        const EncodedArray& symbols = host.array("ell_symbols");
        REQUIRE(ell.symbols.size() == symbols.bytes.size());
        CHECK(std::memcmp(ell.symbols.data(), symbols.bytes.data(), ell.symbols.size()) == 0);
        for (const EncodedArray& coo : emulate_coo<std::uint32_t>(a, p.interval, width, "coo_")) {
          CAPTURE(coo.name);
          const EncodedArray& want = host.array(coo.name);
          REQUIRE(coo.bytes.size() == want.bytes.size());
          CHECK((coo.bytes.empty() ||
                 std::memcmp(coo.bytes.data(), want.bytes.data(), coo.bytes.size()) == 0));
        }
      }
    }
  }
}

TEST_CASE("device bro: a lane's stream writer packs fields MSB first across symbol boundaries") {
  // Fields of 5, 30, 32 and 1 bits in 32-bit symbols: 5 + 27 | 3 + 29 | 3 + 1 (+ 28 zero bits).
  std::uint32_t words[8] = {};
  db::StreamWriter<std::uint32_t> out;
  out.start(words, 2);  // a stride of 2: the symbols of one lane among two
  out.put(0b10110, 5);
  out.put((1u << 29) | 5u, 30);
  out.put(0xffffffffu, 32);
  out.put(1, 1);
  out.finish(4);
  CHECK(words[0] == ((0b10110u << 27) | ((1u << 29 | 5u) >> 3)));
  CHECK(words[2] == ((5u & 7u) << 29 | (0xffffffffu >> 3)));
  CHECK(words[4] == ((0xffffffffu & 7u) << 29 | (1u << 28)));
  CHECK(words[6] == 0u);  // the zero symbol finish() writes up to the slice's count
  CHECK(words[1] == 0u);
  CHECK(out.m == 4);
}

TEST_CASE("device bro: the column inspection gives the Profile fields inspect() fills") {
  for (const CsrMatrix& a : matrices()) {
    const Profile host = inspect(a, InspectDepth::rows);
    // The counters as bro_inspect leaves them for this matrix, from inspect()'s own numbers.
    codegen::BroInspection stats = codegen::initial_bro_inspection();
    using S = codegen::BroInspectSlots;
    for (int b = 0; b <= 32; ++b) {
      stats[S::delta_bits + b] = static_cast<std::uint64_t>(host.delta_bits[b]);
      stats[S::first_col_bits + b] = static_cast<std::uint64_t>(host.first_col_bits[b]);
    }
    stats[S::x_sectors] = static_cast<std::uint64_t>(host.x_sectors);
    for (int k = 0; k < 9; ++k)
      stats[S::slice_longest + k] = static_cast<std::uint64_t>(host.slice_longest[k]);
    Profile device;
    device.nnz = a.nnz();
    CHECK(codegen::bro_columns_problem(stats).empty());
    codegen::apply_bro_inspection(stats, device);
    CHECK(device.delta_bits == host.delta_bits);
    CHECK(device.first_col_bits == host.first_col_bits);
    CHECK(device.x_sectors == host.x_sectors);
    CHECK(device.slice_longest == host.slice_longest);
    CHECK(compiler::has_bro_columns(device));
    // Unsorted columns: named, and nothing filled in.
    stats[S::unsorted] = 3;
    stats[S::first_unsorted] = 1234;
    Profile unsorted;
    unsorted.nnz = a.nnz();
    codegen::apply_bro_inspection(stats, unsorted);
    CHECK(codegen::bro_columns_problem(stats).find("3 nonzeros") != std::string::npos);
    CHECK(codegen::bro_columns_problem(stats).find("the first at nonzero 1234") !=
          std::string::npos);
    CHECK(unsorted.x_sectors == 0);
    CHECK(compiler::has_bro_columns(unsorted) == (a.nnz() == 0));
  }
}

TEST_CASE("device bro: the device planner scores bro_ell with the host's model") {
  const CsrMatrix a = gen::stencil_2d_5pt(200, 150);
  const Profile profile = inspect(a, InspectDepth::rows);
  const test::HostDeviceCsr arrays(a);
  const DeviceCsr& view = arrays.view;
  Options o;
  o.format = "bro_ell";
  compiler::check_device_options(o);  // accepted
  const Plan device = compiler::plan_device_csr(view, profile, o, BuildTarget{});
  compiler::PlanOptions po = compiler::plan_options(o, BuildTarget{});
  const Plan host = compiler::make_plan(profile, po);
  CHECK(device.format == "bro_ell");
  CHECK(describe(device.params) == describe(host.params));
  // Every applicable host candidate is offered on the device with the same predicted time, and
  // a build cost of its own: the GPU's passes over the matrix, not the host encoder's.
  int seen = 0;
  for (const Candidate& h : host.candidates) {
    if (!h.applicable) continue;
    for (const Candidate& d : device.candidates) {
      if (d.label != h.label) continue;
      ++seen;
      CHECK(d.applicable);
      CHECK(d.predicted_seconds == h.predicted_seconds);
      CHECK(d.build_seconds < h.build_seconds);
      CHECK(d.build_seconds > 0.0);
    }
  }
  CHECK(seen >= 3);
  // The bro_ell encode on the GPU costs more than csr's (it writes a whole encoding) and grows
  // with the matrix.
  compiler::PlanOptions dpo = po;
  dpo.build_path = compiler::BuildPath::device;
  dpo.cached_kernels = true;
  BroEllParams bro;
  const double small = compiler::predict(profile, bro, dpo).build.encode;
  const double csr = compiler::predict(profile, CsrParams{}, dpo).build.encode;
  CHECK(small > csr);
  const Profile bigger = inspect(gen::stencil_2d_5pt(400, 300), InspectDepth::rows);
  CHECK(compiler::predict(bigger, bro, dpo).build.encode > small);

  // Without the column inspection (unsorted columns) bro_ell is refused, with the reason.
  Profile rows_only = profile;
  rows_only.x_sectors = 0;
  Options any;
  const Plan fallback = compiler::plan_device_csr(view, rows_only, any, BuildTarget{});
  CHECK(fallback.format != "bro_ell");
  bool refused = false;
  for (const Candidate& c : fallback.candidates)
    if (c.format == "bro_ell" && c.reason.find("not strictly increasing") != std::string::npos)
      refused = !c.applicable;
  CHECK(refused);
  CHECK_THROWS_AS(compiler::plan_device_csr(view, rows_only, o, BuildTarget{}), InputError);
  // Formats the GPU does not build are named in the refusal.
  Options cci;
  cci.format = "cci";
  try {
    compiler::check_device_options(cci);
    FAIL("cci from device arrays was accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("only csr, csr_stream, ell, sell, hyb, bro_ell, bro_coo, "
                                     "bro_hyb, bcsr and bellpack run") != std::string::npos);
  }
}
