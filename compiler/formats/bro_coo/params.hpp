// The `bro_coo` format's parameters. Public (spmvc::Options::params): CMake stages this file as
// spmvc/params/bro_coo.hpp, and include/spmvc/plan.hpp gathers it into FormatParams. It includes
// only the standard library and other staged parameter headers.
#pragma once

#include <string_view>

#include "spmvc/params/values.hpp"

namespace spmvc {

/// `bro_coo`: BRO-COO (section 3.2): entries sorted by row, cut into intervals of I entries, one
/// warp per interval, each lane a run of I/32 consecutive entries; row indices delta-coded and
/// bit-packed (one width for the lanes' first deltas, one for the rest), column indices plain.
struct BroCooParams {
  static constexpr std::string_view kFormat = "bro_coo";
  int interval = 1024;  ///< I: entries per interval (one warp), a multiple of 32
  int symbol_bits = 32;
  int block_size = 256;
  int values = 0;  ///< formats::ValueCoding (spmvc/params/values.hpp)
  static void fields(auto& p, auto&& f) {
    f("interval", "I", p.interval);
    f("symbol_bits", "sym", p.symbol_bits);
    f("block_size", "b", p.block_size);
    f("values", "val", p.values);
  }
};

}  // namespace spmvc
