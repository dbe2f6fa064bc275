// apply_many's choice between the generated SpMM unit and cusparseSpMM (choose_spmm_engine):
// the model's rule at its thresholds, the modes, the refusals, and the row view the subject
// takes from the inspector.
#include <doctest/doctest.h>

#include <string>

#include "spmvc/build.hpp"
#include "spmvc/compiler/spmm.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/profile.hpp"

using namespace spmvc;
using compiler::choose_spmm_engine;
using compiler::SpmmEngine;
using compiler::SpmmSubject;

namespace {

// A csr_stream subject with the given row view (the longest row `skew` times the mean).
SpmmSubject graph_subject(double row_mean, double spread, double scatter, double skew = 3.0,
                          Precision precision = Precision::f64) {
  SpmmSubject s;
  s.format = "csr_stream";
  s.precision = precision;
  s.nrows = s.ncols = 1000;
  s.nnz = static_cast<std::int64_t>(row_mean * 1000);
  s.row_mean = row_mean;
  s.row_spread = spread;
  s.x_scatter = scatter;
  s.row_skew = skew;
  return s;
}

SpmmEngine pick(const SpmmSubject& s, int k = 32, DenseLayout layout = DenseLayout::row_major,
                const char* mode = "auto") {
  return choose_spmm_engine(s, k, layout, mode, false, true).engine;
}

SpmmSubject subject_of(const CsrMatrix& a, Precision precision) {
  Options o;
  o.precision = precision;
  o.format = "csr_stream";
  const Build b = build(a, o);
  return compiler::spmm_subject(b.plan, b.encoded, b.profile);
}

}  // namespace

TEST_CASE("spmm choice: rows where cusparseSpMM was measured faster take it at k >= 16 row-major") {
  using compiler::kSpmmHubRowRatio, compiler::kSpmmF32SkewRatio;
  // Hub rows in either precision and over a csr unit as well, at the threshold.
  SpmmSubject hubs = graph_subject(15.5, 10.5, 1.0, kSpmmHubRowRatio);
  CHECK(pick(hubs) == SpmmEngine::cusparse);
  hubs.format = "csr";
  CHECK(pick(hubs) == SpmmEngine::cusparse);
  hubs.precision = Precision::f32;
  CHECK(pick(hubs) == SpmmEngine::cusparse);
  // fp32: a skewed longest row, at the threshold.
  CHECK(pick(graph_subject(10, 3.6, 0.8, kSpmmF32SkewRatio, Precision::f32)) ==
        SpmmEngine::cusparse);
  CHECK(pick(graph_subject(10, 3.6, 0.8, kSpmmF32SkewRatio, Precision::f32),
             compiler::kSpmmCusparseMinK) == SpmmEngine::cusparse);
  const compiler::SpmmChoice c = choose_spmm_engine(graph_subject(15.5, 10.5, 1.0, 4000), 32,
                                                    DenseLayout::row_major, "auto", false, true);
  CHECK(c.engine == SpmmEngine::cusparse);
  CHECK(c.why.find("cusparseSpMM_CSR_ALG2") != std::string::npos);
  CHECK(c.why.find("hub rows") != std::string::npos);
  CHECK(c.why.find("longest 4000x the mean") != std::string::npos);
  CHECK_FALSE(c.time_both);
  const compiler::SpmmChoice f =
      choose_spmm_engine(graph_subject(25, 8.0, 0.53, 235, Precision::f32), 32,
                         DenseLayout::row_major, "auto", false, true);
  CHECK(f.engine == SpmmEngine::cusparse);
  CHECK(f.why.find("cusparseSpMM_CSR_ALG3: fp32 rows skewed") == 0);
}

TEST_CASE("spmm choice: the rows the generated unit won on, column-major and small k keep it") {
  using compiler::kSpmmHubRowRatio, compiler::kSpmmF32SkewRatio;
  // fp64: road networks (short, spread, scattered rows), stencils, and a skewed graph below the
  // hub ratio.
  CHECK(pick(graph_subject(4.8, 0.65, 0.95, 12)) == SpmmEngine::kernel);
  CHECK(pick(graph_subject(27, 0.07, 0.5, 1.0)) == SpmmEngine::kernel);
  CHECK(pick(graph_subject(25, 8.0, 0.53, 235)) == SpmmEngine::kernel);
  CHECK(pick(graph_subject(15.5, 10.5, 0.5, kSpmmHubRowRatio - 1)) == SpmmEngine::kernel);
  // fp32: short rows, long regular rows (stencils, FEM), skew just below the ratio.
  CHECK(pick(graph_subject(4.8, 0.65, 0.95, 12, Precision::f32)) == SpmmEngine::kernel);
  CHECK(pick(graph_subject(78, 0.1, 0.33, 1.0, Precision::f32)) == SpmmEngine::kernel);
  CHECK(pick(graph_subject(12.5, 3.2, 0.94, kSpmmF32SkewRatio - 1, Precision::f32)) ==
        SpmmEngine::kernel);
  // Below the k threshold and column-major, the fp32 skew rule is off; hub rows still go to
  // cuSPARSE at every k and in either layout.
  const SpmmSubject skewed = graph_subject(25, 8.0, 0.53, 235, Precision::f32);
  CHECK(pick(skewed, compiler::kSpmmCusparseMinK - 1) == SpmmEngine::kernel);
  CHECK(pick(skewed, 32, DenseLayout::col_major) == SpmmEngine::kernel);
  const SpmmSubject graph = graph_subject(15.5, 10.5, 1.0, 4000);
  CHECK(pick(graph, 1) == SpmmEngine::cusparse);
  CHECK(pick(graph, 8, DenseLayout::col_major) == SpmmEngine::cusparse);
  CHECK(pick(graph, 8, DenseLayout::row_major) == SpmmEngine::cusparse);
}

