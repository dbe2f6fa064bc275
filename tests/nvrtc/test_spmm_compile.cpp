// SpMM units (templates/spmm.cuh) over csr, csr_stream, ell and sell encodings, and the GPU
// transpose unit, compile with NVRTC to sm_90 CUBINs without spills (no GPU needed): k in
// {1, 8, 32, 64}, row- and column-major X and Y, fp64 and fp32.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "nvrtc_support.hpp"
#include "spmvc/build.hpp"
#include "spmvc/compiler/spmm.hpp"
#include "spmvc/generators.hpp"

using namespace spmvc;

namespace {

struct Variant {
  std::string label;
  std::string params;  // forced parameters, "format:assignments"
  bool all_k;          // every k and layout, or k = 8 row-major only
};

compiler::SpmmSubject subject_for(const CsrMatrix& a, const Variant& v, Precision p) {
  Options o;
  o.precision = p;
  const std::size_t colon = v.params.find(':');
  FormatParams params = default_params(v.params.substr(0, colon));
  if (colon != std::string::npos) set_params(params, v.params.substr(colon + 1));
  o.params = params;
  const Build b = build(a, o);
  return compiler::spmm_subject(b.plan, b.encoded, b.profile);
}

}  // namespace

TEST_CASE("spmm: csr, csr_stream, ell and sell units compile for every k, layout and precision") {
  // 12 nonzeros in every row (no padding for ell to refuse), and a stencil whose two distinct
  // values the value-coded variant stores as 8-bit codes.
  const CsrMatrix a = gen::random_uniform(3000, 4096, 12, 9);
  const CsrMatrix stencil = gen::stencil_3d_7pt(12, 12, 12);
  const std::vector<Variant> variants = {
      {"csr", "csr", true},
      {"csr_stream", "csr_stream", true},
      {"csr_stream b128", "csr_stream:block_size=128,tile=512", false},
      {"ell-r T=4", "ell:threads_per_row=4,row_lengths=1", true},
      {"sell sorted T=2", "sell:slice_height=32,sigma=256,threads_per_row=2", true},
      {"csr o64 8-bit values", "csr:offsets64=1,values=2", false},
      {"csr_stream c16", "csr_stream:narrow_columns=1", true},
      {"ell T=1", "ell:threads_per_row=1,row_lengths=0", false},
      {"sell unsorted", "sell:slice_height=8,sigma=1,threads_per_row=1", false},
  };
  int compiled = 0;
  for (const Variant& v : variants) {
    for (Precision p : {Precision::f64, Precision::f32}) {
      CAPTURE(v.label);
      CAPTURE(to_string(p));
      const bool coded = v.params.find("values=") != std::string::npos;
      const compiler::SpmmSubject s = subject_for(coded ? stencil : a, v, p);
      REQUIRE_FALSE(compiler::spmm_unsupported(s).has_value());
      const std::vector<int> ks = v.all_k ? std::vector<int>{1, 8, 32, 64} : std::vector<int>{8};
      for (int k : ks) {
        for (DenseLayout layout : {DenseLayout::row_major, DenseLayout::col_major}) {
          if (!v.all_k && layout == DenseLayout::col_major) continue;
          CAPTURE(k);
          CAPTURE(to_string(layout));
          const KernelSource src = compiler::generate_spmm(s, k, layout);
          test::check_compiles(src);
          ++compiled;
        }
      }
    }
  }
  CHECK(compiled == 5 * 2 * 4 * 2 + 4 * 2);
}

TEST_CASE("spmm: a reordered csr unit writes Y through the row map and compiles") {
  const CsrMatrix a = gen::from_spec("stencil7:n=6");
  Options o;
  o.format = "csr";
  o.reorder = "rcm";
  const Build b = build(a, o);
  const compiler::SpmmSubject s = compiler::spmm_subject(b.plan, b.encoded, b.profile);
  REQUIRE(s.row_map);
  const KernelSource src = compiler::generate_spmm(s, 8, DenseLayout::col_major);
  CHECK(src.source.find("#define SPMVC_ROW_MAP") < src.source.find("#include"));
  test::check_compiles(src);
}

TEST_CASE("transpose: the GPU unit compiles") {
  const KernelSource src = compiler::transpose_source();
  test::check_compiles(src);
  const runtime::Cubin cubin = runtime::compile_cubin(src, "sm_90");
  for (const char* entry : {compiler::kTransposeCountEntry, compiler::kTransposeFillF64Entry,
                            compiler::kTransposeFillF32Entry})
    CHECK(cubin.log.find(entry) != std::string::npos);
}
