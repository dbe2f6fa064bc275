// Building ell, sell and hyb on the GPU from a CSR matrix already in device memory
// (spmvc::DeviceCsr), and the per-slice padding the planner reads for them. The arrays are the
// host encoders' (compiler/formats/{ell,sell,hyb}), element for element; where each element
// goes is templates/device_ell_index.cuh, shared with a host test.
//
// Values arrive as `src`, one element of `elem_bytes` per nonzero in CSR order: the caller's
// values (plain), or what the device value-coding passes of device_csr.cuh and device_values.cuh
// made of them (8- and 16-bit codes, fp32 copies); elem_bytes 0 stores none (all-ones values). The
// runtime fills every output first (column -1 in padding, values 0), so the fills write only stored
// nonzeros.
//
// slice_longest adds to out[k], k = 0..8, the longest row of every aligned slice of 2^k rows
//     (Profile::slice_longest): a warp covers 256 rows, 8 consecutive rows a lane.
// ell_fill        one thread per row: the row's first min(len, width) nonzeros, and its stored
//                 length when `lens` is given (ELL-R; hyb's ELL part with width K).
// sell_sort       one block per window of `sigma` rows: each row's rank in the window's stable
//                 sort by decreasing length, perm[window start + rank] = row.
// sell_widths     one thread per slice: slice_ptr[s + 1] = its longest row, rounded up to t,
//                 times c (slice_ptr[0] = 0); a scan then makes them offsets.
// sell_fill       one thread per sorted position: the row's nonzeros in its slice.
// hyb_tails       one thread per row: offsets[r + 1] = the nonzeros past column `width` of row r
//                 (offsets[0] = 0); a scan then makes them the COO part's row offsets.
// hyb_coo_fill    one warp per row: its nonzeros past `width` into coo_row, coo_col, values.
// dia_offsets     one thread per row, grid-stride: each nonzero's diagonal (column - row) into a
//                 set of kDiaSlots 64-bit keys (offset + 2^32; 0 empty), a block's own set in
//                 shared memory filtering what reaches the global one; *count counts the global
//                 set's keys. Once a block's own set passes kDiaMaxDiagonals (so the matrix has
//                 more), it raises *count past the cap and its threads stop, between any two
//                 nonzeros: the sets never fill, and a long row is not walked to its end. Every
//                 thread also stops once *count has passed the cap, checked at a row's start and
//                 before each insert into the global set, and no insert probes more than
//                 kDiaMaxDiagonals + 1 slots (that many other keys: the matrix has more).
// dia_symmetry    one thread per row: each entry above the diagonal against its mirror, found by
//                 a binary search of the mirror's row (sorted columns): flags[0] set where one has
//                 no mirror, flags[1] where the values differ; counts[0] and counts[1] sum the
//                 entries above and below the diagonal.
// dia_fill        one thread per row: each nonzero's value to position (its diagonal's rank among
//                 the ascending `offsets`) * nrows + row; the symmetric form skips the entries
//                 above the diagonal (read from their mirrors).
// scan_partials, scan_top, scan_apply
//                 an inclusive scan of n 64-bit integers in place: the sums of chunks of
//                 kScanChunk, an exclusive scan of those in one block, then each chunk scanned
//                 from its offset.
#pragma once

#include "spmvc/device_ell_index.cuh"

