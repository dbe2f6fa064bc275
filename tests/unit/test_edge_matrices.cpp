// Every format on the edge matrices (tests/edge_matrices.hpp): the planner either refuses the
// format with a reason (InputError) or its encoding's host reference product is the CSR one,
// NaN and infinities in the same rows. Nothing crashes, nothing allocates past the matrix.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "edge_matrices.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/error.hpp"
#include "spmvc/profile.hpp"

using namespace spmvc;

TEST_CASE("every format on the edge matrices: refused with a reason, or the CSR product") {
  for (const auto& [name, a] : test::edge_matrices()) {
    CAPTURE(name);
    const Profile profile = inspect(a);
    const std::vector<double> x = codegen::test_vector(a.ncols);
    std::vector<double> ref(static_cast<std::size_t>(a.nrows));
    compiler::csr_reference_spmv(a, x, ref);
    int ran = 0;
    for (const std::string& format : compiler::format_names()) {
      CAPTURE(format);
      compiler::PlanOptions o;
      o.format = format;
      Plan plan;
      try {
        plan = compiler::make_plan(profile, o);
      } catch (const InputError& e) {
        CHECK(std::string(e.what()).size() > 10);  // a reason, not an empty refusal
        continue;
      }
      const Encoded e = compiler::encode(a, plan);
      std::vector<double> y(ref.size(), std::numeric_limits<double>::quiet_NaN());
      compiler::reference_spmv(plan, e, x, y);
      CHECK(test::same_product(y, ref, 1e-12));
      ++ran;
    }
    // csr takes every matrix.
    CHECK(ran >= 1);
  }
}

TEST_CASE("the planner's own pick on the edge matrices gives the CSR product") {
  for (const auto& [name, a] : test::edge_matrices()) {
    CAPTURE(name);
    const Profile profile = inspect(a);
    for (Precision p : {Precision::f64, Precision::f32}) {
      compiler::PlanOptions o;
      o.precision = p;
      const Plan plan = compiler::make_plan(profile, o);
      CAPTURE(plan.format);
      const std::vector<double> x = codegen::test_vector(a.ncols, p);
      std::vector<double> ref(static_cast<std::size_t>(a.nrows));
      compiler::csr_reference_spmv(a, x, ref);
      std::vector<double> y(ref.size(), std::numeric_limits<double>::quiet_NaN());
      compiler::reference_spmv(plan, compiler::encode(a, plan), x, y);
      CHECK(test::same_product(y, ref, p == Precision::f64 ? 1e-12 : 1e-6));
    }
  }
}

TEST_CASE("one row holding 10^7 nonzeros: every format plans and encodes it right, or refuses") {
  // A 2 GB budget, whatever this machine's memory: a format whose padding would take more
  // refuses (saying so) instead of encoding, so the test's memory is bounded and its outcome
  // the same on every machine.
  const char* old_budget = std::getenv("SPMVC_MEMORY_BUDGET");
  const std::string saved = old_budget ? old_budget : "";
  setenv("SPMVC_MEMORY_BUDGET", "2000000000", 1);
  struct Restore {
    const std::string& saved;
    bool had;
    ~Restore() {
      if (had) {
        setenv("SPMVC_MEMORY_BUDGET", saved.c_str(), 1);
      } else {
        unsetenv("SPMVC_MEMORY_BUDGET");
      }
    }
  } restore{saved, old_budget != nullptr};
  const CsrMatrix a = test::long_row_matrix();
  REQUIRE(a.nnz() == test::kLongRow);
  const Profile profile = inspect(a);
  CHECK(profile.row_max == test::kLongRow);
  const std::vector<double> x = codegen::test_vector(a.ncols);
  std::vector<double> ref(static_cast<std::size_t>(a.nrows));
  compiler::csr_reference_spmv(a, x, ref);
  std::vector<std::string> ran, refused;
  for (const std::string& format : compiler::format_names()) {
    CAPTURE(format);
    compiler::PlanOptions o;
    o.format = format;
    Plan plan;
    try {
      plan = compiler::make_plan(profile, o);
    } catch (const InputError& e) {
      // A refusal says why: it names the format and what it cannot take.
      const std::string why = e.what();
      INFO(why);
      CHECK(why.find(format) != std::string::npos);
      refused.push_back(format + ": " + why);
      continue;
    }
    const Encoded e = compiler::encode(a, plan);
    std::vector<double> y(ref.size(), std::numeric_limits<double>::quiet_NaN());
    compiler::reference_spmv(plan, e, x, y);
    CHECK(test::same_product(y, ref, 1e-12));
    ran.push_back(format);
  }
  std::string report;
  for (const std::string& f : ran) report += " " + f;
  for (const std::string& r : refused) report += "\n  refused " + r;
  MESSAGE("formats that took the 10^7-nonzero row:" << report);
  // The CSR family takes any row length.
  CHECK(std::find(ran.begin(), ran.end(), "csr") != ran.end());
  CHECK(std::find(ran.begin(), ran.end(), "csr_stream") != ran.end());
}
