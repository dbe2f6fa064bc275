// ell, sell and hyb: every golden plan and a grid of parameters compile with NVRTC to an sm_90
// CUBIN on a machine without a GPU, with no register spills, and every entry point of the unit
// (hyb's COO launch too) is in the binary.
#include <doctest/doctest.h>

#include "golden/ell_golden_plans.hpp"
#include "nvrtc_support.hpp"

using spmvc::test::check_compiles;

namespace {

spmvc::KernelSource generate(const char* spec, const char* format, spmvc::Precision p,
                             spmvc::FormatParams params) {
  spmvc::test::GoldenPlan g{"sweep", spec, {}};
  g.options.format = format;
  g.options.precision = p;
  g.options.params = std::move(params);
  return spmvc::test::generate_golden(g);
}

constexpr spmvc::Precision kPrecisions[] = {spmvc::Precision::f64, spmvc::Precision::f32,
                                            spmvc::Precision::f32_acc64};

}  // namespace

TEST_CASE("ell, sell, hyb: every golden plan compiles to an sm_90 CUBIN without spills") {
  for (const auto& g : spmvc::test::ell_golden_plans()) {
    CAPTURE(g.name);
    check_compiles(spmvc::test::generate_golden(g));
  }
}

TEST_CASE("ell: lanes, unroll, ELL-R and precision compile without spills") {
  for (int t : {1, 4, 32}) {
    for (int u : {1, 4, 8}) {
      for (bool r : {true, false}) {
        for (spmvc::Precision p : kPrecisions) {
          spmvc::EllParams e;
          e.threads_per_row = t;
          e.unroll = u;
          e.row_lengths = r;
          check_compiles(generate("stencil27:n=4", "ell", p, e));
        }
      }
    }
  }
}

TEST_CASE("sell: slice heights, lanes, sorting and precision compile without spills") {
  for (int c : {8, 32, 64}) {
    for (int t : {1, 8}) {
      for (int sigma : {1, 256}) {
        for (spmvc::Precision p : kPrecisions) {
          spmvc::SellParams s;
          s.slice_height = c;
          s.sigma = sigma;
          s.threads_per_row = t;
          check_compiles(generate("stencil27:n=4", "sell", p, s));
        }
      }
    }
  }
}

TEST_CASE("hyb: lanes, intervals, ELL-R and precision compile without spills") {
  for (int t : {1, 4}) {
    for (int interval : {32, 1024}) {
      for (bool r : {true, false}) {
        for (spmvc::Precision p : kPrecisions) {
          spmvc::HybParams h;
          h.width = 4;
          h.threads_per_row = t;
          h.coo_interval = interval;
          h.row_lengths = r;
          check_compiles(generate("rmat:scale=7,ef=8", "hyb", p, h));
          h.narrow_rows = true;
          check_compiles(generate("rmat:scale=7,ef=8", "hyb", p, h));
        }
      }
    }
  }
}

TEST_CASE("ell, sell and hyb load their columns and values evict-first and gather x through L1") {
  // A stream read once per multiply is loaded ld.global.cs (load_stream), so that it leaves x's
  // lines in L1; x is gathered ld.global.nc (load_ro). hyb's COO launch streams rows, columns
  // and values too.
  using spmvc::test::occurrences;
  using spmvc::test::ptx_of;
  spmvc::EllParams e;
  e.unroll = 1;
  for (bool r : {true, false}) {
    e.row_lengths = r;
    CAPTURE(r);
    const std::string ptx = ptx_of(generate("stencil27:n=4", "ell", spmvc::Precision::f32, e));
    CHECK(occurrences(ptx, "ld.global.cs.") >= 2);
    CHECK(occurrences(ptx, "ld.global.nc.f32") >= 1);
  }
  spmvc::SellParams s;
  const std::string sell = ptx_of(generate("stencil27:n=4", "sell", spmvc::Precision::f32, s));
  CHECK(occurrences(sell, "ld.global.cs.") >= 2);
  CHECK(occurrences(sell, "ld.global.nc.f32") >= 1);
  spmvc::HybParams h;
  h.width = 4;
  const std::string hyb = ptx_of(generate("rmat:scale=7,ef=8", "hyb", spmvc::Precision::f64, h));
  CHECK(occurrences(hyb, "ld.global.cs.") >= 5);
  CHECK(occurrences(hyb, "ld.global.nc.f64") >= 2);
  // With 16-bit rows the COO launch streams them as u16 (and a wide interval's as 32-bit); the
  // interval's base is one load a warp, not a stream.
  h.narrow_rows = true;
  const std::string narrow = ptx_of(generate("rmat:scale=7,ef=8", "hyb", spmvc::Precision::f64, h));
  CHECK(occurrences(narrow, "ld.global.cs.u16") >= 1);
  CHECK(occurrences(narrow, "ld.global.cs.") >= 6);
  CHECK(occurrences(narrow, "ld.global.nc.f64") >= 2);
}
