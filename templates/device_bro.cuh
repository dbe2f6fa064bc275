// Building BRO-ELL and BRO-COO (compiler/formats/bro_ell/bro_ell_codec.hpp and
// bro_coo/bro_coo_codec.hpp define the layouts) on the GPU from a CSR matrix already in device
// memory, and the column inspection the BRO cost models read.
//
// bro_inspect: one block per 256-row tile (grid-stride), thread per row for the slices' longest
// rows (Profile::slice_longest, heights 2^0..2^8, by shuffles), then a thread per nonzero of the
// tile for the column deltas: out[kDeltaBits + b] and out[kFirstColBits + b]
// (Profile::delta_bits, first_col_bits), out[kXSectors] (Profile::x_sectors), out[kUnsorted]
// (deltas <= 0: columns not strictly increasing) and out[kFirstUnsorted] (the first such
// nonzero, all ones when none).
//
// The encoder, in passes over slices and lanes (a slice is h rows, h*T lanes):
//   ell_columns   warp per slice: col_ptr[s + 1] = l_s (its longest lane)
//   (scan)        col_ptr (and later sym_ptr) turned into prefix sums in place, by the ell
//                 unit's multi-block scan (templates/device_ell.cuh scan_*; runtime scan_device)
//   ell_widths    warp per 32 lanes of a slice, column by column: the widest field of the warp,
//                 atomicMax'ed into widths32[col_ptr[s] + j] (zeroed first) and, baked, into
//                 pattern32[j] (through the block's maximum in shared memory)
//   ell_slice     thread per slice: widths[col_ptr[s] + j] (the slice's own, or the pattern's),
//                 and sym_ptr[s + 1] = ceil(sum of them / L)
//   ell_fill      thread per lane: the lane's stream, symbol by symbol (a lane owns its symbols:
//                 no atomics), and its value slots (plain, fp32, an 8-bit code found by a binary
//                 search of the table in shared memory, or a 16-bit code copied from the codes
//                 the value unit wrote per nonzero: templates/device_values.cuh)
// BRO-COO (formats/bro_coo/bro_coo_codec.hpp): coo_counts (thread per row) and the scan give each
// row's first entry, coo_select each entry's row and nonzero (a warp per row), coo_widths each
// interval's first row, two widths and symbols per lane (a warp per interval), the scan sym_ptr,
// and coo_fill each lane's stream, columns and values (a warp per interval).
// The per-slice and per-lane steps (slice_columns, LaneCursor, StreamWriter, slice_symbols) are
// plain functions the host can call too (SPMVC_BRO_HD), so a host test runs the same arithmetic
// against the host codec without a GPU.
#pragma once

#if defined(__CUDACC__)
#define SPMVC_BRO_HD __host__ __device__ __forceinline__
#else
#define SPMVC_BRO_HD inline
#endif

