// New values for the same pattern (compiler/value_update.hpp) and deterministic plans: the traced
// gather rebuilds every format's value arrays exactly as a fresh encode of the new values does
// (reordered matrices included), the table coding of new values decodes to them, the checks say
// when new values no longer fit a plan's coding, and Options::deterministic leaves only
// candidates without floating-point atomics.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>

#include <fmt/format.h>

#include "block_plans.hpp"
#include "formats/arrays.hpp"
#include "formats/csr_stream/csr_stream_format.hpp"
#include "formats/format.hpp"
#include "formats/values/values.hpp"
#include "spmvc/build.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/value_update.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;
using namespace spmvc::formats;

namespace {

// `a` with new values: each nonzero's own, so any slot that gathers the wrong one shows.
CsrMatrix renewed(const CsrMatrix& a) {
  CsrMatrix b = a;
  for (std::size_t k = 0; k < b.values.size(); ++k)
    b.values[k] = 0.5 + static_cast<double>(k % 1000) / 64.0 + static_cast<double>(k / 1000);
  return b;
}

// `b` with each entry above the diagonal set to its mirror's value (a structurally symmetric
// pattern; entries without a mirror are kept).
CsrMatrix mirrored(const CsrMatrix& b) {
  CsrMatrix m = b;
  for (std::int64_t r = 0; r < m.nrows; ++r) {
    for (std::int64_t k = m.row_ptr[r]; k < m.row_ptr[r + 1]; ++k) {
      const std::int64_t c = m.col_idx[k];
      if (c <= r || c >= m.nrows) continue;
      const auto first = m.col_idx.begin() + m.row_ptr[c];
      const auto last = m.col_idx.begin() + m.row_ptr[c + 1];
      const auto at = std::lower_bound(first, last, static_cast<std::int32_t>(r));
      if (at != last && *at == r) m.values[k] = m.values[at - m.col_idx.begin()];
    }
  }
  return m;
}

bool is_value_array(const EncodedArray& arr) {
  return !arr.scratch && (arr.type == ElemType::f64 || arr.type == ElemType::f32);
}

// Checks that the gathers of `plan` (plain values) applied to `fresh_matrix`'s values give the
// value arrays of `fresh` byte for byte, and that every other array of `fresh` equals `old`'s.
// Returns the number of value arrays compared.
int check_against_encode(const std::vector<compiler::ValueGather>& gathers, const Encoded& old,
                         const Encoded& fresh, std::span<const double> values, Precision p,
                         const std::string& what) {
  int compared = 0;
  REQUIRE(old.arrays.size() == fresh.arrays.size());
  for (std::size_t i = 0; i < fresh.arrays.size(); ++i) {
    const EncodedArray& arr = fresh.arrays[i];
    INFO(what << ", array " << arr.name);
    if (!is_value_array(arr)) {
      CHECK(arr.bytes == old.arrays[i].bytes);  // the structure does not depend on the values
      continue;
    }
    const auto g =
        std::find_if(gathers.begin(), gathers.end(),
                     [&](const compiler::ValueGather& vg) { return vg.array == arr.name; });
    REQUIRE(g != gathers.end());
    const EncodedArray rebuilt = compiler::gather_values(*g, values, p);
    CHECK(rebuilt.type == arr.type);
    CHECK(rebuilt.bytes == arr.bytes);
    ++compared;
  }
  CHECK(static_cast<std::size_t>(compared) == gathers.size());
  return compared;
}

}  // namespace

TEST_CASE("value gathers rebuild every format's value arrays as a fresh encode does") {
  std::set<std::string> formats_checked;
  std::set<std::string> halves_checked;  // formats whose symmetric half took part
  int candidates = 0;
  for (const char* spec : {"stencil2d:n=16", "random:n=300,per_row=12", "elasticity:n=3",
                           "rmat:scale=8,ef=8", "banded:n=200,hbw=3"}) {
    const CsrMatrix a = gen::from_spec(spec);
    const CsrMatrix b = renewed(a);
    const CsrMatrix symmetric_b = mirrored(b);
    const Profile profile = inspect(a);
    for (const Precision p : {Precision::f64, Precision::f32}) {
      for (const FormatUnit* unit : registry()) {
        for (const Candidate& c : unit->propose(profile, p)) {
          if (!c.applicable && !c.representable) continue;
          if (unit->cannot_implement(profile, c.params, p)) continue;
          if (value_coding_of(c.params) != kValuesPlain) continue;  // the coded twins below
          Plan plan;
          plan.format = c.format;
          plan.params = c.params;
          plan.precision = p;
          const std::string what =
              fmt::format("{} {} [{}] {}", spec, c.format, c.label, to_string(p));
          const auto gathers = compiler::value_gathers(a, nullptr, plan);
          const Encoded old = unit->encode(a, c.params, p);
          // A symmetric half takes symmetric new values only (dia and bcsr S=1).
          const CsrMatrix& renewal = compiler::stores_symmetric_half(plan) ? symmetric_b : b;
          const Encoded fresh = unit->encode(renewal, c.params, p);
          CHECK_MESSAGE(check_against_encode(gathers, old, fresh, renewal.values, p, what) > 0,
                        what);
          formats_checked.insert(c.format);
          if (compiler::stores_symmetric_half(plan)) halves_checked.insert(c.format);
          ++candidates;
        }
      }
    }
  }
  // Every registered format took part.
  for (const FormatUnit* unit : registry()) CHECK(formats_checked.count(std::string(unit->name())));
  CHECK(halves_checked == std::set<std::string>{"bcsr", "dia"});
  CHECK(candidates > 40);
}

