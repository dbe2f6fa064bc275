// csr_stream: CSR with row blocks balanced by nonzeros (templates/csr_stream.cuh).
//
// Encoded arrays, in kernel-parameter order:
//   row_blocks  i32                       nblocks+1 row starts: block b computes rows
//                                         [row_blocks[b], row_blocks[b+1])
//   row_ptr     i32 (i64 when offsets64)  nrows+1 offsets
//   col_idx     i32                       nnz column indices; with narrow_columns instead:
//   col_base    i32                       per block its smallest column, or -1 - w when its
//                                         columns span more than kNarrowSpan
//   col16       u16                       nnz: column - col_base of the block (0 in wide blocks)
//   col_wide    i32                       the wide blocks' columns, block after block (>= 1)
//   values      f64 (f32 for f32 and f32_acc64), or coded (values/values.hpp)
//   slots       u16 (sorted only)         nnz: with sorted tiles each block that fits the tile
//                                         holds its columns and values (and codes) in column
//                                         order, and slots[k] is nonzero k's place in the
//                                         block's CSR order (a longer row's block keeps its
//                                         order: its slots count up)
//   lanes       u32 (split only)          nblocks * block_size: lane t of block b reads
//                                         lanes[b * block_size + t], its segment of a row
//                                         (templates/csr_stream.cuh, SplitRows); 0 for an idle
//                                         lane and in the blocks of rows longer than the tile
// Rows are taken in groups of kGroupRows rows, and each group is cut greedily from its first row:
// a block takes consecutive rows of the group while it holds at most `tile` nonzeros and
// block_size rows; a row longer than `tile` forms a block alone. Empty rows ride along with their
// neighbours. Groups are independent, so the partition is built in parallel, on the host or on the
// GPU from a matrix already in device memory (templates/device_csr.cuh), with the same result.
#pragma once

#include <cstdint>
#include <vector>

#include "formats/format.hpp"

