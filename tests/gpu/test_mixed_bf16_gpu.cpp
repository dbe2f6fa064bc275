// Mixed precision bf16 on the device: every coded format of an fp32 operator with its values
// stored as bf16 words, on every public matrix with at least 10k nonzeros, within the plan's
// bound and, where the values are inexact in bf16, not bitwise the full-precision y (a file of
// its own so that scripts/gpu/test-shards runs it beside the f32 mode). Skipped without a GPU.
#include <doctest/doctest.h>

#include "mixed_support.hpp"

using namespace spmvc;
using test::have_device;

TEST_CASE("gpu: mixed precision bf16, every coded format on the public matrices") {
  if (!have_device()) return;
  test::mixed::public_matrices_in(Precision::f32, MixedPrecision::bf16);
}
