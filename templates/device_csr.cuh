// Building on the GPU from a CSR matrix already in device memory (spmvc::DeviceCsr): the row
// statistics the planner needs, with the input checks, and csr_stream's row-block partition.
// Nothing is copied: these kernels read the caller's row_ptr and col_idx where they are.
//
// row_stats fills `out` (kStatSlots unsigned 64-bit counters, initialised by the host: zero,
// except kRowMin, kFirstBadRow and kFirstBadColumn at all ones):
//   kRowMax, kRowMin        longest and shortest row (over rows of non-negative length)
//   kSumSquares             sum of squared row lengths (exact: lengths are below 2^31)
//   kBadRows, kFirstBadRow  rows whose end offset is below their start, and the first of them
//   kBadColumns, kFirstBadColumn
//                           nonzeros whose column is outside [0, ncols), and the first of them
//   kFirstOffset, kLastOffset
//                           row_ptr[0] and row_ptr[nrows], as stored (two's complement)
//   kExactBins + L          rows of length L, L = 0..32
//   kPow2Bins + k           rows of length 2^(k-1)+1 .. 2^k, k = 6..31
//   kValuesFull             1 when the values hold more than kValueCap distinct bit patterns
//   kValueCount             distinct bit patterns in the table (meaningful when not full)
//   kValuesInexact          fp64 values only: 1 when some value is not exact in fp32 (then
//                           the values cannot be stored as fp32)
//   kValueTable + i         kValueSlots slots of an open-addressed set of the values' bit
//                           patterns (a float's zero-extended), kEmptySlot where none
//   kNarrowSliceNnz         filled by narrow_slices, run once the arrays have passed the checks:
//                           nonzeros in aligned slices of kSliceRows rows whose columns span at
//                           most kNarrowSpan (the host inspector's Profile::narrow_slice_nnz)
//   kXSectors               Profile::x_sectors: nonzeros that are first in their row or read
//                           another 32-byte sector of an fp64 x than the nonzero before them (4
//                           columns a sector), counted as the nonzeros whose sector differs from
//                           the one before them in col_idx (a thread per nonzero, the neighbour's
//                           column by a shuffle), plus the first nonzero, plus the rows that start
//                           in the sector the row before them ended in (a thread per row): so the
//                           planner has it before BRO's column pass (templates/device_bro.cuh),
//                           which counts the same
//   kRowsUsed               one past the last row with an entry (Profile::trailing_empty_rows
//                           is nrows minus it)
// Counters are combined within a warp and a block before one global atomic per block, so rows
// of equal length do not serialise on one address. Values are gathered the same way: each block
// keeps its own set in shared memory and merges it into the global table at the end; a block
// whose set passes kValueCap stops gathering patterns (the matrix cannot have an 8-bit table);
// in fp64 it reads on, testing each value's round trip through fp32, until one fails.
//
// code_values writes each value's index in a sorted table of its distinct bit patterns (the
// 8-bit value coding, formats/values), counting values the table lacks in `misses`.
// narrow_values writes fp64 values as fp32 (the fp32 storage coding), counting values that do
// not survive it in `inexact`.
//
// narrow_columns writes csr_stream's 16-bit columns for the row blocks already cut: per block the
// base column (the smallest) when its columns span at most kNarrowSpan, else -1 - start with
// start the block's first nonzero, so that the caller's col_idx serves as the wide-column array;
// and for narrow blocks column - base per nonzero.
//
// The partition is the host's (CsrStreamFormat::row_blocks): rows are taken in groups of
// `group` rows, and inside a group blocks are cut greedily, a block taking rows while it holds
// at most `tile` nonzeros and `block_rows` rows, a row longer than `tile` going alone. Groups are
// independent, so one warp walks each: stream_count counts a group's blocks, stream_scan turns
// the counts into offsets (one thread block), stream_fill writes each block's first row.
// With split rows (split > 0) the partition is the host's split_row_blocks: a block also ends
// where its rows' segments would need more lanes than it has threads, and stream_fill writes
// each lane's 32-bit descriptor (templates/csr_stream.cuh, SplitRows). The per-row steps of that
// walk (split_segments, SplitWalk, split_descriptor) are plain functions the host can call too
// (SPMVC_CSR_HD), so a host test runs them against the host encoder without a GPU; the rest of
// this file is device code.
#pragma once

