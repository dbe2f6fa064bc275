// SpMM and transpose on the host side: the references (hand-checked, and against k separate
// SpMVs in both layouts), the SpMM units' shapes, parameters and refusals.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "spmvc/build.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/spmm.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/params/values.hpp"
#include "spmvc/profile.hpp"

using namespace spmvc;

namespace {

// [1 0 2]
// [0 0 0]
// [0 3 4]
// [5 0 0]
CsrMatrix small() {
  CsrMatrix a;
  a.nrows = 4;
  a.ncols = 3;
  a.row_ptr = {0, 2, 2, 4, 5};
  a.col_idx = {0, 2, 1, 2, 0};
  a.values = {1, 2, 3, 4, 5};
  return a;
}

compiler::SpmmSubject subject_of(const CsrMatrix& a, const std::string& format,
                                 const std::string& assignments = "",
                                 Precision precision = Precision::f64) {
  Options o;
  o.precision = precision;
  FormatParams p = default_params(format);
  if (!assignments.empty()) set_params(p, assignments);
  o.format = format;
  o.params = p;
  const Build b = build(a, o);
  return compiler::spmm_subject(b.plan, b.encoded, b.profile);
}

}  // namespace

TEST_CASE("reference_spmm: a hand-checked product in both layouts") {
  const CsrMatrix a = small();
  // X (3 x 2): columns (1, 2, 3) and (1, 0, -1).
  const std::vector<double> x_col = {1, 2, 3, 1, 0, -1};
  const std::vector<double> x_row = {1, 1, 2, 0, 3, -1};
  // A X: (7, -1), (0, 0), (18, -4), (5, 5); with alpha = 2, beta = 1 over Y0 = 1.
  std::vector<double> y_col(8, 1.0), y_row(8, 1.0);
  compiler::reference_spmm(a, 2, DenseLayout::col_major, x_col, y_col, 2.0, 1.0);
  compiler::reference_spmm(a, 2, DenseLayout::row_major, x_row, y_row, 2.0, 1.0);
  CHECK(y_col == std::vector<double>{15, 1, 37, 11, -1, 1, -7, 11});
  CHECK(y_row == std::vector<double>{15, -1, 1, 1, 37, -7, 11, 11});
}

TEST_CASE("reference_spmm: each column is the SpMV of that column, in both layouts") {
  const CsrMatrix a = gen::random_uniform(50, 30, 4, 7);
  const int k = 5;
  std::vector<double> x(static_cast<std::size_t>(a.ncols * k));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i % 11) - 5.0;
  std::vector<double> y_col(static_cast<std::size_t>(a.nrows * k)), y_row(y_col.size());
  compiler::reference_spmm(a, k, DenseLayout::col_major, x, y_col, 1.0, 0.0);
  // The same numbers read as row-major X: element (i, j) moves from j*ncols + i to i*k + j.
  std::vector<double> x_rm(x.size());
  for (std::int64_t i = 0; i < a.ncols; ++i)
    for (int j = 0; j < k; ++j)
      x_rm[static_cast<std::size_t>(i * k + j)] = x[static_cast<std::size_t>(j * a.ncols + i)];
  compiler::reference_spmm(a, k, DenseLayout::row_major, x_rm, y_row, 1.0, 0.0);
  for (int j = 0; j < k; ++j) {
    const std::span<const double> xj(x.data() + j * a.ncols, static_cast<std::size_t>(a.ncols));
    std::vector<double> yj(static_cast<std::size_t>(a.nrows));
    compiler::csr_reference_spmv(a, xj, yj);
    for (std::int64_t r = 0; r < a.nrows; ++r) {
      CHECK(y_col[static_cast<std::size_t>(j * a.nrows + r)] == yj[static_cast<std::size_t>(r)]);
      CHECK(y_row[static_cast<std::size_t>(r * k + j)] == yj[static_cast<std::size_t>(r)]);
    }
  }
}

TEST_CASE("reference_spmm: wrong sizes and k are input errors") {
  const CsrMatrix a = small();
  std::vector<double> x(6), y(8);
  CHECK_THROWS_WITH_AS(compiler::reference_spmm(a, 3, DenseLayout::row_major, x, y, 1, 0),
                       doctest::Contains("X has 6 elements (need 3 x 3)"), InputError);
  CHECK_THROWS_WITH_AS(compiler::reference_spmm(a, 0, DenseLayout::row_major, x, y, 1, 0),
                       doctest::Contains("1..64"), InputError);
  CHECK_THROWS_WITH_AS(parse_dense_layout("diagonal"), doctest::Contains("'diagonal'"), InputError);
  CHECK(parse_dense_layout("row_major") == DenseLayout::row_major);
  CHECK(parse_dense_layout("col") == DenseLayout::col_major);
}

