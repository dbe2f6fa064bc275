// Every BRO golden plan and a grid of BRO parameters compile with NVRTC to an sm_90 CUBIN
// without register spills (no GPU needed).
#include <doctest/doctest.h>

#include "bro_golden_plans.hpp"
#include "nvrtc_support.hpp"

using namespace spmvc;

using spmvc::test::check_compiles;

namespace {

KernelSource generate(const char* spec, Precision p, const std::string& format,
                      FormatParams params) {
  test::GoldenPlan g{"sweep", spec, {}};
  g.options.format = format;
  g.options.precision = p;
  g.options.params = std::move(params);
  return test::generate_golden(g);
}

}  // namespace

TEST_CASE("bro: every golden plan compiles to an sm_90 CUBIN without spills") {
  for (const auto& g : test::bro_golden_plans()) {
    CAPTURE(g.name);
    check_compiles(test::generate_golden(g));
  }
}

TEST_CASE("bro_ell: slice shapes, symbols, unroll, prefetch and tables compile without spills") {
  struct Shape {
    int h, t;
  };
  for (Shape s : {Shape{32, 1}, Shape{256, 1}, Shape{8, 4}, Shape{1, 32}}) {
    for (int sym : {32, 64}) {
      for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
        for (int tables : {0, 1, 2}) {
          for (int u : {1, 4}) {
            const bool baked = tables == 2;
            if (baked && u != 1) continue;
            BroEllParams bp{s.h, sym, s.t, 256, u, !baked && u == 4, tables};
            check_compiles(generate("stencil27:n=6", p, "bro_ell", bp));
          }
        }
      }
    }
  }
}

TEST_CASE("bro_coo and bro_hyb: intervals and symbols compile without spills") {
  for (int interval : {32, 256, 1024, 4096}) {
    for (int sym : {32, 64}) {
      for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
        check_compiles(
            generate("rmat:scale=8,ef=8", p, "bro_coo", BroCooParams{interval, sym, 256}));
        check_compiles(generate("rmat:scale=8,ef=8", p, "bro_hyb",
                                BroHybParams{6, 32, sym, 1, 256, 2, true, 0, interval}));
      }
    }
  }
}

TEST_CASE("bro_coo loads its columns and values evict-first and gathers x through L1") {
  const std::string ptx = test::ptx_of(
      generate("rmat:scale=8,ef=8", Precision::f64, "bro_coo", BroCooParams{256, 32, 256}));
  CHECK(test::occurrences(ptx, "ld.global.cs.") >= 2);
  CHECK(test::occurrences(ptx, "ld.global.nc.f64") >= 1);
}

TEST_CASE("bro_ell loads its symbols and values evict-first and gathers x through L1") {
  for (bool prefetch : {false, true}) {
    CAPTURE(prefetch);
    BroEllParams b;
    b.prefetch = prefetch;
    const std::string ptx = test::ptx_of(generate("stencil27:n=6", Precision::f64, "bro_ell", b));
    CHECK(test::occurrences(ptx, "ld.global.cs.") >= 2);
    CHECK(test::occurrences(ptx, "ld.global.nc.f64") >= 1);
  }
}