namespace spmvc {
namespace device_ell {

constexpr int kLevelBlock = 256;  // slice_longest: 8 warps, 2048 rows a block
constexpr int kFillBlock = 256;   // ell_fill, sell_widths, sell_fill, hyb_tails, hyb_coo_fill
constexpr int kSortBlock = 256;   // sell_sort: one block per window
constexpr int kScanBlock = 256;   // scan_partials and scan_apply
constexpr int kScanPerThread = 8;
constexpr int kScanChunk = kScanBlock * kScanPerThread;
constexpr int kScanTopBlock = 1024;  // scan_top: one block

/// Copies element k of `src` (elem_bytes each: 0, 1, 2, 4 or 8) to slot `pos` of `dst`.
__device__ __forceinline__ void copy_element(const void* __restrict__ src, void* __restrict__ dst,
                                             int elem_bytes, long long k, long long pos) {
  if (elem_bytes == 8) {
    static_cast<unsigned long long*>(dst)[pos] =
        __ldg(static_cast<const unsigned long long*>(src) + k);
  } else if (elem_bytes == 4) {
    static_cast<unsigned int*>(dst)[pos] = __ldg(static_cast<const unsigned int*>(src) + k);
  } else if (elem_bytes == 2) {
    static_cast<unsigned short*>(dst)[pos] = __ldg(static_cast<const unsigned short*>(src) + k);
  } else if (elem_bytes == 1) {
    static_cast<unsigned char*>(dst)[pos] = __ldg(static_cast<const unsigned char*>(src) + k);
  }
}

__device__ __forceinline__ long long grid_thread() {
  return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long grid_threads() {
  return static_cast<long long>(gridDim.x) * blockDim.x;
}

__device__ __forceinline__ void slice_longest(const int* __restrict__ row_ptr, long long nrows,
                                              unsigned long long* __restrict__ out) {
  __shared__ unsigned long long block_acc[kSliceLevels];
  if (threadIdx.x < kSliceLevels) block_acc[threadIdx.x] = 0;
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const long long warp = grid_thread() >> 5;
  const long long warps = grid_threads() >> 5;
  const long long slices = (nrows + kLevelRows - 1) / kLevelRows;
  unsigned long long acc[kSliceLevels];
#pragma unroll
  for (int k = 0; k < kSliceLevels; ++k) acc[k] = 0;
  for (long long s = warp; s < slices; s += warps) {
    const long long first = s * kLevelRows + static_cast<long long>(lane) * kRowsPerLane;
    long long len[kRowsPerLane];
#pragma unroll
    for (int u = 0; u < kRowsPerLane; ++u) {
      const long long r = first + u;
      len[u] = r < nrows ? static_cast<long long>(__ldg(row_ptr + r + 1)) - __ldg(row_ptr + r) : 0;
    }
    long long longest = lane_slice_longest(len, acc);
    // Heights 16..256: 2, 4, .., 32 lanes; the first lane of each group adds the group's longest.
#pragma unroll
    for (int k = 4; k < kSliceLevels; ++k) {
      const long long other = __shfl_xor_sync(0xffffffffu, longest, 1 << (k - 4));
      longest = other > longest ? other : longest;
      if ((lane & ((1 << (k - 3)) - 1)) == 0) acc[k] += static_cast<unsigned long long>(longest);
    }
  }
#pragma unroll
  for (int k = 0; k < kSliceLevels; ++k) {
    unsigned long long v = acc[k];
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0 && v > 0) atomicAdd(&block_acc[k], v);
  }
  __syncthreads();
  if (threadIdx.x < kSliceLevels && block_acc[threadIdx.x] > 0)
    atomicAdd(out + threadIdx.x, block_acc[threadIdx.x]);
}

__device__ __forceinline__ void ell_fill(const int* __restrict__ row_ptr,
                                         const int* __restrict__ col_idx,
                                         const void* __restrict__ src, int elem_bytes,
                                         long long nrows, long long width, int t,
                                         int* __restrict__ lens, int* __restrict__ col,
                                         void* __restrict__ values) {
  const long long pitch = ell_pitch(nrows);
  for (long long r = grid_thread(); r < nrows; r += grid_threads()) {
    const long long start = __ldg(row_ptr + r);
    const long long len = ell_part_length(__ldg(row_ptr + r + 1) - start, width);
    if (lens != nullptr) lens[r] = static_cast<int>(len);
    for (long long k = 0; k < len; ++k) {
      const long long pos = ell_slot(k, r, t, pitch);
      col[pos] = __ldg(col_idx + start + k);
      copy_element(src, values, elem_bytes, start + k, pos);
    }
  }
}

__device__ __forceinline__ void sell_sort(const int* __restrict__ row_ptr, long long nrows,
                                          int sigma, int* __restrict__ perm) {
  __shared__ int lens[kMaxSortWindow];
  const long long windows = (nrows + sigma - 1) / sigma;
  for (long long w = blockIdx.x; w < windows; w += gridDim.x) {
    const long long start = w * sigma;
    const int n = static_cast<int>(nrows - start < sigma ? nrows - start : sigma);
    __syncthreads();  // the previous window's ranks are done with lens
    for (int i = threadIdx.x; i < n; i += blockDim.x)
      lens[i] = __ldg(row_ptr + start + i + 1) - __ldg(row_ptr + start + i);
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x)
      perm[start + window_rank(lens, n, i)] = static_cast<int>(start + i);
  }
}

__device__ __forceinline__ void sell_widths(const int* __restrict__ row_ptr,
                                            const int* __restrict__ perm, long long nrows, int c,
                                            int t, long long* __restrict__ slice_ptr) {
  const long long slices = (nrows + c - 1) / c;
  if (grid_thread() == 0) slice_ptr[0] = 0;
  for (long long s = grid_thread(); s < slices; s += grid_threads()) {
    long long longest = 0;
    const long long end = (s + 1) * c < nrows ? (s + 1) * c : nrows;
    for (long long i = s * c; i < end; ++i) {
      const long long r = perm != nullptr ? __ldg(perm + i) : i;
      const long long len = static_cast<long long>(__ldg(row_ptr + r + 1)) - __ldg(row_ptr + r);
      longest = len > longest ? len : longest;
    }
    slice_ptr[s + 1] = padded_width(longest, t) * c;
  }
}

__device__ __forceinline__ void sell_fill(const int* __restrict__ row_ptr,
                                          const int* __restrict__ col_idx,
                                          const void* __restrict__ src, int elem_bytes,
                                          const int* __restrict__ perm, long long nrows, int c,
                                          int t, const long long* __restrict__ slice_ptr,
                                          int* __restrict__ col, void* __restrict__ values) {
  for (long long i = grid_thread(); i < nrows; i += grid_threads()) {
    const long long r = perm != nullptr ? __ldg(perm + i) : i;
    const long long start = __ldg(row_ptr + r);
    const long long len = __ldg(row_ptr + r + 1) - start;
    const long long base = __ldg(slice_ptr + i / c);
    for (long long k = 0; k < len; ++k) {
      const long long pos = sell_slot(base, i % c, k, c, t);
      col[pos] = __ldg(col_idx + start + k);
      copy_element(src, values, elem_bytes, start + k, pos);
    }
  }
}

__device__ __forceinline__ void hyb_tails(const int* __restrict__ row_ptr, long long nrows,
                                          long long width, long long* __restrict__ offsets) {
  if (grid_thread() == 0) offsets[0] = 0;
  for (long long r = grid_thread(); r < nrows; r += grid_threads())
    offsets[r + 1] =
        coo_part_length(static_cast<long long>(__ldg(row_ptr + r + 1)) - __ldg(row_ptr + r), width);
}

__device__ __forceinline__ void hyb_coo_fill(
    const int* __restrict__ row_ptr, const int* __restrict__ col_idx, const void* __restrict__ src,
    int elem_bytes, long long nrows, long long width, const long long* __restrict__ offsets,
    int* __restrict__ coo_row, int* __restrict__ coo_col, void* __restrict__ values) {
  const int lane = threadIdx.x & 31;
  for (long long r = grid_thread() >> 5; r < nrows; r += grid_threads() >> 5) {
    const long long start = __ldg(row_ptr + r) + width;
    const long long end = __ldg(row_ptr + r + 1);
    const long long out = __ldg(offsets + r) - start;
    for (long long j = start + lane; j < end; j += 32) {
      coo_row[out + j] = static_cast<int>(r);
      coo_col[out + j] = __ldg(col_idx + j);
      copy_element(src, values, elem_bytes, j, out + j);
    }
  }
}

/// Exclusive scan of one value per thread over the block (blockDim.x a multiple of 32, at most
/// 1024); `total` gets the block's sum. Every thread of the block must call it.
__device__ __forceinline__ long long block_exclusive_scan(long long v, long long& total) {
  __shared__ long long warp_sums[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  long long inclusive = v;
  for (int offset = 1; offset < 32; offset *= 2) {
    const long long up = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += up;
  }
  __syncthreads();  // warp_sums may still be read by a previous call
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    long long s = lane < warps ? warp_sums[lane] : 0;
    for (int offset = 1; offset < 32; offset *= 2) {
      const long long up = __shfl_up_sync(0xffffffffu, s, offset);
      if (lane >= offset) s += up;
    }
    warp_sums[lane] = s;  // inclusive over warps
  }
  __syncthreads();
  total = warp_sums[warps - 1];
  return inclusive - v + (warp > 0 ? warp_sums[warp - 1] : 0);
}

__device__ __forceinline__ void scan_partials(const long long* __restrict__ data, long long n,
                                              long long* __restrict__ partials) {
  const long long first = static_cast<long long>(blockIdx.x) * kScanChunk +
                          static_cast<long long>(threadIdx.x) * kScanPerThread;
  long long sum = 0;
#pragma unroll
  for (int u = 0; u < kScanPerThread; ++u) sum += first + u < n ? data[first + u] : 0;
  long long total = 0;
  (void)block_exclusive_scan(sum, total);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

__device__ __forceinline__ void scan_top(long long* __restrict__ partials, long long n) {
  const long long per = (n + blockDim.x - 1) / blockDim.x;
  const long long first = threadIdx.x * per;
  const long long end = first + per < n ? first + per : n;
  long long sum = 0;
  for (long long i = first; i < end; ++i) sum += partials[i];
  long long total = 0;
  long long running = block_exclusive_scan(sum, total);
  for (long long i = first; i < end; ++i) {
    const long long v = partials[i];
    partials[i] = running;
    running += v;
  }
}

__device__ __forceinline__ void scan_apply(long long* __restrict__ data, long long n,
                                           const long long* __restrict__ partials) {
  const long long first = static_cast<long long>(blockIdx.x) * kScanChunk +
                          static_cast<long long>(threadIdx.x) * kScanPerThread;
  long long v[kScanPerThread];
  long long sum = 0;
#pragma unroll
  for (int u = 0; u < kScanPerThread; ++u) {
    v[u] = first + u < n ? data[first + u] : 0;
    sum += v[u];
  }
  long long total = 0;
  long long running = block_exclusive_scan(sum, total) + partials[blockIdx.x];
#pragma unroll
  for (int u = 0; u < kScanPerThread; ++u) {
    running += v[u];
    if (first + u < n) data[first + u] = running;
  }
}

constexpr int kDiaBlock = 256;
constexpr int kDiaSlots = 256;
constexpr int kDiaMaxDiagonals = 64;
constexpr unsigned long long kDiaKeyBias = 1ull << 32;

// dia_insert's answers.
constexpr int kDiaPresent = 0;   // the key was in the set
constexpr int kDiaInserted = 1;  // this call added it
constexpr int kDiaTooMany = 2;   // kDiaMaxDiagonals + 1 slots in a row hold other keys

/// Inserts `key` (non-zero) into the kDiaSlots-slot set at `keys` (shared or global memory) by
/// linear probing. The probe stops after kDiaMaxDiagonals + 1 slots: that many distinct other
/// keys already in the set mean more diagonals than dia stores, so no insert walks a crowded set
/// (in global memory every probe is a round trip to L2).
__device__ __forceinline__ int dia_insert(unsigned long long* keys, unsigned long long key) {
  const unsigned h = static_cast<unsigned>((key * 0x9E3779B97F4A7C15ull) >> 56);
  for (int probe = 0; probe <= kDiaMaxDiagonals; ++probe) {
    unsigned long long* slot = keys + ((h + probe) & (kDiaSlots - 1));
    unsigned long long seen = *reinterpret_cast<volatile unsigned long long*>(slot);
    if (seen == key) return kDiaPresent;
    if (seen == 0) {
      seen = atomicCAS(slot, 0ull, key);
      if (seen == 0) return kDiaInserted;
      if (seen == key) return kDiaPresent;
    }
  }
  return kDiaTooMany;
}

__device__ __forceinline__ void dia_offsets(const int* __restrict__ row_ptr,
                                            const int* __restrict__ col_idx, long long nrows,
                                            unsigned long long* __restrict__ keys,
                                            int* __restrict__ count) {
  __shared__ unsigned long long local[kDiaSlots];
  __shared__ int local_count;  // the keys of `local`
  for (int i = threadIdx.x; i < kDiaSlots; i += blockDim.x) local[i] = 0;
  if (threadIdx.x == 0) local_count = 0;
  __syncthreads();
  const volatile int* seen = &local_count;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long r = grid_thread(); r < nrows; r += stride) {
    if (*reinterpret_cast<volatile int*>(count) > kDiaMaxDiagonals) return;
    const int end = __ldg(row_ptr + r + 1);
    for (int k = __ldg(row_ptr + r); k < end; ++k) {
      if (*seen > kDiaMaxDiagonals) return;
      const unsigned long long key =
          static_cast<unsigned long long>(static_cast<long long>(__ldg(col_idx + k)) - r) +
          kDiaKeyBias;
      const int local_insert = dia_insert(local, key);
      if (local_insert == kDiaPresent) continue;
      if (local_insert == kDiaTooMany || atomicAdd(&local_count, 1) + 1 > kDiaMaxDiagonals) {
        // This block alone has seen more diagonals than dia stores: the answer is known.
        atomicMax(count, kDiaMaxDiagonals + 1);
        return;
      }
      // The global set is read only while its count is under the cap: past it, every block's
      // inserts would crowd it for nothing.
      if (*reinterpret_cast<volatile int*>(count) > kDiaMaxDiagonals) return;
      const int global_insert = dia_insert(keys, key);
      if (global_insert == kDiaTooMany) {
        atomicMax(count, kDiaMaxDiagonals + 1);
        return;
      }
      if (global_insert == kDiaInserted && atomicAdd(count, 1) + 1 > kDiaMaxDiagonals) return;
    }
  }
}

__device__ __forceinline__ void dia_symmetry(const int* __restrict__ row_ptr,
                                             const int* __restrict__ col_idx,
                                             const void* __restrict__ values, int elem_bytes,
                                             long long nrows, int* __restrict__ flags,
                                             unsigned long long* __restrict__ counts) {
  __shared__ unsigned long long sums[2];
  if (threadIdx.x < 2) sums[threadIdx.x] = 0;
  __syncthreads();
  const long long r = grid_thread();
  unsigned long long above = 0, below = 0;
  bool missing = false, differs = false;
  if (r < nrows) {
    const int end = __ldg(row_ptr + r + 1);
    for (int k = __ldg(row_ptr + r); k < end; ++k) {
      const int c = __ldg(col_idx + k);
      if (c < r) ++below;
      if (c <= r) continue;
      ++above;
      if (c >= nrows) {
        missing = true;
        continue;
      }
      int lo = __ldg(row_ptr + c), hi = __ldg(row_ptr + c + 1);
      while (lo < hi) {  // the first position in row c whose column is >= r
        const int mid = lo + (hi - lo) / 2;
        if (__ldg(col_idx + mid) < r) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      if (lo == __ldg(row_ptr + c + 1) || __ldg(col_idx + lo) != r) {
        missing = true;
        continue;
      }
      const bool same = elem_bytes == 8 ? __ldg(static_cast<const double*>(values) + k) ==
                                              __ldg(static_cast<const double*>(values) + lo)
                                        : __ldg(static_cast<const float*>(values) + k) ==
                                              __ldg(static_cast<const float*>(values) + lo);
      differs = differs || !same;
    }
  }
  if (missing) flags[0] = 1;
  if (differs) flags[1] = 1;
  if (above > 0) atomicAdd(&sums[0], above);
  if (below > 0) atomicAdd(&sums[1], below);
  __syncthreads();
  if (threadIdx.x < 2 && sums[threadIdx.x] > 0) atomicAdd(counts + threadIdx.x, sums[threadIdx.x]);
}

__device__ __forceinline__ void dia_fill(const int* __restrict__ row_ptr,
                                         const int* __restrict__ col_idx,
                                         const void* __restrict__ src, int elem_bytes,
                                         long long nrows, const int* __restrict__ offsets,
                                         int noffsets, int symmetric, void* __restrict__ values) {
  __shared__ int stored[kDiaMaxDiagonals + 1];
  for (int i = threadIdx.x; i < noffsets; i += blockDim.x) stored[i] = offsets[i];
  __syncthreads();
  const long long r = grid_thread();
  if (r >= nrows) return;
  const int end = __ldg(row_ptr + r + 1);
  for (int k = __ldg(row_ptr + r); k < end; ++k) {
    const long long o = static_cast<long long>(__ldg(col_idx + k)) - r;
    if (symmetric != 0 && o > 0) continue;
    int lo = 0, hi = noffsets;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (stored[mid] < o) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo < noffsets && stored[lo] == o)
      copy_element(src, values, elem_bytes, k, static_cast<long long>(lo) * nrows + r);
  }
}

}  // namespace device_ell
}  // namespace spmvc
