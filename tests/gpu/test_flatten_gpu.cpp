// The flattened kernel (tooling::flatten) run in place of the template one through
// Options::transform_source: y must be identical bit for bit, since it is the same code spelled
// out. Skipped without a GPU, and absent from builds without tooling/.
#ifdef SPMVC_HAVE_TOOLING
#include <doctest/doctest.h>

#include <cstring>
#include <limits>

#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"
#include "spmvc/tooling/flatten.hpp"
#include "test_support.hpp"

using namespace spmvc;

namespace {

std::vector<double> multiply(const CsrMatrix& a, Options o, bool flat, double beta) {
  o.disk_cache = false;
  if (flat) o.transform_source = [](const KernelSource& s) { return tooling::flatten(s); };
  const Operator op = compile(a, o);
  if (flat) REQUIRE(op.source().source.find("template") == std::string::npos);
  const std::vector<double> x = codegen::test_vector(a.ncols, o.precision);
  std::vector<double> y(static_cast<std::size_t>(a.nrows));
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = 0.25 * static_cast<double>(i % 5) - 0.5;
  op.apply_host(x, y, 1.5, beta);
  return y;
}

void check_identical(const CsrMatrix& a, const Options& o) {
  for (double beta : {0.0, 0.5}) {
    const std::vector<double> ref = multiply(a, o, false, beta);
    const std::vector<double> flat = multiply(a, o, true, beta);
    REQUIRE(ref.size() == flat.size());
    CHECK(std::memcmp(ref.data(), flat.data(), ref.size() * sizeof(double)) == 0);
  }
}

}  // namespace

TEST_CASE("gpu: the flattened kernel computes exactly what the template kernel computes") {
  if (!device_available()) {
    test::mark_device_missing();
    return;
  }
  std::vector<std::pair<std::string, CsrMatrix>> matrices;
  const auto dir = test::shared_matrices();
  if (!dir.empty() && std::filesystem::exists(dir / "G3_circuit.mtx.xz")) {
    matrices.emplace_back("G3_circuit", read_matrix_market((dir / "G3_circuit.mtx.xz").string()));
  }
  matrices.emplace_back("rmat", gen::from_spec("rmat:scale=16,ef=16"));
  matrices.emplace_back("stencil27", gen::from_spec("stencil27:n=40"));
  for (const auto& [name, a] : matrices) {
    for (auto p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
      CAPTURE(name);
      CAPTURE(to_string(p));
      Options o;
      o.precision = p;
      check_identical(a, o);  // the planner's pick
      for (int v : {1, 2, 4}) {
        CsrParams csr;
        csr.threads_per_row = 8;
        csr.vector_width = v;
        csr.unroll = 2;
        o.csr = csr;
        CAPTURE(v);
        check_identical(a, o);
      }
    }
  }
}
#endif  // SPMVC_HAVE_TOOLING
