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
#include <string>
#include <tuple>

#include "../../templates/device_bro.cuh"
#include "formats/bro_coo/bro_coo_format.hpp"
#include "formats/bro_ell/bro_ell_codec.hpp"
#include "formats/bro_ell/bro_ell_format.hpp"
#include "formats/bro_hyb/bro_hyb_format.hpp"
#include "formats/values/values.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/device_bro.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;
using test::with_distinct;
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

// A matrix's values as the GPU codes them in 16 bits (runtime's code_values16_device): the
// distinct bit patterns of the precision's type (a float's zero-extended), ascending, and each
// nonzero's index among them.
struct Codes16 {
  std::vector<std::uint64_t> patterns;
  std::vector<unsigned short> codes;
  int pad_code = 0;
};

std::uint64_t pattern_of(double v, Precision precision) {
  return test::stored_pattern(v, precision != Precision::f64);
}

Codes16 codes16_of(const CsrMatrix& a, Precision precision) {
  Codes16 c;
  for (const double v : a.values) c.patterns.push_back(pattern_of(v, precision));
  std::sort(c.patterns.begin(), c.patterns.end());
  c.patterns.erase(std::unique(c.patterns.begin(), c.patterns.end()), c.patterns.end());
  for (const double v : a.values) {
    const auto at =
        std::lower_bound(c.patterns.begin(), c.patterns.end(), pattern_of(v, precision));
    c.codes.push_back(static_cast<unsigned short>(at - c.patterns.begin()));
  }
  c.pad_code = codegen::bro_padding_code(c.patterns);
  return c;
}

// The GPU encoder's passes on the host, through device_bro.cuh's functions: the arrays it writes
// (the value slots plain, or with `c16` as 16-bit codes).
struct Emulated {
  std::vector<std::int64_t> col_ptr, sym_ptr;
  std::vector<std::uint8_t> widths;
  std::vector<std::byte> symbols;
  std::vector<double> values;
  std::vector<unsigned short> codes16;
};

template <typename Word>
Emulated emulate(const CsrMatrix& a, const BroEllParams& p,
                 long long limit = std::numeric_limits<long long>::max(),
                 const Codes16* c16 = nullptr) {
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
  if (c16 != nullptr) e.codes16.assign(e.values.size(), 0xffff);
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
        if (c16 != nullptr)
          e.codes16[static_cast<std::size_t>((c0 + j) * S + v)] =
              db::code16_slot(c16->codes.data(), own, k, c16->pad_code);
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

// The GPU's bro_coo passes on the host: the arrays they write (values plain, or with `c16` as
// 16-bit codes).
template <typename Word>
std::vector<EncodedArray> emulate_coo(const CsrMatrix& a, int interval, std::int64_t skip = 0,
                                      const std::string& prefix = "",
                                      const Codes16* c16 = nullptr) {
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
  // Sized by resize, not by the constructor: with the latter GCC 12 at -O3 reports a
  // -Wfree-nonheap-object on this vector's release that is not there.
  std::vector<double> values;
  values.resize(cols.size(), -1.0);
  std::vector<unsigned short> codes(c16 != nullptr ? cols.size() : 0, 0xffff);
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
        if (c16 != nullptr)
          codes[slot] =
              db::code16_slot(c16->codes.data(), i < n, static_cast<long long>(nz), c16->pad_code);
      }
    }
  }
  auto array = [&](const char* name, ElemType type, const auto& v) {
    EncodedArray out{prefix + name, type, {}};
    out.bytes.resize(v.size() * sizeof(v[0]));
    if (!v.empty()) std::memcpy(out.bytes.data(), v.data(), out.bytes.size());
    return out;
  };
  std::vector<EncodedArray> out = {
      array("count", ElemType::i64, std::vector<std::int64_t>{n}),
      array("row_base", ElemType::i32, row_base),
      array("widths", ElemType::u8, widths),
      array("sym_ptr", ElemType::i64, sym_ptr),
      array("symbols", L == 64 ? ElemType::u64 : ElemType::u32, symbols),
      array("col_idx", ElemType::i32, cols),
      array("values", ElemType::f64, values)};
  if (c16 != nullptr) out.back() = array("values", ElemType::u16, codes);
  return out;
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

