// What the GPU tests of the BRO device build share (test_device_bro_gpu.cpp on edge cases,
// test_device_bro_public_gpu.cpp on the public matrices, test_device_bro16_gpu.cpp with 16-bit
// value codes): the units loaded once, the edge-case matrices and shapes, and the comparison of
// a GPU encoding with the host codec's, array by array and entry by entry.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include <fmt/format.h>

#include "device.hpp"
#include "device_bro.hpp"
#include "device_csr.hpp"
#include "device_values.hpp"
#include "formats/bro_ell/bro_ell_format.hpp"
#include "formats/bro_hyb/bro_hyb_format.hpp"
#include "formats/format.hpp"
#include "formats/values/values.hpp"
#include "gpu_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

namespace spmvc::test::bro_gpu {

struct Units {
  runtime::DeviceInfo device = runtime::probe_device(0);
  runtime::KernelCache cache{{}};
  runtime::DeviceCsrKernels csr = runtime::load_device_csr_kernels(cache, device);
  runtime::DeviceBroKernels bro = runtime::load_device_bro_kernels(cache, device);
  runtime::DeviceValueKernels values = runtime::load_device_value_kernels(cache, device);
};

inline CsrMatrix one_long_row() {
  CsrMatrix a;
  a.nrows = 300;
  a.ncols = 200000;
  a.row_ptr.assign(301, 0);
  for (std::int32_t c = 0; c < 200000; c += 37) a.col_idx.push_back(c);
  const auto n = static_cast<std::int64_t>(a.col_idx.size());
  for (std::int64_t r = 101; r <= 300; ++r) a.row_ptr[r] = n;
  a.values.resize(a.col_idx.size());
  for (std::size_t k = 0; k < a.values.size(); ++k) a.values[k] = 1.0 + static_cast<double>(k % 7);
  validate(a);
  return a;
}

inline CsrMatrix no_nonzeros() {
  CsrMatrix a;
  a.nrows = 1000;
  a.ncols = 700;
  a.row_ptr.assign(1001, 0);
  return a;
}

// Edge cases: empty rows among long ones, one long row, rectangular both ways, no nonzeros,
// a pattern matrix, few distinct values.
inline std::vector<CsrMatrix> edge_matrices() {
  CsrMatrix pattern = gen::rmat(13, 12);
  std::fill(pattern.values.begin(), pattern.values.end(), 1.0);
  CsrMatrix few = gen::stencil_3d_27pt(20, 20, 20);
  for (std::size_t k = 0; k < few.values.size(); ++k)
    few.values[k] = 0.25 * static_cast<double>((k * 7919) % 200) - 20.0;
  return {test::short_and_long_rows(6000, true),
          one_long_row(),
          gen::random_uniform(5000, 90000, 7),
          gen::random_uniform(40000, 3000, 5),
          no_nonzeros(),
          pattern,
          few};
}

// Every width-table mode and symbol length at several slice shapes (all: the encoder tests;
// a few: the operator tests, each a kernel compile).
inline std::vector<BroEllParams> edge_shapes(bool all) {
  std::vector<BroEllParams> out;
  for (const auto& [h, T] : {std::pair{32, 1}, {16, 2}, {4, 8}, {1, 32}, {256, 1}})
    for (int L : {32, 64})
      for (int tables : {0, 1, 2}) {
        if (!all && (h == 16 || h == 256 || (h == 32) != (L == 32))) continue;
        BroEllParams p;
        p.slice_height = h;
        p.threads_per_row = T;
        p.symbol_bits = L;
        p.block_size = std::max(256, h * T);
        p.tables = tables;
        out.push_back(p);
      }
  return out;
}

inline std::vector<std::byte> download(const runtime::DeviceBuffer& b, std::size_t bytes) {
  std::vector<std::byte> out(bytes);
  if (bytes > 0) b.download(out.data(), bytes);
  return out;
}

// The first index where n elements of `size` bytes differ, or -1.
inline std::int64_t first_difference(const std::vector<std::byte>& a, const std::byte* b,
                                     std::size_t size) {
  for (std::size_t i = 0; i < a.size(); i += size)
    if (std::memcmp(a.data() + i, b + i, size) != 0) return static_cast<std::int64_t>(i / size);
  return -1;
}

inline std::uint64_t bits_at(const std::byte* table, std::size_t size, std::size_t i) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, table + i * size, size);
  return bits;
}