namespace spmvc {
namespace device_bro {

// bro_inspect's output slots (unsigned 64-bit, zeroed by the host but kFirstUnsorted: all ones).
constexpr int kDeltaBits = 0;                   // 33 slots: bits 0..32
constexpr int kFirstColBits = kDeltaBits + 33;  // 33 slots
constexpr int kXSectors = kFirstColBits + 33;
constexpr int kUnsorted = kXSectors + 1;
constexpr int kFirstUnsorted = kUnsorted + 1;
constexpr int kSliceLongest = kFirstUnsorted + 1;  // 9 slots: heights 2^0..2^8
constexpr int kInspectSlots = kSliceLongest + 9;
constexpr int kInspectRows = 256;  // rows (and threads) of a bro_inspect block
constexpr int kEncodeBlock = 256;  // threads per block of the encoder's passes

// Value storage of the fill passes' value slots (formats/values: plain, unit, 8-bit table, fp32
// of fp64, 16-bit table).
constexpr int kStorePlain = 0;
constexpr int kStoreNone = 1;
constexpr int kStoreCode8 = 2;
constexpr int kStoreF32 = 3;
constexpr int kStoreCode16 = 4;

/// Bits needed for v (0 for 0).
SPMVC_BRO_HD int bit_width(unsigned v) {
#if defined(__CUDA_ARCH__)
  return 32 - __clz(v);
#else
  int b = 0;
  for (; v != 0; v >>= 1) ++b;
  return b;
#endif
}

/// The BRO-ELL layout of one encoding: nrows rows cut into slices of h rows, T lanes per row,
/// the first min(length, limit) nonzeros of each row encoded.
struct Shape {
  long long nrows;
  int h;
  int T;
  long long limit;
  SPMVC_BRO_HD int lanes() const { return h * T; }
  SPMVC_BRO_HD long long nslices() const { return (nrows + h - 1) / h; }
};

/// Encoded length of row r (0 past the last row).
SPMVC_BRO_HD long long part_length(const int* row_ptr, const Shape& sh, long long r) {
  if (r >= sh.nrows) return 0;
  const long long len = static_cast<long long>(row_ptr[r + 1]) - row_ptr[r];
  return len < sh.limit ? len : sh.limit;
}

/// l_s: column positions of slice s (its longest lane).
SPMVC_BRO_HD long long slice_columns(const int* row_ptr, const Shape& sh, long long s) {
  long long longest = 0;
  const long long end = (s + 1) * sh.h < sh.nrows ? (s + 1) * sh.h : sh.nrows;
  for (long long r = s * sh.h; r < end; ++r) {
    const long long len = part_length(row_ptr, sh, r);
    longest = len > longest ? len : longest;
  }
  return (longest + sh.T - 1) / sh.T;
}

/// Walks lane v of slice s position by position: next() is the delta of the next position (0,
/// the padding marker, past the lane's own nonzeros) and at() the nonzero it codes.
struct LaneCursor {
  const int* col;
  long long k;  // the next position's nonzero
  int T;
  long long n;  // the lane's own positions
  long long j;  // the next position
  int prev;     // the last column taken (-1 first: d_0 = c_0 + 1)
  SPMVC_BRO_HD void start(const int* row_ptr, const int* col_idx, const Shape& sh, long long s,
                          int v) {
    const long long r = s * sh.h + v / sh.T;
    const int t = v % sh.T;
    const long long len = part_length(row_ptr, sh, r);
    col = col_idx;
    T = sh.T;
    n = len > t ? (len - t + sh.T - 1) / sh.T : 0;
    k = r < sh.nrows ? row_ptr[r] + t : 0;
    j = 0;
    prev = -1;
  }
  SPMVC_BRO_HD bool own() const { return j < n; }
  SPMVC_BRO_HD long long at() const { return k; }
  SPMVC_BRO_HD unsigned next() {
    if (j >= n) {
      ++j;
      return 0u;
    }
    const int c = col[k];
    const unsigned d = static_cast<unsigned>(c) - static_cast<unsigned>(prev);
    prev = c;
    k += T;
    ++j;
    return d;
  }
};

/// Writes a lane's fields MSB first into L-bit symbols (Word: 32 or 64 bits), symbol m at
/// out[m * stride]; finish() writes the last partial symbol and the zero symbols after it.
template <typename Word>
struct StreamWriter {
  static constexpr int L = 8 * static_cast<int>(sizeof(Word));
  Word* out;
  long long stride;
  long long m;
  Word cur;
  int fill;
  SPMVC_BRO_HD void start(Word* first, long long step) {
    out = first;
    stride = step;
    m = 0;
    cur = 0;
    fill = 0;
  }
  SPMVC_BRO_HD void store() {
    out[m * stride] = cur;
    ++m;
    cur = 0;
    fill = 0;
  }
  /// The low `bits` bits of d (d < 2^bits, bits <= 32).
  SPMVC_BRO_HD void put(unsigned long long d, int bits) {
    if (bits == 0) return;
    if (fill + bits <= L) {
      cur |= static_cast<Word>(d << (L - fill - bits));
      fill += bits;
      if (fill == L) store();
    } else {
      const int low = fill + bits - L;
      cur |= static_cast<Word>(d >> low);
      store();
      cur = static_cast<Word>((d & ((1ull << low) - 1)) << (L - low));
      fill = low;
    }
  }
  SPMVC_BRO_HD void finish(long long nsym) {
    if (fill > 0) store();
    while (m < nsym) store();
  }
};

/// nsym_s: symbols of each lane of the slice whose widths are widths[c0..c1).
SPMVC_BRO_HD long long slice_symbols(const unsigned char* widths, long long c0, long long c1,
                                     int L) {
  long long bits = 0;
  for (long long i = c0; i < c1; ++i) bits += widths[i];
  return (bits + L - 1) / L;
}

/// A 16-bit value slot: the code of nonzero k (codes: one per nonzero, in CSR order, as
/// code_values16_device writes them, each already found in the table), or the padding's code.
SPMVC_BRO_HD unsigned short code16_slot(const unsigned short* codes, bool own, long long k,
                                        int pad_code) {
  return own ? codes[k] : static_cast<unsigned short>(pad_code);
}

/// The entries BRO-COO encodes (formats/bro_coo/bro_coo_codec.hpp), in row order: entry i lies in
/// row rows[i]; past the last, the last row again (a padding delta of 0).
struct CooEntries {
  const int* rows;
  long long n;
  SPMVC_BRO_HD int row_at(long long i) const { return rows[i < n ? i : n - 1]; }
};

/// Lane l's widest first delta (its first entry's row against interval k's first row) and its
/// widest delta after that; the interval's widths are the widest over its 32 lanes.
SPMVC_BRO_HD void coo_lane_widths(const CooEntries& en, long long k, int interval, int l,
                                  int& first, int& rest) {
  const int per_lane = interval / 32;
  const long long base = k * interval, start = base + static_cast<long long>(l) * per_lane;
  first = bit_width(static_cast<unsigned>(en.row_at(start) - en.row_at(base)));
  rest = 0;
  for (int e = 1; e < per_lane; ++e) {
    const int b = bit_width(static_cast<unsigned>(en.row_at(start + e) - en.row_at(start + e - 1)));
    rest = b > rest ? b : rest;
  }
}

/// Symbols of each lane of an interval whose widths are (first, rest).
SPMVC_BRO_HD long long coo_symbols(int first, int rest, int interval, int L) {
  return (first + static_cast<long long>(interval / 32 - 1) * rest + L - 1) / L;
}

/// Lane l's stream of interval k: its first delta in `first` bits, the others in `rest`, then
/// zero symbols up to nsym (symbol m at out[m * 32]).
template <typename Word>
SPMVC_BRO_HD void coo_lane_stream(const CooEntries& en, long long k, int interval, int l, int first,
                                  int rest, Word* out, long long nsym) {
  const int per_lane = interval / 32;
  const long long base = k * interval, start = base + static_cast<long long>(l) * per_lane;
  StreamWriter<Word> w;
  w.start(out, 32);
  w.put(static_cast<unsigned>(en.row_at(start) - en.row_at(base)), first);
  for (int e = 1; e < per_lane; ++e)
    w.put(static_cast<unsigned>(en.row_at(start + e) - en.row_at(start + e - 1)), rest);
  w.finish(nsym);
}

#if defined(__CUDACC__)

__device__ __forceinline__ long long grid_thread() {
  return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long grid_threads() {
  return static_cast<long long>(gridDim.x) * blockDim.x;
}

__device__ __forceinline__ void bro_inspect(const int* __restrict__ row_ptr,
                                            const int* __restrict__ col_idx, long long nrows,
                                            unsigned long long* __restrict__ out) {
  constexpr int kHistogram = kFirstColBits + 33;  // the two delta-bit histograms
  constexpr int kFirstWords = 256;                // a tile's row starts, one bit per nonzero
  __shared__ unsigned histogram[kHistogram];      // this block's (fewer than 2^31 nonzeros)
  __shared__ unsigned first_unsorted;
  __shared__ int starts[kInspectRows + 1];  // the tile's row offsets, clamped at nrows
  __shared__ unsigned first_bits[kFirstWords];
  __shared__ unsigned warp_longest[kInspectRows / 32];
  for (int i = threadIdx.x; i < kHistogram; i += blockDim.x) histogram[i] = 0;
  if (threadIdx.x == 0) first_unsorted = ~0u;
  __syncthreads();
  constexpr unsigned kFull = 0xffffffffu;
  constexpr int kWarps = kInspectRows / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  // This thread's share of the other counts, over every tile it reads: added once at the end.
  unsigned long long sectors = 0, unsorted = 0;
  unsigned long long longest[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  for (long long base = static_cast<long long>(blockIdx.x) * kInspectRows; base < nrows;
       base += static_cast<long long>(gridDim.x) * kInspectRows) {
    const long long r = base + threadIdx.x;
    starts[threadIdx.x] = row_ptr[r < nrows ? r : nrows];
    if (threadIdx.x == 0) {
      const long long last = base + kInspectRows;
      starts[kInspectRows] = row_ptr[last < nrows ? last : nrows];
    }
    __syncthreads();
    // Slices of 2^k rows aligned at row 0 (a tile holds whole slices of every height up to 2^8):
    // the longest row of each, by shuffles within the warp (2^0..2^5), then over the warps'
    // longest (2^6..2^8); a slice counts where its first row exists.
    unsigned m =
        r < nrows ? static_cast<unsigned>(starts[threadIdx.x + 1] - starts[threadIdx.x]) : 0u;
    for (int k = 0; k <= 5; ++k) {
      if (k > 0) {
        const unsigned other = __shfl_xor_sync(kFull, m, 1 << (k - 1));
        m = other > m ? other : m;
      }
      if (r < nrows && (lane & ((1 << k) - 1)) == 0) longest[k] += m;
    }
    if (lane == 0) warp_longest[warp] = m;
    // The tile's nonzeros are contiguous (rows base..base+255). Where they fit the bitmap, each
    // row marks its first nonzero there; otherwise (long rows) each nonzero finds its row among
    // the tile's offsets.
    const long long k_begin = starts[0], k_end = starts[kInspectRows];
    const bool mapped = k_end - k_begin <= 32 * kFirstWords;  // the same for the whole block
    if (mapped) {
      for (int i = threadIdx.x; i < kFirstWords; i += blockDim.x) first_bits[i] = 0;
    }
    __syncthreads();
    if (threadIdx.x < kWarps) {
      const int w = threadIdx.x;
      unsigned wm = warp_longest[w];
      for (int k = 6; k <= 8; ++k) {
        const int g = 1 << (k - 5);  // warps per slice
        if (w % g == 0) {
          for (int i = 1; i < g; ++i) wm = warp_longest[w + i] > wm ? warp_longest[w + i] : wm;
          if (base + static_cast<long long>(w) * 32 < nrows) longest[k] += wm;
        }
      }
    }
    if (mapped) {
      if (r < nrows && starts[threadIdx.x] < k_end) {
        const int at = static_cast<int>(starts[threadIdx.x] - k_begin);
        atomicOr(&first_bits[at >> 5], 1u << (at & 31));
      }
      __syncthreads();
    }
    // The columns, a thread per nonzero of the tile, so short rows keep every lane busy.
    for (long long k = k_begin + threadIdx.x; k < k_end; k += blockDim.x) {
      bool first;
      if (mapped) {
        const int at = static_cast<int>(k - k_begin);
        first = ((first_bits[at >> 5] >> (at & 31)) & 1u) != 0;
      } else {
        int lo = 0, hi = kInspectRows;  // starts[lo] <= k < starts[hi]
        while (hi - lo > 1) {
          const int mid = (lo + hi) / 2;
          if (starts[mid] <= k)
            lo = mid;
          else
            hi = mid;
        }
        first = starts[lo] == k;
      }
      const int c = __ldg(col_idx + k);
      const int prev = first ? c : __ldg(col_idx + k - 1);
      // A row's first column has a histogram of its own; lanes with the same slot add once,
      // through their leader (stencil rows put most deltas in one slot).
      const int slot =
          first ? kFirstColBits + bit_width(static_cast<unsigned>(c))
                : kDeltaBits + bit_width(static_cast<unsigned>(c) - static_cast<unsigned>(prev));
      const unsigned same = __match_any_sync(__activemask(), slot);
      if (lane == __ffs(same) - 1) atomicAdd(&histogram[slot], static_cast<unsigned>(__popc(same)));
      sectors += first || (c >> 2) != (prev >> 2) ? 1 : 0;
      if (!first && c <= prev) {
        ++unsorted;
        atomicMin(&first_unsorted, static_cast<unsigned>(k));
      }
    }
    __syncthreads();
  }
  // Each warp's sums, then the grid's.
  for (int off = 16; off > 0; off /= 2) {
    sectors += __shfl_down_sync(kFull, sectors, off);
    unsorted += __shfl_down_sync(kFull, unsorted, off);
    for (int k = 0; k < 9; ++k) longest[k] += __shfl_down_sync(kFull, longest[k], off);
  }
  if (lane == 0) {
    if (sectors > 0) atomicAdd(out + kXSectors, sectors);
    if (unsorted > 0) atomicAdd(out + kUnsorted, unsorted);
    for (int k = 0; k < 9; ++k)
      if (longest[k] > 0) atomicAdd(out + kSliceLongest + k, longest[k]);
  }
  for (int i = threadIdx.x; i < kHistogram; i += blockDim.x)
    if (histogram[i] != 0) atomicAdd(out + i, static_cast<unsigned long long>(histogram[i]));
  if (threadIdx.x == 0 && first_unsorted != ~0u)
    atomicMin(out + kFirstUnsorted, static_cast<unsigned long long>(first_unsorted));
}

/// counts[s + 1] = l_s for every slice (counts[0] = 0): slice_columns, a warp per slice, its
/// lanes reading the rows' lengths together (a thread per slice, reading them one after another,
/// took 45 us on G3_circuit x16M on the H200).
__device__ __forceinline__ void ell_columns(const int* __restrict__ row_ptr, Shape sh,
                                            long long* __restrict__ counts) {
  const long long nslices = sh.nslices();
  const int lane = threadIdx.x & 31;
  for (long long s = grid_thread() / 32; s < nslices; s += grid_threads() / 32) {
    unsigned longest = 0;  // lengths are below 2^31
    for (int i = lane; i < sh.h; i += 32) {
      const auto len = static_cast<unsigned>(part_length(row_ptr, sh, s * sh.h + i));
      longest = len > longest ? len : longest;
    }
    longest = __reduce_max_sync(0xffffffffu, longest);
    if (lane == 0) counts[s + 1] = (static_cast<long long>(longest) + sh.T - 1) / sh.T;
  }
  if (grid_thread() == 0) counts[0] = 0;
}

/// Column positions whose pattern maximum a block of ell_widths keeps in shared memory.
constexpr int kPatternShared = 256;

/// widths32[col_ptr[s] + j] = the widest field at position j of slice s, and pattern32[j] the
/// widest over all slices when pattern32 is not null; both zeroed first. A warp per 32 lanes.
/// The pattern's first kPatternShared positions are maxed in shared memory and go to pattern32
/// once a block: atomics from every slice on the few words of the pattern queued at L2 (0.66 ms
/// of G3_circuit x16M's 1.2 ms encode on the H200).
__device__ __forceinline__ void ell_widths(const int* __restrict__ row_ptr,
                                           const int* __restrict__ col_idx, Shape sh,
                                           const long long* __restrict__ col_ptr,
                                           unsigned* __restrict__ widths32,
                                           unsigned* __restrict__ pattern32) {
  __shared__ unsigned block_pattern[kPatternShared];
  if (pattern32 != nullptr) {
    for (int i = threadIdx.x; i < kPatternShared; i += blockDim.x) block_pattern[i] = 0;
    __syncthreads();
  }
  const int warps_per_slice = sh.lanes() / 32;
  const long long warps = sh.nslices() * warps_per_slice;
  const int lane = threadIdx.x & 31;
  for (long long w = grid_thread() / 32; w < warps; w += grid_threads() / 32) {
    const long long s = w / warps_per_slice;
    const int v = static_cast<int>(w % warps_per_slice) * 32 + lane;
    LaneCursor cursor;
    cursor.start(row_ptr, col_idx, sh, s, v);
    const long long c0 = col_ptr[s], ncol = col_ptr[s + 1] - c0;
    // The widest field of position `at` over the warp, kept.
    auto keep = [&](long long at, unsigned b) {
      const unsigned widest = __reduce_max_sync(0xffffffffu, b);
      if (lane != 0 || widest == 0) return;
      atomicMax(widths32 + c0 + at, widest);
      if (pattern32 == nullptr) return;
      if (at < kPatternShared) {
        atomicMax(block_pattern + at, widest);
      } else {
        atomicMax(pattern32 + at, widest);
      }
    };
    // Positions kGroup at a time, their columns read before any atomic (which the compiler
    // cannot move the cursor's loads across), then the rest one by one.
    constexpr int kGroup = 4;
    long long j = 0;
    for (; j + kGroup <= ncol; j += kGroup) {
      unsigned b[kGroup];
#pragma unroll
      for (int u = 0; u < kGroup; ++u) b[u] = static_cast<unsigned>(bit_width(cursor.next()));
#pragma unroll
      for (int u = 0; u < kGroup; ++u) keep(j + u, b[u]);
    }
    for (; j < ncol; ++j) keep(j, static_cast<unsigned>(bit_width(cursor.next())));
  }
  if (pattern32 != nullptr) {
    __syncthreads();
    for (int i = threadIdx.x; i < kPatternShared; i += blockDim.x)
      if (block_pattern[i] > 0) atomicMax(pattern32 + i, block_pattern[i]);
  }
}

/// widths[col_ptr[s] + j] = widths32's (or, baked, pattern32[j]), and sym[s + 1] = the slice's
/// symbols per lane; sym[0] = 0. Thread per slice.
__device__ __forceinline__ void ell_slice(Shape sh, int L, const long long* __restrict__ col_ptr,
                                          const unsigned* __restrict__ widths32,
                                          const unsigned* __restrict__ pattern32,
                                          unsigned char* __restrict__ widths,
                                          long long* __restrict__ sym) {
  const long long nslices = sh.nslices();
  for (long long s = grid_thread(); s < nslices; s += grid_threads()) {
    const long long c0 = col_ptr[s], c1 = col_ptr[s + 1];
    for (long long i = c0; i < c1; ++i)
      widths[i] =
          static_cast<unsigned char>(pattern32 != nullptr ? pattern32[i - c0] : widths32[i]);
    sym[s + 1] = slice_symbols(widths, c0, c1, L);
  }
  if (grid_thread() == 0) sym[0] = 0;
}

/// Code of value `bits` in the sorted table of ntable patterns (binary search); -1 when absent.
__device__ __forceinline__ int table_code(const unsigned long long* table, int ntable,
                                          unsigned long long bits) {
  int lo = 0, hi = ntable;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (table[mid] < bits) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < ntable && table[lo] == bits ? lo : -1;
}

/// Stores value k of `values` (or, when !own, the padding: 0, or pad_code) in slot `slot` as
/// `store` says; 1 when the value does not fit (not in the table, not exact in fp32). `values`
/// is the caller's array, or with kStoreCode16 the per-nonzero 16-bit codes.
__device__ __forceinline__ int store_value(const void* __restrict__ values, int value_bytes,
                                           bool own, long long k, int store,
                                           void* __restrict__ slots, long long slot,
                                           const unsigned long long* table, int ntable,
                                           int pad_code) {
  if (store == kStorePlain) {
    if (value_bytes == 8) {
      static_cast<double*>(slots)[slot] = own ? static_cast<const double*>(values)[k] : 0.0;
    } else {
      static_cast<float*>(slots)[slot] = own ? static_cast<const float*>(values)[k] : 0.0f;
    }
  } else if (store == kStoreF32) {
    const double x = own ? static_cast<const double*>(values)[k] : 0.0;
    const float f = static_cast<float>(x);
    static_cast<float*>(slots)[slot] = f;
    return own && !(isinf(x) || (fabs(x) <= 3.402823466e38 && static_cast<double>(f) == x)) ? 1 : 0;
  } else if (store == kStoreCode8) {
    int code = pad_code;
    if (own) {
      const unsigned long long bits =
          value_bytes == 8 ? static_cast<unsigned long long>(
                                 __double_as_longlong(static_cast<const double*>(values)[k]))
                           : static_cast<unsigned long long>(
                                 __float_as_uint(static_cast<const float*>(values)[k]));
      code = table_code(table, ntable, bits);
    }
    static_cast<unsigned char*>(slots)[slot] = static_cast<unsigned char>(code < 0 ? 0 : code);
    return code < 0 ? 1 : 0;
  } else if (store == kStoreCode16) {
    static_cast<unsigned short*>(slots)[slot] =
        code16_slot(static_cast<const unsigned short*>(values), own, k, pad_code);
  }
  return 0;
}

/// Every lane's symbols (then its slice's zero symbols up to sym_ptr's count) and value slots.
/// values: the caller's (value_bytes each), or the 16-bit codes (kStoreCode16); store: kStore*;
/// table: ntable (<= 256) sorted bit patterns (kStoreCode8; ntable 0 otherwise); pad_code: the
/// padding slots' code (kStoreCode8, kStoreCode16); `bad` counts values the table lacks or,
/// with kStoreF32, that fp32 does not hold exactly.
template <typename Word>
__device__ __forceinline__ void ell_fill(
    const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const void* __restrict__ values, int value_bytes, Shape sh,
    const long long* __restrict__ col_ptr, const long long* __restrict__ sym_ptr,
    const unsigned char* __restrict__ widths, Word* __restrict__ symbols, int store,
    void* __restrict__ slots, const unsigned long long* __restrict__ table, int ntable,
    int pad_code, unsigned long long* __restrict__ bad) {
  __shared__ unsigned long long codes[256];
  for (int i = threadIdx.x; i < ntable; i += blockDim.x) codes[i] = table[i];
  __syncthreads();
  const int S = sh.lanes();
  const long long lanes = sh.nslices() * S;
  unsigned long long missed = 0;
  for (long long g = grid_thread(); g < lanes; g += grid_threads()) {
    const long long s = g / S;
    const int v = static_cast<int>(g % S);
    LaneCursor cursor;
    cursor.start(row_ptr, col_idx, sh, s, v);
    StreamWriter<Word> out;
    out.start(symbols + sym_ptr[s] * S + v, S);
    const long long c0 = col_ptr[s], ncol = col_ptr[s + 1] - c0;
    // One column position at a time: unrolled, the 32-bit symbols' variant spills.
#pragma unroll 1
    for (long long j = 0; j < ncol; ++j) {
      const bool own = cursor.own();
      const long long k = cursor.at();
      out.put(cursor.next(), widths[c0 + j]);
      missed += store_value(values, value_bytes, own, k, store, slots, (c0 + j) * S + v, codes,
                            ntable, pad_code);
    }
    out.finish(sym_ptr[s + 1] - sym_ptr[s]);
  }
  if (missed > 0) atomicAdd(bad, missed);
}

/// counts[r + 1] = the entries row r gives BRO-COO (its nonzeros from position skip on);
/// counts[0] = 0. Thread per row.
__device__ __forceinline__ void coo_counts(const int* __restrict__ row_ptr, long long nrows,
                                           long long skip, long long* __restrict__ counts) {
  for (long long r = grid_thread(); r < nrows; r += grid_threads()) {
    const long long tail = static_cast<long long>(row_ptr[r + 1]) - row_ptr[r] - skip;
    counts[r + 1] = tail > 0 ? tail : 0;
  }
  if (grid_thread() == 0) counts[0] = 0;
}

/// rows[i] and at[i] (the nonzero) of every entry, from the rows' offsets; a warp per row.
__device__ __forceinline__ void coo_select(const int* __restrict__ row_ptr, long long nrows,
                                           long long skip, const long long* __restrict__ offsets,
                                           int* __restrict__ rows, long long* __restrict__ at) {
  const int lane = threadIdx.x & 31;
  for (long long r = grid_thread() / 32; r < nrows; r += grid_threads() / 32) {
    const long long o = offsets[r], n = offsets[r + 1] - o, first = row_ptr[r] + skip;
    for (long long e = lane; e < n; e += 32) {
      rows[o + e] = static_cast<int>(r);
      at[o + e] = first + e;
    }
  }
}

/// Interval k's first row, widths (first, rest) and symbols per lane (sym[k + 1]; sym[0] = 0);
/// a warp per interval.
__device__ __forceinline__ void coo_widths(const int* __restrict__ rows, long long n, int interval,
                                           int L, int* __restrict__ row_base,
                                           unsigned char* __restrict__ widths,
                                           long long* __restrict__ sym) {
  const CooEntries en{rows, n};
  const long long intervals = (n + interval - 1) / interval;
  const int lane = threadIdx.x & 31;
  for (long long k = grid_thread() / 32; k < intervals; k += grid_threads() / 32) {
    int first, rest;
    coo_lane_widths(en, k, interval, lane, first, rest);
    first = static_cast<int>(__reduce_max_sync(0xffffffffu, static_cast<unsigned>(first)));
    rest = static_cast<int>(__reduce_max_sync(0xffffffffu, static_cast<unsigned>(rest)));
    if (lane == 0) {
      row_base[k] = en.row_at(k * interval);
      widths[2 * k] = static_cast<unsigned char>(first);
      widths[2 * k + 1] = static_cast<unsigned char>(rest);
      sym[k + 1] = coo_symbols(first, rest, interval, L);
    }
  }
  if (grid_thread() == 0) sym[0] = 0;
}

/// Every lane's stream, column and value slots (stored as in ell_fill); a warp per interval.
template <typename Word>
__device__ __forceinline__ void coo_fill(
    const int* __restrict__ rows, const long long* __restrict__ at, long long n,
    const int* __restrict__ col_idx, const void* __restrict__ values, int value_bytes, int interval,
    const unsigned char* __restrict__ widths, const long long* __restrict__ sym_ptr,
    Word* __restrict__ symbols, int* __restrict__ cols, int store, void* __restrict__ slots,
    const unsigned long long* __restrict__ table, int ntable, int pad_code,
    unsigned long long* __restrict__ bad) {
  __shared__ unsigned long long codes[256];
  for (int i = threadIdx.x; i < ntable; i += blockDim.x) codes[i] = table[i];
  __syncthreads();
  const CooEntries en{rows, n};
  const long long intervals = (n + interval - 1) / interval;
  const int lane = threadIdx.x & 31, per_lane = interval / 32;
  unsigned long long missed = 0;
  for (long long k = grid_thread() / 32; k < intervals; k += grid_threads() / 32) {
    coo_lane_stream<Word>(en, k, interval, lane, widths[2 * k], widths[2 * k + 1],
                          symbols + sym_ptr[k] * 32 + lane, sym_ptr[k + 1] - sym_ptr[k]);
    for (int e = 0; e < per_lane; ++e) {
      const long long i = k * interval + static_cast<long long>(lane) * per_lane + e;
      const long long slot = k * interval + static_cast<long long>(e) * 32 + lane;
      const bool own = i < n;
      const long long nz = own ? at[i] : 0;
      cols[slot] = own ? col_idx[nz] : 0;
      missed +=
          store_value(values, value_bytes, own, nz, store, slots, slot, codes, ntable, pad_code);
    }
  }
  if (missed > 0) atomicAdd(bad, missed);
}

#endif  // __CUDACC__

}  // namespace device_bro
}  // namespace spmvc
