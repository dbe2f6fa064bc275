// The `bro_hyb` format's parameters. Public (spmvc::Options::params): CMake stages this file as
// spmvc/params/bro_hyb.hpp, and include/spmvc/plan.hpp gathers it into FormatParams. It includes
// only the standard library and other staged parameter headers.
#pragma once

#include <string_view>

#include "spmvc/params/values.hpp"

namespace spmvc {

/// `bro_hyb`: BRO-HYB (section 3.3): the hyb split at width K, the first K nonzeros of each row
/// in BRO-ELL, the rest in BRO-COO.
struct BroHybParams {
  static constexpr std::string_view kFormat = "bro_hyb";
  int width = 0;  ///< K of the ELL part
  int slice_height = 32;
  int symbol_bits = 32;  ///< both parts
  int threads_per_row = 1;
  int block_size = 256;
  int unroll = 1;
  bool prefetch = false;
  int tables = 0;  ///< as BroEllParams::tables, for the ELL part
  int interval = 1024;
  int values = 0;  ///< formats::ValueCoding (spmvc/params/values.hpp)
  static void fields(auto& p, auto&& f) {
    f("width", "K", p.width);
    f("slice_height", "h", p.slice_height);
    f("symbol_bits", "sym", p.symbol_bits);
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
    f("unroll", "u", p.unroll);
    f("prefetch", "pf", p.prefetch);
    f("tables", "tab", p.tables);
    f("interval", "I", p.interval);
    f("values", "val", p.values);
  }
};

}  // namespace spmvc
