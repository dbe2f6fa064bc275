// The dense-block formats (blocked, bellpack, bcsr) on the GPU: compile() with the format's
// parameters forced, apply() against the fp64 CSR reference. Skipped without a GPU.
// Filter: test_gpu -tc='gpu: blocked*,gpu: bellpack*,gpu: bcsr*'
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "block_plans.hpp"
#include "gpu_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace spmvc;

using test::check;
using test::forced;
using test::have_device;
using test::tolerance;

namespace {

// One representative parameter set per format: FEM-shaped blocks.
std::vector<FormatParams> per_format(std::string_view format) {
  if (format == "bcsr") return {test::bcsr_params(3, 3, 4), test::bcsr_params(2, 4, 1)};
  if (format == "bellpack")
    return {test::bellpack_params(3, 3, 32), test::bellpack_params(2, 2, 16)};
  return {test::blocked_params(3, 16, 4), test::blocked_params(4, 64, 16)};
}

void generated_classes(std::string_view format) {
  for (const char* spec :
       {"stencil2d:n=300", "stencil7:n=40", "stencil27:n=40", "elasticity:n=14",
        "rmat:scale=14,ef=16", "random:n=50000,per_row=16", "banded:n=60000,hbw=10"}) {
    const CsrMatrix a = gen::from_spec(spec);
    for (const FormatParams& params : per_format(format)) {
      for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
        CAPTURE(spec);
        CAPTURE(to_string(p));
        const Operator op = compile(a, forced(p, params));
        CAPTURE(op.source().kernel_name);
        CHECK(op.plan().format == format);
        CHECK(check(a, op) <= tolerance(p));
        CHECK(op.timings().spill_bytes == 0);
      }
    }
  }
}

void grid(std::string_view format) {
  // Skewed rows bigger than a warp with empty rows; 4097 columns so most c leave a column tail.
  CsrMatrix a = gen::rmat(12, 8, 3);
  a.ncols += 1;
  for (const FormatParams& params : test::block_param_grid()) {
    if (format_of(params) != format) continue;
    for (Precision p : {Precision::f64, Precision::f32}) {
      const Operator op = compile(a, forced(p, params));
      CAPTURE(op.source().kernel_name);
      CHECK(check(a, op) <= tolerance(p));
    }
  }
}

void alpha_beta_ragged(std::string_view format) {
  const CsrMatrix el = gen::from_spec("elasticity:n=10");
  const CsrMatrix rg = test::dense_row_rectangular();
  for (const FormatParams& params : per_format(format)) {
    for (Precision p : {Precision::f64, Precision::f32}) {
      CAPTURE(describe(params));
      const Operator op = compile(el, forced(p, params));
      CHECK(check(el, op, 2.5, 0.0) <= tolerance(p));
      CHECK(check(el, op, -1.0, 0.75) <= tolerance(p));
      const Operator opr = compile(rg, forced(p, params));
      CHECK(check(rg, opr) <= tolerance(p));
      CHECK(check(rg, opr, 0.5, -2.0) <= tolerance(p));
    }
  }
}

void public_matrices(std::string_view format) {
  fs::path dir = test::shared_matrices();
  if (const char* env = std::getenv("SPMVC_MATRIX_DIR")) dir = env;
  if (dir.empty() || !fs::exists(dir / "index.csv")) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  std::ifstream index(dir / "index.csv");
  std::string line;
  std::getline(index, line);
  int tested = 0;
  while (std::getline(index, line)) {
    std::stringstream ss(line);
    std::vector<std::string> f;
    for (std::string cell; std::getline(ss, cell, ',') && f.size() < 6;) f.push_back(cell);
    if (f.size() < 6 || f[0] == "young1c" || std::stoll(f[5]) < 10000) continue;
    const fs::path file = dir / (f[0] + ".mtx.xz");
    if (!fs::exists(file)) continue;
    const CsrMatrix a = read_matrix_market(file);
    for (Precision p : {Precision::f64, Precision::f32}) {
      CAPTURE(f[0]);
      CAPTURE(to_string(p));
      const Operator op = compile(a, forced(p, per_format(format).front()));
      CHECK(check(a, op) <= tolerance(p));
    }
    ++tested;
  }
  MESSAGE("public matrices tested: " << tested);
  CHECK(tested > 0);
}

}  // namespace

TEST_CASE("gpu: bcsr is correct on every generated class and precision") {
  if (have_device()) generated_classes("bcsr");
}
TEST_CASE("gpu: bcsr: every shape and lane count computes the same product") {
  if (have_device()) grid("bcsr");
}
TEST_CASE("gpu: bcsr: alpha, beta, rectangular, empty rows and a dense row") {
  if (have_device()) alpha_beta_ragged("bcsr");
}
TEST_CASE("gpu: bcsr on every public matrix with at least 10k nonzeros") {
  if (have_device()) public_matrices("bcsr");
}

TEST_CASE("gpu: bellpack is correct on every generated class and precision") {
  if (have_device()) generated_classes("bellpack");
}
TEST_CASE("gpu: bellpack: every shape and slice height computes the same product") {
  if (have_device()) grid("bellpack");
}
TEST_CASE("gpu: bellpack: alpha, beta, rectangular, empty rows and a dense row") {
  if (have_device()) alpha_beta_ragged("bellpack");
}
TEST_CASE("gpu: bellpack on every public matrix with at least 10k nonzeros") {
  if (have_device()) public_matrices("bellpack");
}

