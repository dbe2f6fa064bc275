// attach_reordering: a unit generated for a reordered matrix writes y through the row map and,
// with renumbered columns, gathers x first. (The GPU tests run such units.)
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>

#include "codegen/codegen.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/reorder.hpp"
#include "test_support.hpp"

using namespace spmvc;

namespace {

struct Unit {
  Encoded encoded;
  KernelSource source;
};

Unit csr_unit(const CsrMatrix& a) {
  const Profile profile = inspect(a);
  compiler::PlanOptions o;
  o.format = "csr";
  const Plan plan = compiler::make_plan(profile, o);
  Unit u{compiler::encode(a, plan), {}};
  u.source = codegen::generate(plan, u.encoded, profile);
  return u;
}

std::vector<std::int32_t> reversed(std::int64_t n) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>(v.size() - 1 - i);
  return v;
}

}  // namespace

TEST_CASE("a row map adds its array and the define, and leaves the launches alone") {
  const CsrMatrix a = gen::from_spec("stencil2d:n=10");
  Unit u = csr_unit(a);
  const auto arrays = u.encoded.arrays.size();
  const std::int64_t bytes = u.encoded.total_bytes();
  codegen::attach_reordering(u.source, u.encoded, {reversed(a.nrows), {}});
  REQUIRE(u.encoded.arrays.size() == arrays + 1);
  CHECK(u.encoded.arrays.back().name == "row_map");
  CHECK(u.encoded.arrays.back().count() == a.nrows);
  CHECK(u.encoded.total_bytes() == bytes + 4 * a.nrows);
  // Defined before the first include, so common.cuh sees it.
  const auto define = u.source.source.find("#define SPMVC_ROW_MAP");
  REQUIRE(define != std::string::npos);
  CHECK(define < u.source.source.find("#include"));
  CHECK(u.source.pre_launches.empty());
}

TEST_CASE("renumbered columns: x is gathered into a scratch array that every launch reads") {
  const CsrMatrix a = gen::from_spec("stencil2d:n=10");
  Unit u = csr_unit(a);
  codegen::attach_reordering(u.source, u.encoded, {reversed(a.nrows), reversed(a.ncols)});
  REQUIRE(u.source.pre_launches.size() == 1);
  CHECK(u.source.pre_launches[0].entry == "spmvc_gather_x_f64");
  const auto& x_perm = u.encoded.array("x_perm");
  CHECK(x_perm.scratch);
  CHECK(x_perm.count() == a.ncols);
  CHECK(std::none_of(u.source.params.begin(), u.source.params.end(),
                     [](const KernelParam& p) { return p.kind == KernelParam::Kind::x; }));
  CHECK(std::any_of(u.source.params.begin(), u.source.params.end(),
                    [](const KernelParam& p) { return p.name == "x_perm"; }));
  // Scratch is workspace, not matrix data.
  CHECK(u.encoded.total_bytes() == csr_unit(a).encoded.total_bytes() + 4 * a.nrows + 4 * a.ncols);
  CHECK_THROWS_AS(codegen::attach_reordering(u.source, u.encoded, {{0, 1}, {}}), InternalError);

  // Blocks of 256 threads gather 16 elements each: 10,000 columns take three stretches of 4,096.
  const CsrMatrix big = gen::from_spec("stencil2d:n=100");
  Unit v = csr_unit(big);
  codegen::attach_reordering(v.source, v.encoded, {reversed(big.nrows), reversed(big.ncols)});
  REQUIRE(v.source.pre_launches.size() == 1);
  CHECK(v.source.pre_launches[0].block == 256);
  CHECK(v.source.pre_launches[0].grid == 3);
  CHECK(v.source.source.find("spmvc::permute::gather<256, 16, double>") != std::string::npos);
}

