// The `bcsr` format's parameters. Public (spmvc::Options::params): CMake stages this file as
// spmvc/params/bcsr.hpp, and include/spmvc/plan.hpp gathers it into FormatParams. It includes
// only the standard library and other staged parameter headers.
#pragma once

#include <string_view>

namespace spmvc {

/// `bcsr`: plain block CSR with aligned r x c dense blocks; T lanes share a block row. With
/// `symmetric`, a matrix equal to its transpose (square blocks, r == c) stores its blocks on and
/// below the diagonal only, and reads each block above it as the transpose of its stored mirror:
/// half the values.
struct BcsrParams {
  static constexpr std::string_view kFormat = "bcsr";
  int block_rows = 3;       ///< r: 1..8
  int block_cols = 3;       ///< c: 1..8
  int threads_per_row = 1;  ///< T: lanes per block row (power of two, 1..32)
  int block_size = 256;
  bool symmetric = false;  ///< S: the blocks on and below the diagonal stored, the rest mirrored
  static void fields(auto& p, auto&& f) {
    f("block_rows", "r", p.block_rows);
    f("block_cols", "c", p.block_cols);
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
    f("symmetric", "S", p.symmetric);
  }
};

}  // namespace spmvc