namespace {

// Matrices past an 8-bit table's 256 values, with and without 0.0 among them.
std::vector<CsrMatrix> many_valued() {
  return {with_distinct(test::short_and_long_rows(4000, true), 3000, false),
          with_distinct(test::short_and_long_rows(4000, true), 3000, true),
          with_distinct(gen::random_uniform(777, 3000, 6), 3000, false),
          with_distinct(gen::rmat(10, 8), 1000, true), with_distinct(one_long_row(), 700, false)};
}

// The bit pattern of entry i of a value table (f64 or f32).
std::uint64_t table_bits(const EncodedArray& table, std::size_t i) {
  const std::size_t size = table.type == ElemType::f64 ? 8 : 4;
  std::uint64_t bits = 0;
  std::memcpy(&bits, table.bytes.data() + i * size, size);
  return bits;
}

// 16-bit codes as the GPU writes them (`got`, against c's table) and the host codec's array
// `name` and its table: as many, each naming the same value, a padding slot 0.0 where the GPU's
// table has it and else the padding code. The GPU's table holds the whole matrix's values
// ascending: the host's entries (less the padding's 0.0 where no nonzero holds it), those of the
// part's values (bro_hyb's), or all of them (`whole`).
void check_codes16(const Encoded& host, const std::string& name,
                   const std::vector<unsigned short>& got, const Codes16& c, bool whole) {
  CAPTURE(name);
  const EncodedArray& codes = host.array(name);
  const EncodedArray& table = host.array(name + "_table");
  REQUIRE(codes.type == ElemType::u16);
  REQUIRE(static_cast<std::int64_t>(got.size()) == codes.count());
  const bool zero = std::binary_search(c.patterns.begin(), c.patterns.end(), std::uint64_t{0});
  std::int64_t wrong = 0, outside = 0, padding = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    std::uint16_t hc;
    std::memcpy(&hc, codes.bytes.data() + 2 * i, 2);
    const std::uint64_t want = table_bits(table, hc);
    if (got[i] >= c.patterns.size()) {
      ++outside;
      continue;
    }
    if (c.patterns[got[i]] == want) continue;
    if (want == 0 && !zero && got[i] == c.pad_code) {
      ++padding;  // the host's 0.0 in a padding slot; the GPU's table has no 0.0
      continue;
    }
    ++wrong;
  }
  CHECK(outside == 0);
  CHECK(wrong == 0);
  std::vector<std::uint64_t> entries;
  for (std::int64_t i = 0; i < table.count(); ++i)
    entries.push_back(table_bits(table, static_cast<std::size_t>(i)));
  std::sort(entries.begin(), entries.end());
  if (!zero && !entries.empty() && entries.front() == 0) entries.erase(entries.begin());
  if (whole) {
    CHECK(entries == c.patterns);
  } else {
    CHECK(std::includes(c.patterns.begin(), c.patterns.end(), entries.begin(), entries.end()));
  }
}

}  // namespace

TEST_CASE("device bro: the padding code names 0.0 where the table has it, else entry 0") {
  // 0.0's pattern is the least: in an ascending table it is entry 0 when present.
  CHECK(codegen::bro_padding_code({}) == 0);
  CHECK(codegen::bro_padding_code({0}) == 0);
  CHECK(codegen::bro_padding_code({0, 0x3f800000u, 0x40000000u}) == 0);
  // No 0.0 (-0.0 is the sign bit alone, not the host padding's +0.0): entry 0 all the same.
  CHECK(codegen::bro_padding_code({3, 7, 9}) == 0);
  CHECK(codegen::bro_padding_code({0x3ff0000000000000ull, 0x8000000000000000ull}) == 0);
  // The fill's padding slot holds the code, a nonzero's slot its own code.
  const unsigned short codes[3] = {5, 6, 7};
  CHECK(db::code16_slot(codes, true, 1, 2) == 6);
  CHECK(db::code16_slot(codes, false, 1, 2) == 2);
  CHECK(db::code16_slot(codes, false, 0, 65535) == 65535);
}

TEST_CASE("device bro: 16-bit codes by the fill's steps name the host codec's values, bro_ell") {
  const formats::BroEllFormat unit;
  for (const CsrMatrix& a : many_valued()) {
    for (Precision precision : {Precision::f64, Precision::f32}) {
      const Codes16 c = codes16_of(a, precision);
      REQUIRE(c.patterns.size() > 256);
      for (const BroEllParams& shape : shapes()) {
        BroEllParams p = shape;
        p.values = formats::kValuesTable16;
        CAPTURE(a.nrows);
        CAPTURE(describe(p));
        CAPTURE(to_string(precision));
        const Encoded host = unit.encode(a, p, precision);
        const Emulated gpu =
            p.symbol_bits == 64
                ? emulate<std::uint64_t>(a, p, std::numeric_limits<long long>::max(), &c)
                : emulate<std::uint32_t>(a, p, std::numeric_limits<long long>::max(), &c);
        CHECK(gpu.col_ptr == contents<std::int64_t>(host.array("col_ptr")));
        CHECK(gpu.widths == contents<std::uint8_t>(host.array("widths")));
        const EncodedArray& symbols = host.array("symbols");
        REQUIRE(gpu.symbols.size() == symbols.bytes.size());
        CHECK(std::memcmp(gpu.symbols.data(), symbols.bytes.data(), gpu.symbols.size()) == 0);
        check_codes16(host, "values", gpu.codes16, c, true);
      }
    }
  }
}

