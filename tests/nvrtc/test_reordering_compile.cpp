// Units with a row map, with and without a gather of x, compile to sm_90 CUBINs.
#include <doctest/doctest.h>

#include <span>

#include "codegen/codegen.hpp"
#include "nvrtc_compiler.hpp"
#include "nvrtc_support.hpp"
#include "spmvc/build.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;

TEST_CASE("reordered csr units compile, in every precision, with and without renumbered columns") {
  const CsrMatrix a = gen::from_spec("stencil7:n=5");
  const Profile profile = inspect(a);
  std::vector<std::int32_t> perm(static_cast<std::size_t>(a.nrows));
  for (std::size_t i = 0; i < perm.size(); ++i)
    perm[i] = static_cast<std::int32_t>((i * 7) % perm.size());  // 7 is coprime to 125
  // Only the columns read gathered (every third here): the gather's own entry.
  std::vector<std::int32_t> read;
  for (std::int32_t j = 0; j < a.ncols; j += 3) read.push_back(j);
  struct Case {
    const char* what;
    bool renumber;
    std::span<const std::int32_t> read;
    const char* gather;  // the pre-launch's entry, or nullptr for none
  };
  for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
    for (const Case& c : {Case{"rows alone", false, {}, nullptr},
                          Case{"x gathered whole", true, {}, "spmvc_gather_x_f"},
                          Case{"the columns read gathered", true, read, "spmvc_gather_x_read_"}}) {
      CAPTURE(to_string(p));
      CAPTURE(c.what);
      compiler::PlanOptions o;
      o.format = "csr";
      o.precision = p;
      const Plan plan = compiler::make_plan(profile, o);
      Encoded e = compiler::encode(a, plan);
      KernelSource src = codegen::generate(plan, e, profile);
      codegen::attach_reordering(src, e, {perm, c.renumber ? perm : std::vector<std::int32_t>{}},
                                 c.read);
      REQUIRE(src.pre_launches.size() == (c.gather ? 1u : 0u));
      if (c.gather) CHECK(src.pre_launches[0].entry.starts_with(c.gather));
      const runtime::Cubin cubin = runtime::compile_cubin(src, "sm_90");
      CHECK(cubin.spill_store_bytes == 0);
      for (const KernelLaunch& l : src.launches())
        CHECK(cubin.log.find(l.entry) != std::string::npos);
    }
  }
}

TEST_CASE("a chained unit waits and lets the next launch start on sm_90, and not below it") {
  const CsrMatrix a = gen::from_spec("rmat:scale=9,ef=8");
  const Profile profile = inspect(a);
  std::vector<std::int32_t> perm(static_cast<std::size_t>(a.nrows));
  for (std::size_t i = 0; i < perm.size(); ++i)
    perm[i] = static_cast<std::int32_t>((i * 7) % perm.size());
  compiler::PlanOptions o;
  o.format = "hyb";
  HybParams h;
  h.width = 2;  // the graph's longer rows then leave entries to the COO part
  o.params = h;
  const Plan plan = compiler::make_plan(profile, o);
  Encoded e = compiler::encode(a, plan);
  KernelSource src = codegen::generate(plan, e, profile);
  codegen::attach_reordering(src, e, {perm, perm});
  REQUIRE(src.launches().size() == 3);  // gather, ELL, COO
  test::check_compiles(src);
  const std::string hopper = test::ptx_of(src);
  CHECK(test::occurrences(hopper, "griddepcontrol.wait") == 2);               // ELL and COO
  CHECK(test::occurrences(hopper, "griddepcontrol.launch_dependents") == 2);  // gather and ELL
  const std::string ampere = test::ptx_of(src, "compute_80");
  CHECK(test::occurrences(ampere, "griddepcontrol") == 0);
}

TEST_CASE("units that gather only the hubs compile without spills, hyb and csr_warp alike") {
  const CsrMatrix a = gen::from_spec("rmat:scale=11,ef=16");
  for (const char* format : {"hyb", "csr_warp"}) {
    for (Precision p : {Precision::f64, Precision::f32, Precision::f32_acc64}) {
      CAPTURE(format);
      CAPTURE(to_string(p));
      const Build b = build(a, test::hub_order_columns(format, p));
      REQUIRE(codegen::splits_x(b.encoded));
      const runtime::Cubin cubin = runtime::compile_cubin(b.source, "sm_90");
      CHECK(cubin.spill_store_bytes == 0);
      for (const KernelLaunch& l : b.source.launches())
        CHECK(cubin.log.find(l.entry) != std::string::npos);
    }
  }
}
