// The `sell` format's parameters. Public (spmvc::Options::params): CMake stages this file as
// spmvc/params/sell.hpp, and include/spmvc/plan.hpp gathers it into FormatParams. It includes
// only the standard library and other staged parameter headers.
#pragma once

#include <string_view>

namespace spmvc {

/// `sell`: SELL-C-sigma (Kreutzer et al.; the AMB slides' level 2): slices of C rows, rows sorted
/// by decreasing length within windows of sigma rows, each slice padded to its own longest row
/// and stored column-major; y is written through the row permutation.
struct SellParams {
  static constexpr std::string_view kFormat = "sell";
  int slice_height = 32;    ///< C: rows per slice, a power of two in 1..256
  int sigma = 1;            ///< sorting window in rows: 1 (no sorting) or a multiple of C
  int threads_per_row = 1;  ///< T: lanes per row (1, 2, 4, ..., 32)
  int block_size = 256;
  static void fields(auto& p, auto&& f) {
    f("slice_height", "C", p.slice_height);
    f("sigma", "s", p.sigma);
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
  }
};

}  // namespace spmvc