#if defined(__CUDACC__)
#define SPMVC_CSR_HD __host__ __device__ __forceinline__
#else
#define SPMVC_CSR_HD inline
#endif

namespace spmvc {
namespace device_csr {

/// A split row's segments: `count` segments of `length` products, the last one shorter
/// (CsrStreamFormat::segments): a row of at most `split` products is one segment; a longer one
/// takes segments of the largest of `split`, ceil(sqrt(n)) and ceil(n / 32) products, made odd,
/// so that no row has more than 32. (For n > 1024, ceil(n / 32) is the largest: the root is
/// found by counting only below that, in integers, as on the host's doubles.)
struct SplitSegments {
  int length, count;
};
SPMVC_CSR_HD SplitSegments split_segments(long long n, int split) {
  if (n <= split) return {static_cast<int>(n), 1};
  long long length = (n + 31) / 32;
  if (n <= 1024) {
    long long root = 1;
    while (root * root < n) ++root;
    if (root > length) length = root;
  }
  if (split > length) length = split;
  length |= 1;
  return {static_cast<int>(length), static_cast<int>((n + length - 1) / length)};
}

/// A split-rows block being filled: its products and the lanes its rows' segments take.
struct SplitWalk {
  long long nnz = 0;
  int lanes = 0;
  /// Places the next row (n products in `count` segments): its first lane in `at`, its segments
  /// moved to the next warp where they would cross into it; false where the block must end
  /// before the row (the tile's products or the block's threads would be passed).
  SPMVC_CSR_HD bool take(long long n, int count, int tile, int block_size, int& at) {
    if (nnz + n > tile) return false;
    at = (lanes & 31) + count > 32 ? (lanes + 31) & ~31 : lanes;
    if (at + count > block_size) return false;
    lanes = at + count;
    nnz += n;
    return true;
  }
};

/// Segment j's descriptor of a row of n products whose first is product b of its block, the
/// block's `row`-th row (the bit layout of SplitRows in templates/csr_stream.cuh). A row with no
/// products has one empty segment at 0.
SPMVC_CSR_HD unsigned split_descriptor(long long b, long long n, SplitSegments seg, int j,
                                       int row) {
  const long long start = (n > 0 ? b : 0) + static_cast<long long>(j) * seg.length;
  const long long rest = n - static_cast<long long>(j) * seg.length;
  const long long length = rest < seg.length ? rest : seg.length;
  const bool head = j == 0;
  return static_cast<unsigned>(start) | static_cast<unsigned>(length) << 11 |
         (head ? 1u : 0u) << 18 | static_cast<unsigned>(head ? seg.count - 1 : 0) << 19 |
         static_cast<unsigned>(head ? row : 0) << 24;
}

#if defined(__CUDACC__)

constexpr int kRowMax = 0;
constexpr int kRowMin = 1;
constexpr int kSumSquares = 2;
constexpr int kBadRows = 3;
constexpr int kFirstBadRow = 4;
constexpr int kBadColumns = 5;
constexpr int kFirstBadColumn = 6;
constexpr int kFirstOffset = 7;
constexpr int kLastOffset = 8;
constexpr int kExactBins = 9;               // 33 slots: lengths 0..32
constexpr int kPow2Bins = kExactBins + 33;  // 32 slots: index k, lengths 2^(k-1)+1 .. 2^k
constexpr int kValuesFull = kPow2Bins + 32;
constexpr int kValueCount = kValuesFull + 1;
constexpr int kValuesInexact = kValueCount + 1;
constexpr int kValueTable = kValuesInexact + 1;
constexpr int kValueSlots = 1024;
constexpr int kNarrowSliceNnz = kValueTable + kValueSlots;
constexpr int kXSectors = kNarrowSliceNnz + 1;
constexpr int kRowsUsed = kXSectors + 1;
constexpr int kStatSlots = kRowsUsed + 1;
constexpr int kValueCap = 256;     // distinct values an 8-bit code can name
constexpr int kBlockSlots = 1024;  // a block's own set, in shared memory (8 KiB)
constexpr unsigned long long kEmptySlot = ~0ull;
constexpr int kStatsBlock = 256;
constexpr int kScanBlock = 1024;
constexpr int kCodeBlock = 256;
constexpr int kNarrowBlock = 256;  // narrow_slices and narrow_columns: a warp per slice or block
constexpr int kSliceRows = 256;
constexpr long long kNarrowSpan = 65535;

/// Histogram slot of a row of `len` nonzeros (0 <= len < 2^31).
__device__ __forceinline__ int length_bin(long long len) {
  if (len <= 32) return kExactBins + static_cast<int>(len);
  // k = ceil(log2(len)): the power-of-two range 2^(k-1)+1 .. 2^k holding len.
  return kPow2Bins + (64 - __clzll(static_cast<unsigned long long>(len - 1)));
}

__device__ __forceinline__ unsigned hash_bits(unsigned long long b) {
  b ^= b >> 33;
  b *= 0xff51afd7ed558ccdull;
  b ^= b >> 33;
  return static_cast<unsigned>(b);
}

/// Adds `bits` to the open-addressed set of `n` slots (a power of two, shared or global memory):
/// 1 when it was new, 0 when it was there, -1 when every slot holds another pattern.
__device__ __forceinline__ int set_insert(unsigned long long* slots, int n,
                                          unsigned long long bits) {
  unsigned s = hash_bits(bits) & static_cast<unsigned>(n - 1);
  for (int probe = 0; probe < n; ++probe) {
    unsigned long long seen = *static_cast<volatile unsigned long long*>(slots + s);
    if (seen == kEmptySlot) seen = atomicCAS(slots + s, kEmptySlot, bits);
    if (seen == kEmptySlot) return 1;
    if (seen == bits) return 0;
    s = (s + 1) & static_cast<unsigned>(n - 1);
  }
  return -1;
}

/// The slot of the set that holds `bits`, or -1 (for a set no one is adding to any more).
__device__ __forceinline__ int set_find(const unsigned long long* slots, int n,
                                        unsigned long long bits) {
  unsigned s = hash_bits(bits) & static_cast<unsigned>(n - 1);
  for (int probe = 0; probe < n && slots[s] != kEmptySlot; ++probe) {
    if (slots[s] == bits) return static_cast<int>(s);
    s = (s + 1) & static_cast<unsigned>(n - 1);
  }
  return -1;
}

/// Whether fp64 `bits` survives a round trip through fp32 (the host inspector's test).
__device__ __forceinline__ bool exact_in_f32(unsigned long long bits) {
  const double v = __longlong_as_double(static_cast<long long>(bits));
  return isinf(v) || (fabs(v) <= 3.402823466e38 && static_cast<double>(static_cast<float>(v)) == v);
}

/// Value k's bit pattern (a float's zero-extended).
__device__ __forceinline__ unsigned long long value_bits(const void* __restrict__ values,
                                                         int value_bytes, long long k) {
  return value_bytes == 8 ? static_cast<unsigned long long>(
                                __double_as_longlong(__ldg(static_cast<const double*>(values) + k)))
                          : static_cast<unsigned long long>(
                                __float_as_uint(__ldg(static_cast<const float*>(values) + k)));
}

template <typename T>
__device__ __forceinline__ T warp_reduce(T v, int op) {  // op: 0 sum, 1 max, 2 min
  for (int offset = 16; offset > 0; offset /= 2) {
    const T o = __shfl_down_sync(0xffffffffu, v, offset);
    v = op == 0 ? v + o : (op == 1 ? (o > v ? o : v) : (o < v ? o : v));
  }
  return v;
}

__device__ __forceinline__ void row_stats(const int* __restrict__ row_ptr,
                                          const int* __restrict__ col_idx,
                                          const void* __restrict__ values, int value_bytes,
                                          long long nrows, long long ncols, long long nnz,
                                          unsigned long long* __restrict__ out) {
  // Shared counters: the histogram, then max, min and sum of squares; the block's value set.
  constexpr int kBins = kValuesFull - kExactBins;
  __shared__ unsigned long long bins[kBins];
  __shared__ unsigned long long totals[3];
  __shared__ unsigned long long set[kBlockSlots];
  __shared__ int set_count, set_full, inexact;
  for (int i = threadIdx.x; i < kBins; i += blockDim.x) bins[i] = 0;
  for (int i = threadIdx.x; i < kBlockSlots; i += blockDim.x) set[i] = kEmptySlot;
  if (threadIdx.x < 3) totals[threadIdx.x] = threadIdx.x == 1 ? ~0ull : 0ull;
  if (threadIdx.x == 0) {
    set_count = 0;
    // Another block already found too many, or an inexact value: skip what it settled.
    set_full = *static_cast<volatile unsigned long long*>(out + kValuesFull) != 0;
    inexact =
        value_bytes != 8 || *static_cast<volatile unsigned long long*>(out + kValuesInexact) != 0;
  }
  __syncthreads();

  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned long long row_max = 0, row_min = ~0ull, sum_sq = 0, sectors = 0, rows_used = 0;
  // A row that starts in the sector the nonzero before it read gathers that sector again
  // (offsets not trusted yet: only nonzeros inside 0..nnz-1 are read). The two columns are
  // compared an iteration later, so their loads overlap the next row's offsets.
  bool pending = false;
  int at_start = 0, before_start = 0;
  for (long long r = first; r < nrows; r += stride) {
    const int start = __ldg(row_ptr + r);
    const long long len = static_cast<long long>(__ldg(row_ptr + r + 1)) - start;
    if (pending && (at_start >> 2) == (before_start >> 2)) ++sectors;
    pending = len > 0 && start > 0 && start < nnz;
    if (pending) {
      at_start = __ldg(col_idx + start);
      before_start = __ldg(col_idx + start - 1);
    }
    // Lanes with the same bin add once, through their leader.
    const int bin = len < 0 ? -1 : length_bin(len) - kExactBins;
    const unsigned same = __match_any_sync(__activemask(), bin);
    if (len < 0) {
      atomicAdd(out + kBadRows, 1ull);
      atomicMin(out + kFirstBadRow, static_cast<unsigned long long>(r));
      continue;
    }
    if ((threadIdx.x & 31) == __ffs(same) - 1)
      atomicAdd(bins + bin, static_cast<unsigned long long>(__popc(same)));
    const auto u = static_cast<unsigned long long>(len);
    if (u > 0) rows_used = static_cast<unsigned long long>(r) + 1;  // r grows in the loop
    row_max = u > row_max ? u : row_max;
    row_min = u < row_min ? u : row_min;
    sum_sq += u * u;
  }
  if (pending && (at_start >> 2) == (before_start >> 2)) ++sectors;
  // Nonzeros kUnroll strides at a time, their loads issued together.
  constexpr int kUnroll = 4;
  unsigned long long last_bits = kEmptySlot;
  for (long long k0 = first; k0 < nnz; k0 += kUnroll * stride) {
    const bool want_values = !*static_cast<volatile int*>(&set_full);
    const bool want_exact = !*static_cast<volatile int*>(&inexact);
    int c[kUnroll];
    unsigned long long bits[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const long long k = k0 + u * stride;
      c[u] = k < nnz ? __ldg(col_idx + k) : 0;
      bits[u] =
          k < nnz && (want_values || want_exact) ? value_bits(values, value_bytes, k) : kEmptySlot;
    }
    // The lanes still in the loop are the warp's first ones (k0 grows with the lane), so a lane's
    // left neighbour is in too and holds nonzero k - 1's column (lane 0 loads it).
    const int lane = static_cast<int>(threadIdx.x & 31);
    const long long in_loop = nnz - (k0 - lane);
    const unsigned active = in_loop >= 32 ? 0xffffffffu : (1u << in_loop) - 1u;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const long long k = k0 + u * stride;
      const int left = __shfl_up_sync(active, c[u], 1);
      if (k < nnz) {
        const int prev = lane > 0 ? left : (k > 0 ? __ldg(col_idx + k - 1) : ~c[u]);
        sectors += (c[u] >> 2) != (prev >> 2) ? 1 : 0;
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const long long k = k0 + u * stride;
      if (k < nnz && (c[u] < 0 || c[u] >= ncols)) {
        atomicAdd(out + kBadColumns, 1ull);
        atomicMin(out + kFirstBadColumn, static_cast<unsigned long long>(k));
      }
      // The block's flags are set with atomics: other lanes read them (volatile) while they run,
      // and only an atomic write is ordered against those reads.
      if (k < nnz && want_exact && !exact_in_f32(bits[u]) && atomicExch(&inexact, 1) == 0)
        atomicExch(out + kValuesInexact, 1ull);
      // A lane looks a value up only when it differs from the last one it added: matrices
      // with few values repeat them. The flag is read again before every insert: lanes that
      // went on inserting after the set passed kValueCap filled all kBlockSlots slots on
      // real-valued matrices, and the last inserts probed most of them (the pass took 200 us
      // instead of 149 on vt2010 x16M on the H200).
      if (k >= nnz || !want_values || bits[u] == last_bits) continue;
      if (*static_cast<volatile int*>(&set_full)) continue;
      last_bits = bits[u];
      const int added = bits[u] == kEmptySlot ? -1 : set_insert(set, kBlockSlots, bits[u]);
      // Published at once, so that blocks yet to start skip the values too.
      if ((added < 0 || (added > 0 && atomicAdd(&set_count, 1) >= kValueCap)) &&
          atomicExch(&set_full, 1) == 0)
        atomicExch(out + kValuesFull, 1ull);
    }
  }
  if (first == 0) {
    out[kFirstOffset] = static_cast<unsigned long long>(static_cast<long long>(__ldg(row_ptr)));
    out[kLastOffset] =
        static_cast<unsigned long long>(static_cast<long long>(__ldg(row_ptr + nrows)));
  }
  row_max = warp_reduce(row_max, 1);
  row_min = warp_reduce(row_min, 2);
  sum_sq = warp_reduce(sum_sq, 0);
  sectors = warp_reduce(sectors, 0);
  rows_used = warp_reduce(rows_used, 1);
  if ((threadIdx.x & 31) == 0) {
    atomicMax(totals + 0, row_max);
    atomicMin(totals + 1, row_min);
    atomicAdd(totals + 2, sum_sq);
    if (sectors > 0) atomicAdd(out + kXSectors, sectors);
    if (rows_used > 0) atomicMax(out + kRowsUsed, rows_used);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    if (totals[0] > 0) atomicMax(out + kRowMax, totals[0]);
    if (totals[1] != ~0ull) atomicMin(out + kRowMin, totals[1]);
    if (totals[2] > 0) atomicAdd(out + kSumSquares, totals[2]);
  }
  for (int i = threadIdx.x; i < kBins; i += blockDim.x) {
    if (bins[i] > 0) atomicAdd(out + kExactBins + i, bins[i]);
  }
  if (inexact && value_bytes == 8 && threadIdx.x == 0) out[kValuesInexact] = 1;
  // The block's values into the global table.
  if (set_full) {
    if (threadIdx.x == 0) out[kValuesFull] = 1;
    return;
  }
  for (int i = threadIdx.x; i < kBlockSlots; i += blockDim.x) {
    if (set[i] == kEmptySlot) continue;
    const int added = set_insert(out + kValueTable, kValueSlots, set[i]);
    if (added < 0 || (added > 0 && atomicAdd(out + kValueCount, 1ull) >= kValueCap))
      out[kValuesFull] = 1;
  }
}

/// codes[k] = the index of value k's bit pattern in `table` (ntable <= kValueCap distinct
/// patterns, as the value type), for k < nnz; a value the table lacks is counted in
/// `misses` and coded 0.
__device__ __forceinline__ void code_values(const void* __restrict__ values, int value_bytes,
                                            long long nnz, const void* __restrict__ table,
                                            int ntable, unsigned char* __restrict__ codes,
                                            unsigned long long* __restrict__ misses) {
  // The table as an open-addressed map from bit pattern to code, in shared memory: one probe
  // per value, mostly.
  __shared__ unsigned long long keys[kBlockSlots];
  __shared__ unsigned char code_of[kBlockSlots];
  for (int i = threadIdx.x; i < kBlockSlots; i += blockDim.x) keys[i] = kEmptySlot;
  __syncthreads();
  for (int i = threadIdx.x; i < ntable; i += blockDim.x) {
    const unsigned long long bits = value_bits(table, value_bytes, i);
    (void)set_insert(keys, kBlockSlots, bits);  // ntable <= kValueCap < kBlockSlots: room
    code_of[set_find(keys, kBlockSlots, bits)] = static_cast<unsigned char>(i);
  }
  __syncthreads();
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  unsigned long long missed = 0;
  constexpr int kUnroll = 4;
  for (long long k0 = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; k0 < nnz;
       k0 += kUnroll * stride) {
    unsigned long long bits[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const long long k = k0 + u * stride;
      bits[u] = k < nnz ? value_bits(values, value_bytes, k) : 0;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const long long k = k0 + u * stride;
      if (k >= nnz) break;
      const int slot = set_find(keys, kBlockSlots, bits[u]);
      missed += slot < 0 ? 1 : 0;
      codes[k] = slot < 0 ? 0 : code_of[slot];
    }
  }
  missed = warp_reduce(missed, 0);
  if ((threadIdx.x & 31) == 0 && missed > 0) atomicAdd(misses, missed);
}

/// out[k] = values[k] as fp32 for k < nnz; values fp32 does not hold exactly are counted in
/// `inexact` (the inspection found none: a count means the values changed since).
__device__ __forceinline__ void narrow_values(const double* __restrict__ values, long long nnz,
                                              float* __restrict__ out,
                                              unsigned long long* __restrict__ inexact) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  unsigned long long bad = 0;
  constexpr int kUnroll = 4;
  for (long long k0 = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; k0 < nnz;
       k0 += kUnroll * stride) {
    double v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const long long k = k0 + u * stride;
      v[u] = k < nnz ? __ldg(values + k) : 0.0;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const long long k = k0 + u * stride;
      if (k >= nnz) break;
      bad += exact_in_f32(static_cast<unsigned long long>(__double_as_longlong(v[u]))) ? 0 : 1;
      out[k] = static_cast<float>(v[u]);
    }
  }
  bad = warp_reduce(bad, 0);
  if ((threadIdx.x & 31) == 0 && bad > 0) atomicAdd(inexact, bad);
}

