// dia: the golden plans and both forms at every precision, several block sizes and rows per
// thread compile with NVRTC to an sm_90 CUBIN on a machine without a GPU, with no register spills.
#include <doctest/doctest.h>

#include <utility>

#include "golden/dia_golden_plans.hpp"
#include "nvrtc_support.hpp"

using spmvc::test::check_compiles;

TEST_CASE("dia: every golden plan compiles to an sm_90 CUBIN without spills") {
  for (const auto& g : spmvc::test::dia_golden_plans()) {
    CAPTURE(g.name);
    check_compiles(spmvc::test::generate_golden(g));
  }
}

TEST_CASE("dia: both forms, block sizes, rows per thread and precisions compile without spills") {
  for (const bool symmetric : {false, true}) {
    for (const auto& [b, r] : {std::pair{64, 1}, std::pair{256, 1}, std::pair{1024, 1},
                               std::pair{256, 2}, std::pair{128, 2}}) {
      for (const spmvc::Precision p :
           {spmvc::Precision::f64, spmvc::Precision::f32, spmvc::Precision::f32_acc64}) {
        spmvc::DiaParams d;
        d.symmetric = symmetric;
        d.block_size = b;
        d.rows_per_thread = r;
        d.interior = b != 64;  // both forms of the tile's bounds
        CAPTURE(symmetric);
        CAPTURE(b);
        CAPTURE(r);
        CAPTURE(static_cast<int>(p));
        // 27 diagonals, the 3D stencil's: 14 stored when symmetric.
        spmvc::test::GoldenPlan g{"sweep", "stencil27:n=4,contrast=10", {}};
        g.options.params = spmvc::FormatParams{d};
        g.options.precision = p;
        check_compiles(spmvc::test::generate_golden(g));
      }
    }
  }
}
