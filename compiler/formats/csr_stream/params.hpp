// The `csr_stream` format's parameters. Public (spmvc::Options::params): CMake stages this file as
// spmvc/params/csr_stream.hpp, and include/spmvc/plan.hpp gathers it into FormatParams. It includes
// only the standard library and other staged parameter headers.
#pragma once

#include <string_view>

#include "spmvc/params/values.hpp"

namespace spmvc {

/// `csr_stream`: CSR with row blocks balanced by nonzeros (templates/csr_stream.cuh): a block
/// streams the products of up to `tile` nonzeros of consecutive rows into shared memory with
/// coalesced loads, then reduces each row there; a longer row gets a block of its own.
struct CsrStreamParams {
  static constexpr std::string_view kFormat = "csr_stream";
  int block_size = 256;    ///< threads per block (a multiple of 32 in 64..1024)
  int tile = 1024;         ///< nonzeros staged per block: a multiple of block_size, <= 8 per thread
  bool offsets64 = false;  ///< 64-bit row offsets (needed when nnz >= 2^31)
  /// 16-bit columns: each block stores a base column and column - base per nonzero when its
  /// columns span less than 2^16 (blocks that span more keep 32-bit columns in a side array)
  bool narrow_columns = false;
  int values = 0;  ///< formats::ValueCoding (spmvc/params/values.hpp)
  /// Rows a lane sums when every row has one lane (1 or 2): a block holds up to block_size x
  /// rows_per_lane rows, so short rows fill a larger tile
  int rows_per_lane = 1;
  /// Each block that fits the tile stores its nonzeros in column order, with a 16-bit slot per
  /// nonzero: its product's place in the block's CSR order in shared memory. A warp's gather of
  /// x then touches fewer lines (scripts/model/tile-gather-lines.py); y is the same bit for bit.
  /// Built by the host encoder only, and not proposed by the planner: it has no GPU timings yet
  bool sorted = false;
  /// Split rows (0: off, else 4..64): in each block that fits the tile, a row of more than
  /// `split` products is summed in segments of at least `split` (about the square root of its
  /// length, at most 32 segments) by lanes of one warp, and its first lane adds their sums, so
  /// that no lane walks a whole long row while its block waits. Each block then reads a 32-bit
  /// lane descriptor per thread in place of its rows' bounds. 256-thread blocks or smaller, one
  /// row a lane, tiles of at most 2,048; built by the host encoder and on the GPU
  /// (templates/device_csr.cuh), with the same blocks and descriptors
  int split = 0;
  /// The most rows a row block holds (the host encoder's and the GPU build's partitions)
  int block_rows() const { return block_size * rows_per_lane; }
  static void fields(auto& p, auto&& f) {
    f("block_size", "b", p.block_size);
    f("tile", "tile", p.tile);
    f("offsets64", "o64", p.offsets64);
    f("narrow_columns", "c16", p.narrow_columns);
    f("values", "val", p.values);
    f("rows_per_lane", "m", p.rows_per_lane);
    f("sorted", "srt", p.sorted);
    f("split", "split", p.split);
  }
};

}  // namespace spmvc
