// spmm: Y = alpha*A*X + beta*Y for a dense X of kK columns (1..64), over the encodings of csr,
// csr_stream, ell and sell as their own templates define them (csr.cuh, csr_stream.cuh, ell.cuh,
// sell.cuh): each nonzero's column and value are read once and used for all kK columns, so the
// matrix's bytes are read once per multiply whatever k is.
//
// Dense operands: X is ncols x kK and Y nrows x kK, both dense. Row-major (kRowMajor): element
// (i, j) at i*kK + j, so a nonzero's kK products read one contiguous run of X. Column-major:
// element (i, j) at j*ld + i with ld = ncols for X and nrows for Y, so each column is a vector
// as apply() takes it.
//
// Thread mapping: a group of kGroup = kColumnLanes * kRowLanes consecutive lanes shares one row.
// Lane g of the group is column lane c = g % kColumnLanes and nonzero lane p = g / kColumnLanes:
// nonzero lane p walks every kRowLanes-th nonzero of the row, and column lane c accumulates
// chunks of kVec consecutive columns: c*kVec.., (c + kColumnLanes)*kVec.., ... (kPerLane columns
// in all, in registers). Row-major X is then read by the column lanes of one nonzero as
// contiguous runs of kColumnLanes * kVec elements, kVec per lane in one 8- or 16-byte load
// (kVec > 1, row-major only: a lane's four fp32 columns are one load instead of four, a
// quarter of the L1 requests per nonzero); column-major X is gathered per column as
// an SpMV gathers x (kVec = 1). X and Y must start on a multiple of the pack: where a
// caller's do not, the runtime launches the unit generated with kVec = 1 instead. The nonzero
// lanes' partial sums meet in a warp-shuffle reduction and nonzero lane 0 writes its columns of the
// row once: no atomics, the same result run to run. Every y write goes through y_row() (the row map
// of a reordered matrix).
#pragma once

#include "spmvc/common.cuh"
#include "spmvc/csr_stream.cuh"
#include "spmvc/ell.cuh"

namespace spmvc {
namespace spmm {

/// kVec consecutive elements of row-major X or Y, moved by one load or store of
/// kVec * sizeof(Value) bytes (8 or 16): the vector access of a row-major unit.
template <typename Value, int kVec>
struct alignas(sizeof(Value) * kVec) Pack {
  Value e[kVec];
};

__device__ __forceinline__ void load_into(const float* __restrict__ p, Pack<float, 4>& out) {
  const float4 v = __ldg(reinterpret_cast<const float4*>(p));
  out.e[0] = v.x;
  out.e[1] = v.y;
  out.e[2] = v.z;
  out.e[3] = v.w;
}
__device__ __forceinline__ void load_into(const float* __restrict__ p, Pack<float, 2>& out) {
  const float2 v = __ldg(reinterpret_cast<const float2*>(p));
  out.e[0] = v.x;
  out.e[1] = v.y;
}
__device__ __forceinline__ void load_into(const double* __restrict__ p, Pack<double, 2>& out) {
  const double2 v = __ldg(reinterpret_cast<const double2*>(p));
  out.e[0] = v.x;
  out.e[1] = v.y;
}
template <typename Value>
__device__ __forceinline__ void load_into(const Value* __restrict__ p, Pack<Value, 1>& out) {
  out.e[0] = __ldg(p);
}

template <typename Value, int kVec>
__device__ __forceinline__ Pack<Value, kVec> load_pack(const Value* __restrict__ p) {
  Pack<Value, kVec> out;
  load_into(p, out);
  return out;
}

/// One lane's columns of one row: accumulation, reduction over the nonzero lanes, store.
/// Column lane c holds chunks of kVec consecutive columns: chunk i is columns
/// (i * kColumnLanes + c) * kVec ... + kVec - 1, so a nonzero's column lanes read one contiguous
/// run of kColumnLanes * kVec elements of X, kVec per lane (kVec > 1: row-major only, k a
/// multiple of kVec).
template <int kK, int kColumnLanes, int kRowLanes, bool kRowMajor, int kVec, typename Value,
          typename Acc>
struct RowTile {
  static constexpr int kGroup = kColumnLanes * kRowLanes;
  static constexpr int kChunkColumns = kColumnLanes * kVec;
  static constexpr int kChunks = (kK + kChunkColumns - 1) / kChunkColumns;
  static constexpr int kPerLane = kChunks * kVec;
  static_assert(kK >= 1 && kK <= 64, "k is 1..64");
  static_assert(kGroup >= 1 && kGroup <= 32 && (kGroup & (kGroup - 1)) == 0,
                "a row's lanes are a power of two no larger than a warp");
  static_assert((kColumnLanes & (kColumnLanes - 1)) == 0, "column lanes are a power of two");
  static_assert(kVec == 1 || (kRowMajor && kK % kVec == 0),
                "packs of columns need row-major X and Y and k a multiple of the pack");