TEST_CASE("device bro: 16-bit codes by the fill's steps name the host codec's values, bro_coo") {
  const formats::BroCooFormat unit;
  for (const CsrMatrix& a : many_valued()) {
    for (Precision precision : {Precision::f64, Precision::f32}) {
      const Codes16 c = codes16_of(a, precision);
      for (int interval : {32, 1024}) {
        for (int L : {32, 64}) {
          BroCooParams p;
          p.interval = interval;
          p.symbol_bits = L;
          p.values = formats::kValuesTable16;
          CAPTURE(a.nrows);
          CAPTURE(describe(p));
          CAPTURE(to_string(precision));
          const Encoded host = unit.encode(a, p, precision);
          const std::vector<EncodedArray> gpu =
              L == 64 ? emulate_coo<std::uint64_t>(a, interval, 0, "", &c)
                      : emulate_coo<std::uint32_t>(a, interval, 0, "", &c);
          // The host's arrays: the emulated ones, then the table.
          REQUIRE(gpu.size() + 1 == host.arrays.size());
          for (std::size_t i = 0; i + 1 < gpu.size(); ++i) {
            CAPTURE(gpu[i].name);
            CHECK(gpu[i].name == host.arrays[i].name);
            CHECK(gpu[i].bytes == host.arrays[i].bytes);
          }
          CHECK(host.arrays.back().name == "values_table");
          std::vector<unsigned short> codes(gpu.back().bytes.size() / 2);
          std::memcpy(codes.data(), gpu.back().bytes.data(), gpu.back().bytes.size());
          check_codes16(host, "values", codes, c, true);
        }
      }
    }
  }
}

