// codegen::entry_signature: an entry point's C parameters follow its launch parameters one for
// one, typed from the encoded arrays and the precision.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "codegen/codegen.hpp"

using namespace spmvc;
using K = KernelParam::Kind;

namespace {

Encoded encoded_with(Precision precision) {
  Encoded e;
  e.precision = precision;
  e.arrays.push_back({"part_row_ptr", ElemType::i64, {}});
  e.arrays.push_back({"part_col16", ElemType::u16, {}});
  EncodedArray partial{"partial", ElemType::f64, {}};
  partial.scratch = true;
  e.arrays.push_back(std::move(partial));
  return e;
}

}  // namespace

TEST_CASE("entry_signature: one C parameter per launch parameter, in order") {
  const Encoded e = encoded_with(Precision::f32_acc64);
  const std::string sig = codegen::entry_signature("k",
                                                   {{K::rows, "nrows"},
                                                    {K::array, "part_row_ptr"},
                                                    {K::x, "x"},
                                                    {K::y, "y"},
                                                    {K::alpha, "alpha"},
                                                    {K::beta, "beta"}},
                                                   e, "kBlockSize", "part_");
  CHECK(sig ==
        "extern \"C\" __global__ void __launch_bounds__(kBlockSize)\n"
        "k(long long nrows, const long long* __restrict__ row_ptr, const float* __restrict__ x,\n"
        "    float* __restrict__ y, double alpha, double beta) {\n");
}

TEST_CASE("entry_signature: scratch arrays are writable, element types come from the arrays") {
  const Encoded e = encoded_with(Precision::f64);
  const std::string sig = codegen::entry_signature(
      "k", {{K::cols, "ncols"}, {K::array, "part_col16"}, {K::array, "partial"}}, e, "256");
  CHECK(sig ==
        "extern \"C\" __global__ void __launch_bounds__(256)\n"
        "k(long long ncols, const unsigned short* __restrict__ part_col16, "
        "double* __restrict__ partial) {\n");
}

TEST_CASE("entry_signature: long parameter lists wrap at 100 columns") {
  const Encoded e = encoded_with(Precision::f64);
  std::vector<KernelParam> params;
  for (int i = 0; i < 12; ++i) params.push_back({K::array, "part_row_ptr"});
  const std::string sig = codegen::entry_signature("spmv_long_name", params, e, "kBlockSize");
  std::istringstream lines(sig);
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) CHECK(line.size() <= 100);
  CHECK(count > 3);
  CHECK(sig.ends_with(") {\n"));
}

TEST_CASE("entry_signature: an array the unit does not have is an internal error") {
  const Encoded e = encoded_with(Precision::f64);
  CHECK_THROWS(codegen::entry_signature("k", {{K::array, "missing"}}, e, "256"));
}