/// The smallest and largest column among nonzeros [lo, hi), reduced over the warp (every lane
/// gets them); lo = INT_MAX, hi = -1 when the range is empty.
__device__ __forceinline__ void warp_column_range(const int* __restrict__ col_idx, long long lo,
                                                  long long hi, int& min_col, int& max_col) {
  const int lane = threadIdx.x & 31;
  int mn = 0x7fffffff, mx = -1;
  for (long long k = lo + lane; k < hi; k += 32) {
    const int c = __ldg(col_idx + k);
    mn = c < mn ? c : mn;
    mx = c > mx ? c : mx;
  }
  min_col = warp_reduce(mn, 2);
  max_col = warp_reduce(mx, 1);
  min_col = __shfl_sync(0xffffffffu, min_col, 0);
  max_col = __shfl_sync(0xffffffffu, max_col, 0);
}

/// out[kNarrowSliceNnz] += the nonzeros of each aligned kSliceRows-row slice whose columns span at
/// most kNarrowSpan; one warp per slice. Columns need not be sorted. The arrays must have passed
/// row_stats' checks (offsets are trusted here).
__device__ __forceinline__ void narrow_slices(const int* __restrict__ row_ptr,
                                              const int* __restrict__ col_idx, long long nrows,
                                              unsigned long long* __restrict__ out) {
  const long long warps = static_cast<long long>(gridDim.x) * (blockDim.x / 32);
  unsigned long long narrow = 0;
  for (long long s = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
       s * kSliceRows < nrows; s += warps) {
    const long long first = s * kSliceRows;
    const long long last = first + kSliceRows < nrows ? first + kSliceRows : nrows;
    const long long lo = __ldg(row_ptr + first), hi = __ldg(row_ptr + last);
    int mn, mx;
    warp_column_range(col_idx, lo, hi, mn, mx);
    if (hi > lo && static_cast<long long>(mx) - mn <= kNarrowSpan)
      narrow += static_cast<unsigned long long>(hi - lo);
  }
  if ((threadIdx.x & 31) == 0 && narrow > 0) atomicAdd(out + kNarrowSliceNnz, narrow);
}