// The code at element k of a u8 or u16 code array.
inline std::size_t code_at(const std::byte* codes, std::size_t size, std::size_t k) {
  if (size == 1) return static_cast<std::size_t>(codes[k]);
  std::uint16_t c;
  std::memcpy(&c, codes + 2 * k, 2);
  return c;
}

// Every array of a GPU encoding against the host codec's, entry by entry. `patterns`: the GPU
// table's (8- and 16-bit codes), ascending.
inline void compare(const Encoded& host,
                    const std::vector<std::pair<std::string, runtime::DeviceBuffer>>& arrays,
                    const std::vector<std::int64_t>& counts,
                    const std::vector<std::uint64_t>& patterns, int coding) {
  REQUIRE(arrays.size() == host.arrays.size());
  REQUIRE(counts.size() == host.arrays.size());
  const bool table = coding == formats::kValuesTable8 || coding == formats::kValuesTable16;
  const auto& device = arrays;
  // No stored value: the table holds one entry, 0.
  const std::vector<std::uint64_t> entries =
      patterns.empty() ? std::vector<std::uint64_t>{0} : patterns;
  for (std::size_t i = 0; i < host.arrays.size(); ++i) {
    const EncodedArray& want = host.arrays[i];
    const auto& [name, buffer] = device[i];
    CAPTURE(name);
    REQUIRE(name == want.name);
    if (name.ends_with("values_table")) {
      // The patterns as values, ascending; compared with the host's through the codes below.
      const std::size_t vsize = static_cast<std::size_t>(size_of(want.type));
      CHECK(counts[i] == static_cast<std::int64_t>(entries.size()));
      const std::vector<std::byte> got = download(buffer, entries.size() * vsize);
      std::int64_t differ = 0;
      for (std::size_t k = 0; k < entries.size(); ++k)
        differ += bits_at(got.data(), vsize, k) != entries[k] ? 1 : 0;
      CHECK(differ == 0);
      continue;
    }
    CHECK(counts[i] == want.count());
    const auto size = static_cast<std::size_t>(size_of(want.type));
    const std::vector<std::byte> got = download(buffer, want.bytes.size());
    if (table && name.ends_with("values")) {
      // The host's table lists values in the order they first occur, the GPU's ascending: the
      // codes differ, the values they name must not. A padding slot names the table's 0.0 on
      // both sides where the GPU's table has one (any entry where it has none).
      const EncodedArray& host_table = host.array(name + "_table");
      const std::size_t vsize = static_cast<std::size_t>(size_of(host_table.type));
      REQUIRE(i + 1 < device.size());
      REQUIRE(device[i + 1].first == name + "_table");
      const bool zero = std::find(entries.begin(), entries.end(), 0u) != entries.end();
      std::int64_t wrong = 0, outside = 0;
      for (std::size_t k = 0; k < got.size() / size; ++k) {
        const std::size_t code = code_at(got.data(), size, k);
        if (code >= entries.size()) {
          ++outside;
          continue;
        }
        const std::uint64_t want_bits =
            bits_at(host_table.bytes.data(), vsize, code_at(want.bytes.data(), size, k));
        if (want_bits == 0 && !zero) continue;
        wrong += entries[code] != want_bits ? 1 : 0;
      }
      CHECK(outside == 0);
      CHECK(wrong == 0);
      continue;
    }
    CHECK(first_difference(got, want.bytes.data(), size) == -1);
  }
}

