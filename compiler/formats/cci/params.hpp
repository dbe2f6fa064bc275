// The `cci` format's parameters. Public (spmvc::Options::params): CMake stages this file as
// spmvc/params/cci.hpp, and include/spmvc/plan.hpp gathers it into FormatParams. It includes
// only the standard library and other staged parameter headers.
#pragma once

#include <string_view>

namespace spmvc {

/// `cci`: compressed column indices (Lawlor, IA^3 2013): each row's columns split over T slices
/// (nonzeros j, j+T, j+2T, ... of the row), each slice's column deltas coded as a variable-length
/// opcode plus an immediate, decoded branch-free through an 8-entry table baked into the kernel.
struct CciParams {
  static constexpr std::string_view kFormat = "cci";
  int threads_per_row = 4;   ///< T: slices (lanes) per row, a power of two in 1..32
  int block_size = 256;      ///< threads per block
  bool paper_table = false;  ///< the paper's fixed opcode classes instead of per-matrix ones
  /// Slice streams of a row interleaved word by word (one code start per row, streams padded to
  /// the row's longest); false: the paper's layout, one code start per slice.
  bool interleaved = true;
  static void fields(auto& p, auto&& f) {
    f("threads_per_row", "T", p.threads_per_row);
    f("block_size", "b", p.block_size);
    f("paper_table", "paper", p.paper_table);
    f("interleaved", "il", p.interleaved);
  }
};

}  // namespace spmvc
