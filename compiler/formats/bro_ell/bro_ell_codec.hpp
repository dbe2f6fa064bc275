// BRO-ELL encoding (Tang et al., SC13, section 3.1), shared by the bro_ell and bro_hyb units.
//
// Virtual rows: with T lanes per row, lane t of row r owns the row's nonzeros t, t+T, t+2T, ...
// (T = 1: the whole row, the paper's layout). A slice is h consecutive rows, so h*T virtual rows
// ("lanes"), local index v = (r - slice*h)*T + t. Rows past nrows in the last slice are empty.
//
// Delta code of a virtual row with columns c_0 < c_1 < ...: d_0 = c_0 + 1, d_j = c_j - c_{j-1}
// (every valid delta is >= 1); a virtual row shorter than its slice is padded with d = 0, the
// paper's "invalid" marker. numCol of slice s, l_s, is its longest virtual row. Column position
// j of slice s gets the width b_{s,j} = max over the slice's lanes of bits(d) (bits(0) = 0), so
// b_{s,j} >= 1 for every j < l_s. A lane's stream is its fields, MSB first, concatenated, then
// zero bits up to a whole number of symbols: nsym_s = ceil(sum_j b_{s,j} / L) symbols of L bits.
//
// Arrays (names prefixed, e.g. "ell_" inside bro_hyb), in kernel-parameter order:
//   col_ptr  i64  nslices+1   prefix sums of l_s (widths and values of slice s start there)
//   sym_ptr  i64  nslices+1   prefix sums of nsym_s
//   widths   u8   col_ptr[n]  b_{s,j} at col_ptr[s] + j
//   symbols  u32|u64          symbol m of lane v of slice s at (sym_ptr[s] + m)*h*T + v, then
//                             pad_rows*h*T zero symbols (the prefetching kernel reads one symbol
//                             past a lane's stream; the baked kernel loads its whole pattern)
//   values   f64|f32          value of position j of lane v at (col_ptr[s] + j)*h*T + v; 0 pads
//                             (coded as shape.values says: formats/values/values.hpp)
// Tables mode 2 ("baked") widens every slice to one pattern P[j] = max_s b_{s,j}, so that
// b_{s,j} = P[j] for all s and j < l_s; the kernel then has P as compile-time constants.
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

/// Bits needed for u (0 for 0).
int bit_width(std::uint64_t u);

/// Writes the low `bits` (<= 32) bits of d at bit `pos` of a stream of L-bit symbols held in
/// 64-bit words, MSB first; symbol m of the stream is words[m * stride]. Writes nothing when
/// bits is 0 (the word at pos may belong to a neighbour another thread is encoding).
void put_bits(std::uint64_t* words, std::int64_t stride, int L, std::int64_t pos, int bits,
              std::uint64_t d);
/// Reads `bits` (0..32) bits at bit `pos` of the stream whose symbol m is element
/// index0 + m * stride of `words` (u64 elements when wide, u32 otherwise).
std::uint64_t get_bits(const void* words, bool wide, std::int64_t index0, std::int64_t stride,
                       std::int64_t pos, int bits);

/// Longest baked width pattern (column positions per lane): the kernel unrolls all of them.
inline constexpr int kBakedMaxColumns = 64;
/// Most bits a baked lane stream may hold: its symbols are all loaded into registers up front.
inline constexpr int kBakedMaxBits = 512;
/// __constant__ bank limit for width tables.
inline constexpr std::int64_t kConstantTableBytes = 65536;

/// The BRO-ELL layout parameters, shared by bro_ell and the ELL part of bro_hyb.
struct EllShape {
  int slice_height = 32;
  int symbol_bits = 32;
  int threads_per_row = 1;
  int tables = 0;
  int values = 0;  ///< value coding (formats/values/values.hpp)
  int lanes() const { return slice_height * threads_per_row; }
};
EllShape shape_of(const BroEllParams& p);
EllShape shape_of(const BroHybParams& p);

/// What the encoder produced, in numbers (for eta, tests and codegen).
struct EllSizes {
  std::int64_t nslices = 0;
  std::int64_t columns = 0;      ///< col_ptr[nslices]: width-table entries
  std::int64_t symbols = 0;      ///< sym_ptr[nslices]: symbols per lane, summed over slices
  std::int64_t stream_bits = 0;  ///< sum over slices and lanes of the fields' bits (no padding)
  std::int64_t entries = 0;      ///< nonzeros encoded
  std::int64_t pad_rows = 0;     ///< rows of h*T zero symbols after the last slice
  std::int64_t lanes = 0;        ///< h*T
  /// The one pattern when tables == 2 (empty otherwise).
  std::vector<int> pattern;
  std::int64_t symbol_bytes(int symbol_bits) const;
  /// Everything but the values: symbols (with their padding), widths, col_ptr and sym_ptr.
  std::int64_t index_bytes(int symbol_bits) const;
};

/// Encodes the first min(row length, limit) nonzeros of every row of `a` in BRO-ELL, appending
/// the five arrays (named prefix + "col_ptr", ...) to `out`.
EllSizes encode_ell(const CsrMatrix& a, std::int64_t limit, const EllShape& shape,
                    Precision precision, const std::string& prefix, std::vector<EncodedArray>& out);

/// acc[r] += sum over the encoded part of row r of value * x[col], decoding `e`'s arrays named
/// with `prefix` (fp64 accumulation).
void accumulate_ell(const Encoded& e, const std::string& prefix, const EllShape& shape,
                    std::span<const double> x, std::span<double> acc);

/// The pattern stored in `e` (tables == 2): widths of the slice with the most columns. Throws
/// InternalError when some slice's widths are not a prefix of it.
std::vector<int> baked_pattern(const Encoded& e, const std::string& prefix);

/// Sizes of the encoding without building it (same numbers as encode_ell returns).
EllSizes measure_ell(const CsrMatrix& a, std::int64_t limit, const EllShape& shape);

/// Model of the encoding from the profile alone (the planner sees no more than that).
struct EllEstimate {
  double padded_entries = 0;  ///< sum over slices of l_s * h * T
  double index_bytes = 0;     ///< symbols + widths + col_ptr + sym_ptr
  double table_bytes = 0;     ///< widths alone
  double lane_efficiency = 1;
  double max_columns = 0;  ///< ceil(min(row_max, limit) / T)
  /// Baked: symbols each lane loads beyond its slice's own (the kernel loads the whole pattern's
  /// symbols up front, the next slices' included), in bytes over all slices; 0 otherwise.
  double overread_bytes = 0;
};
EllEstimate estimate_ell(const Profile& profile, std::int64_t limit, const EllShape& shape);

/// Reason a shape cannot be used (sizes, values), or empty.
std::string check_ell_shape(const Profile& profile, std::int64_t limit, const EllShape& shape,
                            int block_size, int unroll, bool prefetch);

}  // namespace spmvc::formats::bro
