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
    CHECK(first.timings().measure > 0);

    const Operator second = compile(a, o);
    CHECK(second.plan().why.find("measured fastest earlier") == 0);
    CHECK(second.plan().format == first.plan().format);
    CHECK(describe(second.plan().params) == describe(first.plan().params));
    CHECK(second.timings().measure == 0);
    CHECK(error_of(a, second) <= 1e-12);
  }
  CHECK(files_in(cache.path() / "decisions") == 2);
}
