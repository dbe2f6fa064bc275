// BRO-COO encoding (Tang et al., SC13, section 3.2), shared by the bro_coo and bro_hyb units.
//
// The entries (row-major, columns increasing) are cut into intervals of I entries, one warp per
// interval; lane l takes the run of E = I/32 consecutive entries starting at l*E, so the row
// index never decreases down a lane (the paper's "2D array such that the row index increases
// monotonically in the vertical direction"). Row indices are delta-coded down each lane: the
// first against the interval's base row, the others against the entry before; the interval
// packs its first deltas with one width and the rest with another (the paper has one width per
// interval; the lanes' first deltas span the whole interval and would widen every field), MSB
// first, each lane's bits a stream of ceil((w_first + (E-1)*w_rest)/L) symbols, the lanes'
// streams multiplexed like BRO-ELL's. Column indices stay plain 32-bit, as in the paper.
// Entries past the last (the tail of the last interval) have delta 0, column 0 and value 0 and
// are never accumulated (the kernel compares with `count`).
//
// Arrays (names prefixed, e.g. "coo_" inside bro_hyb), in kernel-parameter order:
//   count     i64  1              entries encoded
//   row_base  i32  nintervals     row of each interval's first entry
//   widths    u8   2*nintervals   (w_first, w_rest) of each interval, each 0..31
//   sym_ptr   i64  nintervals+1   prefix sums of symbols per lane
//   symbols   u32|u64             symbol m of lane l of interval k at (sym_ptr[k]+m)*32 + l
//   col_idx   i32  nintervals*I   entry e of lane l of interval k at k*I + e*32 + l
//   values    f64|f32             same places
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "spmvc/kernel.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"

namespace spmvc::formats::bro {

struct CooSizes {
  std::int64_t entries = 0;
  std::int64_t intervals = 0;
  std::int64_t symbols = 0;      ///< sym_ptr[nintervals]: symbols per lane, summed
  std::int64_t stream_bits = 0;  ///< fields' bits over all lanes (no padding)
  /// Compressed row indices and their tables: symbols, widths, row_base, sym_ptr, count.
  std::int64_t row_index_bytes(int symbol_bits) const;
};

/// Encodes the nonzeros of every row of `a` from position `skip` on (0: all of them) in
/// BRO-COO, appending the seven arrays to `out`, the values coded as `values` says
/// (formats/values/values.hpp).
CooSizes encode_coo(const CsrMatrix& a, std::int64_t skip, int interval, int symbol_bits,
                    Precision precision, const std::string& prefix, std::vector<EncodedArray>& out,
                    int values = 0);

/// Sizes of the same encoding without building it.
CooSizes measure_coo(const CsrMatrix& a, std::int64_t skip, int interval, int symbol_bits);

/// acc[r] += the encoded entries of row r times x, decoding `e`'s arrays named with `prefix`.
void accumulate_coo(const Encoded& e, const std::string& prefix, int interval,
                    std::span<const double> x, std::span<double> acc, int values = 0);

/// Model from the profile: bytes of everything the kernel reads but x and y, and the atomic
/// updates of y it issues.
struct CooEstimate {
  double entries = 0;
  double matrix_bytes = 0;
  double atomics = 0;
};
CooEstimate estimate_coo(const Profile& profile, std::int64_t skip, int interval, int symbol_bits,
                         Precision precision, int values = 0);

/// The lane efficiency that makes bytes/(bandwidth*efficiency) grow by one more kernel launch
/// (heuristics::kLaunchSeconds at the default bandwidth): how a second pass is charged.
double with_extra_launch(double bytes, double efficiency);

/// Reason the interval and symbol length cannot be used, or empty.
std::string check_coo_shape(int interval, int symbol_bits, int block_size);

}  // namespace spmvc::formats::bro
