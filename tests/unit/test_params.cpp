// Format parameters read through their field lists: describe(), default_params(), set_params().
#include <doctest/doctest.h>

#include <type_traits>

#include "spmvc/error.hpp"
#include "spmvc/plan.hpp"

using namespace spmvc;

TEST_CASE("describe prints labels, and bools only where they differ from the default") {
  CsrParams p;
  p.threads_per_row = 8;
  p.vector_width = 2;
  CHECK(describe(p) == "T=8 V=2 b=256 u=1");
  p.aligned = false;
  p.offsets64 = true;
  CHECK(describe(p) == "T=8 V=2 b=256 u=1 no-aligned o64");
  CHECK(format_of(FormatParams{p}) == "csr");
}

TEST_CASE("every format's default parameters round-trip through its name") {
  for (const char* name : {"csr", "ell", "sell", "hyb", "bro_ell", "bro_coo", "bro_hyb", "blocked",
                           "bellpack", "bcsr", "cci", "amb"}) {
    CAPTURE(name);
    const FormatParams p = default_params(name);
    CHECK(format_of(p) == name);
    CHECK(!describe(p).empty());
  }
  CHECK_THROWS_WITH_AS(default_params("nope"), doctest::Contains("'nope'"), InputError);
}

TEST_CASE("set_params takes names or labels, and names the field it cannot set") {
  FormatParams p = default_params("csr");
  set_params(p, "T=16,vector_width=4,aligned=1,o64=true");
  const auto& c = std::get<CsrParams>(p);
  CHECK(c.threads_per_row == 16);
  CHECK(c.vector_width == 4);
  CHECK(c.offsets64);
  CHECK_THROWS_WITH_AS(set_params(p, "T=abc"), doctest::Contains("threads_per_row: 'abc'"),
                       InputError);
  CHECK_THROWS_WITH_AS(set_params(p, "T=4x"), doctest::Contains("not an integer"), InputError);
  CHECK_THROWS_WITH_AS(set_params(p, "aligned=maybe"), doctest::Contains("not a bool"), InputError);
  CHECK_THROWS_WITH_AS(set_params(p, "Q=1"), doctest::Contains("no parameter 'Q'"), InputError);
  CHECK_THROWS_WITH_AS(set_params(p, "T"), doctest::Contains("not name=value"), InputError);
  CHECK(std::get<CsrParams>(p).threads_per_row == 16);  // earlier fields kept
}

TEST_CASE("to_assignments is set_params' input: every format's parameters round-trip") {
  for (const char* name : {"csr", "ell", "sell", "hyb", "bro_ell", "bro_coo", "bro_hyb", "blocked",
                           "bellpack", "bcsr", "cci", "amb"}) {
    CAPTURE(name);
    FormatParams p = default_params(name);
    // Change every field, so a field the round trip drops shows.
    std::visit(
        [](auto& q) {
          std::decay_t<decltype(q)>::fields(q, [](std::string_view, std::string_view, auto& v) {
            if constexpr (std::is_same_v<std::decay_t<decltype(v)>, bool>) {
              v = !v;
            } else {
              v = v + 3;
            }
          });
        },
        p);
    FormatParams back = default_params(name);
    set_params(back, to_assignments(p));
    CHECK(describe(back) == describe(p));
    CHECK(to_assignments(back) == to_assignments(p));
  }
}
