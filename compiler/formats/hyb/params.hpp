// The `hyb` format's parameters. Public (spmvc::Options::params): CMake stages this file as
// spmvc/params/hyb.hpp, and include/spmvc/plan.hpp gathers it into FormatParams. It includes
// only the standard library and other staged parameter headers.
#pragma once

#include <string_view>

#include "spmvc/params/values.hpp"

namespace spmvc {

/// `hyb`: ELL part of width K plus the remainder in COO (Bell & Garland's split; BRO paper
/// section 2.1.3): one launch for the ELL part (it also applies beta), one for the COO part
/// (a warp per interval, segmented reduction, atomic adds into y).
struct HybParams {
  static constexpr std::string_view kFormat = "hyb";
  int width = 0;             ///< K of the ELL part (formats::hyb_split_width at propose time)
  int threads_per_row = 1;   ///< T: lanes per row in the ELL part
  int block_size = 256;      ///< threads per block, both launches
  int coo_interval = 256;    ///< COO entries per warp, a multiple of 32
  bool row_lengths = false;  ///< ELL part as ELL-R (stored lengths) instead of -1 sentinels
  int values = 0;            ///< formats::ValueCoding (spmvc/params/values.hpp)
  /// 16-bit COO rows: each interval of coo_interval entries stores a base row and row - base per
  /// entry when its rows span at most 65535 (a wider interval keeps 32-bit rows in a side array).
  /// Built by the host encoder only (compile(DeviceCsr) makes 32-bit rows), and not proposed by
  /// the planner: the COO part's gathers of x bound it, and on the H200 it measured within 2% of
  /// 32-bit rows on Kronecker scale 21 and 22 under the hub order
  /// (bench/results/2026-11-30-h200-rcm-rule/hyb-narrow-rows.txt)
  bool narrow_rows = false;
  static void fields(auto& p, auto&& f) {
    f("width", "K", p.width);
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
    f("coo_interval", "I", p.coo_interval);
    f("row_lengths", "R", p.row_lengths);
    f("values", "val", p.values);
    f("narrow_rows", "r16", p.narrow_rows);
  }
};

}  // namespace spmvc
