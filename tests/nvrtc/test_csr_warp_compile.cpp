// csr_warp: its unit (the main kernel and the long rows' fixup) at every precision, with 64-bit
// offsets, with coded values and at the smallest and largest chunks compiles with NVRTC to an
// sm_90 CUBIN on a machine without a GPU, with no register spills.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "golden_plans.hpp"
#include "nvrtc_support.hpp"

using spmvc::test::check_compiles;

TEST_CASE("csr_warp: precisions, offsets, chunks and value codings compile without spills") {
  struct Case {
    const char* spec;
    int chunk;
    bool offsets64;
    int values;
  };
  // rmat's longest row (201) passes 64 nonzeros: that unit carries the fixup launch. The coded
  // cases store a stencil's few distinct values as 8- and 16-bit codes, a geometric graph's ones
  // as none, and a stencil's fp32-exact values as fp32.
  for (const Case& c :
       {Case{"rmat:scale=9,ef=16", 512, false, 0}, Case{"rmat:scale=9,ef=16", 64, true, 0},
        Case{"rmat:scale=9,ef=16", 4096, false, 0},
        Case{"stencil27:n=6", 512, false, spmvc::formats::kValuesTable8}}) {
    for (const spmvc::Precision p :
         {spmvc::Precision::f64, spmvc::Precision::f32, spmvc::Precision::f32_acc64}) {
      if (c.values == spmvc::formats::kValuesF32 && p != spmvc::Precision::f64) continue;
      spmvc::CsrWarpParams w;
      w.chunk = c.chunk;
      w.offsets64 = c.offsets64;
      w.values = c.values;
      spmvc::test::GoldenPlan g{"warp", c.spec, {}};
      g.options.params = spmvc::FormatParams{w};
      g.options.precision = p;
      CAPTURE(c.spec);
      CAPTURE(c.chunk);
      CAPTURE(static_cast<int>(p));
      const spmvc::KernelSource k = spmvc::test::generate_golden(g);
      const spmvc::CsrMatrix a = spmvc::gen::from_spec(c.spec);
      std::int64_t longest = 0;
      for (std::int64_t r = 0; r < a.nrows; ++r) longest = std::max(longest, a.row_length(r));
      CHECK(k.post_launches.size() == (longest > c.chunk ? 1u : 0u));
      check_compiles(k);
    }
  }
}

TEST_CASE("y is stored evict-first by every format, and csr_warp streams its row offsets") {
  // store_y writes y once per multiply with st.global.cs, so that its lines leave the L2 to x's
  // first; csr_warp's row offsets, read once per multiply, are loaded evict-first as its columns
  // and values are (with 64-bit offsets, the only 64-bit integer streams of its unit).
  using spmvc::test::occurrences;
  using spmvc::test::ptx_of;
  for (const std::string format :
       {"csr", "csr_stream", "csr_warp", "ell", "sell", "bro_ell", "dia"}) {
    CAPTURE(format);
    spmvc::test::GoldenPlan g{"store", "stencil27:n=6", {}};
    g.options.format = format;
    g.options.precision = spmvc::Precision::f64;
    const std::string ptx = ptx_of(spmvc::test::generate_golden(g));
    CHECK(occurrences(ptx, "st.global.cs.f64") >= 1);
  }
  spmvc::CsrWarpParams w;
  w.offsets64 = true;
  spmvc::test::GoldenPlan g{"warp", "rmat:scale=9,ef=16", {}};
  g.options.params = spmvc::FormatParams{w};
  g.options.precision = spmvc::Precision::f64;
  const std::string ptx = ptx_of(spmvc::test::generate_golden(g));
  CHECK(occurrences(ptx, "ld.global.cs.u64") + occurrences(ptx, "ld.global.cs.s64") +
            occurrences(ptx, "ld.global.cs.b64") >=
        2);
}
