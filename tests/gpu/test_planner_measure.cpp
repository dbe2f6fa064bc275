// Measure mode: the model's best few candidates are timed on the GPU, the fastest is kept and
// remembered on disk by matrix fingerprint. Skipped without a GPU.
#include <doctest/doctest.h>

#include <filesystem>

#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

using namespace spmvc;

namespace {

bool have_device() {
  if (device_available()) return true;
  test::mark_device_missing();
  return false;
}

double error_of(const CsrMatrix& a, const Operator& op) {
  const std::vector<double> x = codegen::test_vector(a.ncols, op.plan().precision);
  std::vector<double> y(static_cast<std::size_t>(a.nrows)), ref(y.size());
  op.apply_host(x, y);
  compiler::csr_reference_spmv(a, x, ref);
  return compiler::relative_error(y, ref);
}

std::size_t files_in(const std::filesystem::path& dir) {
  if (!std::filesystem::exists(dir)) return 0;
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.is_regular_file() ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("gpu: measure mode times candidates, keeps the fastest and remembers it") {
  if (!have_device()) return;
  test::TempDir cache;
  for (const char* spec : {"stencil27:n=40", "rmat:scale=15,ef=16"}) {
    CAPTURE(spec);
    const CsrMatrix a = gen::from_spec(spec);
    Options o;
    o.planner = PlannerMode::measure;
    o.cache_dir = cache.path().string();
    const Operator first = compile(a, o);
    CHECK(error_of(a, first) <= 1e-12);
    CHECK(first.plan().why.find("measured fastest of the model's best candidates") == 0);
    CHECK(first.plan().why.find("csr") != std::string::npos);  // the fallback was timed
    // cuSPARSE's CSR SpMV was timed beside them; whichever won, the operator says who multiplies.
    CHECK(first.plan().why.find("cusparse [csr alg1]") != std::string::npos);
    CHECK(first.timings().engine == to_string(first.plan().engine));
    CHECK(first.timings().measure > 0);

    const Operator second = compile(a, o);
    CHECK(second.plan().why.find("measured fastest earlier") == 0);
    CHECK(second.plan().format == first.plan().format);
    CHECK(describe(second.plan().params) == describe(first.plan().params));
    CHECK(second.timings().measure == 0);
    CHECK(second.plan().engine == first.plan().engine);
    CHECK(second.timings().engine == first.timings().engine);
    CHECK(error_of(a, second) <= 1e-12);
  }
  CHECK(files_in(cache.path() / "decisions") == 2);
}

TEST_CASE(
    "gpu: measure mode keeps cuSPARSE where asked, remembers it, and leaves it out on never") {
  if (!have_device()) return;
  test::TempDir cache;
  const CsrMatrix a = gen::from_spec("rmat:scale=14,ef=16");
  Options o;
  o.planner = PlannerMode::measure;
  o.cache_dir = cache.path().string();
  o.cusparse = "always";  // the one candidate: a deterministic pick of cuSPARSE
  const Operator first = compile(a, o);
  REQUIRE(first.plan().engine == Engine::cusparse);
  CHECK(first.plan().format == "csr");
  CHECK(first.timings().engine == "cusparse");
  CHECK(first.plan().why.find("cuSPARSE, no generated candidate faster") != std::string::npos);
  CHECK(error_of(a, first) <= 1e-12);
  const Operator second = compile(a, o);
  CHECK(second.plan().engine == Engine::cusparse);
  CHECK(second.timings().engine == "cusparse");
  CHECK(second.plan().why.find("cuSPARSE's CSR SpMV") != std::string::npos);
  CHECK(second.timings().measure == 0);
  CHECK(error_of(a, second) <= 1e-12);
  // never: generated kernels only, and a decision of its own (the option is in the key).
  o.cusparse = "never";
  const Operator kernels = compile(a, o);
  CHECK(kernels.plan().engine == Engine::kernel);
  CHECK(kernels.timings().engine == "kernel");
  CHECK(kernels.plan().why.find("cusparse [") == std::string::npos);
  CHECK(kernels.timings().measure > 0);
  // Deterministic: cuSPARSE's ALG2 is timed beside the deterministic candidates, and runs
  // where it is kept.
  o.cusparse = "auto";
  o.deterministic = true;
  const Operator det = compile(a, o);
  CHECK(det.plan().why.find("cuSPARSE not timed") == std::string::npos);
  if (det.plan().engine == Engine::cusparse)
    CHECK(det.plan().cusparse_algorithm == CusparseAlgorithm::csr_alg2);
  CHECK(error_of(a, det) <= 1e-12);
  CHECK(files_in(cache.path() / "decisions") == 3);
}