TEST_CASE("value gathers rebuild csr_stream's sorted tiles, stored in column order") {
  // Sorted tiles are not proposed (forced only): each tile's values sit in its column order,
  // which the gathers must follow as a fresh encode does.
  const CsrStreamFormat unit;
  int compared = 0;
  for (const char* spec : {"rmat:scale=10,ef=8", "random:n=3000,per_row=12"}) {
    const CsrMatrix a = gen::from_spec(spec);
    const CsrMatrix b = renewed(a);
    for (const Precision p : {Precision::f64, Precision::f32}) {
      for (const bool narrow : {false, true}) {
        CsrStreamParams params;
        params.sorted = true;
        params.narrow_columns = narrow;
        Plan plan;
        plan.format = "csr_stream";
        plan.params = params;
        plan.precision = p;
        const std::string what = fmt::format("{} c16={} {}", spec, narrow, to_string(p));
        const auto gathers = compiler::value_gathers(a, nullptr, plan);
        compared += check_against_encode(gathers, unit.encode(a, params, p),
                                         unit.encode(b, params, p), b.values, p, what);
      }
    }
  }
  CHECK(compared == 2 * 2 * 2);
}

TEST_CASE("value gathers follow the build's ordering") {
  const CsrMatrix a = gen::from_spec("random:n=400,per_row=9");
  const CsrMatrix b = renewed(a);
  struct Case {
    const char* reorder;
    bool renumber;
    const char* format;
    bool keep_rows = false;
  };
  for (const Case& c :
       {Case{"rcm", true, "csr"}, Case{"rcm", false, "ell"}, Case{"sort", false, "sell"},
        Case{"amd", true, "bro_ell"}, Case{"rcm", true, "csr", true}}) {
    CAPTURE(c.keep_rows);
    Options o;
    o.reorder = c.reorder;
    o.renumber_columns = c.renumber;
    o.keep_row_order = c.keep_rows;
    o.format = c.format;
    o.value_coding = false;
    const Build old = build(a, o);
    REQUIRE(old.map.has_value());
    const Build fresh = build(b, o);
    REQUIRE(describe(fresh.plan.params) == describe(old.plan.params));
    const auto gathers = compiler::value_gathers(a, &*old.map, old.plan);
    for (const auto& g : gathers) CHECK_FALSE(g.identity);
    CHECK(check_against_encode(gathers, old.encoded, fresh.encoded, b.values, o.precision,
                               fmt::format("{} {}", c.reorder, c.format)) > 0);
  }
}

TEST_CASE("value gathers follow a build whose read columns and rows with entries lead") {
  // Only every fourth column is read: in the caller's order the build numbers those first
  // (RowColumnMap::packed_columns), which a format whose layout follows the columns (bcsr's
  // blocks) sees as well as the value arrays.
  // Every fifth row is emptied too: its rows with entries are numbered first as well.
  const CsrMatrix a = test::sparse_directed(gen::from_spec("random:n=600,per_row=6"), 4, 5);
  const CsrMatrix b = renewed(a);
  for (const std::string format : {"csr", "csr_stream", "bro_ell", "ell", "bcsr"}) {
    CAPTURE(format);
    Options o;
    o.reorder = "rcm";
    o.renumber_columns = true;
    o.format = format;
    o.value_coding = false;
    // 2 x 2 blocks: which entries share a block depends on the columns' numbers.
    if (format == "bcsr") o.params = test::bcsr_params(2, 2, 2);
    const Build old = build(a, o);
    REQUIRE(old.map.has_value());
    CHECK(old.map->packed_columns > 0);
    CHECK(old.map->packed_rows == 480);
    const Build fresh = build(b, o);
    REQUIRE(describe(fresh.plan.params) == describe(old.plan.params));
    const auto gathers = compiler::value_gathers(a, &*old.map, old.plan);
    CHECK(check_against_encode(gathers, old.encoded, fresh.encoded, b.values, o.precision,
                               fmt::format("packed {}", format)) > 0);
  }
}

