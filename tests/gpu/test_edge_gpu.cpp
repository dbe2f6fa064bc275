// Every format's kernel on the edge matrices (tests/edge_matrices.hpp), from host arrays and
// from device arrays: the CSR product, NaN and infinities propagated to the same rows, and a
// clear refusal where a format cannot take the matrix.
#include <doctest/doctest.h>

#include <limits>

#include "device_csr.hpp"
#include "edge_matrices.hpp"
#include "gpu_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"

using namespace spmvc;

namespace {

bool multiplies_right(const CsrMatrix& a, const Operator& op) {
  const Precision p = op.plan().precision;
  const std::vector<double> x = codegen::test_vector(a.ncols, p);
  std::vector<double> ref(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x, ref);
  std::vector<double> y(ref.size(), std::numeric_limits<double>::quiet_NaN());
  op.apply_host(x, y);
  return test::same_product(y, ref, test::tolerance(p));
}

/// y = A * ones equals the host product exactly (for a matrix whose every partial row sum is
/// exact in the plan's precision, as in test::long_row_matrix).
bool multiplies_exactly(const CsrMatrix& a, const Operator& op) {
  const std::vector<double> x(static_cast<std::size_t>(a.ncols), 1.0);
  std::vector<double> ref(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x, ref);
  std::vector<double> y(ref.size(), std::numeric_limits<double>::quiet_NaN());
  op.apply_host(x, y);
  return y == ref;
}

}  // namespace

TEST_CASE("gpu: every format on the edge matrices, from host and device arrays") {
  if (!test::have_device()) return;
  for (const auto& [name, a] : test::edge_matrices()) {
    CAPTURE(name);
    for (Precision p : {Precision::f64, Precision::f32}) {
      CAPTURE(to_string(p));
      for (const std::string& format : compiler::format_names()) {
        CAPTURE(format);
        Options o;
        o.precision = p;
        o.disk_cache = false;
        o.format = format;
        try {
          const Operator op = compile(a, o);
          CHECK(multiplies_right(a, op));
        } catch (const InputError& e) {
          CHECK(std::string(e.what()).size() > 10);
        }
      }
      Options o;
      o.precision = p;
      o.disk_cache = false;
      CHECK(multiplies_right(a, compile(a, o)));
      if (a.nrows > 0 && a.ncols > 0) {
        const runtime::ResidentCsr r = runtime::upload_csr(a, p);
        CHECK(multiplies_right(a, compile(r.view, o)));
      }
    }
  }
}

TEST_CASE("gpu: one row holding 10^7 nonzeros in every format, from host and device arrays") {
  if (!test::have_device()) return;
  const CsrMatrix a = test::long_row_matrix();
  REQUIRE(a.nnz() == test::kLongRow);
  for (Precision p : {Precision::f64, Precision::f32}) {
    CAPTURE(to_string(p));
    std::string ran;
    for (const std::string& format : compiler::format_names()) {
      CAPTURE(format);
      Options o;
      o.precision = p;
      o.disk_cache = false;
      o.format = format;
      try {
        const Operator op = compile(a, o);
        CHECK(multiplies_exactly(a, op));
        ran += " " + format;
      } catch (const InputError& e) {
        // Refused with a reason naming the format, as the host test expects.
        CHECK(std::string(e.what()).find(format) != std::string::npos);
      }
    }
    MESSAGE("formats run on the 10^7-nonzero row (" << to_string(p) << "):" << ran);
    Options o;
    o.precision = p;
    o.disk_cache = false;
    CHECK(multiplies_exactly(a, compile(a, o)));
    const runtime::ResidentCsr r = runtime::upload_csr(a, p);
    CHECK(multiplies_exactly(a, compile(r.view, o)));
  }
}
