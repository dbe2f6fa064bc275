// Value-coded kernels on the device (compiler/formats/values): every coding of every format that
// has one, on matrices built for each coding and on every public matrix, against the fp64 host
// reference with alpha and beta.
#include <doctest/doctest.h>

#include <algorithm>

#include "formats/values/values.hpp"
#include "gpu_support.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

using namespace spmvc;
using test::check;
using test::forced;
using test::have_device;
using test::tolerance;

namespace {

const char* const kCodedFormats[] = {"csr",     "ell",     "hyb",       "bro_ell",
                                     "bro_coo", "bro_hyb", "csr_stream"};

// The planner's parameters for `format` with the value coding replaced; nullopt when the format
// cannot implement the matrix at all (ell on power-law rows).
std::optional<FormatParams> coded(const CsrMatrix& a, const char* format, int coding, Precision p) {
  compiler::PlanOptions o;
  o.format = format;
  o.precision = p;
  try {
    return formats::with_value_coding(compiler::make_plan(inspect(a, InspectDepth::rows), o).params,
                                      coding);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

// Power-law rows (rmat), long and short rows, with values from `distinct` (0: all ones).
CsrMatrix with_values(CsrMatrix a, std::int64_t distinct) {
  for (std::size_t i = 0; i < a.values.size(); ++i)
    a.values[i] = distinct == 0 ? 1.0 : 0.75 - 0.125 * static_cast<double>(i % distinct);
  return a;
}

}  // namespace

TEST_CASE("gpu: every value coding of every coded format, generated matrices, alpha and beta") {
  if (!have_device()) return;
  struct Case {
    const char* what;
    CsrMatrix a;
    int coding;
  };
  const std::vector<Case> cases = {
      {"stencil2d ones", with_values(gen::stencil_2d_5pt(300, 300), 0), formats::kValuesUnit},
      {"rmat ones", with_values(gen::rmat(15, 16), 0), formats::kValuesUnit},
      {"stencil27 own values", gen::stencil_3d_27pt(40, 40, 40), formats::kValuesTable8},
      {"random 200 values", with_values(gen::random_uniform(40000, 40000, 12), 200),
       formats::kValuesTable8},
      {"rmat 200 values", with_values(gen::rmat(15, 16), 200), formats::kValuesTable8},
      {"banded 5000 values", with_values(gen::banded(60000, 6), 5000), formats::kValuesTable16},
      // 100000 distinct values, each exact in fp32: stored as fp32 in fp64 (f32 has no such
      // coding and skips them).
      {"random fp32-exact values", with_values(gen::random_uniform(60000, 60000, 12), 100000),
       formats::kValuesF32},
      {"rmat fp32-exact values", with_values(gen::rmat(15, 16), 100000), formats::kValuesF32},
  };
  int tested = 0;
  for (const Case& c : cases) {
    for (const char* format : kCodedFormats) {
      for (Precision p : {Precision::f64, Precision::f32}) {
        if (formats::value_coding_problem(inspect(c.a, InspectDepth::rows), c.coding, p)) continue;
        const std::optional<FormatParams> params = coded(c.a, format, c.coding, p);
        if (!params) continue;
        CAPTURE(c.what);
        CAPTURE(describe(*params));
        CAPTURE(to_string(p));
        const Operator op = compile(c.a, forced(p, *params));
        CHECK(op.source().kernel_name.find(formats::value_coding_tag(c.coding)) !=
              std::string::npos);
        CHECK(check(c.a, op) <= tolerance(p));
        CHECK(check(c.a, op, -0.5, 1.25) <= tolerance(p));
        ++tested;
      }
    }
  }
  MESSAGE("coded kernels tested: " << tested);
  CHECK(tested >= 70);
}

TEST_CASE("gpu: the best value coding of every coded format on every public matrix") {
  if (!have_device()) return;
  const auto matrices = test::public_matrices(10000);
  if (matrices.empty()) {
    MESSAGE("public matrices not present: skipped");
    return;
  }
  int tested = 0, coded_matrices = 0;
  for (const auto& [name, path] : matrices) {
    const CsrMatrix a = read_matrix_market(path);
    const Profile profile = inspect(a, InspectDepth::rows);
    if (formats::best_value_coding(profile, Precision::f64) == formats::kValuesPlain) continue;
    ++coded_matrices;
    for (const char* format : kCodedFormats) {
      for (Precision p : {Precision::f64, Precision::f32}) {
        const int coding = formats::best_value_coding(profile, p);
        if (coding == formats::kValuesPlain) continue;
        const std::optional<FormatParams> params = coded(a, format, coding, p);
        if (!params) continue;
        CAPTURE(name);
        CAPTURE(describe(*params));
        CAPTURE(to_string(p));
        const Operator op = compile(a, forced(p, *params));
        CHECK(check(a, op, 1.0, 0.5) <= tolerance(p));
        ++tested;
      }
    }
  }
  MESSAGE("public matrices with a value coding: " << coded_matrices << ", kernels: " << tested);
  CHECK(coded_matrices > 0);
}