TEST_CASE("renumbered columns that are not all read: only the read ones are gathered") {
  // 10,000 columns, of which every third is read (3,334: a third, below half).
  const CsrMatrix a = gen::from_spec("stencil2d:n=100");
  std::vector<std::int32_t> read;
  for (std::int32_t j = 0; j < a.ncols; j += 3) read.push_back(j);
  const std::vector<std::int32_t> cols = reversed(a.ncols);
  Unit u = csr_unit(a);
  codegen::attach_reordering(u.source, u.encoded, {reversed(a.nrows), cols}, read);
  REQUIRE(u.source.pre_launches.size() == 1);
  CHECK(u.source.pre_launches[0].entry == "spmvc_gather_x_read_f64");
  // 3,334 elements in stretches of 4,096: one block.
  CHECK(u.source.pre_launches[0].grid == 1);
  CHECK(u.source.source.find("spmvc::permute::gather_slots<256, 16, double>(3334LL, col_slot, "
                             "col_map, x, x_perm)") != std::string::npos);
  // Slot i of the gather is read column read[i]; it comes from the caller's column cols[read[i]].
  CHECK(test::array_as<std::int32_t>(u.encoded.array("col_slot")) == read);
  const auto from = test::array_as<std::int32_t>(u.encoded.array("col_map"));
  REQUIRE(from.size() == read.size());
  for (std::size_t i = 0; i < read.size(); ++i)
    CHECK(from[i] == cols[static_cast<std::size_t>(read[i])]);
  CHECK(u.encoded.array("x_perm").count() == a.ncols);  // the kernels index it by column
  CHECK(u.encoded.total_bytes() == csr_unit(a).encoded.total_bytes() + 4 * a.nrows +
                                       2 * 4 * static_cast<std::int64_t>(read.size()));

  // More than half read: x is gathered whole.
  std::vector<std::int32_t> most;
  for (std::int32_t j = 0; j < a.ncols; ++j)
    if (j % 2 == 0 || j % 3 == 0) most.push_back(j);  // two thirds
  Unit w = csr_unit(a);
  codegen::attach_reordering(w.source, w.encoded, {reversed(a.nrows), cols}, most);
  CHECK(w.source.pre_launches[0].entry == "spmvc_gather_x_f64");
  CHECK_THROWS(w.encoded.array("col_slot"));
  CHECK(w.encoded.array("col_map").count() == a.ncols);

  // A list that is not ascending, or names a column past the matrix's, is the caller's bug.
  for (const std::vector<std::int32_t>& bad :
       {std::vector<std::int32_t>{3, 2}, std::vector<std::int32_t>{0, 0},
        std::vector<std::int32_t>{-1}, std::vector<std::int32_t>{0, 10000}}) {
    Unit v = csr_unit(a);
    CHECK_THROWS_AS(codegen::attach_reordering(v.source, v.encoded, {reversed(a.nrows), cols}, bad),
                    InternalError);
  }
}

TEST_CASE("renumbered columns whose read ones lead the order: only those are gathered, densely") {
  const CsrMatrix a = gen::from_spec("stencil2d:n=100");
  const std::vector<std::int32_t> cols = reversed(a.ncols);
  RowColumnMap map{reversed(a.nrows), cols};
  map.packed_columns = 5000;
  Unit u = csr_unit(a);
  codegen::attach_reordering(u.source, u.encoded, map, {});
  REQUIRE(u.source.pre_launches.size() == 1);
  CHECK(u.source.pre_launches[0].entry == "spmvc_gather_x_f64");
  CHECK(u.source.pre_launches[0].grid == 2);  // 5,000 elements in stretches of 4,096
  CHECK(u.source.source.find("spmvc::permute::gather<256, 16, double>(5000LL, col_map, x, "
                             "x_perm)") != std::string::npos);
  CHECK_THROWS(u.encoded.array("col_slot"));
  CHECK(test::array_as<std::int32_t>(u.encoded.array("col_map")) ==
        std::vector<std::int32_t>(cols.begin(), cols.begin() + 5000));
  CHECK(u.encoded.array("x_perm").count() == a.ncols);
  // A count past the matrix's columns is the caller's bug.
  map.packed_columns = a.ncols + 1;
  Unit v = csr_unit(a);
  CHECK_THROWS_AS(codegen::attach_reordering(v.source, v.encoded, map, {}), InternalError);
}