/// csr_stream's 16-bit columns for the nblocks row blocks starting at row_blocks[b]: base[b] and,
/// in narrow blocks, col16[k] = col_idx[k] - base[b] (col16 of wide blocks is left as it is);
/// one warp per block.
__device__ __forceinline__ void narrow_columns(const int* __restrict__ row_ptr,
                                               const int* __restrict__ col_idx,
                                               const int* __restrict__ row_blocks,
                                               long long nblocks, int* __restrict__ base,
                                               unsigned short* __restrict__ col16) {
  const long long warps = static_cast<long long>(gridDim.x) * (blockDim.x / 32);
  for (long long b = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
       b < nblocks; b += warps) {
    const long long lo = __ldg(row_ptr + __ldg(row_blocks + b));
    const long long hi = __ldg(row_ptr + __ldg(row_blocks + b + 1));
    int mn, mx;
    warp_column_range(col_idx, lo, hi, mn, mx);
    if (hi == lo) mn = mx = 0;
    const bool narrow = static_cast<long long>(mx) - mn <= kNarrowSpan;
    if ((threadIdx.x & 31) == 0) base[b] = narrow ? mn : static_cast<int>(-1 - lo);
    if (!narrow) continue;
    for (long long k = lo + (threadIdx.x & 31); k < hi; k += 32)
      col16[k] = static_cast<unsigned short>(__ldg(col_idx + k) - mn);
  }
}

