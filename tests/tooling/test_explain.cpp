// Explain reads the kernel's byte traffic from its AST; on every csr variant it must agree with
// the planner's cost model (Cost::matrix_bytes / nnz). Both count each matrix array once and
// padded col_idx/values entries, so they agree to rounding: tolerance 1e-9 relative.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "formats/format.hpp"
#include "golden_plans.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/tooling/explain.hpp"
#include "spmvc/tooling/flatten.hpp"
#include "tooling/golden_units.hpp"

namespace {

struct Explained {
  spmvc::tooling::ExplainReport report;
  double model_bytes_per_nonzero = 0;
};

Explained explain_plan(const spmvc::test::GoldenPlan& g) {
  const spmvc::CsrMatrix a = spmvc::gen::from_spec(g.spec);
  const spmvc::Profile profile = spmvc::inspect(a);
  const spmvc::Plan plan = spmvc::compiler::make_plan(profile, g.options);
  const spmvc::Encoded encoded = spmvc::compiler::encode(a, plan);
  const spmvc::KernelSource src = spmvc::codegen::generate(plan, encoded, profile);
  spmvc::tooling::ExplainOptions options;
  options.arch = "";  // the NVRTC report is checked once below
  options.shape = spmvc::tooling::MatrixShape{a.nrows, a.nnz(), encoded.array("values").count()};
  const spmvc::formats::Cost cost =
      spmvc::formats::find_format(plan.format).cost(profile, plan.params, plan.precision);
  return {spmvc::tooling::explain(src, options),
          cost.matrix_bytes / static_cast<double>(profile.nnz)};
}

}  // namespace

TEST_CASE("explain's bytes per nonzero equal the cost model's on every csr variant") {
  for (int t : {1, 4, 32}) {
    for (int v : {1, 2, 4}) {
      for (bool o64 : {false, true}) {
        for (auto p : {spmvc::Precision::f64, spmvc::Precision::f32, spmvc::Precision::f32_acc64}) {
          spmvc::test::GoldenPlan g{"sweep", "stencil27:n=5", {}};
          g.options.precision = p;
          g.options.csr = spmvc::test::csr_params(t, 1, true, o64, v);
          const Explained e = explain_plan(g);
          CAPTURE(e.report.kernel_name);
          const double value_bytes = p == spmvc::Precision::f64 ? 8 : 4;
          CHECK(e.report.nonzero_bytes == 4 + value_bytes);
          CHECK(e.report.row_bytes == (o64 ? 8 : 4));
          CHECK(std::abs(e.report.matrix_bytes_per_nonzero() - e.model_bytes_per_nonzero) <=
                1e-9 * e.model_bytes_per_nonzero);
        }
      }
    }
  }
}

TEST_CASE("explain names the parameters' roles and sees vector loads, loops and shuffles") {
  spmvc::test::GoldenPlan g{"v4", "stencil2d:n=12", {}};
  g.options.precision = spmvc::Precision::f32;
  g.options.csr = spmvc::test::csr_params(4, 2, true, false, 4);
  const auto r = explain_plan(g).report;
  REQUIRE(r.params.size() == 8);
  CHECK(r.params[0].role == "row count");
  CHECK(r.params[1].role == "row pointer (array row_ptr, read)");
  CHECK(r.params[2].role == "column indices (array col_idx, read per nonzero)");
  CHECK(r.params[3].role == "values (array values, read per nonzero)");
  CHECK(r.params[4].role == "x (input vector, gathered by column index)");
  CHECK(r.params[5].role.rfind("y (output vector, written", 0) == 0);
  CHECK(r.launch_bounds == 256);
  CHECK(r.shuffles == 1);
  CHECK(r.atomics == 0);
  CHECK(r.shared.empty());
  const auto has = [&](const std::string& array, int bytes, bool per_nonzero, bool store) {
    return std::any_of(r.accesses.begin(), r.accesses.end(), [&](const auto& a) {
      return a.array == array && a.bytes == bytes && a.per_nonzero == per_nonzero &&
             a.store == store;
    });
  };
  CHECK(has("col_idx", 16, true, false));  // one uint4 per 4 column indices
  CHECK(has("values", 16, true, false));
  CHECK(has("x", 4, true, false));
  CHECK(has("row_ptr", 4, false, false));
  CHECK(has("y", 4, false, true));
  // group_sum over 4 lanes: offsets 2, 1.
  CHECK(std::any_of(r.loops.begin(), r.loops.end(), [](const auto& l) {
    return l.trip_count == 2 && l.where.find("group_sum") != std::string::npos;
  }));
  CHECK(std::count_if(r.loops.begin(), r.loops.end(),
                      [](const auto& l) { return l.per_nonzero; }) == 1);
}