TEST_CASE("gpu: blocked is correct on every generated class and precision") {
  if (have_device()) generated_classes("blocked");
}
TEST_CASE("gpu: blocked: every block shape and alignment computes the same product") {
  if (have_device()) grid("blocked");
}
TEST_CASE("gpu: blocked: alpha, beta, rectangular, empty rows and a dense row") {
  if (have_device()) alpha_beta_ragged("blocked");
}
TEST_CASE("gpu: blocked on every public matrix with at least 10k nonzeros") {
  if (have_device()) public_matrices("blocked");
}

TEST_CASE("gpu: bcsr, bellpack and blocked chosen by the planner on elasticity run correctly") {
  if (!have_device()) return;
  const CsrMatrix a = gen::from_spec("elasticity:n=30");
  Options o;
  o.disk_cache = false;
  const Operator op = compile(a, o);
  MESSAGE("planner's pick on elasticity n=30: " << op.plan().format << " ["
                                                << describe(op.plan().params) << "]");
  CHECK(check(a, op) <= tolerance(Precision::f64));
}

TEST_CASE("gpu: bcsr S=1: every shape and lane count on symmetric classes, alpha and beta") {
  if (!have_device()) return;
  for (const char* spec :
       {"elasticity:n=14", "stencil27:n=30", "stencil2d:n=301", "banded:n=60001,hbw=10"}) {
    const CsrMatrix a = gen::from_spec(spec);
    for (const FormatParams& params : test::bcsr_half_grid()) {
      for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
        CAPTURE(spec);
        CAPTURE(describe(params));
        CAPTURE(to_string(p));
        // Full inspection: rows depth checks symmetry only for matrices on at most 64 diagonals.
        Options o = forced(p, params);
        o.full_inspection = true;
        const Operator op = compile(a, o);
        CHECK(op.source().kernel_name.find("bcsrsym") != std::string::npos);
        CHECK(check(a, op) <= tolerance(p));
        CHECK(check(a, op, -1.0, 0.75) <= tolerance(p));
        CHECK(op.timings().spill_bytes == 0);
      }
    }
  }
}

TEST_CASE("gpu: bcsr S=1 on every symmetric public matrix with at least 10k nonzeros") {
  if (!have_device()) return;
  const auto list = test::public_matrices(10000);
  if (list.empty()) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  int tested = 0;
  for (const auto& [name, file] : list) {
    const CsrMatrix a = read_matrix_market(file);
    if (!inspect(a, InspectDepth::full).numerically_symmetric) continue;
    for (Precision p : {Precision::f64, Precision::f32}) {
      CAPTURE(name);
      CAPTURE(to_string(p));
      // Full inspection: rows depth checks symmetry only for matrices on at most 64 diagonals.
      Options o = forced(p, test::bcsr_half(3, 4));
      o.full_inspection = true;
      const Operator op = compile(a, o);
      CHECK(check(a, op) <= tolerance(p));
    }
    ++tested;
  }
  MESSAGE("symmetric public matrices tested: " << tested);
  CHECK(tested > 0);
}

TEST_CASE("gpu: bcsr S=1: the host planner's pick on bcsstk16, and value updates") {
  if (!have_device()) return;
  const auto list = test::public_matrices(0);
  const auto it =
      std::find_if(list.begin(), list.end(), [](const auto& m) { return m.first == "bcsstk16"; });
  if (it == list.end()) {
    MESSAGE("bcsstk16 not present: skipped");
    return;
  }
  CsrMatrix a = read_matrix_market(it->second);
  Options o;
  o.build = BuildMode::host;
  o.disk_cache = false;
  o.precision = Precision::f32;
  const Operator pick = compile(a, o);
  MESSAGE("host planner's pick on bcsstk16 f32: " << pick.plan().format << " ["
                                                  << describe(pick.plan().params) << "]");
  CHECK(check(a, pick) <= tolerance(Precision::f32));

  Options half = forced(Precision::f64, test::bcsr_half(3, 2));
  half.full_inspection = true;
  Operator op = compile(a, half);
  // Scaled values stay symmetric: gathered into the half.
  std::vector<double> v = a.values;
  for (double& x : v) x *= -1.5;
  ValueUpdate u = op.update_values(v);
  CHECK_FALSE(u.replanned);
  a.values = v;
  CHECK(check(a, op) <= 1e-12);
  // One entry above the diagonal changed: planned again with every block stored.
  for (std::int64_t k = a.row_ptr[100]; k < a.row_ptr[101]; ++k) {
    if (a.col_idx[static_cast<std::size_t>(k)] > 100) {
      v[static_cast<std::size_t>(k)] += 1.0;
      break;
    }
  }
  u = op.update_values(v);
  CHECK(u.replanned);
  CHECK(u.why.find("not symmetric") != std::string::npos);
  const auto* p = std::get_if<BcsrParams>(&op.plan().params);
  CHECK((p == nullptr || !p->symmetric));
  a.values = v;
  CHECK(check(a, op) <= 1e-12);
}