  Acc acc[kPerLane];

  /// The column that acc[i] of column lane `lane_column` holds.
  static __device__ __forceinline__ int column_of(int i, int lane_column) {
    return ((i / kVec) * kColumnLanes + lane_column) * kVec + i % kVec;
  }
  /// Whether chunk `chunk` of column lane `lane_column` lies inside the k columns.
  static __device__ __forceinline__ bool chunk_in(int chunk, int lane_column) {
    return kK % kChunkColumns == 0 || (chunk * kColumnLanes + lane_column) * kVec < kK;
  }

  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) acc[i] = Acc(0);
  }

  /// Adds a * X[col, j] for this lane's columns j.
  __device__ __forceinline__ void add(Acc a, int col, const Value* __restrict__ x, long long ncols,
                                      int lane_column) {
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      if (!chunk_in(i, lane_column)) continue;
      const int j = column_of(i * kVec, lane_column);
      const long long at = kRowMajor ? static_cast<long long>(col) * kK + j
                                     : static_cast<long long>(j) * ncols + col;
      const Pack<Value, kVec> v = load_pack<Value, kVec>(x + at);
#pragma unroll
      for (int e = 0; e < kVec; ++e) acc[i * kVec + e] += a * static_cast<Acc>(v.e[e]);
    }
  }

  /// Sums the nonzero lanes' partials into nonzero lane 0. Every lane of the warp must call it.
  __device__ __forceinline__ void reduce() {
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
#pragma unroll
      for (int offset = kGroup / 2; offset >= kColumnLanes; offset /= 2) {
        acc[i] += __shfl_down_sync(0xffffffffu, acc[i], offset, kGroup);
      }
    }
  }

  /// Y[row, j] = alpha*acc + beta*Y[row, j] for this lane's columns (beta 0: Y is not read).
  __device__ __forceinline__ void store(Value* __restrict__ y, long long row, long long nrows,
                                        int lane_column, Acc alpha, Acc beta) const {
    if constexpr (kVec == 1) {
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) {
        if (chunk_in(i, lane_column))
          store_element(y, row, nrows, column_of(i, lane_column), acc[i], alpha, beta);
      }
    } else {
      const long long r = y_row(row);
#pragma unroll
      for (int i = 0; i < kChunks; ++i) {
        if (!chunk_in(i, lane_column)) continue;
        auto* at =
            reinterpret_cast<Pack<Value, kVec>*>(y + r * kK + column_of(i * kVec, lane_column));
        Pack<Value, kVec> out;
        if (beta != Acc(0)) {
          const Pack<Value, kVec> old = *at;
#pragma unroll
          for (int e = 0; e < kVec; ++e)
            out.e[e] =
                static_cast<Value>(alpha * acc[i * kVec + e] + beta * static_cast<Acc>(old.e[e]));
        } else {
#pragma unroll
          for (int e = 0; e < kVec; ++e) out.e[e] = static_cast<Value>(alpha * acc[i * kVec + e]);
        }
        *at = out;
      }
    }
  }

  static __device__ __forceinline__ void store_element(Value* __restrict__ y, long long row,
                                                       long long nrows, int j, Acc sum, Acc alpha,
                                                       Acc beta) {
    const long long r = y_row(row);
    const long long at = kRowMajor ? r * kK + j : static_cast<long long>(j) * nrows + r;
    Acc out = alpha * sum;
    if (beta != Acc(0)) out += beta * static_cast<Acc>(y[at]);
    y[at] = static_cast<Value>(out);
  }
};