TEST_CASE("explain reports NVRTC's resources") {
  const auto src = spmvc::test::generate_golden(spmvc::test::golden_plans()[0]);
  const auto r = spmvc::tooling::explain(src);
  REQUIRE(r.resources.has_value());
  CHECK(r.resources->registers > 0);
  CHECK(r.resources->spill_store_bytes == 0);
  CHECK(spmvc::tooling::to_report(r).find("NVRTC (sm_90)") != std::string::npos);
  CHECK(spmvc::tooling::to_json(r).find("\"registers\"") != std::string::npos);
}

namespace {

spmvc::tooling::UnitReport explain_golden(const spmvc::test::GoldenUnit& u) {
  spmvc::tooling::ExplainOptions options;
  options.arch = "";
  std::int64_t stored = 0;
  for (const auto& a : u.encoded.arrays) stored = std::max(stored, a.count());
  options.shape = spmvc::tooling::MatrixShape{u.profile.nrows, u.profile.nnz, stored};
  options.encoded = &u.encoded;
  options.format = u.plan.format;
  options.planner_bytes_per_nonzero = spmvc::compiler::matrix_bytes_per_nonzero(u.profile, u.plan);
  return spmvc::tooling::explain_unit(u.source, options);
}

const spmvc::tooling::ParamRole* role(const spmvc::tooling::ExplainReport& k,
                                      const std::string& name) {
  for (const auto& p : k.params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("explain reads every golden unit of every format from its own AST") {
  for (const auto& u : spmvc::test::every_golden_unit()) {
    CAPTURE(u.name);
    const spmvc::tooling::UnitReport r = explain_golden(u);
    const std::string text = spmvc::tooling::to_report(r);
    CAPTURE(text);
    // Every kernel, in launch order, with roles from the unit's parameter list.
    const auto launches = u.source.launches();
    REQUIRE(r.kernels.size() >= launches.size());
    for (std::size_t i = 0; i < launches.size(); ++i) {
      CHECK(r.kernels[i].kernel_name == launches[i].entry);
      REQUIRE(r.kernels[i].params.size() == launches[i].params.size());
      for (std::size_t j = 0; j < launches[i].params.size(); ++j) {
        const auto& kp = launches[i].params[j];
        const std::string& got = r.kernels[i].params[j].role;
        CAPTURE(kp.name);
        switch (kp.kind) {
          case spmvc::KernelParam::Kind::x:
            CHECK(got == "x (input vector, gathered by column index)");
            break;
          case spmvc::KernelParam::Kind::y:
            CHECK(got.rfind("y (output vector, written", 0) == 0);
            break;
          case spmvc::KernelParam::Kind::array:
            CHECK(got.find("(array " + kp.name + ", ") != std::string::npos);
            break;
          default:
            break;
        }
      }
    }
    // Each matrix array a launch binds is read by some kernel, unless the unit bakes it into its
    // code (BRO's width tables as a pattern or __constant__ data, CCI's decode table).
    for (const auto& a : r.arrays) {
      CAPTURE(a.name);
      if (a.bytes == 0 || a.scratch) continue;
      const bool launched = std::any_of(launches.begin(), launches.end(), [&](const auto& l) {
        return std::any_of(l.params.begin(), l.params.end(),
                           [&](const auto& kp) { return kp.name == a.name; });
      });
      if (a.read_by.empty() && launched) {
        CHECK(!r.baked.empty());
        CHECK((a.name.find("widths") != std::string::npos || a.name == "decode_table"));
      }
    }
    // Bytes: the arrays read, each once, against the model, which agrees or says why not.
    REQUIRE(r.bytes_per_nonzero.has_value());
    CHECK(*r.bytes_per_nonzero > 1.0);
    CHECK((r.agrees() || !r.difference.empty()));
    if (!r.agrees()) CHECK(text.find(r.difference) != std::string::npos);
    // The documented differences bound the gap: padded formats store slots the model does not
    // charge (the encoded arrays hold about the model's bytes or more; hyb's COO part is
    // charged at the profile's split, up to 9% over on hyb_k3_t2_i64_r_f32acc64); elsewhere the
    // model's profile estimates stay within a third of the arrays, except blocked, whose block
    // count the model over-estimates on these small matrices (up to 4.7x on blocked_br8_bc32_a8).
    if (!r.agrees() && r.planner_bytes_per_nonzero) {
      const double ratio = *r.planner_bytes_per_nonzero / *r.bytes_per_nonzero;
      CAPTURE(ratio);
      const std::string f = u.plan.format;
      if (f == "ell" || f == "sell" || f == "hyb" || f == "bellpack") {
        CHECK(ratio <= 1.1);
      } else if (f != "blocked") {
        CHECK(ratio >= 0.75);
        CHECK(ratio <= 1.35);
      }
    }
  }
}

TEST_CASE("explain's bytes equal the model's where the model counts the encoded arrays") {
  // The model charges what a multiply fetches, estimated from the profile; on these units that
  // is exactly the arrays the kernels read.
  const std::set<std::string> exact = {
      "csr_auto_stencil27_f64", "csr_auto_rmat_f32acc64",   "csr_t1_u1_f64",
      "csr_t32_u4_f64",         "csr_t4_u2_unaligned_f32",  "csr_t8_u2_o64_f64",
      "csr_t4_v2_u1_f64",       "csr_t2_v4_u2_f32",         "hyb_k0_i32_b128_f32",
      "bro_coo_i1024_s32_f64",  "bro_coo_i64_s64_f32",      "bcsr_r3_c3_t4_f64",
      "bcsr_r2_c4_t1_tail_f32", "blocked_br4_bc64_a16_f64", "blocked_br3_bc16_a4_f32",
  };
  std::size_t seen = 0;
  for (const auto& u : spmvc::test::every_golden_unit()) {
    if (exact.count(u.name) == 0) continue;
    CAPTURE(u.name);
    ++seen;
    const spmvc::tooling::UnitReport r = explain_golden(u);
    REQUIRE(r.bytes_per_nonzero.has_value());
    REQUIRE(r.planner_bytes_per_nonzero.has_value());
    CHECK(std::abs(*r.bytes_per_nonzero - *r.planner_bytes_per_nonzero) <=
          1e-9 * *r.planner_bytes_per_nonzero);
    CHECK(r.agrees());
    CHECK(r.difference.empty());
  }
  CHECK(seen == exact.size());
}

TEST_CASE("explain on bro_ell and csr_stream: x is gathered, the tables are shown") {
  for (const auto& u : spmvc::test::every_golden_unit()) {
    CAPTURE(u.name);
    if (u.name == "bro_ell_h256_s32_const_f64") {
      const auto r = explain_golden(u);
      REQUIRE(r.kernels.size() == 1);
      REQUIRE(role(r.kernels[0], "x") != nullptr);
      CHECK(role(r.kernels[0], "x")->role == "x (input vector, gathered by column index)");
      CHECK(role(r.kernels[0], "col_ptr")->role == "slice column offsets (array col_ptr, read)");
      CHECK(role(r.kernels[0], "symbols")->role.find("delta-coded column symbols") == 0);
      // The __constant__ width table, with its values.
      REQUIRE(!r.baked.empty());
      CHECK(r.baked[0].name == "kWidthTable");
      CHECK(r.baked[0].what == "__constant__ unsigned char[5]");
      CHECK(r.baked[0].content == "8, 5, 5, 5, 4");
    }
    if (u.name == "bro_ell_h32_s32_baked_f64") {
      const auto r = explain_golden(u);
      REQUIRE(r.baked.size() == 1);
      CHECK(r.baked[0].name == "Pattern");
      CHECK(r.baked[0].content.rfind("7, 1, 3, 2, 5,", 0) == 0);
    }
    if (u.name == "coded_csr_stream_c16_val3_f32") {
      const auto r = explain_golden(u);
      REQUIRE(r.kernels.size() == 1);
      CHECK(role(r.kernels[0], "x")->role == "x (input vector, gathered by column index)");
      CHECK(role(r.kernels[0], "values")->role == "values (array values, read)");
      CHECK(role(r.kernels[0], "values_table")->role.find("value table") == 0);
      CHECK(r.kernels[0].shared.size() == 1);
      // The value table's entries are shown.
      const auto table = std::find_if(r.baked.begin(), r.baked.end(),
                                      [](const auto& b) { return b.name == "values_table"; });
      REQUIRE(table != r.baked.end());
      CHECK(table->what.find("value table, 2 f32 entries") == 0);
      CHECK(*r.bytes_per_nonzero > 3.0);  // 2-byte columns, 2-byte codes, the row pointer
    }
  }
}

TEST_CASE("explain shows every kernel of a multi-launch unit, and what each one touches") {
  for (const auto& u : spmvc::test::every_golden_unit()) {
    if (u.name != "amb_seg16_c32_cb2_det_f32acc64" &&
        u.name != "reordered_hyb_rows_cols_f32acc64" && u.name != "csr_warp_hub_split_f64")
      continue;
    CAPTURE(u.name);
    const auto r = explain_golden(u);
    const auto launches = u.source.launches();
    REQUIRE(launches.size() >= 2);
    REQUIRE(r.kernels.size() >= launches.size());
    const std::string text = spmvc::tooling::to_report(r);
    for (std::size_t i = 0; i < launches.size(); ++i) {
      CHECK(text.find(fmt::format("[{}/{}] Kernel {}", i + 1, r.kernels.size(),
                                  launches[i].entry)) != std::string::npos);
    }
    if (u.name == "reordered_hyb_rows_cols_f32acc64") {
      // The gather of x writes x_perm, which the ELL kernel then reads as its x; the row map is
      // read through spmvc_row_map.
      const auto x_perm = std::find_if(r.arrays.begin(), r.arrays.end(),
                                       [](const auto& a) { return a.name == "x_perm"; });
      REQUIRE(x_perm != r.arrays.end());
      CHECK(x_perm->written_by == std::vector<std::string>{launches[0].entry});
      const auto row_map = std::find_if(r.arrays.begin(), r.arrays.end(),
                                        [](const auto& a) { return a.name == "row_map"; });
      REQUIRE(row_map != r.arrays.end());
      CHECK_FALSE(row_map->read_by.empty());
      CHECK(r.difference.find("row map") != std::string::npos);
    }
    if (u.name == "csr_warp_hub_split_f64") {
      // x read in two parts: the gather of the hubs writes x_hub, and the multiply gathers from
      // both x and x_hub through spmvc::SplitX.
      const auto x_hub = std::find_if(r.arrays.begin(), r.arrays.end(),
                                      [](const auto& a) { return a.name == "x_hub"; });
      REQUIRE(x_hub != r.arrays.end());
      CHECK(x_hub->written_by == std::vector<std::string>{launches[0].entry});
      CHECK(x_hub->read_by == std::vector<std::string>{launches[1].entry});
      REQUIRE(r.kernels.size() == 3);
      CHECK(role(r.kernels[1], "x")->role == "x (input vector, gathered by column index)");
      CHECK(role(r.kernels[1], "x_hub")->role.find("read at loaded offsets") != std::string::npos);
      const auto gathers = [&](const std::string& array) {
        return std::any_of(r.kernels[1].accesses.begin(), r.kernels[1].accesses.end(),
                           [&](const auto& a) { return a.array == array && a.gather && !a.store; });
      };
      CHECK(gathers("x"));
      CHECK(gathers("x_hub"));
    }
  }
}

TEST_CASE("explain on a kernel file takes the roles from the generator's parameter names") {
  // A flattened unit as `spmvc emit --flatten` writes it: no launch list, every kernel reported.
  for (const auto& u : spmvc::test::every_golden_unit()) {
    if (u.name != "amb_seg16_c32_cb2_det_f32acc64" && u.name != "bro_ell_h32_s64_u2_pf_f32")
      continue;
    CAPTURE(u.name);
    spmvc::KernelSource file = spmvc::tooling::flatten(u.source);
    file.kernel_name.clear();
    file.params.clear();
    file.pre_launches.clear();
    file.post_launches.clear();
    spmvc::tooling::ExplainOptions options;
    options.arch = "";
    const auto r = spmvc::tooling::explain_unit(file, options);
    REQUIRE(r.kernels.size() == u.source.launches().size());
    const auto& main = r.kernels[u.source.pre_launches.size()];
    CHECK(main.kernel_name == u.source.kernel_name);
    REQUIRE(role(main, "x") != nullptr);
    CHECK(role(main, "x")->role == "x (input vector, gathered by column index)");
    if (u.name == "amb_seg16_c32_cb2_det_f32acc64") {
      // The first kernel writes partial sums, the reduction reads them and writes y.
      CHECK(role(main, "partial")->role == "partial sums (workspace) (array partial, written)");
      CHECK(role(r.kernels.back(), "partial")->role.find("read") != std::string::npos);
    } else {
      CHECK(role(main, "symbols")->role.find("(array symbols, read") != std::string::npos);
      CHECK(role(main, "widths")->role.find("(array widths, read") != std::string::npos);
    }
  }
}
