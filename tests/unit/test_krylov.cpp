// The host side of `spmvc bench --solve`: its option values, the stop codes the solver's kernels
// write, and the accuracy it reports (bench/support/krylov.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "spmvc/bench/krylov.hpp"
#include "spmvc/error.hpp"

using namespace spmvc;
using namespace spmvc::bench;

namespace {

// The message of the InputError `f` throws ("" when it throws none).
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// [[2, 1], [0, 3]]
CsrMatrix upper_2x2() {
  CsrMatrix a;
  a.nrows = a.ncols = 2;
  a.row_ptr = {0, 2, 3};
  a.col_idx = {0, 1, 1};
  a.values = {2, 1, 3};
  return a;
}

}  // namespace

TEST_CASE("iteration counts parse as a comma list of positive integers") {
  CHECK(parse_iteration_counts("100,1000,10000") == std::vector<std::int64_t>{100, 1000, 10000});
  CHECK(parse_iteration_counts("7") == std::vector<std::int64_t>{7});
  CHECK(parse_iteration_counts("1000000000") == std::vector<std::int64_t>{1000000000});
  CHECK(parse_iteration_counts("5,5") == std::vector<std::int64_t>{5, 5});
}

TEST_CASE("a solve asks one multiply an iteration of CG and two of BiCGStab") {
  // spmvc bench --solve plans for its longest solve's multiplies with this.
  CHECK(spmvc::bench::solve_multiplies(spmvc::bench::KrylovMethod::cg, 1000) == 1000);
  CHECK(spmvc::bench::solve_multiplies(spmvc::bench::KrylovMethod::bicgstab, 1000) == 2000);
  CHECK(spmvc::bench::solve_multiplies(spmvc::bench::KrylovMethod::bicgstab, 1'000'000'000) ==
        2'000'000'000);
}

TEST_CASE("bad iteration lists name the item at fault") {
  CHECK(input_error([] { parse_iteration_counts(""); }).find("item 1 '' of '': empty") !=
        std::string::npos);
  CHECK(input_error([] { parse_iteration_counts("10,,20"); }).find("item 2 '' of '10,,20'") !=
        std::string::npos);
  CHECK(input_error([] { parse_iteration_counts("100,"); }).find("item 2") != std::string::npos);
  CHECK(input_error([] {
          parse_iteration_counts("100,abc");
        }).find("item 2 'abc' of '100,abc': not a whole number") != std::string::npos);
  CHECK(input_error([] { parse_iteration_counts("-5"); }).find("not a whole number") !=
        std::string::npos);
  CHECK(input_error([] { parse_iteration_counts("1e3"); }).find("'1e3'") != std::string::npos);
  CHECK(input_error([] { parse_iteration_counts(" 10"); }).find("not a whole number") !=
        std::string::npos);
  CHECK(input_error([] { parse_iteration_counts("0"); }).find("at least one iteration") !=
        std::string::npos);
  CHECK(input_error([] { parse_iteration_counts("1000000001"); }).find("more than 1000000000") !=
        std::string::npos);
  CHECK(input_error([] {
          parse_iteration_counts("99999999999999999999999");
        }).find("more than 1000000000") != std::string::npos);
}

TEST_CASE("methods parse by name; others are named in the error") {
  CHECK(parse_krylov_method("cg") == KrylovMethod::cg);
  CHECK(parse_krylov_method("bicgstab") == KrylovMethod::bicgstab);
  CHECK(to_string(parse_krylov_method("bicgstab")) == "bicgstab");
  CHECK(input_error([] {
          parse_krylov_method("gmres");
        }).find("unknown method 'gmres' (cg, bicgstab)") != std::string::npos);
}

TEST_CASE("stop codes map to stops; breakdowns carry a note, the others none") {
  for (int code = 0; code <= 5; ++code) CHECK(static_cast<int>(solve_stop_from_code(code)) == code);
  CHECK_THROWS_AS(solve_stop_from_code(6), InternalError);
  CHECK_THROWS_AS(solve_stop_from_code(-1), InternalError);
  CHECK_FALSE(is_breakdown(SolveStop::iterations));
  CHECK_FALSE(is_breakdown(SolveStop::converged));
  CHECK(describe(SolveStop::converged).empty());
  for (SolveStop s : {SolveStop::curvature, SolveStop::rho_breakdown, SolveStop::omega_breakdown,
                      SolveStop::not_finite}) {
    CHECK(is_breakdown(s));
    CHECK_FALSE(describe(s).empty());
  }
  CHECK(describe(SolveStop::omega_breakdown).find("omega") != std::string::npos);
  CHECK(describe(SolveStop::curvature).find("positive definite") != std::string::npos);
}

TEST_CASE("solve accuracy: residual against b and error against x_true, in fp64") {
  const CsrMatrix a = upper_2x2();
  const std::vector<double> x_true{1, 2}, b{4, 6};
  SolveAccuracy exact = solve_accuracy(a, x_true, b, x_true);
  CHECK(exact.relative_residual == 0);
  CHECK(exact.relative_error == 0);

  SolveAccuracy zero = solve_accuracy(a, std::vector<double>{0, 0}, b, x_true);
  CHECK(zero.relative_residual == doctest::Approx(1.0));
  CHECK(zero.relative_error == doctest::Approx(1.0));

  // A x = [4.5, 7.5]: r = [-0.5, -1.5]; x - x_true = [0, 0.5].
  SolveAccuracy off = solve_accuracy(a, std::vector<double>{1, 2.5}, b, x_true);
  CHECK(off.relative_residual == doctest::Approx(std::sqrt(2.5 / 52.0)));
  CHECK(off.relative_error == doctest::Approx(0.5 / std::sqrt(5.0)));

  const double nan = std::numeric_limits<double>::quiet_NaN();
  SolveAccuracy bad = solve_accuracy(a, std::vector<double>{1, nan}, b, x_true);
  CHECK(std::isinf(bad.relative_residual));
  CHECK(std::isinf(bad.relative_error));

  CHECK(input_error([&] {
          solve_accuracy(a, std::vector<double>{1}, b, x_true);
        }).find("vectors of 1, 2 and 2 elements for a 2 x 2 matrix") != std::string::npos);
}

TEST_CASE("a solve's time ends at the iteration that stopped it") {
  // Ran them all.
  CHECK(solve_end_iteration(SolveStop::iterations, 100, 100) == 100);
  // Converged in iteration 37; the loop saw it and stopped launching at 50.
  CHECK(solve_end_iteration(SolveStop::converged, 37, 50) == 37);
  // b = 0: converged before the first iteration.
  CHECK(solve_end_iteration(SolveStop::converged, 0, 20) == 0);
  // Broke down in iteration 38, after 37 complete ones.
  CHECK(solve_end_iteration(SolveStop::omega_breakdown, 37, 50) == 38);
  CHECK(solve_end_iteration(SolveStop::curvature, 0, 20) == 1);
  // ... unless that was the last one launched.
  CHECK(solve_end_iteration(SolveStop::rho_breakdown, 5, 5) == 5);
  CHECK_THROWS_AS(solve_end_iteration(SolveStop::converged, 51, 50), InternalError);
  CHECK_THROWS_AS(solve_end_iteration(SolveStop::converged, -1, 50), InternalError);
}