/// csr (csr.cuh's arrays; its padding is never read): consecutive groups take consecutive rows.
template <int kK, int kColumnLanes, int kRowLanes, int kBlockSize, bool kRowMajor, int kVec,
          typename Offset, typename Value, typename Acc, typename Values>
__device__ __forceinline__ void csr(long long nrows, long long ncols,
                                    const Offset* __restrict__ row_ptr,
                                    const int* __restrict__ col_idx, Values values,
                                    const Value* __restrict__ x, Value* __restrict__ y, Acc alpha,
                                    Acc beta) {
  using Tile = RowTile<kK, kColumnLanes, kRowLanes, kRowMajor, kVec, Value, Acc>;
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  const long long tid = static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x;
  const long long row = tid / Tile::kGroup;
  const int g = static_cast<int>(threadIdx.x) % Tile::kGroup;
  const int column = g % kColumnLanes;
  const int lane = g / kColumnLanes;

  // No early return: every lane of the warp must reach the shuffle reduction.
  Tile tile;
  tile.zero();
  if (row < nrows) {
    const Offset end = row_ptr[row + 1];
    for (Offset j = row_ptr[row] + lane; j < end; j += kRowLanes) {
      tile.add(static_cast<Acc>(load_ro(values + j)), load_ro(col_idx + j), x, ncols, column);
    }
  }
  tile.reduce();
  if (lane == 0 && row < nrows) tile.store(y, row, nrows, column, alpha, beta);
}

/// csr_stream's row block `b` with the block's column accessor `col`: its groups take its rows
/// in turn; a block of one row (longer than the tile) is shared by all its groups, whose totals
/// meet in shared memory.
template <int kK, int kColumnLanes, int kRowLanes, int kBlockSize, bool kRowMajor, int kVec,
          typename Offset, typename Value, typename Acc, typename Column, typename Values>
__device__ __forceinline__ void csr_stream_block(long long nrows, long long ncols, long long first,
                                                 long long last, const Offset* __restrict__ row_ptr,
                                                 const Column& col, Values values,
                                                 const Value* __restrict__ x, Value* __restrict__ y,
                                                 Acc alpha, Acc beta) {
  using Tile = RowTile<kK, kColumnLanes, kRowLanes, kRowMajor, kVec, Value, Acc>;
  constexpr int kGroups = kBlockSize / Tile::kGroup;
  static_assert(kGroups * kK * sizeof(Acc) <= 16384, "a long row's partials fit 16 KiB");
  static_assert(kBlockSize >= kK, "a thread per column sums a long row's partials");
  __shared__ Acc partial[kGroups][kK];
  const int group = static_cast<int>(threadIdx.x) / Tile::kGroup;
  const int g = static_cast<int>(threadIdx.x) % Tile::kGroup;
  const int column = g % kColumnLanes;
  const int lane = g / kColumnLanes;

  if (last - first == 1) {
    // One long row: every group walks a share of it.
    Tile tile;
    tile.zero();
    const Offset end = row_ptr[first + 1];
    for (Offset j = row_ptr[first] + group * kRowLanes + lane; j < end; j += kGroups * kRowLanes) {
      tile.add(static_cast<Acc>(load_ro(values + j)), col(j), x, ncols, column);
    }
    tile.reduce();
    if (lane == 0) {
#pragma unroll
      for (int i = 0; i < Tile::kPerLane; ++i) {
        const int j = Tile::column_of(i, column);
        if (j < kK) partial[group][j] = tile.acc[i];
      }
    }
    __syncthreads();
    // One thread per column (a loop over columns here made ptxas spill in fp32).
    if (threadIdx.x < kK) {
      const int j = static_cast<int>(threadIdx.x);
      Acc sum = Acc(0);
      for (int q = 0; q < kGroups; ++q) sum += partial[q][j];
      Tile::store_element(y, first, nrows, j, sum, alpha, beta);
    }
    return;
  }
  // The same number of rounds for every lane of the block: the shuffles need whole warps.
  for (long long base = first; base < last; base += kGroups) {
    const long long row = base + group;
    Tile tile;
    tile.zero();
    if (row < last) {
      const Offset end = row_ptr[row + 1];
      for (Offset j = row_ptr[row] + lane; j < end; j += kRowLanes) {
        tile.add(static_cast<Acc>(load_ro(values + j)), col(j), x, ncols, column);
      }
    }
    tile.reduce();
    if (lane == 0 && row < last) tile.store(y, row, nrows, column, alpha, beta);
  }
}