/// The row after the block that starts at row `first` of a group ending before row `end`: the
/// first row v past `first` where the block must stop (v reaches the row limit or the group's
/// end, or row v would take it past `tile` nonzeros; a row longer than the tile goes alone).
/// Found by the whole warp, every lane getting it: the lanes test 32 rows at once, the loads of
/// four such rounds in flight together, on row_ptr, which the inspection has checked never
/// decreases. (A thread per group walking binary searches, 8-9 dependent loads per block, took
/// 34 us at 3.3M rows on the H200.)
__device__ __forceinline__ long long block_end(const int* __restrict__ row_ptr, long long first,
                                               long long end, int tile, int block_rows) {
  constexpr int kRounds = 4;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const long long limit = first + block_rows < end ? first + block_rows : end;
  const long long bound = static_cast<long long>(__ldg(row_ptr + first)) + tile;
  // The smallest v in [first + 1, limit) whose row_ptr[v + 1] passes the bound, else limit.
  for (long long base = first + 1; base < limit; base += 32 * kRounds) {
    int next[kRounds];
#pragma unroll
    for (int u = 0; u < kRounds; ++u) {
      const long long v = base + 32 * u + lane;
      next[u] = v < limit ? __ldg(row_ptr + v + 1) : 0;
    }
#pragma unroll
    for (int u = 0; u < kRounds; ++u) {
      const long long v = base + 32 * u + lane;
      const bool passes = (v < limit) && (next[u] > bound);
      const unsigned past = __ballot_sync(0xffffffffu, passes);
      if (past != 0) return base + 32 * u + (__ffs(past) - 1);
    }
  }
  return limit;
}

