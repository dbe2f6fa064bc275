// Mixed precision (Options::mixed_precision): every format with a value coding compiles with its
// values stored rounded (fp64 as fp32, fp32 and f32acc64 as bf16 words) to an sm_90 CUBIN
// without spills, planned by the planner with the option (no GPU needed), and so do the SpMM
// units over those encodings.
#include <doctest/doctest.h>

#include <cmath>

#include "formats/format.hpp"
#include "formats/values/values.hpp"
#include "nvrtc_support.hpp"
#include "spmvc/build.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/spmm.hpp"
#include "spmvc/generators.hpp"

using namespace spmvc;

namespace {

// Values that neither fp32 nor bf16 hold: each coupling its own irrational-looking value.
CsrMatrix inexact(CsrMatrix a) {
  for (std::size_t i = 0; i < a.values.size(); ++i)
    a.values[i] = std::sin(0.37 * static_cast<double>(i) + 0.1) + 1.5;
  return a;
}

}  // namespace

TEST_CASE("mixed precision: every coded format's rounded storage compiles without spills") {
  const CsrMatrix rmat = inexact(gen::rmat(8, 16));
  const CsrMatrix stencil = inexact(gen::stencil_3d_27pt(6, 6, 6));
  int compiled = 0;
  for (const char* format : {"csr", "ell", "hyb", "bro_ell", "bro_coo", "bro_hyb", "csr_stream"}) {
    const CsrMatrix& a = std::string(format) == "ell" ? stencil : rmat;
    for (const auto& [p, mode] : {std::pair{Precision::f64, MixedPrecision::f32},
                                  std::pair{Precision::f32, MixedPrecision::bf16},
                                  std::pair{Precision::f32_acc64, MixedPrecision::bf16}}) {
      Options o;
      o.format = format;
      o.precision = p;
      o.mixed_precision = mode;
      o.value_coding = false;  // no 16-bit table beside the rounded values
      CAPTURE(format);
      CAPTURE(to_string(p));
      const Build b = build(a, o);
      const int coding = formats::value_coding_of(b.plan.params);
      CHECK(coding == formats::mixed_value_coding(mode));
      REQUIRE(b.plan.rounding.has_value());
      CHECK(b.plan.rounding->value_error > 0);
      CHECK(b.source.kernel_name.find(formats::value_coding_tag(coding)) != std::string::npos);
      test::check_compiles(b.source);
      ++compiled;
      // The SpMM unit over the same encoding, where the format has one.
      const compiler::SpmmSubject s = compiler::spmm_subject(b.plan, b.encoded, b.profile);
      if (!compiler::spmm_unsupported(s)) {
        test::check_compiles(compiler::generate_spmm(s, 8, DenseLayout::row_major));
        ++compiled;
        // Rounded fp32 values keep the packed loads; bf16 values load one element at a time.
        const compiler::SpmmShape shape = compiler::spmm_shape(s, 8, DenseLayout::row_major);
        CHECK((shape.vector == 1) == (mode == MixedPrecision::bf16));
      }
    }
  }
  // 7 formats x 3 precisions, and SpMM for csr, csr_stream and ell.
  CHECK(compiled == 7 * 3 + 3 * 3);
}
