// The `csr_warp` format's parameters. Public (spmvc::Options::params): CMake stages this file as
// spmvc/params/csr_warp.hpp, and include/spmvc/plan.hpp gathers it into FormatParams. It includes
// only the standard library and other staged parameter headers.
#pragma once

#include <string_view>

#include "spmvc/params/values.hpp"

namespace spmvc {

/// `csr_warp`: CSR summed by independent warps (templates/csr_warp.cuh): each warp takes a chunk
/// of at most 64 consecutive rows and `chunk` nonzeros, or a piece of `chunk` nonzeros of a
/// longer row, streams its products into registers and sums each row with a segmented warp scan:
/// no shared memory and no block barrier. A second launch adds the pieces of the longer rows.
struct CsrWarpParams {
  static constexpr std::string_view kFormat = "csr_warp";
  int chunk = 512;         ///< nonzeros a warp takes at most: a multiple of 64 in 64..4096
  bool offsets64 = false;  ///< 64-bit row offsets (needed when nnz >= 2^31)
  int values = 0;          ///< formats::ValueCoding (spmvc/params/values.hpp)
  static void fields(auto& p, auto&& f) {
    f("chunk", "c", p.chunk);
    f("offsets64", "o64", p.offsets64);
    f("values", "val", p.values);
  }
};

}  // namespace spmvc