namespace spmvc::formats {

class CsrStreamFormat final : public FormatUnit {
 public:
  std::string_view name() const override { return "csr_stream"; }
  std::string_view summary() const override {
    return "CSR in row blocks of equal nonzeros, streamed through shared memory (no idle lanes)";
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

  /// Rows per group of the partition (a multiple of every block size): groups are cut
  /// independently, which is what lets the GPU cut them in parallel, and large enough that the
  /// partial block a group ends with costs little (groups of only block_size rows measured
  /// slower on short-row graphs).
  static constexpr int kGroupRows = 2048;
  /// The block partition: nblocks+1 row starts, ending with a.nrows ({0, 0} for no rows).
  static std::vector<std::int32_t> row_blocks(const CsrMatrix& a, int tile, int block_size);
  /// Split rows (CsrStreamParams::split): a row of n products is summed in `count` segments
  /// of `length` (the last shorter): one of n when n <= split, else length = the largest of
  /// split, ceil(sqrt(n)) and ceil(n / 32), made odd, so that a lane walks about sqrt(n)
  /// products, its row's head adds at most 31 partial sums, and the row's lanes read different
  /// banks of shared memory.
  struct Segments {
    int length, count;
  };
  static Segments segments(std::int64_t n, int split);
  /// A lane's descriptor with split rows, unpacked; templates/csr_stream.cuh (SplitRows) reads
  /// the same 32 bits: start 0-10, length 11-17, head 18, extra 19-23, row 24-31.
  struct Lane {
    int start = 0;      ///< the segment's first product, counted from the block's first nonzero
    int length = 0;     ///< its products (0: an idle lane, or an empty row's head)
    bool head = false;  ///< the lane writes the row's y
    int extra = 0;      ///< the row's further segments (head only)
    int row = 0;        ///< the row counted from the block's first (head only)
    static Lane decode(std::uint32_t bits);
    std::uint32_t encode() const;
  };
  /// The partition with split rows: as row_blocks, and a block also ends where its rows'
  /// segments, each row's in one warp, would take more than block_size lanes. `lanes` gets
  /// the lane descriptors (nblocks * block_size).
  static std::vector<std::int32_t> split_row_blocks(const CsrMatrix& a, int tile, int block_size,
                                                    int split, std::vector<std::uint32_t>& lanes);
  /// Blocks the partition will have, estimated from the profile (nnz / tile, rows / block_size
  /// and one per row longer than the tile, whichever bounds most).
  static double estimated_blocks(const Profile& profile, const CsrStreamParams& p);
  /// A block's wait for its longest row in the reduction: (stream steps + E[the longest of the
  /// block's rows, in steps of its lanes]) / (stream steps + the mean row's steps), from the
  /// row-length histogram (rows up to the tile; a longer row's block shares it among every
  /// thread). Rows per block and lanes per row as the kernel takes them (templates/csr_stream.cuh:
  /// L = the largest power of two <= min(32, block_size / rows)). 1 where rows are alike; tens on
  /// power-law graphs, whose blocks wait for one row of hundreds of nonzeros summed by 1-2 lanes.
  static double warp_imbalance(const Profile& profile, const CsrStreamParams& p);
  /// The shape whose wait every csr_stream candidate's Cost reports (256 threads, tile 1024).
  static constexpr CsrStreamParams kImbalanceShape{};
  /// Largest column - base a 16-bit column offset holds.
  static constexpr std::int64_t kNarrowSpan = kNarrowColumnSpan;
  /// Share of the nonzeros whose blocks fit 16-bit columns, from the profile: 1 when every
  /// column fits (ncols <= 2^16); else the inspector's measured share of 256-row slices
  /// (Profile::narrow_slice_nnz); for a profile without it, 1 when every block's rows reach at
  /// most kNarrowSpan columns (square, 2 * bandwidth + block_size - 1 <= kNarrowSpan), else an
  /// estimate from the envelope's mean left reach (0 for rectangular matrices).
  static double narrow_share(const Profile& profile, const CsrStreamParams& p);
  /// Narrow-column candidates are proposed when at least this share of nonzeros fits.
  static constexpr double kMinNarrowShare = 0.5;
  /// CsrStreamParams::split's range: a segment's length fits the descriptor's 7 bits.
  static constexpr int kMinSplit = 4, kMaxSplit = 64;
  /// The split the planner proposes, and the share of the wait it must leave to be proposed.
  /// Measured on the H200 (bench/results/2026-12-02-h200-split-rows/): pattern graphs in fp32
  /// gained 5% with 16 (email-Enron, astro-ph, ego-Facebook x16M), 8 was slower than 16
  /// everywhere, stored values lost (Maragal_6 4%), fp64 gained 0-4% (not proposed: untimed on
  /// the suite), and graphs under RCM lost 1-3%.
  static constexpr int kProposedSplit = 16;
  static constexpr double kSplitWait = 0.8;
  /// The share (as an exponent) of split rows' shorter wait that the model counts. With all of
  /// it, the calibrated wait exponent predicted email-Enron x16M fp32 16% faster and astro-ph
  /// 13% faster where both measured 5% faster on the H200; a third predicts 5.5% and 4.2%.
  static constexpr double kSplitWaitShare = 1.0 / 3.0;
  /// Whether the planner proposes split rows beside shape `p` (split 0): fp32, one row a lane
  /// (tile / mean row > block_size / 2, over the rows that share tiles: all but
  /// Profile::trailing_empty_rows), and a wait that split rows shorten to below kSplitWait of the
  /// whole rows'. propose() keeps them with unit values only.
  static bool split_pays(const Profile& profile, const CsrStreamParams& p, Precision precision);
  /// Whether propose() puts split rows beside any of its shapes: pattern values (unit values the
  /// best coding) and split_pays at one of the shapes with one row a lane.
  static bool split_rows_pay(const Profile& profile, Precision precision);
  /// The kernel unit for `nblocks` row blocks: generate() without the encoded arrays (the
  /// device-resident build has them on the GPU only).
  static KernelSource generate_kernel(const CsrStreamParams& p, Precision precision,
                                      std::int64_t nblocks, const std::string& banner);
  /// Entry point name, e.g. spmv_csr_stream_b256_t1024_f64.
  static std::string kernel_name(const CsrStreamParams& p, Precision precision);
};

}  // namespace spmvc::formats
