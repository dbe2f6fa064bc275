// The `ell` format's parameters. Public (spmvc::Options::params): CMake stages this file as
// spmvc/params/ell.hpp, and include/spmvc/plan.hpp gathers it into FormatParams. It includes
// only the standard library and other staged parameter headers.
#pragma once

#include <string_view>

#include "spmvc/params/values.hpp"

namespace spmvc {

/// `ell`: column-major ELLPACK padded to the longest row (Bell & Garland; BRO paper section
/// 2.1.2); with row_lengths, ELLPACK-R (section 2.1.4: each row's length stored, padding never
/// read). T lanes share a row, each taking every T-th slot; the slots are interleaved so a warp's
/// loads stay contiguous (layout in compiler/formats/ell/ell_format.hpp).
struct EllParams {
  static constexpr std::string_view kFormat = "ell";
  int width = 0;            ///< K: slots per row, >= the longest row; 0: the longest row
  int threads_per_row = 1;  ///< T: lanes per row (1, 2, 4, ..., 32); 1 is the paper's kernel
  int block_size = 256;     ///< threads per block
  int unroll = 1;           ///< slots each lane loads before it gathers x (1..8)
  bool row_lengths = true;  ///< ELL-R: loop to the stored row length instead of a -1 sentinel
  int values = 0;           ///< formats::ValueCoding (spmvc/params/values.hpp)
  static void fields(auto& p, auto&& f) {
    f("width", "K", p.width);
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
    f("unroll", "u", p.unroll);
    f("row_lengths", "R", p.row_lengths);
    f("values", "val", p.values);
  }
};

}  // namespace spmvc