/// csr_stream (csr_stream.cuh's arrays, 16-bit columns included): thread block b computes row
/// block b. The column accessor is chosen once per block, each choice with its own copy of the
/// loops, as csr_stream.cuh's NarrowColumns does.
template <int kK, int kColumnLanes, int kRowLanes, int kBlockSize, bool kRowMajor, int kVec,
          typename Offset, typename Value, typename Acc, typename Values>
__device__ __forceinline__ void csr_stream(long long nrows, long long ncols,
                                           const int* __restrict__ row_blocks,
                                           const Offset* __restrict__ row_ptr,
                                           csr_stream::WideColumns columns, Values values,
                                           const Value* __restrict__ x, Value* __restrict__ y,
                                           Acc alpha, Acc beta) {
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  const int b = blockIdx.x;
  csr_stream_block<kK, kColumnLanes, kRowLanes, kBlockSize, kRowMajor, kVec, Offset, Value, Acc>(
      nrows, ncols, row_blocks[b], row_blocks[b + 1], row_ptr,
      csr_stream::IntColumn{columns.col_idx}, values, x, y, alpha, beta);
}

template <int kK, int kColumnLanes, int kRowLanes, int kBlockSize, bool kRowMajor, int kVec,
          typename Offset, typename Value, typename Acc, typename Values>
__device__ __forceinline__ void csr_stream(long long nrows, long long ncols,
                                           const int* __restrict__ row_blocks,
                                           const Offset* __restrict__ row_ptr,
                                           csr_stream::NarrowColumns columns, Values values,
                                           const Value* __restrict__ x, Value* __restrict__ y,
                                           Acc alpha, Acc beta) {
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  const int b = blockIdx.x;
  const long long first = row_blocks[b], last = row_blocks[b + 1];
  const int at = __ldg(columns.base + b);
  if (at >= 0) {
    csr_stream_block<kK, kColumnLanes, kRowLanes, kBlockSize, kRowMajor, kVec, Offset, Value, Acc>(
        nrows, ncols, first, last, row_ptr, csr_stream::ShortColumn{columns.narrow, at}, values, x,
        y, alpha, beta);
  } else {
    // A wide block's columns sit in wide[-1 - at ...] from the block's first nonzero.
    const long long start = row_ptr[first];
    csr_stream_block<kK, kColumnLanes, kRowLanes, kBlockSize, kRowMajor, kVec, Offset, Value, Acc>(
        nrows, ncols, first, last, row_ptr, csr_stream::IntColumn{columns.wide + (-1 - at) - start},
        values, x, y, alpha, beta);
  }
}

/// ell (ell.cuh's layout): the row's kThreadsPerRow slot lanes are the nonzero lanes, so each
/// step's loads stay one contiguous run per warp as in the SpMV.
template <int kK, int kColumnLanes, int kWidth, int kThreadsPerRow, int kBlockSize,
          bool kRowLengths, bool kRowMajor, int kVec, typename Value, typename Acc, typename Values>