TEST_CASE("spmm choice: modes never, always and measure, and the measure planner") {
  const SpmmSubject graph = graph_subject(4.8, 0.65, 0.95);
  const SpmmSubject regular = graph_subject(27, 0.1, 0.4);
  CHECK(pick(graph, 32, DenseLayout::row_major, "never") == SpmmEngine::kernel);
  CHECK(pick(regular, 4, DenseLayout::col_major, "always") == SpmmEngine::cusparse);
  CHECK(choose_spmm_engine(regular, 4, DenseLayout::col_major, "always", false, true)
            .why.find("cusparseSpMM_CSR_ALG1") != std::string::npos);
  CHECK(std::string(compiler::spmm_cusparse_algorithm(DenseLayout::row_major, Precision::f64)) ==
        "cusparseSpMM_CSR_ALG2");
  CHECK(std::string(compiler::spmm_cusparse_algorithm(DenseLayout::row_major, Precision::f32)) ==
        "cusparseSpMM_CSR_ALG3");
  CHECK(std::string(compiler::spmm_cusparse_algorithm(DenseLayout::col_major, Precision::f32)) ==
        "cusparseSpMM_CSR_ALG1");
  CHECK(choose_spmm_engine(regular, 8, DenseLayout::col_major, "measure", false, true).time_both);
  CHECK(choose_spmm_engine(regular, 8, DenseLayout::col_major, "auto", true, true).time_both);
  CHECK_FALSE(
      choose_spmm_engine(regular, 8, DenseLayout::col_major, "auto", false, true).time_both);
  CHECK_FALSE(choose_spmm_engine(graph, 32, DenseLayout::row_major, "never", true, true).time_both);
}

TEST_CASE("spmm choice: without a plain CSR or with f32acc64 the kernel runs; always refuses") {
  const SpmmSubject graph = graph_subject(4.8, 0.65, 0.95);
  const compiler::SpmmChoice no_csr =
      choose_spmm_engine(graph, 32, DenseLayout::row_major, "measure", false, false);
  CHECK(no_csr.engine == SpmmEngine::kernel);
  CHECK_FALSE(no_csr.time_both);
  CHECK_THROWS_WITH_AS(choose_spmm_engine(graph, 32, DenseLayout::row_major, "always", false, false,
                                          "compile with keep_csr"),
                       doctest::Contains("compile with keep_csr"), InputError);
  SpmmSubject acc64 = graph;
  acc64.precision = Precision::f32_acc64;
  CHECK(pick(acc64) == SpmmEngine::kernel);
  CHECK_THROWS_WITH_AS(pick(acc64, 32, DenseLayout::row_major, "always"),
                       doctest::Contains("f32acc64"), InputError);
}

TEST_CASE("spmm choice: unknown modes and bad k are input errors naming them") {
  const SpmmSubject graph = graph_subject(4.8, 0.65, 0.95);
  CHECK_THROWS_WITH_AS(pick(graph, 32, DenseLayout::row_major, "sometimes"),
                       doctest::Contains("'sometimes'"), InputError);
  CHECK_THROWS_WITH_AS(pick(graph, 0), doctest::Contains("k = 0"), InputError);
  CHECK_THROWS_WITH_AS(pick(graph, kMaxDenseColumns + 1), doctest::Contains("SpMM takes"),
                       InputError);
}

TEST_CASE("spmm choice: the subject's row view comes from the inspector's profile") {
  const CsrMatrix graph = gen::rmat(12, 8, 3);
  const CsrMatrix stencil = gen::stencil_3d_27pt(16, 16, 16);
  const SpmmSubject g = subject_of(graph, Precision::f64);
  const SpmmSubject s = subject_of(stencil, Precision::f64);
  const Profile pg = inspect(graph);
  CHECK(g.row_spread == doctest::Approx(pg.row_stddev / pg.row_mean));
  CHECK(g.x_scatter ==
        doctest::Approx(static_cast<double>(pg.x_sectors) / static_cast<double>(pg.nnz)));
  // A power-law graph spreads its row lengths; a stencil's rows are nearly equal and read x in
  // runs of three.
  CHECK(g.row_skew == doctest::Approx(static_cast<double>(pg.row_max) / pg.row_mean));
  CHECK(g.row_spread >= 0.5);
  CHECK(g.x_scatter >= 0.8);
  CHECK(s.row_spread < 0.5);
  CHECK(s.x_scatter < 0.8);
  CHECK(s.row_skew < 2.0);
  // 4,096 rows of 8 on average: no row reaches the hub ratio, so fp64 keeps the generated unit;
  // fp32 takes cuSPARSE where the longest row reaches its skew ratio.
  CHECK(g.row_skew < compiler::kSpmmHubRowRatio);
  CHECK(pick(g) == SpmmEngine::kernel);
  CHECK(pick(s) == SpmmEngine::kernel);
  CHECK((pick(subject_of(graph, Precision::f32)) == SpmmEngine::cusparse) ==
        (g.row_skew >= compiler::kSpmmF32SkewRatio));
}