/// block_end with split rows (split > 0; block_rows is the block's threads, one row a lane):
/// the block also ends where its rows' segments would need more lanes than that. With `lanes`
/// (the block's block_rows descriptors, zeroed) each row's segments are written there. Found by
/// the whole warp, every lane getting it: the lanes load 32 rows' bounds at once and each
/// computes its row's segments; the placement, which depends on every row before, then steps
/// through them in registers (shuffles), and a row's lanes write its descriptors together.
__device__ __forceinline__ long long split_block_end(const int* __restrict__ row_ptr,
                                                     long long first, long long end, int tile,
                                                     int block_rows, int split,
                                                     unsigned* __restrict__ lanes) {
  const int lane = static_cast<int>(threadIdx.x & 31);
  const long long start = __ldg(row_ptr + first);
  if (static_cast<long long>(__ldg(row_ptr + first + 1)) - start > tile) return first + 1;
  const long long limit = first + block_rows < end ? first + block_rows : end;
  SplitWalk walk;
  for (long long base = first; base < limit; base += 32) {
    // Lane l's row base + l: its first product counted from the block's (b) and its length (n),
    // ints as the offsets are.
    const long long v = base + lane;
    int b = 0, n = 0;
    if (v < limit) {
      const int lo = __ldg(row_ptr + v);
      b = static_cast<int>(lo - start);
      n = __ldg(row_ptr + v + 1) - lo;
    }
    const SplitSegments mine = split_segments(n, split);
    const int rows = limit - base < 32 ? static_cast<int>(limit - base) : 32;
    for (int i = 0; i < rows; ++i) {
      const int row_b = __shfl_sync(0xffffffffu, b, i);
      const int row_n = __shfl_sync(0xffffffffu, n, i);
      const SplitSegments seg{__shfl_sync(0xffffffffu, mine.length, i),
                              __shfl_sync(0xffffffffu, mine.count, i)};
      int at = 0;
      if (!walk.take(row_n, seg.count, tile, block_rows, at)) return base + i;
      if (lanes != nullptr && lane < seg.count)
        lanes[at + lane] =
            split_descriptor(row_b, row_n, seg, lane, static_cast<int>(base + i - first));
    }
  }
  return limit;
}

