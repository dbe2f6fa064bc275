// Value coding (compiler/formats/values): tables, unit values and fp32 storage of fp64 values
// round-trip exactly, refuse what they cannot hold with a message, shrink the encoded bytes by what
// the cost model says, and every coded format's host reference still equals plain CSR.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "formats/arrays.hpp"
#include "formats/format.hpp"
#include "formats/values/values.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "test_support.hpp"

using namespace spmvc;
using namespace spmvc::formats;

namespace {

// `per_row` nonzeros per row at scattered columns, values cycling through `distinct` values
// (0 distinct: every value 1, a pattern matrix).
CsrMatrix with_values(std::int64_t n, int per_row, std::int64_t distinct) {
  CsrMatrix a;
  a.nrows = n;
  a.ncols = n;
  std::int64_t k = 0;
  for (std::int64_t r = 0; r < n; ++r) {
    const int len = 1 + static_cast<int>((r * 7) % per_row);
    std::vector<std::int32_t> cols;
    for (int j = 0; j < len; ++j) cols.push_back(static_cast<std::int32_t>((r * 31 + j * 97) % n));
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    for (std::int32_t c : cols) {
      a.col_idx.push_back(c);
      a.values.push_back(distinct == 0 ? 1.0 : 1.5 + 0.25 * static_cast<double>(k++ % distinct));
    }
    a.row_ptr.push_back(a.nnz());
  }
  validate(a);
  return a;
}

double round_trip(const CsrMatrix& a, const FormatParams& params, Precision precision) {
  const FormatUnit& unit = find_format(format_of(params));
  const Encoded e = unit.encode(a, params, precision);
  const std::vector<double> x = codegen::test_vector(a.ncols, precision);
  std::vector<double> y(static_cast<std::size_t>(a.nrows));
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = 0.25 * static_cast<double>(i % 5) - 0.5;
  std::vector<double> ref = y;
  CsrMatrix rounded = a;
  if (precision != Precision::f64)
    for (double& v : rounded.values) v = static_cast<double>(static_cast<float>(v));
  unit.reference_spmv(e, params, x, y, 1.25, 0.5);
  compiler::csr_reference_spmv(rounded, x, ref, 1.25, 0.5);
  return compiler::relative_error(y, ref);
}

// Every format that codes its values, with the planner's parameters for `a`.
std::vector<FormatParams> coded_formats(const CsrMatrix& a, int coding) {
  // (the planner's parameters do not depend on the coding)
  const Profile profile = inspect(a, InspectDepth::rows);
  std::vector<FormatParams> out;
  for (const char* name : {"csr", "ell", "hyb", "bro_ell", "bro_coo", "bro_hyb", "csr_stream"}) {
    const FormatUnit& unit = find_format(name);
    for (const Candidate& c : unit.propose(profile, Precision::f64)) {
      if (!c.applicable) continue;
      out.push_back(with_value_coding(c.params, coding));
      break;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("value coding: an 8-bit table keeps every value exactly, padding included") {
  for (Precision precision : {Precision::f64, Precision::f32}) {
    const CsrMatrix a = with_values(500, 9, 37);
    std::vector<EncodedArray> arrays;
    arrays.push_back(value_array("values", precision, a.values, a.values.size() + 11));
    const std::vector<EncodedArray> plain = arrays;
    code_values(arrays, "values", kValuesTable8, a);
    REQUIRE(arrays.size() == 2);
    CHECK(arrays[0].name == "values");
    CHECK(arrays[0].type == ElemType::u8);
    CHECK(arrays[0].count() == plain[0].count());
    CHECK(arrays[1].name == "values_table");
    CHECK(arrays[1].count() == 38);  // 37 values and padding's 0
    Encoded e;
    e.precision = precision;
    e.arrays = arrays;
    const std::int64_t n = plain[0].count();
    if (precision == Precision::f64) {
      const std::vector<double> back = stored_values<double>(e, "values", kValuesTable8, n);
      CHECK(std::memcmp(back.data(), plain[0].bytes.data(), plain[0].bytes.size()) == 0);
    } else {
      const std::vector<float> back = stored_values<float>(e, "values", kValuesTable8, n);
      CHECK(std::memcmp(back.data(), plain[0].bytes.data(), plain[0].bytes.size()) == 0);
    }
  }
}

TEST_CASE("value coding: -0.0 and 0.0 are different table entries") {
  CsrMatrix a = with_values(4, 1, 2);
  a.values = {0.0, -0.0, 0.0, -0.0};
  std::vector<EncodedArray> arrays{value_array("values", Precision::f64, a.values, 4)};
  code_values(arrays, "values", kValuesTable8, a);
  CHECK(arrays[1].count() == 2);
  Encoded e;
  e.arrays = arrays;
  const std::vector<double> back = stored_values<double>(e, "values", kValuesTable8, 4);
  CHECK(std::signbit(back[1]));
  CHECK_FALSE(std::signbit(back[0]));
}

TEST_CASE("value coding: a table too small, or unit values on a weighted matrix, is refused") {
  const CsrMatrix a = with_values(2000, 8, 300);
  std::vector<EncodedArray> arrays{
      value_array("values", Precision::f64, a.values, a.values.size())};
  std::vector<EncodedArray> copy = arrays;
  CHECK_THROWS_WITH_AS(code_values(copy, "values", kValuesTable8, a),
                       doctest::Contains("more than 256 distinct values"), InputError);
  copy = arrays;
  CHECK_THROWS_WITH_AS(code_values(copy, "values", kValuesUnit, a),
                       doctest::Contains("values=1 (all ones) but nonzero 0 holds 1.5"),
                       InputError);
  copy = arrays;
  code_values(copy, "values", kValuesTable16, a);
  CHECK(copy[0].type == ElemType::u16);
  CHECK(copy[1].count() == 300);

  const Profile profile = inspect(a, InspectDepth::rows);
  CHECK(value_coding_problem(profile, kValuesTable8, Precision::f64).value() ==
        "values=2 holds at most 256 distinct values (with padding's 0); the matrix has 300");
  CHECK(value_coding_problem(profile, kValuesUnit, Precision::f64).has_value());
  CHECK_FALSE(value_coding_problem(profile, kValuesTable16, Precision::f64).has_value());
  CHECK(value_coding_problem(profile, 7, Precision::f64).value().find("not a value coding") !=
        std::string::npos);
  CHECK(best_value_coding(profile, Precision::f64) == kValuesTable16);
  // Forced through the planner, the refusal names the coding.
  compiler::PlanOptions options;
  options.format = "csr";
  options.params = FormatParams{CsrParams{1, 1, 256, 1, true, false, kValuesTable8}};
  CHECK_THROWS_WITH_AS(compiler::make_plan(profile, options),
                       doctest::Contains("holds at most 256 distinct values"), InputError);
}

TEST_CASE("value coding: the inspector counts unit values and caps distinct ones at row depth") {
  const CsrMatrix pattern = with_values(1000, 6, 0);
  const Profile p = inspect(pattern, InspectDepth::rows);
  CHECK(p.unit_values == p.nnz);
  CHECK(p.distinct_values == 1);
  CHECK(best_value_coding(p, Precision::f64) == kValuesUnit);
  CHECK(p.fp32_exact_values == p.nnz);

  CsrMatrix many = with_values(40000, 8, 0);
  for (std::size_t i = 0; i < many.values.size(); ++i) many.values[i] = static_cast<double>(i);
  REQUIRE(many.nnz() > kDistinctValuesCap + 10);
  const Profile rows = inspect(many, InspectDepth::rows);
  CHECK(rows.distinct_values == kDistinctValuesCap + 1);
  CHECK(rows.unit_values == 1);  // the value 1.0 at index 1
  // Integers below 2^24 are exact in fp32: fp64 stores them as fp32, fp32 has nothing to gain.
  CHECK(rows.fp32_exact_values == rows.nnz);
  CHECK(best_value_coding(rows, Precision::f64) == kValuesF32);
  CHECK(best_value_coding(rows, Precision::f32) == kValuesPlain);
  many.values[17] = 0.1;  // not exact in fp32
  const Profile inexact = inspect(many, InspectDepth::rows);
  CHECK(inexact.fp32_exact_values == inexact.nnz - 1);
  CHECK(best_value_coding(inexact, Precision::f64) == kValuesPlain);
  const Profile full = inspect(many, InspectDepth::full);
  CHECK(full.distinct_values == many.nnz());
}

TEST_CASE("value coding: every coded format's reference equals plain CSR") {
  struct Case {
    const char* what;
    CsrMatrix a;
    int coding;
  };
  std::vector<Case> cases;
  cases.push_back({"pattern", with_values(3000, 20, 0), kValuesUnit});
  cases.push_back({"37 values", with_values(3000, 20, 37), kValuesTable8});
  cases.push_back({"1000 values", with_values(3000, 20, 1000), kValuesTable16});
  cases.push_back({"stencil", gen::stencil_2d_5pt(60, 60), kValuesTable8});
  for (const Case& c : cases) {
    const std::vector<FormatParams> grid = coded_formats(c.a, c.coding);
    REQUIRE(grid.size() == 7);
    for (const FormatParams& params : grid) {
      for (Precision precision : {Precision::f64, Precision::f32}) {
        CAPTURE(c.what);
        CAPTURE(describe(params));
        CAPTURE(to_string(precision));
        CHECK(round_trip(c.a, params, precision) <= (precision == Precision::f64 ? 1e-14 : 1e-6));
      }
    }
  }
}

TEST_CASE("value coding: the encoding shrinks by the bytes the cost model removes") {
  const CsrMatrix a = with_values(20000, 16, 0);
  const Profile profile = inspect(a, InspectDepth::rows);
  for (int coding : {kValuesUnit, kValuesTable8, kValuesTable16, kValuesF32}) {
    for (const FormatParams& coded : coded_formats(a, coding)) {
      const FormatParams plain = with_value_coding(coded, kValuesPlain);
      const FormatUnit& unit = find_format(format_of(coded));
      CAPTURE(describe(coded));
      const double saved_encoded =
          static_cast<double>(unit.encode(a, plain, Precision::f64).total_bytes() -
                              unit.encode(a, coded, Precision::f64).total_bytes());
      const double saved_model = unit.cost(profile, plain, Precision::f64).matrix_bytes -
                                 unit.cost(profile, coded, Precision::f64).matrix_bytes;
      CHECK(saved_encoded > 0);
      if (format_of(coded) == "ell") {
        // ell's model counts the sectors its lanes fetch, not the padding slots stored.
        CHECK(saved_model > 0);
        CHECK(saved_model <= saved_encoded);
      } else {
        // The others count stored slots, estimated from the profile.
        CHECK(saved_model == doctest::Approx(saved_encoded).epsilon(0.15));
      }
    }
  }
}

TEST_CASE("value coding: the planner proposes the coded twin and names it in the kernel") {
  const CsrMatrix a = with_values(5000, 12, 0);
  compiler::PlanOptions options;
  const Plan plan = compiler::make_plan(inspect(a, InspectDepth::rows), options);
  CAPTURE(to_report(plan));
  CHECK(plan.why.find("every value is 1") != std::string::npos);
  int plain = 0, coded = 0;
  for (const Candidate& c : plan.candidates) {
    if (!c.applicable) continue;
    if (c.label.find("val=1") != std::string::npos)
      ++coded;
    else if (format_of(c.params) == "csr")
      ++plain;
  }
  CHECK(coded > 0);
  CHECK(plain > 0);

  const FormatUnit& csr = find_format("csr");
  const FormatParams params = CsrParams{2, 2, 256, 1, true, false, kValuesUnit};
  const Encoded e = csr.encode(a, params, Precision::f64);
  const KernelSource k = csr.generate(e, params, "");
  CHECK(k.kernel_name == "spmv_csr_t2_v2_b256_u1_ones_f64");
  CHECK(k.source.find("spmvc::UnitValues<Value>{}") != std::string::npos);
  for (const KernelParam& p : k.params) CHECK(p.name != "values");
  for (const EncodedArray& arr : e.arrays) CHECK(arr.name != "values");

  const CsrMatrix t = with_values(5000, 12, 9);
  const FormatParams table = CsrParams{1, 4, 256, 1, true, false, kValuesTable8};
  const Encoded te = csr.encode(t, table, Precision::f32);
  const KernelSource tk = csr.generate(te, table, "");
  CHECK(tk.source.find("spmvc::TableValues<Value, unsigned char>{values, values_table}") !=
        std::string::npos);
  std::vector<std::string> names;
  for (const KernelParam& p : tk.params) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"nrows", "row_ptr", "col_idx", "values", "values_table",
                                          "x", "y", "alpha", "beta"});
}

TEST_CASE("value coding: fp64 values exact in fp32 are stored as fp32 and read back bit for bit") {
  CsrMatrix a = with_values(3000, 9, 70000);
  a.values[5] = -0.0;
  a.values[6] = std::ldexp(1.0, -149);  // fp32's smallest subnormal
  a.values[7] = 3.0e38;
  REQUIRE(static_cast<double>(static_cast<float>(3.0e38)) != 3.0e38);
  a.values[7] = static_cast<double>(static_cast<float>(3.0e38));
  std::vector<EncodedArray> arrays{value_array("values", Precision::f64, a.values, a.nnz() + 5)};
  const std::vector<EncodedArray> plain = arrays;
  code_values(arrays, "values", kValuesF32, a);
  REQUIRE(arrays.size() == 1);
  CHECK(arrays[0].name == "values");
  CHECK(arrays[0].type == ElemType::f32);
  CHECK(arrays[0].count() == plain[0].count());
  Encoded e;
  e.arrays = arrays;
  const std::vector<double> back = stored_values<double>(e, "values", kValuesF32, plain[0].count());
  CHECK(std::memcmp(back.data(), plain[0].bytes.data(), plain[0].bytes.size()) == 0);
  CHECK(std::signbit(back[5]));

  // append_values builds the same array without the fp64 one.
  std::vector<EncodedArray> appended;
  append_values(appended, "values", Precision::f64, a.values, a.values.size() + 5, kValuesF32, a);
  REQUIRE(appended.size() == 1);
  CHECK(appended[0].bytes == arrays[0].bytes);

  // One value fp32 cannot hold is refused, by index; so is an fp32 array.
  CsrMatrix b = a;
  b.values[1234] = 0.1;
  std::vector<EncodedArray> bad{value_array("values", Precision::f64, b.values, b.values.size())};
  CHECK_THROWS_WITH_AS(code_values(bad, "values", kValuesF32, b),
                       doctest::Contains("nonzero 1234 holds 0.10000000000000001"), InputError);
  std::vector<EncodedArray> out;
  CHECK_THROWS_WITH_AS(
      append_values(out, "values", Precision::f64, b.values, b.values.size(), kValuesF32, b),
      doctest::Contains("nonzero 1234"), InputError);
  std::vector<EncodedArray> f32{value_array("values", Precision::f32, a.values, a.values.size())};
  CHECK_THROWS_AS(code_values(f32, "values", kValuesF32, a), InputError);

  const Profile profile = inspect(a, InspectDepth::rows);
  CHECK_FALSE(value_coding_problem(profile, kValuesF32, Precision::f64).has_value());
  CHECK(value_coding_problem(profile, kValuesF32, Precision::f32).value() ==
        "values=4 stores fp64 values as fp32; in f32 they are fp32 already");
  CHECK(value_coding_problem(profile, kValuesF32, Precision::f32_acc64).has_value());
  CHECK(value_coding_problem(inspect(b, InspectDepth::rows), kValuesF32, Precision::f64).value() ==
        fmt::format("values=4 needs every value exact in fp32; 1 of {} are not", b.nnz()));
}

TEST_CASE("value coding: fp32 storage, every coded format's reference equals plain CSR in fp64") {
  // 70000 distinct values: too many for a table, each exact in fp32.
  const CsrMatrix a = with_values(8000, 20, 100000);
  REQUIRE(a.nnz() > 65536);
  const std::vector<FormatParams> grid = coded_formats(a, kValuesF32);
  REQUIRE(grid.size() == 7);
  for (const FormatParams& params : grid) {
    CAPTURE(describe(params));
    CHECK(round_trip(a, params, Precision::f64) <= 1e-14);
  }
  // The planner proposes the fp32 twins, and the kernel reads them through NarrowValues.
  const Profile profile = inspect(a, InspectDepth::rows);
  CHECK(best_value_coding(profile, Precision::f64) == kValuesF32);
  const std::vector<Candidate> proposed = find_format("csr").propose(profile, Precision::f64);
  const auto f32_twins = std::count_if(proposed.begin(), proposed.end(), [](const Candidate& c) {
    return c.applicable && value_coding_of(c.params) == kValuesF32;
  });
  CHECK(f32_twins > 0);
  const FormatUnit& csr = find_format("csr");
  const FormatParams params = CsrParams{1, 4, 256, 1, true, false, kValuesF32};
  const Encoded e = csr.encode(a, params, Precision::f64);
  const KernelSource k = csr.generate(e, params, "");
  CHECK(k.kernel_name == "spmv_csr_t1_v4_b256_u1_f32v_f64");
  CHECK(k.source.find("spmvc::NarrowValues<Value, float>{values}") != std::string::npos);
  CHECK(k.source.find("const float* __restrict__ values") != std::string::npos);
}

TEST_CASE("value coding: a 16-bit table that fp32 storage could replace gets both twins") {
  // 1000 distinct values, each exact in fp32: both codings apply in fp64, the model weighs them.
  const Profile profile = inspect(with_values(5000, 12, 1000), InspectDepth::rows);
  CHECK(best_value_coding(profile, Precision::f64) == kValuesTable16);
  std::vector<int> codings;
  for (const Candidate& c : find_format("csr_stream").propose(profile, Precision::f64))
    if (c.applicable) codings.push_back(value_coding_of(c.params));
  CHECK(std::count(codings.begin(), codings.end(), kValuesTable16) > 0);
  CHECK(std::count(codings.begin(), codings.end(), kValuesF32) > 0);
  CHECK(std::count(codings.begin(), codings.end(), kValuesF32) ==
        std::count(codings.begin(), codings.end(), kValuesPlain));
  // In fp32 only the table twin.
  codings.clear();
  for (const Candidate& c : find_format("csr_stream").propose(profile, Precision::f32))
    if (c.applicable) codings.push_back(value_coding_of(c.params));
  CHECK(std::count(codings.begin(), codings.end(), kValuesF32) == 0);
}
