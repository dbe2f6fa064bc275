// Bad requests to reorder/ are InputErrors that name the ordering and say what is wrong.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/reorder.hpp"

namespace {

// The message of the InputError `f` throws, or a note that it threw none.
template <class F>
std::string input_error_of(F&& f) {
  try {
    f();
  } catch (const spmvc::InputError& e) {
    return e.what();
  }
  return "<no InputError>";
}

}  // namespace

TEST_CASE("symmetric orderings refuse a rectangular matrix") {
  const spmvc::CsrMatrix a = spmvc::gen::from_spec("random:nrows=100,ncols=120,per_row=3");
  for (const std::string name : {"rcm", "amd", "metis"}) {
    CHECK(input_error_of([&] { spmvc::compute_ordering(a, name); }) ==
          name + ": matrix is 100x120, not square (this ordering renames rows and columns alike)");
  }
}

TEST_CASE("an unknown ordering lists the known ones") {
  const spmvc::CsrMatrix a = spmvc::gen::from_spec("stencil2d:n=4");
  CHECK(input_error_of([&] { spmvc::compute_ordering(a, "nd"); }) ==
        "reorder: unknown ordering 'nd' (known: none, rcm, amd, metis, d, dset, bar, sort, degree, "
        "dbg)");
}

TEST_CASE("bad options are named") {
  const spmvc::CsrMatrix a = spmvc::gen::from_spec("stencil2d:n=4");
  spmvc::ReorderOptions o;
  o.bar_slice_height = 0;
  CHECK(input_error_of([&] { spmvc::compute_ordering(a, "bar", o); }) ==
        "reorder options: bar_slice_height = 0: must be >= 1");
  o = {};
  o.dset_rows = -2;
  CHECK(input_error_of([&] { spmvc::compute_ordering(a, "dset", o); }) ==
        "reorder options: dset_rows = -2: must be >= 1");
  o = {};
  o.bar_symbol_bits = 65;
  CHECK(input_error_of([&] { spmvc::compute_ordering(a, "bar", o); }) ==
        "reorder options: bar_symbol_bits = 65: must be in 1..64");
}

TEST_CASE("permute refuses what is not a permutation of the rows") {
  const spmvc::CsrMatrix a = spmvc::gen::from_spec("stencil2d:n=2");  // 4x4
  spmvc::Ordering o;
  o.name = "mine";
  o.perm = {0, 1, 1, 3};
  CHECK(input_error_of([&] { spmvc::permute(a, o); }) ==
        "permute (mine): the ordering (4 entries) is not a permutation of the 4 rows");
  o.perm = {0, 1, 2};
  CHECK(input_error_of([&] { spmvc::permute(a, o); }) ==
        "permute (mine): the ordering (3 entries) is not a permutation of the 4 rows");
  const spmvc::CsrMatrix r = spmvc::gen::from_spec("random:nrows=4,ncols=6,per_row=2");
  o.kind = spmvc::PermutationKind::symmetric;
  o.perm = {3, 2, 1, 0};
  CHECK(input_error_of([&] { spmvc::permute(r, o); }) ==
        "permute (mine): a symmetric ordering needs a square matrix, not 4x6");
}
