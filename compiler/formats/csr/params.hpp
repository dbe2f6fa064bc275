// The `csr` format's parameters. Public (spmvc::Options::params): CMake stages this file as
// spmvc/params/csr.hpp, and include/spmvc/plan.hpp gathers it into FormatParams. It includes
// only the standard library and other staged parameter headers.
#pragma once

#include <string_view>

#include "spmvc/params/values.hpp"

namespace spmvc {

/// Parameters of the `csr` format (Baskaran–Bordawekar): T threads cooperate on each row,
/// reading its nonzeros cyclically (V at a time) from an aligned start, then reduce with warp
/// shuffles.
struct CsrParams {
  static constexpr std::string_view kFormat = "csr";
  int threads_per_row = 1;  ///< T: 1, 2, 4, 8, 16 or 32
  int vector_width = 1;     ///< V: nonzeros each lane loads with one vector load (1, 2 or 4)
  int block_size = 256;     ///< threads per block
  int unroll = 1;           ///< nonzeros each thread loads before it accumulates (1, 2 or 4)
  bool aligned = true;      ///< start each row's sweep at the T-aligned offset below its start
  bool offsets64 = false;   ///< 64-bit row offsets (needed when nnz >= 2^31)
  int values = 0;           ///< formats::ValueCoding (spmvc/params/values.hpp)
  static void fields(auto& p, auto&& f) {
    f("threads_per_row", "T", p.threads_per_row);
    f("vector_width", "V", p.vector_width);
    f("block_size", "b", p.block_size);
    f("unroll", "u", p.unroll);
    f("aligned", "aligned", p.aligned);
    f("offsets64", "o64", p.offsets64);
    f("values", "val", p.values);
  }
};

}  // namespace spmvc