TEST_CASE("an unreordered csr plan gathers by identity") {
  const CsrMatrix a = gen::from_spec("stencil2d:n=8");
  Plan plan;
  plan.format = "csr";
  CsrParams p;
  p.threads_per_row = 1;
  p.vector_width = 1;
  plan.params = p;
  const auto gathers = compiler::value_gathers(a, nullptr, plan);
  REQUIRE(gathers.size() == 1);
  CHECK(gathers[0].identity == (static_cast<std::int64_t>(gathers[0].source.size()) == a.nnz()));
  // The pattern alone (what an operator keeps) traces the same gathers.
  CsrMatrix pattern = a;
  pattern.values.clear();
  const auto from_pattern = compiler::value_gathers(pattern, nullptr, plan);
  REQUIRE(from_pattern.size() == 1);
  CHECK(from_pattern[0].source == gathers[0].source);
  // hyb splits the values into two arrays, neither an identity.
  Plan hyb;
  hyb.format = "hyb";
  HybParams h;
  h.width = 3;
  hyb.params = h;
  const auto split = compiler::value_gathers(gen::from_spec("rmat:scale=7,ef=8"), nullptr, hyb);
  CHECK(split.size() == 2);
}

TEST_CASE("table codes of new values decode to them at every stored slot") {
  CsrMatrix a = gen::from_spec("stencil2d:n=20");
  for (std::size_t k = 0; k < a.values.size(); ++k) a.values[k] = 1.0 + static_cast<double>(k % 7);
  CsrMatrix b = a;
  for (std::size_t k = 0; k < b.values.size(); ++k)
    b.values[k] = -2.5 * static_cast<double>(k % 200);
  const Profile profile = inspect(a);
  for (const Precision p : {Precision::f64, Precision::f32}) {
    for (const char* format : {"csr", "ell", "hyb", "bro_ell", "bro_coo", "csr_stream"}) {
      const FormatUnit& unit = find_format(format);
      for (const Candidate& c : unit.propose(profile, p)) {
        const int coding = value_coding_of(c.params);
        if (coding != kValuesTable8 || !c.applicable) continue;
        Plan plan;
        plan.format = c.format;
        plan.params = c.params;
        plan.precision = p;
        INFO(std::string(format) << " [" << c.label << "] " << to_string(p));
        const compiler::TableCodes tc = compiler::table_codes(coding, b.values, p);
        CHECK(tc.codes.count() == b.nnz());
        const Encoded fresh = unit.encode(b, c.params, p);  // 200 distinct values fit 8 bits
        for (const auto& g : compiler::value_gathers(a, nullptr, plan)) {
          const auto slots = static_cast<std::int64_t>(g.source.size());
          std::vector<double> stored;
          if (p == Precision::f64) {
            stored = stored_values<double>(fresh, g.array, coding, slots);
          } else {
            const std::vector<float> narrow = stored_values<float>(fresh, g.array, coding, slots);
            stored.assign(narrow.begin(), narrow.end());
          }
          const auto* codes = typed<std::uint8_t>(tc.codes);
          for (std::size_t s = 0; s < g.source.size(); ++s) {
            if (g.source[s] < 0) continue;  // padding: masked by the kernels, any code
            const std::uint8_t code = codes[g.source[s]];
            const double decoded = p == Precision::f64
                                       ? typed<double>(tc.table)[code]
                                       : static_cast<double>(typed<float>(tc.table)[code]);
            REQUIRE(decoded == stored[s]);
          }
        }
      }
    }
  }
}