TEST_CASE("transpose: a hand-checked matrix, sorted rows, and twice is the identity") {
  const CsrMatrix a = small();
  const CsrMatrix t = compiler::transpose(a);
  CHECK(t.nrows == 3);
  CHECK(t.ncols == 4);
  CHECK(t.row_ptr == std::vector<std::int64_t>{0, 2, 3, 5});
  CHECK(t.col_idx == std::vector<std::int32_t>{0, 3, 2, 0, 2});
  CHECK(t.values == std::vector<double>{1, 5, 3, 2, 4});
  validate(t);
  const CsrMatrix g = gen::rmat(8, 4);
  const CsrMatrix tt = compiler::transpose(compiler::transpose(g));
  CHECK(tt.row_ptr == g.row_ptr);
  CHECK(tt.col_idx == g.col_idx);
  CHECK(tt.values == g.values);
}

TEST_CASE("spmm units: shapes stay within a warp and keep few columns per lane") {
  const CsrMatrix a = gen::random_uniform(2000, 1500, 24, 3);
  for (const auto& [format, assignments] : std::vector<std::pair<std::string, std::string>>{
           {"csr", ""},
           {"csr_stream", ""},
           {"ell", "threads_per_row=4"},
           {"sell", "threads_per_row=8,sigma=64,slice_height=32"}}) {
    const compiler::SpmmSubject s = subject_of(a, format, assignments);
    for (int k : {1, 3, 8, 32, 64}) {
      for (DenseLayout layout : {DenseLayout::row_major, DenseLayout::col_major}) {
        CAPTURE(format);
        CAPTURE(k);
        const compiler::SpmmShape shape = compiler::spmm_shape(s, k, layout);
        CHECK(shape.column_lanes * shape.row_lanes <= 32);
        const int per_lane = (k + shape.column_lanes - 1) / shape.column_lanes;
        const int cap = layout == DenseLayout::row_major ? 4 : 8;
        // The cap holds unless the slot lanes leave too few column lanes (ell T=4: 8 at most).
        if (format == "csr" || format == "csr_stream") CHECK(per_lane <= cap);
        if (format == "ell") CHECK(shape.row_lanes == 4);
        if (format == "sell") CHECK(shape.row_lanes == 8);
      }
    }
  }
}

TEST_CASE("spmm units: row-major packs of up to 16 bytes that divide k, none column-major") {
  const CsrMatrix a = gen::random_uniform(2000, 1500, 24, 3);
  for (Precision p : {Precision::f64, Precision::f32}) {
    const compiler::SpmmSubject s = subject_of(a, "csr_stream", "", p);
    const int widest = p == Precision::f64 ? 2 : 4;
    for (int k : {1, 2, 3, 6, 8, 12, 32, 64}) {
      CAPTURE(to_string(p));
      CAPTURE(k);
      const compiler::SpmmShape row = compiler::spmm_shape(s, k, DenseLayout::row_major);
      const int per_lane = (k + row.column_lanes - 1) / row.column_lanes;
      CHECK(k % row.vector == 0);
      CHECK(row.vector <= widest);
      CHECK(row.vector <= per_lane);
      // The widest pack that the rules allow is taken.
      if (row.vector < widest) {
        CHECK((k % (row.vector * 2) != 0 || row.vector * 2 > per_lane));
      }
      CHECK(compiler::spmm_pack_bytes(row, p) == row.vector * value_bytes(p));
      CHECK(compiler::spmm_shape(s, k, DenseLayout::col_major).vector == 1);
      CHECK(compiler::spmm_shape(s, k, DenseLayout::row_major, false).vector == 1);
      const KernelSource packed = compiler::generate_spmm(s, k, DenseLayout::row_major);
      const KernelSource single = compiler::generate_spmm(s, k, DenseLayout::row_major, false);
      CHECK(packed.source.find(fmt::format("constexpr int kVec = {};", row.vector)) !=
            std::string::npos);
      CHECK(single.source.find("constexpr int kVec = 1;") != std::string::npos);
      // Packed and one-element units are different kernels in the cache.
      CHECK((row.vector == 1) == (packed.kernel_name == single.kernel_name));
    }
  }
  // k = 32: four fp32 columns or two fp64 columns a load.
  CHECK(compiler::spmm_shape(subject_of(a, "csr_stream", "", Precision::f32), 32,
                             DenseLayout::row_major)
            .vector == 4);
  CHECK(compiler::spmm_shape(subject_of(a, "csr_stream", "", Precision::f64), 32,
                             DenseLayout::row_major)
            .vector == 2);
}