TEST_CASE("pack_read_columns numbers the columns read first and moves no entry") {
  // 3 x 6, reading columns 4, 1 and 5: they become 0..2 in their order (1, 4, 5), and the
  // unread 0, 2 and 3 follow.
  const CsrMatrix a =
      csr_from_arrays(3, 6, std::vector<std::int64_t>{0, 2, 3, 5},
                      std::vector<std::int32_t>{1, 4, 5, 1, 4}, std::vector<double>{1, 2, 3, 4, 5});
  CsrMatrix p = a;
  const std::vector<std::int32_t> read = columns_read(a);
  CHECK(read == std::vector<std::int32_t>{1, 4, 5});
  const std::vector<std::int32_t> order = pack_read_columns(p, read);
  CHECK(order == std::vector<std::int32_t>{1, 4, 5, 0, 2, 3});
  CHECK(p.col_idx == std::vector<std::int32_t>{0, 1, 2, 0, 1});
  CHECK(p.row_ptr == a.row_ptr);
  CHECK(p.values == a.values);
  for (std::size_t k = 0; k < p.col_idx.size(); ++k)
    CHECK(order[static_cast<std::size_t>(p.col_idx[k])] == a.col_idx[k]);
  // All read: the numbering stays.
  const CsrMatrix s = gen::from_spec("stencil2d:n=7");
  CsrMatrix t = s;
  CHECK(is_identity(pack_read_columns(t, columns_read(s))));
  CHECK(t.col_idx == s.col_idx);
  // A list that is not ascending, or names a column past the matrix's, is refused by name.
  for (const std::vector<std::int32_t>& bad :
       {std::vector<std::int32_t>{4, 1, 5}, std::vector<std::int32_t>{1, 1, 4, 5},
        std::vector<std::int32_t>{-1, 1, 4, 5}, std::vector<std::int32_t>{1, 4, 5, 6},
        std::vector<std::int32_t>{1, 4}}) {
    CsrMatrix q = a;
    try {
      (void)pack_read_columns(q, bad);
      FAIL("a bad list of read columns was accepted");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find("pack_read_columns") != std::string::npos);
      CHECK(q.col_idx == a.col_idx);
    }
  }
}

TEST_CASE("nonempty_rows_first moves the empty rows last and no entry") {
  // Rows: empty, two entries, empty, one entry, empty.
  const CsrMatrix a =
      csr_from_arrays(5, 4, std::vector<std::int64_t>{0, 0, 2, 2, 3, 3},
                      std::vector<std::int32_t>{0, 3, 2}, std::vector<double>{1, 2, 3});
  CsrMatrix p = a;
  std::int64_t nonempty = -1;
  CHECK(nonempty_rows_first(p, &nonempty) == std::vector<std::int32_t>{1, 3, 0, 2, 4});
  CHECK(nonempty == 2);
  CHECK(p.row_ptr == std::vector<std::int64_t>{0, 2, 3, 3, 3, 3});
  CHECK(p.col_idx == a.col_idx);
  CHECK(p.values == a.values);
  validate(p);
  // No empty row: the identity, the matrix as it was.
  CsrMatrix full = gen::from_spec("stencil2d:n=5");
  const CsrMatrix before = full;
  CHECK(is_identity(nonempty_rows_first(full, &nonempty)));
  CHECK(nonempty == full.nrows);
  CHECK(full.row_ptr == before.row_ptr);
}

