// inspect(): every Profile field in a few linear passes over the CSR arrays. The budget is about
// a second for 8M nonzeros on one core, so nothing here sorts the whole matrix or hashes
// coordinates: block fill uses a stamp array (a per-block-row sort where the matrix is far wider
// than it has nonzeros, so memory follows nonzeros, not width), symmetry a search of each entry's
// mirror in its sorted row, and distinct values small hash sets that give way to hash-bucketed
// counting.
//
// Every pass is split into row (or nonzero) ranges on the host threads (spmvc/parallel.hpp);
// each range fills a partial result and the partials merge by sums, maxima and set unions, so
// the Profile is the same for any number of threads.
#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "spmvc/parallel.hpp"
#include "spmvc/profile.hpp"
#include "spmvc/value_rounding.hpp"

namespace spmvc {
namespace {

// Work units (nonzeros plus rows) below which a scan is not worth a thread: about 100 us.
constexpr std::int64_t kScanGrain = std::int64_t{1} << 16;

int bits_needed(std::uint32_t v) { return 32 - std::countl_zero(v); }

// Row lengths, the envelope, column deltas and x sectors all come from one pass over the rows,
// split into row ranges that each fill a RowScan; the partial scans merge by sums and maxima, so
// the result does not depend on the split.
struct RowScan {
  std::array<std::int64_t, 33> exact_bins{};  // lengths 0..32
  std::array<std::int64_t, 64> pow2_bins{};   // index k: lengths 2^(k-1)+1 .. 2^k, k >= 6
  std::int64_t row_min = std::numeric_limits<std::int64_t>::max();
  std::int64_t row_max = 0;
  std::int64_t bandwidth = 0;
  std::int64_t profile = 0;
  std::int64_t x_sectors = 0;
  std::array<std::int64_t, 33> delta_bits{};
  std::array<std::int64_t, 33> first_col_bits{};

