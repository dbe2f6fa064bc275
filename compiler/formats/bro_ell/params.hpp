// The `bro_ell` format's parameters. Public (spmvc::Options::params): CMake stages this file as
// spmvc/params/bro_ell.hpp, and include/spmvc/plan.hpp gathers it into FormatParams. It includes
// only the standard library and other staged parameter headers.
#pragma once

#include <string_view>

#include "spmvc/params/values.hpp"

namespace spmvc {

/// `bro_ell`: BRO-ELL (Tang et al., SC13, section 3.1): column indices delta-coded within each
/// row, cut into slices of h rows; per slice one bit width per column position (the widest delta
/// of the slice there), the rows' bit streams multiplexed in 32- or 64-bit symbols so a slice's
/// lanes read consecutive symbols. With T > 1, T lanes share a row: lane t takes the row's
/// nonzeros t, t+T, ... as its own delta-coded stream.
struct BroEllParams {
  static constexpr std::string_view kFormat = "bro_ell";
  int slice_height = 32;    ///< h: rows per slice (h*T lanes, a multiple of 32)
  int symbol_bits = 32;     ///< 32 or 64
  int threads_per_row = 1;  ///< T: 1 is the paper's kernel; 2..32 lanes share a row
  int block_size = 256;     ///< threads per block (a multiple of h*T)
  int unroll = 1;           ///< indices each lane decodes before its x gathers (1, 2, 4, 8)
  bool prefetch = false;    ///< load the next symbol as soon as the current one is taken
  /// Where the bit widths live: 0 per-slice tables in global memory, 1 the same tables as
  /// __constant__ data in the unit (<= 64 KiB), 2 one width pattern for every slice baked into
  /// the unit as template arguments (the decode schedule becomes compile-time).
  int tables = 0;
  int values = 0;  ///< formats::ValueCoding (spmvc/params/values.hpp)
  static void fields(auto& p, auto&& f) {
    f("slice_height", "h", p.slice_height);
    f("symbol_bits", "sym", p.symbol_bits);
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
    f("unroll", "u", p.unroll);
    f("prefetch", "pf", p.prefetch);
    f("tables", "tab", p.tables);
    f("values", "val", p.values);
  }
};

}  // namespace spmvc