__device__ __forceinline__ void ell(long long nrows, long long ncols,
                                    const int* __restrict__ row_lengths,
                                    const int* __restrict__ col, Values values,
                                    const Value* __restrict__ x, Value* __restrict__ y, Acc alpha,
                                    Acc beta) {
  using Tile = RowTile<kK, kColumnLanes, kThreadsPerRow, kRowMajor, kVec, Value, Acc>;
  constexpr int kSteps = kWidth / kThreadsPerRow;
  static_assert(kWidth % kThreadsPerRow == 0, "the width is a multiple of the lanes per row");
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  const long long tid = static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x;
  const long long row = tid / Tile::kGroup;
  const int g = static_cast<int>(threadIdx.x) % Tile::kGroup;
  const int column = g % kColumnLanes;
  const int lane = g / kColumnLanes;

  Tile tile;
  tile.zero();
  if (row < nrows) {
    const long long stride = ell::pitch(nrows) * kThreadsPerRow;
    const long long p0 = row * kThreadsPerRow + lane;
    const int steps =
        kRowLengths ? (row_lengths[row] - lane + kThreadsPerRow - 1) / kThreadsPerRow : kSteps;
    // Slot s of the lane; false past its last nonzero.
    const auto step = [&](int s) {
      const long long p = p0 + s * stride;
      const int c = load_ro(col + p);
      if (!kRowLengths && c < 0) return false;  // packed left: the rest of the lane's slots pad
      tile.add(static_cast<Acc>(load_ro(values + p)), c, x, ncols, column);
      return true;
    };
    if constexpr (kVec > 1) {
      // ptxas unrolls four packed steps into 32 registers and a spill; two fit without one.
#pragma unroll 2
      for (int s = 0; s < steps; ++s) {
        if (!step(s)) break;
      }
    } else {
      for (int s = 0; s < steps; ++s) {
        if (!step(s)) break;
      }
    }
  }
  tile.reduce();
  if (lane == 0 && row < nrows) tile.store(y, row, nrows, column, alpha, beta);
}

/// sell (sell.cuh's layout): as ell within each slice; y rows through perm when sorted.
template <int kK, int kColumnLanes, int kSliceHeight, int kThreadsPerRow, int kBlockSize,
          bool kPermuted, bool kRowMajor, int kVec, typename Value, typename Acc>
__device__ __forceinline__ void sell(long long nrows, long long ncols,
                                     const long long* __restrict__ slice_ptr,
                                     const int* __restrict__ perm, const int* __restrict__ col,
                                     const Value* __restrict__ values, const Value* __restrict__ x,
                                     Value* __restrict__ y, Acc alpha, Acc beta) {
  using Tile = RowTile<kK, kColumnLanes, kThreadsPerRow, kRowMajor, kVec, Value, Acc>;
  constexpr int kStep = kSliceHeight * kThreadsPerRow;
  static_assert(kBlockSize % 32 == 0, "blocks are whole warps");
  const long long tid = static_cast<long long>(blockIdx.x) * kBlockSize + threadIdx.x;
  const long long sorted_row = tid / Tile::kGroup;
  const int g = static_cast<int>(threadIdx.x) % Tile::kGroup;
  const int column = g % kColumnLanes;
  const int lane = g / kColumnLanes;

  Tile tile;
  tile.zero();
  if (sorted_row < nrows) {
    const long long slice = sorted_row / kSliceHeight;
    const int in_slice = static_cast<int>(sorted_row % kSliceHeight);
    const long long end = slice_ptr[slice + 1];
    for (long long p = slice_ptr[slice] + in_slice * kThreadsPerRow + lane; p < end; p += kStep) {
      const int c = load_ro(col + p);
      if (c < 0) break;
      tile.add(static_cast<Acc>(load_ro(values + p)), c, x, ncols, column);
    }
  }
  tile.reduce();
  if (lane == 0 && sorted_row < nrows) {
    const long long row = kPermuted ? static_cast<long long>(perm[sorted_row]) : sorted_row;
    tile.store(y, row, nrows, column, alpha, beta);
  }
}

}  // namespace spmm
}  // namespace spmvc