TEST_CASE("spmm units: parameters in binding order, name and layout constants") {
  const CsrMatrix a = gen::random_uniform(300, 200, 6, 5);
  const compiler::SpmmSubject s = subject_of(a, "csr");
  const KernelSource src = compiler::generate_spmm(s, 8, DenseLayout::row_major);
  CHECK(src.kernel_name.rfind("spmm_csr_k8_rm_", 0) == 0);
  CHECK(src.kernel_name.find("_f64") != std::string::npos);
  REQUIRE(src.params.size() == 9);
  CHECK(src.params[0].kind == KernelParam::Kind::rows);
  CHECK(src.params[1].kind == KernelParam::Kind::cols);
  CHECK(src.params[2].name == "row_ptr");
  CHECK(src.params[3].name == "col_idx");
  CHECK(src.params[4].name == "values");
  CHECK(src.params[5].kind == KernelParam::Kind::x);
  CHECK(src.params[6].kind == KernelParam::Kind::y);
  CHECK(src.source.find("constexpr bool kRowMajor = true;") != std::string::npos);
  CHECK(src.source.find("constexpr int kK = 8;") != std::string::npos);
  const std::int64_t group = compiler::spmm_shape(s, 8, DenseLayout::row_major).column_lanes *
                             compiler::spmm_shape(s, 8, DenseLayout::row_major).row_lanes;
  CHECK(src.grid * src.block >= a.nrows * group);
  // The same plan and k give the same text (the kernel cache's key).
  CHECK(compiler::generate_spmm(s, 8, DenseLayout::row_major).source == src.source);
  CHECK(compiler::generate_spmm(s, 8, DenseLayout::col_major).kernel_name != src.kernel_name);
  CHECK_THROWS_AS(compiler::generate_spmm(s, 65, DenseLayout::row_major), InputError);
}

TEST_CASE("spmm units: formats without a kernel, and renumbered columns, say why") {
  const CsrMatrix a = gen::stencil_2d_5pt(20, 20);
  const auto hyb = compiler::spmm_unsupported(subject_of(a, "hyb"));
  REQUIRE(hyb.has_value());
  CHECK(hyb->find("format hyb has no SpMM kernel") != std::string::npos);
  CHECK_FALSE(compiler::spmm_unsupported(subject_of(a, "sell")).has_value());
  Options o;
  o.format = "csr";
  o.reorder = "rcm";
  o.renumber_columns = true;
  const Build b = build(a, o);
  const compiler::SpmmSubject s = compiler::spmm_subject(b.plan, b.encoded, b.profile);
  REQUIRE(compiler::spmm_unsupported(s).has_value());
  CHECK(compiler::spmm_unsupported(s)->find("renumbered the columns") != std::string::npos);
  CHECK_THROWS_AS(compiler::generate_spmm(s, 4, DenseLayout::col_major), InternalError);
}

TEST_CASE("spmm units: csr_stream with two rows a lane says why it has none") {
  const CsrMatrix a = gen::stencil_2d_5pt(40, 40);
  Options o;
  o.format = "csr_stream";
  CsrStreamParams p;
  p.block_size = 256;
  p.tile = 2048;
  p.rows_per_lane = 2;
  o.params = FormatParams{p};
  const Build b = build(a, o);
  const compiler::SpmmSubject s = compiler::spmm_subject(b.plan, b.encoded, b.profile);
  const auto why = compiler::spmm_unsupported(s);
  REQUIRE(why.has_value());
  CHECK(why->find("two rows a lane") != std::string::npos);
  // One row a lane: the same shape has its unit.
  p.rows_per_lane = 1;
  o.params = FormatParams{p};
  const Build one = build(a, o);
  CHECK_FALSE(
      compiler::spmm_unsupported(compiler::spmm_subject(one.plan, one.encoded, one.profile)));
  // Sorted tiles: the arrays are not in the CSR order the SpMM unit reads.
  p.sorted = true;
  o.params = FormatParams{p};
  const Build sorted = build(a, o);
  const auto why_sorted = compiler::spmm_unsupported(
      compiler::spmm_subject(sorted.plan, sorted.encoded, sorted.profile));
  REQUIRE(why_sorted.has_value());
  CHECK(why_sorted->find("sorted tiles") != std::string::npos);
}

TEST_CASE("spmm units: a device-array plan's arrays follow its value coding") {
  const CsrMatrix a = gen::stencil_2d_5pt(20, 20);
  Plan plan;
  plan.format = "csr_stream";
  CsrStreamParams p;
  p.values = formats::kValuesTable8;
  p.narrow_columns = true;
  plan.params = p;
  const compiler::SpmmSubject s =
      compiler::spmm_subject_device(plan, inspect(a, InspectDepth::rows), 3);
  std::vector<std::string> names;
  for (const auto& [name, type] : s.arrays) names.push_back(name);
  CHECK(names == std::vector<std::string>{"row_ptr", "col_idx", "values", "values_table",
                                          "row_blocks", "col_base", "col16", "col_wide"});
  CHECK(s.arrays[2].second == ElemType::u8);
  const KernelSource src = compiler::generate_spmm(s, 4, DenseLayout::col_major);
  CHECK(src.grid == 3);
  CHECK(src.source.find("NarrowColumns{col_base, col16, col_wide}") != std::string::npos);
}