TEST_CASE("device bro: 16-bit codes by the fill's steps name the host codec's values, bro_hyb") {
  const formats::BroHybFormat unit;
  for (const CsrMatrix& a : many_valued()) {
    for (Precision precision : {Precision::f64, Precision::f32}) {
      const Codes16 c = codes16_of(a, precision);
      for (int width : {1, 3}) {
        for (const auto& [h, T, tables] : {std::tuple{32, 1, 0}, {8, 4, 1}, {16, 2, 2}}) {
          BroHybParams p;
          p.width = width;
          p.slice_height = h;
          p.threads_per_row = T;
          p.tables = tables;
          p.interval = 256;
          p.values = formats::kValuesTable16;
          CAPTURE(a.nrows);
          CAPTURE(describe(p));
          CAPTURE(to_string(precision));
          const Encoded host = unit.encode(a, p, precision);
          BroEllParams shape;
          shape.slice_height = h;
          shape.threads_per_row = T;
          shape.tables = tables;
          const Emulated ell = emulate<std::uint32_t>(a, shape, width, &c);
          CHECK(ell.col_ptr == contents<std::int64_t>(host.array("ell_col_ptr")));
          CHECK(ell.widths == contents<std::uint8_t>(host.array("ell_widths")));
          check_codes16(host, "ell_values", ell.codes16, c, false);
          const std::vector<EncodedArray> coo =
              emulate_coo<std::uint32_t>(a, p.interval, width, "coo_", &c);
          for (const EncodedArray& arr : coo) {
            CAPTURE(arr.name);
            if (arr.name == "coo_values") {
              std::vector<unsigned short> codes(arr.bytes.size() / 2);
              std::memcpy(codes.data(), arr.bytes.data(), arr.bytes.size());
              check_codes16(host, "coo_values", codes, c, false);
            } else {
              CHECK(arr.bytes == host.array(arr.name).bytes);
            }
          }
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
    // The row pass counts x sectors too (codegen::row_length_profile): they do not stand for
    // the column inspection.
    unsorted.x_sectors = host.x_sectors;
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

  // Without the column inspection (unsorted columns) bro_ell is refused, with the reason. The row
  // pass still counts x sectors.
  Profile rows_only = profile;
  rows_only.delta_bits = {};
  rows_only.first_col_bits = {};
  rows_only.slice_longest = {};
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
                                     "bro_hyb, bcsr, bellpack and dia run") != std::string::npos);
  }
}

TEST_CASE("device bro: the row formats are planned before the column pass, to the same plan") {
  // compile(DeviceCsr) plans csr, csr_stream, ell, sell and hyb while BRO's column pass runs
  // (compiler::DevicePlanning): on the Profile without what that pass adds, they must score as
  // on the whole Profile.
  CsrMatrix graded = gen::stencil_2d_5pt(300, 200);
  for (std::size_t k = 0; k < graded.values.size(); ++k)
    graded.values[k] = 1.0 + static_cast<double>(k % 300) / 16.0;
  for (const CsrMatrix& a : {gen::stencil_3d_27pt(24, 24, 24), gen::rmat(14, 12),
                             gen::random_uniform(20000, 20000, 9), graded}) {
    const Profile profile = inspect(a, InspectDepth::rows);
    Profile rows_only = profile;
    rows_only.delta_bits = {};
    rows_only.first_col_bits = {};
    rows_only.slice_longest = {};
    REQUIRE_FALSE(compiler::has_bro_columns(rows_only));
    const test::HostDeviceCsr arrays(a);
    for (Precision precision : {Precision::f64, Precision::f32}) {
      for (const std::string format : {"auto", "csr_stream", "hyb", "bro_ell"}) {
        CAPTURE(a.nrows);
        CAPTURE(to_string(precision));
        CAPTURE(format);
        Options o;
        o.precision = precision;
        o.format = format;
        BuildTarget target;
        target.gpu = "H200";
        compiler::DevicePlanning planning(arrays.view, o, target);
        planning.propose_row_formats(rows_only);
        const Plan split = planning.finish(profile);
        CHECK_THROWS_AS((void)planning.finish(profile), InternalError);
        const Plan whole = compiler::plan_device_csr(arrays.view, profile, o, target);
        CHECK(split.format == whole.format);
        CHECK(split.engine == whole.engine);
        CHECK(describe(split.params) == describe(whole.params));
        REQUIRE(split.candidates.size() == whole.candidates.size());
        for (std::size_t i = 0; i < split.candidates.size(); ++i) {
          CHECK(split.candidates[i].label == whole.candidates[i].label);
          CHECK(split.candidates[i].applicable == whole.candidates[i].applicable);
          CHECK(split.candidates[i].predicted_seconds == whole.candidates[i].predicted_seconds);
        }
      }
    }
  }
}

TEST_CASE(
    "device bro: from device arrays the planner picks BRO with a 16-bit table as on the host") {
  // A 2D grid with 723 distinct values (G3_circuit's count at x16M): past an 8-bit table, and a
  // bro_ell pick with a 16-bit one on the host.
  CsrMatrix a = gen::stencil_2d_5pt(500, 500);
  for (std::size_t k = 0; k < a.values.size(); ++k)
    a.values[k] = 1.0 + static_cast<double>(static_cast<std::int64_t>(k) % 723) / 7.0;
  const Profile profile = inspect(a, InspectDepth::rows);
  REQUIRE(profile.distinct_values == 723);
  const test::HostDeviceCsr arrays(a);
  for (Precision precision : {Precision::f64, Precision::f32}) {
    for (const std::string format : {"auto", "bro_ell", "bro_coo", "bro_hyb"}) {
      CAPTURE(to_string(precision));
      CAPTURE(format);
      Options o;
      o.precision = precision;
      o.format = format;
      o.cusparse = "never";
      const Plan device = compiler::plan_device_csr(arrays.view, profile, o, BuildTarget{});
      const Plan host = compiler::make_plan(profile, compiler::plan_options(o, BuildTarget{}));
      CHECK(device.format == host.format);
      CHECK(describe(device.params) == describe(host.params));
      if (format != "auto") CHECK(device.format.starts_with("bro_"));
      // In fp32 the H100's calibration prefers csr_stream on this grid (G3_circuit itself keeps
      // bro_ell with a 16-bit table): the pick is then only required to be the host's.
      if (format == "auto" && precision == Precision::f64) {
        CHECK(device.format == "bro_ell");
        CHECK(formats::value_coding_of(device.params) == formats::kValuesTable16);
      }
      // Each of the host's 16-bit BRO candidates is offered from device arrays, equally scored.
      int seen = 0;
      for (const Candidate& h : host.candidates) {
        if (!h.applicable || !h.format.starts_with("bro_") ||
            formats::value_coding_of(h.params) != formats::kValuesTable16)
          continue;
        for (const Candidate& d : device.candidates) {
          if (d.format != h.format || d.label != h.label) continue;
          ++seen;
          CHECK(d.applicable);
          CHECK(d.predicted_seconds == h.predicted_seconds);
        }
      }
      CHECK(seen > 0);
    }
  }
}
