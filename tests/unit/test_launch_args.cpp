// runtime::LaunchArgs: each kernel parameter's slot points at what its kind names, the scalars
// in the accumulation type, and a second bind (the next launch of a unit) rebinds every slot.
#include <doctest/doctest.h>

#include <vector>

#include "launch_args.hpp"

using namespace spmvc;
using Kind = KernelParam::Kind;

TEST_CASE("launch args: each slot points at what its parameter's kind names") {
  const std::vector<KernelParam> params = {
      {Kind::rows, "rows"}, {Kind::array, "row_ptr"}, {Kind::x, "x"}, {Kind::alpha, "alpha"},
      {Kind::array, "val"}, {Kind::beta, "beta"},     {Kind::y, "y"}, {Kind::cols, "cols"}};
  int row_ptr = 0, val = 0, x = 0, y = 0;
  const std::vector<const void*> arrays = {nullptr, &row_ptr, nullptr, nullptr,
                                           &val,    nullptr,  nullptr, nullptr};
  for (bool acc64 : {true, false}) {
    CAPTURE(acc64);
    runtime::LaunchArgs args(1000, 700, acc64, 2.5, -0.5);
    void** slots = args.bind(params, arrays, &x, &y);
    CHECK(*static_cast<long long*>(slots[0]) == 1000);
    CHECK(*static_cast<const void**>(slots[1]) == &row_ptr);
    CHECK(*static_cast<const void**>(slots[2]) == &x);
    CHECK(*static_cast<const void**>(slots[4]) == &val);
    CHECK(*static_cast<void**>(slots[6]) == &y);
    CHECK(*static_cast<long long*>(slots[7]) == 700);
    if (acc64) {
      CHECK(*static_cast<double*>(slots[3]) == 2.5);
      CHECK(*static_cast<double*>(slots[5]) == -0.5);
    } else {
      CHECK(*static_cast<float*>(slots[3]) == 2.5f);
      CHECK(*static_cast<float*>(slots[5]) == -0.5f);
    }
  }
}

TEST_CASE("launch args: the next launch's bind takes its own parameters and arrays") {
  runtime::LaunchArgs args(10, 10, true, 1.0, 0.0);
  int a = 0, b = 0, x = 0, y = 0;
  (void)args.bind({{Kind::array, "a"}, {Kind::y, "y"}}, {&a, nullptr}, &x, &y);
  // A second launch whose first parameter is y and second an array: both slots move.
  void** slots = args.bind({{Kind::y, "y"}, {Kind::array, "b"}}, {nullptr, &b}, &x, &y);
  CHECK(*static_cast<void**>(slots[0]) == &y);
  CHECK(*static_cast<const void**>(slots[1]) == &b);
}
