// Every value coding of every format that has one compiles with NVRTC to an sm_90 CUBIN without
// spills, in every precision the coding applies to (no GPU needed).
#include <doctest/doctest.h>

#include "formats/format.hpp"
#include "formats/values/values.hpp"
#include "golden_plans.hpp"
#include "nvrtc_support.hpp"
#include "spmvc/compiler/compiler.hpp"

using namespace spmvc;

TEST_CASE("value coding: every coded format, coding and precision compiles without spills") {
  // rmat: long rows and short ones, so hyb and bro_hyb have both parts; its values are coded
  // through the table widths below regardless of how many distinct ones it holds (the forced
  // parameters are not checked against the profile here, only the code path).
  int compiled = 0;
  for (const char* format : {"csr", "ell", "hyb", "bro_ell", "bro_coo", "bro_hyb", "csr_stream"}) {
    const char* spec = std::string(format) == "ell" ? "stencil27:n=6" : "rmat:scale=8,ef=16";
    for (int coding : {formats::kValuesUnit, formats::kValuesTable8, formats::kValuesTable16,
                       formats::kValuesF32}) {
      for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
        // fp32 storage narrows fp64 values: there is no such coding in fp32.
        if (coding == formats::kValuesF32 && p != Precision::f64) continue;
        test::GoldenPlan g{"coded", spec, {}};
        g.options.format = format;
        g.options.precision = p;
        compiler::PlanOptions plain = g.options;
        const CsrMatrix a = gen::from_spec(spec);
        const FormatParams params = formats::with_value_coding(
            compiler::make_plan(inspect(a, InspectDepth::rows), plain).params, coding);
        // Unit coding needs every value to be 1; the compile check does not run the kernel, so
        // the sources are generated from an all-ones copy.
        CsrMatrix ones = a;
        std::fill(ones.values.begin(), ones.values.end(), 1.0);
        const formats::FormatUnit& unit = formats::find_format(format);
        const Encoded e = unit.encode(ones, params, p);
        const KernelSource src = unit.generate(e, params, "");
        CAPTURE(src.kernel_name);
        CHECK(src.kernel_name.find(formats::value_coding_tag(coding)) != std::string::npos);
        test::check_compiles(src);
        ++compiled;
      }
    }
  }
  CHECK(compiled == 7 * (3 * 3 + 1));
}
