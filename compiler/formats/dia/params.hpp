// The `dia` format's parameters. Public (spmvc::Options::params): CMake stages this file as
// spmvc/params/dia.hpp, and include/spmvc/plan.hpp gathers it into FormatParams. It includes
// only the standard library.
#pragma once

#include <string_view>

namespace spmvc {

/// `dia`: the matrix stored by diagonals (Bell & Garland's DIA): one array of nrows values per
/// diagonal that holds nonzeros, no column indices. With `symmetric`, a matrix equal to its
/// transpose stores its main diagonal and the ones below it only, and reads the entry (i, i + o)
/// above the diagonal as the stored (i + o, i): half the values. A block takes block_size x
/// rows_per_thread consecutive rows, each thread every block_size-th of them.
struct DiaParams {
  static constexpr std::string_view kFormat = "dia";
  bool symmetric = false;   ///< S: the lower diagonals and the main one stored, the rest mirrored
  int block_size = 256;     ///< threads per block
  int rows_per_thread = 1;  ///< r: rows each thread sums (1 or 2): more loads in flight
  bool interior = true;     ///< i: tiles inside the matrix skip the bounds tests
  static void fields(auto& p, auto&& f) {
    f("symmetric", "S", p.symmetric);
    f("block_size", "b", p.block_size);
    f("rows_per_thread", "r", p.rows_per_thread);
    f("interior", "i", p.interior);
  }
};

}  // namespace spmvc