/// The row after the block that starts at row `first`: split_block_end with split rows, else
/// block_end.
__device__ __forceinline__ long long next_block(const int* __restrict__ row_ptr, long long first,
                                                long long end, int tile, int block_rows, int split,
                                                unsigned* __restrict__ lanes) {
  return split > 0 ? split_block_end(row_ptr, first, end, tile, block_rows, split, lanes)
                   : block_end(row_ptr, first, end, tile, block_rows);
}

/// counts[g] = the blocks of group g; a warp per group.
__device__ __forceinline__ void stream_count(const int* __restrict__ row_ptr, long long nrows,
                                             int tile, int block_rows, int split, int group,
                                             long long ngroups, int* __restrict__ counts) {
  const long long g = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (g >= ngroups) return;  // the whole warp
  const long long first = g * group;
  const long long end = first + group < nrows ? first + group : nrows;
  int n = 0;
  for (long long r = first; r < end;
       r = next_block(row_ptr, r, end, tile, block_rows, split, nullptr))
    ++n;
  if ((threadIdx.x & 31) == 0) counts[g] = n;
}

/// Exclusive scan of counts[0..n) into offsets[0..n]; one block of kScanBlock threads, each
/// summing a contiguous chunk.
__device__ __forceinline__ void stream_scan(const int* __restrict__ counts, long long n,
                                            int* __restrict__ offsets) {
  __shared__ long long partial[kScanBlock];
  const int t = threadIdx.x;
  const long long chunk = (n + kScanBlock - 1) / kScanBlock;
  const long long lo = t * chunk < n ? t * chunk : n;
  const long long hi = lo + chunk < n ? lo + chunk : n;
  long long sum = 0;
  for (long long i = lo; i < hi; ++i) sum += counts[i];
  partial[t] = sum;
  __syncthreads();
  for (int d = 1; d < kScanBlock; d *= 2) {
    const long long add = t >= d ? partial[t - d] : 0;
    __syncthreads();
    partial[t] += add;
    __syncthreads();
  }
  long long at = partial[t] - sum;  // exclusive prefix of this chunk
  for (long long i = lo; i < hi; ++i) {
    offsets[i] = static_cast<int>(at);
    at += counts[i];
  }
  if (t == kScanBlock - 1) offsets[n] = static_cast<int>(partial[t]);
}

