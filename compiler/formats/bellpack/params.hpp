// The `bellpack` format's parameters. Public (spmvc::Options::params): CMake stages this file as
// spmvc/params/bellpack.hpp, and include/spmvc/plan.hpp gathers it into FormatParams. It includes
// only the standard library and other staged parameter headers.
#pragma once

#include <string_view>

namespace spmvc {

/// `bellpack`: r x c dense blocks, block rows sorted by block count and sliced ELL-style (Choi).
/// One thread per matrix row; y written through the sort's permutation.
struct BellpackParams {
  static constexpr std::string_view kFormat = "bellpack";
  int block_rows = 3;     ///< r: 1..8
  int block_cols = 3;     ///< c: 1..8
  int slice_height = 32;  ///< C: block rows per slice (each slice padded to its widest)
  int block_size = 256;
  static void fields(auto& p, auto&& f) {
    f("block_rows", "r", p.block_rows);
    f("block_cols", "c", p.block_cols);
    f("slice_height", "C", p.slice_height);
    f("block_size", "b", p.block_size);
  }
};

}  // namespace spmvc