// Builds `a` as bro_ell (bro_coo, bro_hyb) with `p` on the GPU and compares every array with the
// host codec's. Returns false when the host codec refuses the coding (nothing compared).
template <typename Params>
inline bool same_as_host(const Units& u, const CsrMatrix& a, const Params& p, Precision precision) {
  Encoded host;
  try {
    host = formats::find_format(Params::kFormat).encode(a, p, precision);
  } catch (const InputError&) {
    return false;  // e.g. the padding's 0.0 takes an 8-bit table past 256 values
  }
  const runtime::ResidentCsr r = runtime::upload_csr(a, precision);
  const runtime::DeviceInspection seen = runtime::inspect_device(r.view, precision, u.csr);
  // A 16-bit table's patterns as compile(DeviceCsr) gathers them: the row pass's up to 256,
  // past that the value set's.
  runtime::DeviceValues16 values16;
  values16.kernels = &u.values;
  values16.patterns = seen.value_patterns;
  if (p.values == formats::kValuesTable16 && seen.value_patterns.empty() && a.nnz() > 0) {
    const auto found = runtime::value_patterns16_device(r.view, precision, u.values);
    REQUIRE(found.has_value());
    values16.patterns = *found;
  }
  const std::vector<std::uint64_t>& patterns =
      p.values == formats::kValuesTable16 ? values16.patterns : seen.value_patterns;
  if constexpr (std::is_same_v<Params, BroEllParams>) {
    const runtime::DeviceBroEll device = runtime::encode_bro_ell_device(
        r.view, p, precision, seen.value_patterns, seen.profile.row_max, u.bro, &values16);
    compare(host, device.arrays, device.counts, patterns, p.values);
  } else if constexpr (std::is_same_v<Params, BroHybParams>) {
    runtime::DeviceBroHyb device = runtime::encode_bro_hyb_device(
        r.view, p, precision, seen.value_patterns, seen.profile.row_max, u.bro, &values16);
    std::vector<std::pair<std::string, runtime::DeviceBuffer>> arrays =
        std::move(device.ell.arrays);
    std::vector<std::int64_t> counts = device.ell.counts;
    for (auto& array : device.coo.arrays) arrays.push_back(std::move(array));
    counts.insert(counts.end(), device.coo.counts.begin(), device.coo.counts.end());
    compare(host, arrays, counts, patterns, p.values);
  } else {
    const runtime::DeviceBroCoo device =
        runtime::encode_bro_coo_device(r.view, p, precision, seen.value_patterns, u.bro, &values16);
    compare(host, device.arrays, device.counts, patterns, p.values);
  }
  return true;
}

// bro_coo on `a` in each interval, symbol length and value storage: every array equals the host
// codec's, and the operator multiplies right.
inline void check_bro_coo(const Units& u, const CsrMatrix& a) {
  const Profile profile = inspect(a, InspectDepth::rows);
  for (int interval : {32, 1024}) {
    for (int L : {32, 64}) {
      for (int coding : {formats::kValuesPlain, formats::kValuesUnit, formats::kValuesTable8}) {
        if (coding != formats::kValuesPlain &&
            formats::value_coding_problem(profile, coding, Precision::f64))
          continue;
        BroCooParams p;
        p.interval = interval;
        p.symbol_bits = L;
        p.values = coding;
        CAPTURE(a.nrows);
        CAPTURE(a.nnz());
        CAPTURE(describe(p));
        const bool compared = same_as_host(u, a, p, Precision::f64);
        CHECK((compared || coding == formats::kValuesTable8));
      }
    }
  }
  BroCooParams p;
  p.values = formats::best_value_coding(profile, Precision::f64);
  if (p.values == formats::kValuesTable16) p.values = formats::kValuesPlain;
  const runtime::ResidentCsr r = runtime::upload_csr(a, Precision::f64);
  const Operator op = compile(r.view, test::forced(Precision::f64, p));
  CHECK(op.plan().format == "bro_coo");
  CHECK(test::check(a, op) <= test::tolerance(Precision::f64));
  CHECK(test::check(a, op, 2.0, -1.0) <= test::tolerance(Precision::f64));
}

// bro_hyb on `a` with the planner's proposals (the paper's split, every width-table mode) and a
// narrow split: every array equals the host codec's, and the operator multiplies right.
inline void check_bro_hyb(const Units& u, const CsrMatrix& a) {
  const Profile profile = inspect(a, InspectDepth::rows);
  std::vector<BroHybParams> shapes;
  BroHybParams narrow;
  narrow.width = 2;
  narrow.symbol_bits = 64;
  narrow.threads_per_row = 2;
  narrow.slice_height = 16;
  shapes.push_back(narrow);
  for (const Candidate& c : formats::BroHybFormat{}.propose(profile, Precision::f64))
    if (c.applicable && formats::value_coding_of(c.params) != formats::kValuesTable16)
      shapes.push_back(std::get<BroHybParams>(c.params));
  for (const BroHybParams& p : shapes) {
    CAPTURE(a.nrows);
    CAPTURE(a.nnz());
    CAPTURE(describe(p));
    const bool compared = same_as_host(u, a, p, Precision::f64);
    CHECK((compared || p.values == formats::kValuesTable8));
  }
  const BroHybParams& p = shapes.back();
  const runtime::ResidentCsr r = runtime::upload_csr(a, Precision::f64);
  const Operator op = compile(r.view, test::forced(Precision::f64, p));
  CHECK(op.plan().format == "bro_hyb");
  CHECK(test::check(a, op) <= test::tolerance(Precision::f64));
  CHECK(test::check(a, op, 2.0, -1.0) <= test::tolerance(Precision::f64));
}

}  // namespace spmvc::test::bro_gpu