/// row_blocks[offsets[g] ...] = the first rows of group g's blocks, and row_blocks[nblocks] =
/// nrows; with split rows, also block b's lane descriptors at lanes[b * block_rows ...] (zeroed
/// by the host); a warp per group.
__device__ __forceinline__ void stream_fill(const int* __restrict__ row_ptr, long long nrows,
                                            int tile, int block_rows, int split, int group,
                                            long long ngroups, const int* __restrict__ offsets,
                                            int* __restrict__ row_blocks,
                                            unsigned* __restrict__ lanes) {
  const long long g = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (g >= ngroups) return;  // the whole warp
  const bool writer = (threadIdx.x & 31) == 0;
  const long long first = g * group;
  const long long end = first + group < nrows ? first + group : nrows;
  int at = offsets[g];
  for (long long r = first; r < end;) {
    if (writer) row_blocks[at] = static_cast<int>(r);
    unsigned* block = split > 0 ? lanes + static_cast<long long>(at) * block_rows : nullptr;
    r = next_block(row_ptr, r, end, tile, block_rows, split, block);
    ++at;
  }
  if (writer && g == ngroups - 1) row_blocks[at] = static_cast<int>(nrows);
}

#endif  // __CUDACC__

}  // namespace device_csr
}  // namespace spmvc
