// The whole pipeline on the GPU: compile() -> apply() against the fp64 host reference, on the
// generated classes and every public matrix with at least 10k nonzeros. Skipped without a GPU.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "gpu_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace spmvc;

using test::check;
using test::have_device;
using test::tolerance;

namespace {

Options with(Precision p) {
  Options o;
  o.precision = p;
  o.disk_cache = false;
  return o;
}

}  // namespace

TEST_CASE("gpu: planner's csr kernel is correct on every generated class and precision") {
  if (!have_device()) return;
  for (const char* spec :
       {"stencil2d:n=300", "stencil7:n=40", "stencil27:n=40", "elasticity:n=14",
        "rmat:scale=16,ef=16", "random:n=50000,per_row=16", "banded:n=60000,hbw=10"}) {
    const CsrMatrix a = gen::from_spec(spec);
    for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
      CAPTURE(spec);
      CAPTURE(to_string(p));
      const Operator op = compile(a, with(p));
      CHECK(check(a, op) <= tolerance(p));
      CHECK(op.timings().registers > 0);
      CHECK(op.timings().spill_bytes == 0);
    }
  }
}

TEST_CASE("gpu: every thread mapping and unroll depth computes the same product") {
  if (!have_device()) return;
  // Skewed rows (R-MAT) bigger than a warp, plus empty rows, exercise the aligned start and tails.
  const CsrMatrix a = gen::from_spec("rmat:scale=12,ef=8");
  for (int t : {1, 2, 4, 8, 16, 32}) {
    for (int v : {1, 2, 4}) {
      for (int u : {1, 2, 4}) {
        for (bool aligned : {true, false}) {
          if (v > 1 && !aligned) continue;
          for (Precision p : {Precision::f64, Precision::f32}) {
            Options o = with(p);
            o.csr = CsrParams{t, v, 128, u, aligned, t == 8};
            const Operator op = compile(a, o);
            CAPTURE(op.source().kernel_name);
            CHECK(check(a, op) <= tolerance(p));
          }
        }
      }
    }
  }
}

TEST_CASE("gpu: alpha and beta follow y = alpha*A*x + beta*y") {
  if (!have_device()) return;
  const CsrMatrix a = gen::from_spec("stencil27:n=20");
  for (Precision p : {Precision::f64, Precision::f32}) {
    const Operator op = compile(a, with(p));
    CHECK(check(a, op, 2.5, 0.0) <= tolerance(p));
    CHECK(check(a, op, -1.0, 0.75) <= tolerance(p));
  }
}

TEST_CASE("gpu: rectangular matrices, empty rows and a single dense row") {
  if (!have_device()) return;
  const CsrMatrix a = test::dense_row_rectangular();
  for (Precision p : {Precision::f64, Precision::f32}) {
    const Operator op = compile(a, with(p));
    CHECK(check(a, op) <= tolerance(p));
  }
}

TEST_CASE("gpu: every public matrix with at least 10k nonzeros, fp64 and fp32") {
  if (!have_device()) return;
  fs::path dir = test::shared_matrices();
  if (const char* env = std::getenv("SPMVC_MATRIX_DIR")) dir = env;
  if (dir.empty() || !fs::exists(dir / "index.csv")) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  std::ifstream index(dir / "index.csv");
  std::string line;
  std::getline(index, line);  // header
  int tested = 0;
  while (std::getline(index, line)) {
    std::stringstream ss(line);
    std::vector<std::string> f;
    for (std::string cell; std::getline(ss, cell, ',') && f.size() < 6;) f.push_back(cell);
    if (f.size() < 6 || std::stoll(f[5]) < 10000) continue;
    const fs::path file = dir / (f[0] + ".mtx.xz");
    if (!fs::exists(file)) continue;
    const CsrMatrix a = read_matrix_market(file);
    for (Precision p : {Precision::f64, Precision::f32}) {
      CAPTURE(f[0]);
      CAPTURE(to_string(p));
      const Operator op = compile(a, with(p));
      CHECK(check(a, op) <= tolerance(p));
    }
    ++tested;
  }
  MESSAGE("public matrices tested: " << tested);
  CHECK(tested > 0);
}
