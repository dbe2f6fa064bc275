// csr_warp: CSR summed by independent warps (templates/csr_warp.cuh).
//
// Encoded arrays, in kernel-parameter order:
//   chunk_row   i32                       nchunks+1 row starts: chunk w writes rows
//                                         [chunk_row[w], chunk_row[w+1])
//   chunk_nz    i32 (i64 when offsets64)  nchunks+1 nonzero starts: chunk w reads nonzeros
//                                         [chunk_nz[w], chunk_nz[w+1])
//   row_ptr     i32 (i64 when offsets64)  nrows+1 offsets
//   col_idx     i32                       nnz column indices
//   values      f64 (f32 for f32 and f32_acc64), or coded (values/values.hpp)
//   long_rows   i32                       3 per row longer than the chunk: the row, its first
//                                         piece's chunk, its pieces (>= 2); padded with zeros
//   partial     f64 (f32 for f32), scratch: nchunks sums of pieces
// nchunks and the long rows are padded to whole blocks of kWarpsPerBlock (empty chunks at the
// end: chunk_row = nrows, chunk_nz = nnz), so that neither launch checks a bound.
// Rows are taken in groups of kGroupRows rows, each group cut greedily from its first row: a
// chunk takes consecutive rows while it holds at most `chunk` nonzeros and kChunkRows rows; a row
// longer than `chunk` is cut into pieces of `chunk` nonzeros, a chunk each. Groups are
// independent, so the partition is cut in parallel.
#pragma once

#include <cstdint>
#include <vector>

#include "formats/format.hpp"

namespace spmvc::formats {

class CsrWarpFormat final : public FormatUnit {
 public:
  std::string_view name() const override { return "csr_warp"; }
  std::string_view summary() const override {
    return "CSR in warp chunks of equal nonzeros, rows summed in registers (no barrier)";
  }
  std::vector<Candidate> propose(const Profile& profile, Precision precision) const override;
  std::optional<std::string> cannot_implement(const Profile& profile, const FormatParams& params,
                                              Precision precision) const override;
  Cost cost(const Profile& profile, const FormatParams& params, Precision precision) const override;
  Encoded encode(const CsrMatrix& a, const FormatParams& params,
                 Precision precision) const override;
  void reference_spmv(const Encoded& encoded, const FormatParams& params, std::span<const double> x,
                      std::span<double> y, double alpha, double beta) const override;
  KernelSource generate(const Encoded& encoded, const FormatParams& params,
                        const std::string& banner) const override;
  std::vector<std::string> plain_column_arrays() const override { return {"col_idx"}; }

  /// Threads per block of both launches, and the warps (chunks, long rows) a block takes.
  static constexpr int kBlockSize = 256;
  static constexpr int kWarpsPerBlock = kBlockSize / 32;
  /// Rows a lane owns, and so the most rows a chunk holds (32 lanes x kRowsPerLane).
  static constexpr int kRowsPerLane = 2;
  static constexpr int kChunkRows = 32 * kRowsPerLane;
  /// Steps of 32 nonzeros whose loads a warp issues before their gathers.
  static constexpr int kRound = 2;
  /// Rows per group of the partition (a multiple of kChunkRows), cut independently.
  static constexpr int kGroupRows = 2048;

  /// The partition of `a` into chunks of at most `chunk` nonzeros.
  struct Partition {
    std::vector<std::int64_t> row;  ///< nchunks+1 row starts (padded: see the file comment)
    std::vector<std::int64_t> nz;   ///< nchunks+1 nonzero starts
    /// 3 per long row (row, first piece's chunk, pieces), padded with zeros to whole blocks.
    std::vector<std::int32_t> long_rows;
    std::int64_t long_count = 0;  ///< long rows before the padding
  };
  static Partition partition(const CsrMatrix& a, int chunk);
  /// Chunks (before the padding), long rows, their pieces and the warps' steps of 32 nonzeros
  /// the partition will have, estimated from the profile's row-length histogram.
  struct Estimate {
    double chunks = 1, long_rows = 0, pieces = 0, steps = 0;
  };
  static Estimate estimate(const Profile& profile, int chunk);
  /// Entry points, e.g. spmv_csr_warp_c512_f64 and spmv_csr_warp_fixup_c512_f64.
  static std::string kernel_name(const CsrWarpParams& p, Precision precision);
  static std::string fixup_name(const CsrWarpParams& p, Precision precision);
};

}  // namespace spmvc::formats