TEST_CASE("new values that do not fit the plan's value coding are named") {
  const std::vector<double> ones(10, 1.0);
  std::vector<double> other = ones;
  other[7] = 2.0;
  CHECK_FALSE(compiler::value_update_problem(kValuesUnit, ones, Precision::f64));
  const auto unit = compiler::value_update_problem(kValuesUnit, other, Precision::f64);
  REQUIRE(unit);
  CHECK(unit->find("nonzero 7 is now 2") != std::string::npos);

  std::vector<double> tenth = ones;
  tenth[3] = 0.1;
  const auto f32 = compiler::value_update_problem(kValuesF32, tenth, Precision::f64);
  REQUIRE(f32);
  CHECK(f32->find("nonzero 3") != std::string::npos);
  CHECK(f32->find("fp32 cannot hold exactly") != std::string::npos);
  CHECK_FALSE(compiler::value_update_problem(kValuesF32, other, Precision::f64));

  std::vector<double> many(300);
  for (std::size_t k = 0; k < many.size(); ++k) many[k] = static_cast<double>(k);
  CHECK_FALSE(compiler::value_update_problem(kValuesTable16, many, Precision::f64));
  CHECK_FALSE(compiler::value_update_problem(kValuesPlain, many, Precision::f64));
  const auto table = compiler::value_update_problem(kValuesTable8, many, Precision::f64);
  REQUIRE(table);
  CHECK(table->find("8-bit value table holds 256") != std::string::npos);
  CHECK_THROWS_AS((void)compiler::table_codes(kValuesTable8, many, Precision::f64), InputError);
  // 256 distinct values fit: the new values need no padding entry (padding codes are masked).
  many.resize(256);
  CHECK_FALSE(compiler::value_update_problem(kValuesTable8, many, Precision::f64));
  // fp32 operators count distinct fp32 values: 1 and 1 + 2^-40 are one value there.
  const std::vector<double> close = {1.0, 1.0 + 0x1p-40};
  const compiler::TableCodes tc32 = compiler::table_codes(kValuesTable8, close, Precision::f32);
  CHECK(tc32.table.count() == 1);
  const compiler::TableCodes tc64 = compiler::table_codes(kValuesTable8, close, Precision::f64);
  CHECK(tc64.table.count() == 2);
}

TEST_CASE("deterministic plans reject every candidate with floating-point atomics") {
  std::set<std::string> rejected_formats;
  for (const char* spec : {"rmat:scale=10,ef=16", "random:n=2000,per_row=20", "stencil27:n=12"}) {
    const Profile profile = inspect(gen::from_spec(spec));
    compiler::PlanOptions o;
    o.deterministic = true;
    const Plan plan = compiler::make_plan(profile, o);
    CHECK_FALSE(find_format(plan.format).nondeterminism(plan.params));
    for (const Candidate& c : plan.candidates) {
      const auto why = find_format(c.format).nondeterminism(c.params);
      INFO(spec << ": " << c.format << " [" << c.label << "]");
      if (!why) continue;
      CHECK_FALSE(c.applicable);
      // A candidate rejected for another reason first keeps that reason.
      if (c.reason.starts_with("deterministic mode: ")) {
        CHECK_FALSE(c.representable);
        CHECK(c.reason == "deterministic mode: " + *why);
        rejected_formats.insert(c.format);
      }
    }
    // amb's fixed-order variant stays.
    CHECK(std::any_of(plan.candidates.begin(), plan.candidates.end(), [](const Candidate& c) {
      return c.format == "amb" && std::get<AmbParams>(c.params).deterministic &&
             !find_format("amb").nondeterminism(c.params);
    }));
    // The same matrix without the option keeps the atomic candidates.
    compiler::PlanOptions free;
    const Plan any = compiler::make_plan(profile, free);
    CHECK(std::any_of(any.candidates.begin(), any.candidates.end(), [](const Candidate& c) {
      return c.applicable && find_format(c.format).nondeterminism(c.params).has_value();
    }));
  }
  CHECK(rejected_formats == std::set<std::string>{"amb", "bro_coo", "bro_hyb", "hyb"});
}

TEST_CASE("a nondeterministic format forced under deterministic mode is an error naming why") {
  const Profile profile = inspect(gen::from_spec("rmat:scale=9,ef=8"));
  compiler::PlanOptions o;
  o.deterministic = true;
  o.format = "hyb";
  try {
    (void)compiler::make_plan(profile, o);
    FAIL("hyb planned under deterministic mode");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("deterministic mode: its COO part") != std::string::npos);
  }
  o.format = "auto";
  o.params = BroCooParams{};
  try {
    (void)compiler::make_plan(profile, o);
    FAIL("forced bro_coo parameters planned under deterministic mode");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("bro_coo [") != std::string::npos);
    CHECK(std::string(e.what()).find("is not deterministic") != std::string::npos);
  }
  // amb with det=1 is allowed.
  AmbParams det;
  det.deterministic = true;
  o.params = det;
  CHECK(compiler::make_plan(profile, o).format == "amb");
}

TEST_CASE("re-planning for new values frees a forced value coding and says so") {
  CsrParams p;
  p.threads_per_row = 4;
  p.values = kValuesTable8;
  Options o;
  o.params.emplace(p);
  std::string note;
  const Options plain = compiler::replan_options(o, &note);
  REQUIRE(plain.params);
  CHECK(value_coding_of(*plain.params) == kValuesPlain);
  CHECK(std::get<CsrParams>(*plain.params).threads_per_row == 4);
  CHECK(note.find("now store plain values") != std::string::npos);
  o.params.reset();
  o.csr = p;
  CHECK(compiler::replan_options(o, &note).csr->values == kValuesPlain);
  CHECK_FALSE(note.empty());
  Options free;
  (void)compiler::replan_options(free, &note);
  CHECK(note.empty());
}
