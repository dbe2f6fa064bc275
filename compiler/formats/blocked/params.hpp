// The `blocked` format's parameters. Public (spmvc::Options::params): CMake stages this file as
// spmvc/params/blocked.hpp, and include/spmvc/plan.hpp gathers it into FormatParams. It includes
// only the standard library and other staged parameter headers.
#pragma once

#include <string_view>

namespace spmvc {

/// `blocked`: Baskaran–Bordawekar's block storage (section 4.2): constant br x bc blocks whose
/// start rows are multiples of br and start columns multiples of A; each row of a block stores
/// the prefix up to its last nonzero, padded to a multiple of A; x of a block is staged in shared
/// memory once and reused by the block's rows. One warp per block row.
struct BlockedParams {
  static constexpr std::string_view kFormat = "blocked";
  int block_rows = 4;   ///< br: 1..8
  int block_cols = 64;  ///< bc: a multiple of col_align, 16..256 (the paper: a multiple of 16)
  int col_align = 4;    ///< A: start-column alignment and row padding (paper: 16, half a warp)
  int block_size = 256;
  static void fields(auto& p, auto&& f) {
    f("block_rows", "br", p.block_rows);
    f("block_cols", "bc", p.block_cols);
    f("col_align", "A", p.col_align);
    f("block_size", "b", p.block_size);
  }
};

}  // namespace spmvc