  void merge(const RowScan& o) {
    for (std::size_t b = 0; b < exact_bins.size(); ++b) exact_bins[b] += o.exact_bins[b];
    for (std::size_t b = 0; b < pow2_bins.size(); ++b) pow2_bins[b] += o.pow2_bins[b];
    for (std::size_t b = 0; b < delta_bits.size(); ++b) delta_bits[b] += o.delta_bits[b];
    for (std::size_t b = 0; b < first_col_bits.size(); ++b)
      first_col_bits[b] += o.first_col_bits[b];
    row_min = std::min(row_min, o.row_min);
    row_max = std::max(row_max, o.row_max);
    bandwidth = std::max(bandwidth, o.bandwidth);
    profile += o.profile;
    x_sectors += o.x_sectors;
  }
};

RowScan scan_row_range(const CsrMatrix& a, std::int64_t row0, std::int64_t row1) {
  RowScan s;
  const std::int32_t* col = a.col_idx.data();
  for (std::int64_t i = row0; i < row1; ++i) {
    const std::int64_t begin = a.row_ptr[i];
    const std::int64_t end = a.row_ptr[i + 1];
    const std::int64_t len = end - begin;
    s.row_min = std::min(s.row_min, len);
    s.row_max = std::max(s.row_max, len);
    if (len <= 32) {
      ++s.exact_bins[len];
    } else {
      ++s.pow2_bins[std::countr_zero(std::bit_ceil(static_cast<std::uint64_t>(len)))];
    }
    if (len == 0) continue;

    const std::int64_t first = col[begin];
    const std::int64_t last = col[end - 1];
    s.bandwidth = std::max({s.bandwidth, i - first, last - i});
    s.profile += std::max<std::int64_t>(0, i - first);
    ++s.first_col_bits[bits_needed(static_cast<std::uint32_t>(first))];

    // 32-byte sectors hold 4 fp64 entries of x; columns are sorted, so a row's distinct
    // sectors are the number of times col/4 changes along it, plus one.
    std::int32_t prev = col[begin];
    std::int64_t sectors = 1;
    for (std::int64_t k = begin + 1; k < end; ++k) {
      const std::int32_t c = col[k];
      ++s.delta_bits[bits_needed(static_cast<std::uint32_t>(c - prev))];
      sectors += (c >> 2) != (prev >> 2);
      prev = c;
    }
    s.x_sectors += sectors;
  }
  return s;
}

void scan_rows(const CsrMatrix& a, Profile& p) {
  RowScan s;
  for (const RowScan& part :
       map_ranges(split_rows(a, kScanGrain),
                  [&](std::int64_t r0, std::int64_t r1) { return scan_row_range(a, r0, r1); }))
    s.merge(part);
  const std::int64_t row_min = a.nrows > 0 ? s.row_min : 0;
  const std::int64_t row_max = s.row_max;
  const auto& exact_bins = s.exact_bins;
  const auto& pow2_bins = s.pow2_bins;
  p.bandwidth = s.bandwidth;
  p.profile = s.profile;
  p.x_sectors = s.x_sectors;
  p.delta_bits = s.delta_bits;
  p.first_col_bits = s.first_col_bits;

  p.row_min = row_min;
  p.row_max = row_max;
  p.empty_rows = exact_bins[0];
  std::int64_t used = a.nrows;
  while (used > 0 &&
         a.row_ptr[static_cast<std::size_t>(used - 1)] == a.row_ptr[static_cast<std::size_t>(used)])
    --used;
  p.trailing_empty_rows = a.nrows - used;
  for (std::int64_t len = 0; len <= 32; ++len) {
    if (exact_bins[len] > 0) p.row_histogram.push_back({len, len, exact_bins[len]});
  }
  for (int k = 6; k < 64; ++k) {
    if (pow2_bins[k] == 0) continue;
    const std::int64_t hi = std::int64_t{1} << k;
    p.row_histogram.push_back({hi / 2 + 1, hi, pow2_bins[k]});
  }

  if (a.nrows > 0) {
    p.row_mean = static_cast<double>(p.nnz) / static_cast<double>(a.nrows);
    // Two passes rather than sum-of-squares: no cancellation, and no int64 overflow on rows of
    // 2^31 entries. This pass stays on one thread: a floating-point sum split differently would
    // round differently, and it reads only row_ptr. Slices' longest rows come from it too.
    double sum_sq = 0.0;
    std::array<std::int64_t, 9> longest{};  // the open slice's longest row, per height 2^k
    // The open slice's column range (columns are sorted: each row's first and last).
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = -1;
    p.narrow_slice_nnz = 0;
    const std::int32_t* col = a.col_idx.data();
    for (std::int64_t i = 0; i < a.nrows; ++i) {
      const std::int64_t len = a.row_length(i);
      if (len > 0) {
        lo = std::min<std::int64_t>(lo, col[a.row_ptr[i]]);
        hi = std::max<std::int64_t>(hi, col[a.row_ptr[i + 1] - 1]);
      }
      static_assert(kNarrowSliceRows == 256, "slices are cut with a mask and a shift");
      if (((i + 1) & 255) == 0 || i + 1 == a.nrows) {
        if (hi - lo <= kNarrowColumnSpan)
          p.narrow_slice_nnz += a.row_ptr[i + 1] - a.row_ptr[(i >> 8) << 8];
        lo = std::numeric_limits<std::int64_t>::max();
        hi = -1;
      }
      const double d = static_cast<double>(len) - p.row_mean;
      sum_sq += d * d;
      for (std::size_t k = 0; k < longest.size(); ++k) {
        longest[k] = std::max(longest[k], len);
        if (((i + 1) & ((std::int64_t{1} << k) - 1)) == 0 || i + 1 == a.nrows) {
          p.slice_longest[k] += longest[k];
          longest[k] = 0;
        }
      }
    }
    p.row_stddev = std::sqrt(sum_sq / static_cast<double>(a.nrows));
  }
}

// Counts the aligned R×C tiles that hold a nonzero. stamp[bc] records the last block row that
// touched block column bc, so the array is never cleared between block rows; R and C are
// template arguments so the division by C is by a constant. Each row range (cut at block-row
// boundaries) counts its own tiles with its own stamps: a tile lies in one block row.
// Above this many block columns per nonzero of a row range, block_fill sorts each block row's
// block columns instead of stamping an array as wide as the matrix: the stamps would cost more
// to allocate and clear than the sort costs, and memory would follow the width, not the nonzeros.
constexpr std::int64_t kStampColumnsPerNonzero = 16;

template <int R, int C>
BlockFill block_fill(const CsrMatrix& a, const std::vector<Range>& ranges) {
  const std::int64_t block_cols = (a.ncols + C - 1) / C;
  const std::int32_t* col = a.col_idx.data();
  std::int64_t blocks = 0;
  for (const std::int64_t part : map_ranges(ranges, [&](std::int64_t r0, std::int64_t r1) {
         // Round the range's ends down to block-row starts (the matrix's end stays): adjacent
         // ranges then still meet, and a block row falls in one range.
         const auto block_start = [&](std::int64_t row) {
           return row == a.nrows ? row : row / R * R;
         };
         const std::int64_t first = block_start(r0);
         const std::int64_t stop = block_start(r1);
         std::int64_t count = 0;
         if (first >= stop) return count;
         const std::int64_t range_nnz = a.row_ptr[stop] - a.row_ptr[first];
         if (block_cols > kStampColumnsPerNonzero * range_nnz) {
           // Far more block columns than nonzeros (a nearly empty wide matrix): a stamp per block
           // column would allocate by the matrix's width, not its content. Count each block
           // row's distinct block columns by sorting them instead; the count is the same.
           std::vector<std::int32_t> seen;
           for (std::int64_t row0 = first; row0 < stop; row0 += R) {
             const std::int64_t begin = a.row_ptr[row0];
             const std::int64_t end = a.row_ptr[std::min(row0 + R, a.nrows)];
             seen.clear();
             for (std::int64_t k = begin; k < end; ++k) seen.push_back(col[k] / C);
             std::sort(seen.begin(), seen.end());
             count += std::unique(seen.begin(), seen.end()) - seen.begin();
           }
           return count;
         }
         std::vector<std::int64_t> stamp(static_cast<std::size_t>(block_cols), -1);
         for (std::int64_t row0 = first, br = 0; row0 < stop; row0 += R, ++br) {
           const std::int64_t begin = a.row_ptr[row0];
           const std::int64_t end = a.row_ptr[std::min(row0 + R, a.nrows)];
           for (std::int64_t k = begin; k < end; ++k) {
             std::int64_t& s = stamp[col[k] / C];
             count += s != br;
             s = br;
           }
         }
         return count;
       }))
    blocks += part;
  BlockFill f;
  f.r = R;
  f.c = C;
  f.blocks = blocks;
  f.fill = blocks == 0 ? 0.0 : static_cast<double>(a.nnz()) / (static_cast<double>(blocks) * R * C);
  return f;
}

void compute_block_fill(const CsrMatrix& a, Profile& p) {
  // Each range clears a stamp array as wide as the matrix: ranges get at least that much work.
  const std::vector<Range> ranges = split_rows(a, std::max(kScanGrain, 4 * a.ncols));
  p.block_fill = {
      block_fill<1, 2>(a, ranges), block_fill<2, 1>(a, ranges), block_fill<2, 2>(a, ranges),
      block_fill<3, 3>(a, ranges), block_fill<4, 4>(a, ranges), block_fill<2, 4>(a, ranges),
      block_fill<4, 2>(a, ranges), block_fill<8, 8>(a, ranges), block_fill<1, 4>(a, ranges),
      block_fill<4, 1>(a, ranges),
  };
}

// Values compare as doubles, so -0.0 joins 0.0; everything else is its bit pattern.
std::uint64_t value_key(double v) { return v == 0.0 ? 0 : std::bit_cast<std::uint64_t>(v); }

// murmur3's 64-bit finaliser: values that differ only in exponent or only in low mantissa bits
// still spread over the whole table.
std::uint64_t mix(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

// An open-addressing set of value keys that stays in cache while small. A NaN payload no
// arithmetic produces marks free slots; if it does occur, it is counted aside.
class KeySet {
 public:
  static constexpr std::uint64_t kFree = ~std::uint64_t{0};

  void insert(std::uint64_t key) {
    if (key == kFree) {
      free_key_seen_ = true;
      return;
    }
    put(key);
    if (2 * used_ > table_.size()) {
      std::vector<std::uint64_t> old(table_.size() * 2, kFree);
      old.swap(table_);
      ++table_bits_;
      used_ = 0;
      for (const std::uint64_t k : old) {
        if (k != kFree) put(k);
      }
    }
  }
  void insert_all(const KeySet& o) {
    for (const std::uint64_t k : o.table_) {
      if (k != kFree) insert(k);
    }
    free_key_seen_ = free_key_seen_ || o.free_key_seen_;
  }
  std::int64_t size() const { return static_cast<std::int64_t>(used_) + (free_key_seen_ ? 1 : 0); }

 private:
  void put(std::uint64_t key) {
    const std::size_t mask = table_.size() - 1;
    for (std::size_t slot = mix(key) >> (64 - table_bits_);; slot = (slot + 1) & mask) {
      if (table_[slot] == key) return;
      if (table_[slot] == kFree) {
        table_[slot] = key;
        ++used_;
        return;
      }
    }
  }

  std::vector<std::uint64_t> table_ = std::vector<std::uint64_t>(1024, kFree);
  int table_bits_ = 10;
  std::size_t used_ = 0;
  bool free_key_seen_ = false;
};

// min(distinct values, limit + 1): one KeySet per range, each giving up once it holds more than
// `limit` keys (then so does the union), else the union of the ranges' sets, cut off the same
// way. A count, not a set, so the order values are met in does not matter: any split gives the
// serial count. The sets hold at most 2·limit slots, which for the planner's cap (64K values,
// 1 MiB) stays in cache.
std::int64_t count_distinct_capped(const std::vector<double>& values, std::int64_t limit) {
  const std::vector<Range> ranges =
      split_range(static_cast<std::int64_t>(values.size()), kScanGrain);
  const std::vector<KeySet> parts = map_ranges(ranges, [&](std::int64_t b, std::int64_t e) {
    KeySet set;
    for (std::int64_t i = b; i < e && set.size() <= limit; ++i) {
      const std::uint64_t key = value_key(values[i]);
      // Runs of one value are common (stencils).
      if (i > b && key == value_key(values[i - 1])) continue;
      set.insert(key);
    }
    return set;
  });
  KeySet all;
  for (const KeySet& part : parts) {
    if (part.size() > limit) return limit + 1;
    all.insert_all(part);
    if (all.size() > limit) return limit + 1;
  }
  return all.size();
}

// Distinct keys among `keys`: a table of twice their number, so it stays sparse.
std::int64_t count_unique(std::span<const std::uint64_t> keys) {
  constexpr std::uint64_t kFree = KeySet::kFree;
  const int bits = std::max(4, static_cast<int>(std::bit_width(2 * keys.size())));
  std::vector<std::uint64_t> table(std::size_t{1} << bits, kFree);
  const std::size_t mask = table.size() - 1;
  std::int64_t n = 0;
  bool free_key_seen = false;
  for (const std::uint64_t key : keys) {
    if (key == kFree) {
      free_key_seen = true;
      continue;
    }
    for (std::size_t slot = mix(key) & mask;; slot = (slot + 1) & mask) {
      if (table[slot] == key) break;
      if (table[slot] == kFree) {
        table[slot] = key;
        ++n;
        break;
      }
    }
  }
  return n + (free_key_seen ? 1 : 0);
}

// Exact distinct values when there are many: the keys are scattered into 256 buckets by the top
// bits of their hash (equal keys share a bucket), each range writing its own stretch of each
// bucket, then each bucket's keys are counted in a table of their own (cache-sized for 16M
// nonzeros), buckets spread over the threads. The sum is the same for any split.
std::int64_t count_distinct_partitioned(const std::vector<double>& values) {
  constexpr int kBucketBits = 8;
  constexpr std::size_t kBuckets = std::size_t{1} << kBucketBits;
  const auto bucket_of = [](std::uint64_t key) {
    return static_cast<std::size_t>(mix(key) >> (64 - kBucketBits));
  };
  const std::vector<Range> ranges =
      split_range(static_cast<std::int64_t>(values.size()), kScanGrain);
  using Counts = std::array<std::size_t, kBuckets>;
  std::vector<Counts> offsets = map_ranges(ranges, [&](std::int64_t b, std::int64_t e) {
    Counts c{};
    for (std::int64_t i = b; i < e; ++i) ++c[bucket_of(value_key(values[i]))];
    return c;
  });
  // offsets[r][k]: where range r starts writing bucket k (buckets in order, ranges within).
  std::vector<std::size_t> bucket_start(kBuckets + 1, 0);
  std::size_t sum = 0;
  for (std::size_t k = 0; k < kBuckets; ++k) {
    bucket_start[k] = sum;
    for (Counts& c : offsets) sum += std::exchange(c[k], sum);
  }
  bucket_start[kBuckets] = sum;
  std::vector<std::uint64_t> keys(values.size());
  run_ranges(ranges, [&](std::size_t r, std::int64_t b, std::int64_t e) {
    Counts& at = offsets[r];
    for (std::int64_t i = b; i < e; ++i) {
      const std::uint64_t key = value_key(values[i]);
      keys[at[bucket_of(key)]++] = key;
    }
  });
  std::int64_t distinct = 0;
  for (const std::int64_t part :
       map_ranges(split_range(kBuckets, 1), [&](std::int64_t k0, std::int64_t k1) {
         std::int64_t n = 0;
         for (std::int64_t k = k0; k < k1; ++k) {
           n += count_unique(std::span<const std::uint64_t>(keys).subspan(
               bucket_start[k], bucket_start[k + 1] - bucket_start[k]));
         }
         return n;
       }))
    distinct += part;
  return distinct;
}

// Real matrices usually hold few distinct values (stencils: 2), which small hash sets count in
// one pass. Past kSetLimit the sets would outgrow the cache (random probes cost a miss each) and
// the hash-bucketed sort counts them instead.
std::int64_t count_distinct(const std::vector<double>& values) {
  constexpr std::int64_t kSetLimit = std::int64_t{1} << 16;
  const std::int64_t n = count_distinct_capped(values, kSetLimit);
  return n <= kSetLimit ? n : count_distinct_partitioned(values);
}

// Values equal to 1 (unit_values), values exact in fp32 (fp32_exact_values) and the values
// rounding errors under mixed precision (value_rounding.hpp), in one pass.
void count_value_kinds(const std::vector<double>& values, Profile& p) {
  const auto n = static_cast<std::int64_t>(values.size());
  p.unit_values = 0;
  p.fp32_exact_values = 0;
  p.f32_rounding_error = p.bf16_rounding_error = 0.0;
  p.f32_overflow = p.bf16_overflow = 0;
  for (const ValueKinds& c :
       map_ranges(split_range(n, kScanGrain), [&](std::int64_t b, std::int64_t e) {
         return value_kinds(std::span<const double>(values).subspan(
             static_cast<std::size_t>(b), static_cast<std::size_t>(e - b)));
       })) {
    p.unit_values += c.unit;
    p.fp32_exact_values += c.exact;
    p.f32_overflow += c.f32_overflow;
    p.bf16_overflow += c.bf16_overflow;
    p.f32_rounding_error = std::max(p.f32_rounding_error, c.f32_error);
    p.bf16_rounding_error = std::max(p.bf16_rounding_error, c.bf16_error);
  }
}

// A square matrix is structurally symmetric when every entry (i, j) above the diagonal has its
// mirror (j, i) and there are as many entries below the diagonal as above: the pattern then
// holds its transpose, which has as many entries, so equals it. Columns are sorted, so each
// mirror is a binary search in row j; the rows are checked in ranges, each stopping at its first
// entry without a mirror. Numerical symmetry compares each entry above the diagonal with its
// mirror (which covers every pair).
void check_symmetry(const CsrMatrix& a, Profile& p) {
  p.square = a.nrows == a.ncols;
  if (!p.square) return;
  const std::int32_t* col = a.col_idx.data();
  const double* val = a.values.data();
  struct Mirrors {
    std::int64_t above = 0, below = 0;
    bool structural = true, numerical = true;
  };
  Mirrors all;
  for (const Mirrors& m :
       map_ranges(split_rows(a, kScanGrain), [&](std::int64_t r0, std::int64_t r1) {
         Mirrors m;
         // The mirror of a row's u-th entry above the diagonal sits, in rows alike (a stencil's
         // interior), at the same place in its row as the last one found: tried first.
         std::array<std::int64_t, 64> hint{};
         for (std::int64_t i = r0; i < r1 && m.structural; ++i) {
           const std::int32_t* row_end = col + a.row_ptr[i + 1];
           // Entries before the diagonal, then at it, then the ones above it.
           const std::int32_t* k =
               std::lower_bound(col + a.row_ptr[i], row_end, static_cast<std::int32_t>(i));
           m.below += k - (col + a.row_ptr[i]);
           if (k != row_end && *k == i) ++k;
           m.above += row_end - k;
           for (std::size_t u = 0; k != row_end; ++k, ++u) {
             const std::int64_t j = *k;
             const std::int32_t* first = col + a.row_ptr[j];
             const std::int32_t* last = col + a.row_ptr[j + 1];
             const std::int32_t* at = nullptr;
             // (The first of the row's entries in column i, as lower_bound finds it.)
             if (u < hint.size() && hint[u] < last - first && first[hint[u]] == i &&
                 (hint[u] == 0 || first[hint[u] - 1] < i)) {
               at = first + hint[u];
             } else {
               at = std::lower_bound(first, last, static_cast<std::int32_t>(i));
               if (u < hint.size()) hint[u] = at - first;
             }
             if (at == last || *at != i) {
               m.structural = false;
               break;
             }
             m.numerical = m.numerical && val[at - col] == val[k - col];
           }
         }
         return m;
       })) {
    all.above += m.above;
    all.below += m.below;
    all.structural = all.structural && m.structural;
    all.numerical = all.numerical && m.numerical;
  }
  if (!all.structural || all.above != all.below) return;
  p.structurally_symmetric = true;
  p.numerically_symmetric = all.numerical;
}

}  // namespace

// Each row range keeps a sorted set and stops once it has more than kMaxDiagonals; a row whose
// offsets are the previous row's (every interior row of a stencil) is compared, not inserted.
// The sets merge by union.
std::optional<std::vector<std::int64_t>> occupied_diagonals(const CsrMatrix& a) {
  using Set = std::vector<std::int64_t>;
  constexpr auto kCap = static_cast<std::size_t>(kMaxDiagonals);
  const std::int32_t* col = a.col_idx.data();
  const std::vector<Set> sets =
      map_ranges(split_rows(a, kScanGrain), [&](std::int64_t r0, std::int64_t r1) {
        Set set;
        std::int64_t prev_begin = -1, prev_row = 0;
        for (std::int64_t i = r0; i < r1 && set.size() <= kCap; ++i) {
          const std::int64_t b = a.row_ptr[i], e = a.row_ptr[i + 1];
          if (prev_begin >= 0 && e - b == a.row_ptr[prev_row + 1] - prev_begin) {
            bool same = true;
            for (std::int64_t k = 0; k < e - b && same; ++k)
              same = col[b + k] - i == col[prev_begin + k] - prev_row;
            if (same) continue;  // the previous row's offsets, already in the set
          }
          for (std::int64_t k = b; k < e && set.size() <= kCap; ++k) {
            const std::int64_t offset = col[k] - i;
            const auto at = std::lower_bound(set.begin(), set.end(), offset);
            if (at == set.end() || *at != offset) set.insert(at, offset);
          }
          prev_begin = b;
          prev_row = i;
        }
        return set;
      });
  Set all;
  for (const Set& s : sets) {
    if (s.size() > kCap) return std::nullopt;
    Set merged;
    std::set_union(all.begin(), all.end(), s.begin(), s.end(), std::back_inserter(merged));
    all.swap(merged);
    if (all.size() > kCap) return std::nullopt;
  }
  return all;
}

Profile inspect(const CsrMatrix& a, InspectDepth depth) {
  const auto start = std::chrono::steady_clock::now();
  Profile p;
  p.depth = depth;
  p.nrows = a.nrows;
  p.ncols = a.ncols;
  p.nnz = a.nnz();
  scan_rows(a, p);
  p.square = a.nrows == a.ncols;
  p.block_shapes = inspect_blocks(a).shapes;
  const std::optional<std::vector<std::int64_t>> diagonals = occupied_diagonals(a);
  p.diagonals = diagonals ? static_cast<std::int64_t>(diagonals->size()) : -1;
  count_value_kinds(a.values, p);
  if (depth == InspectDepth::rows) {
    p.distinct_values = count_distinct_capped(a.values, kDistinctValuesCap);
    // A matrix on few diagonals is checked for symmetry at this depth too: it decides whether
    // dia stores half of them. (Such a matrix has short rows, so the mirrors' binary searches
    // are short.) bcsr's symmetric half is not worth the check's time here: on the H200 it is
    // about as fast as the plain bcsr in fp32 and slower than bro_ell in fp64
    // (compiler/formats/common/block_common.hpp), and the check added 0.7x to the rows scan of
    // blocked matrices; full inspection checks every matrix.
    if (p.diagonals > 0) check_symmetry(a, p);
    p.inspect_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return p;
  }
  compute_block_fill(a, p);
  p.distinct_values = count_distinct(a.values);
  check_symmetry(a, p);
  p.inspect_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return p;
}

}  // namespace spmvc
