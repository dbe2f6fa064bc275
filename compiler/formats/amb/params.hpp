// The `amb` format's parameters. Public (spmvc::Options::params): CMake stages this file as
// spmvc/params/amb.hpp, and include/spmvc/plan.hpp gathers it into FormatParams. It includes
// only the standard library and other staged parameter headers.
#pragma once

#include <string_view>

namespace spmvc {

/// `amb`: adaptive multi-level blocking (Nagasaka et al.): column segments of 2^segment_bits
/// columns, SELL-C-sigma per segment with 16-bit column offsets and row permutation, blocks of
/// column_block contiguous columns, one thread per chunk row accumulating into y by atomicAdd
/// (or, deterministic, into per-segment partial sums reduced in a fixed order).
struct AmbParams {
  static constexpr std::string_view kFormat = "amb";
  int segment_bits = 16;  ///< column segments of width 2^segment_bits (1..16)
  int slice_height = 32;  ///< C: rows per chunk (8, 16, 32, 64 or 128; divides block_size)
  int sigma = 32768;      ///< sorting window in rows: a multiple of C, at most 2^15
  int column_block = 1;   ///< b: contiguous columns per block (1..10)
  int block_size = 256;
  bool deterministic = false;  ///< bit-identical results run to run (no atomics)
  static void fields(auto& p, auto&& f) {
    f("segment_bits", "seg", p.segment_bits);
    f("slice_height", "C", p.slice_height);
    f("sigma", "s", p.sigma);
    f("column_block", "cb", p.column_block);
    f("block_size", "b", p.block_size);
    f("deterministic", "det", p.deterministic);
  }
};

}  // namespace spmvc