TEST_CASE("columns_read lists the columns any entry reads; columns_gathered the gather's share") {
  // 4 x 6: row 1 empty, columns 0, 2 and 3 never read.
  const std::vector<std::int64_t> row_ptr{0, 2, 2, 4, 5};
  const std::vector<std::int32_t> col_idx{1, 4, 1, 5, 4};
  const std::vector<double> values{1.0, 2.0, 3.0, 4.0, 5.0};
  const CsrMatrix a = csr_from_arrays(4, 6, row_ptr, col_idx, values);
  CHECK(columns_read(a) == std::vector<std::int32_t>{1, 4, 5});
  CHECK(columns_read(gen::from_spec("stencil2d:n=6")).size() == 36);
  CHECK(columns_gathered(100, 50) == 50);
  CHECK(columns_gathered(100, 51) == 100);
  CHECK(columns_gathered(100, 0) == 0);
}

TEST_CASE("split_x_reads splits only where the format and the map allow it") {
  const CsrMatrix a = gen::from_spec("rmat:scale=9,ef=8");
  const std::int64_t n = a.ncols;
  std::vector<std::int32_t> identity(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < identity.size(); ++i) identity[i] = static_cast<std::int32_t>(i);
  const RowColumnMap hubs{identity, reversed(n), n / 4};
  // csr codes nothing otherwise, yet its kernels take x as a pointer: no plain_column_arrays.
  Unit csr = csr_unit(a);
  codegen::split_x_reads(csr.encoded, hubs);
  CHECK_FALSE(codegen::splits_x(csr.encoded));

  const auto hyb = [&] {
    const Profile profile = inspect(a);
    compiler::PlanOptions o;
    o.format = "hyb";
    return compiler::encode(a, compiler::make_plan(profile, o));
  };
  for (const std::int64_t h : {std::int64_t{0}, n, n + 1}) {
    CAPTURE(h);
    Encoded e = hyb();
    codegen::split_x_reads(e, {identity, reversed(n), h});
    CHECK_FALSE(codegen::splits_x(e));
  }
  Encoded none = hyb();
  codegen::split_x_reads(none, {identity, {}, n / 4});  // no columns renumbered
  CHECK_FALSE(codegen::splits_x(none));
  Encoded split = hyb();
  const std::vector<EncodedArray> before = split.arrays;
  codegen::split_x_reads(split, hubs);
  REQUIRE(codegen::splits_x(split));
  CHECK(split.arrays.size() == before.size() + 1);
  // Column c of the new order (the caller's n - 1 - c) becomes n + c for a hub, else the
  // caller's own; padding (-1) stays.
  for (const char* name : {"ell_col_idx", "coo_col"}) {
    CAPTURE(name);
    const auto* old = reinterpret_cast<const std::int32_t*>(
        std::find_if(before.begin(), before.end(), [&](const EncodedArray& x) {
          return x.name == name;
        })->bytes.data());
    const EncodedArray& now = split.array(name);
    const auto* c = reinterpret_cast<const std::int32_t*>(now.bytes.data());
    for (std::int64_t k = 0; k < now.count(); ++k) {
      const std::int32_t want = old[k] < 0       ? old[k]
                                : old[k] < n / 4 ? static_cast<std::int32_t>(n + old[k])
                                                 : static_cast<std::int32_t>(n - 1 - old[k]);
      if (c[k] != want) FAIL_CHECK("slot " << k << " holds " << c[k] << ", not " << want);
    }
  }
  // A map of the wrong length is the pipeline's error; a matrix whose hubs would pass a 32-bit
  // column index keeps x whole.
  Encoded wrong = hyb();
  CHECK_THROWS_AS(codegen::split_x_reads(wrong, {identity, {0, 1, 2}, 1}), InternalError);
  Encoded huge = hyb();
  huge.ncols = std::numeric_limits<std::int32_t>::max() - 2;
  codegen::split_x_reads(huge, {identity, {0, 1, 2}, 10});
  CHECK_FALSE(codegen::splits_x(huge));
}
