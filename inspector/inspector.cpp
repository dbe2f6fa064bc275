// inspect(): every Profile field in a few linear passes over the CSR arrays. The budget is about
// a second for 8M nonzeros on one core, so nothing here sorts the whole matrix or hashes
// coordinates: block fill uses a stamp array, symmetry a counting-sort transpose that is compared
// in place, and distinct values a small hash table that gives way to a radix sort.
#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "spmvc/profile.hpp"

namespace spmvc {
namespace {

int bits_needed(std::uint32_t v) { return 32 - std::countl_zero(v); }

// Row lengths, the envelope, column deltas and x sectors all come from one pass over the rows.
void scan_rows(const CsrMatrix& a, Profile& p) {
  std::array<std::int64_t, 33> exact_bins{};  // lengths 0..32
  std::array<std::int64_t, 64> pow2_bins{};   // index k: lengths 2^(k-1)+1 .. 2^k, k >= 6
  std::int64_t row_min = a.nrows > 0 ? std::numeric_limits<std::int64_t>::max() : 0;
  std::int64_t row_max = 0;
  const std::int32_t* col = a.col_idx.data();

  for (std::int64_t i = 0; i < a.nrows; ++i) {
    const std::int64_t begin = a.row_ptr[i];
    const std::int64_t end = a.row_ptr[i + 1];
    const std::int64_t len = end - begin;
    row_min = std::min(row_min, len);
    row_max = std::max(row_max, len);
    if (len <= 32) {
      ++exact_bins[len];
    } else {
      ++pow2_bins[std::countr_zero(std::bit_ceil(static_cast<std::uint64_t>(len)))];
    }
    if (len == 0) continue;

    const std::int64_t first = col[begin];
    const std::int64_t last = col[end - 1];
    p.bandwidth = std::max({p.bandwidth, i - first, last - i});
    p.profile += std::max<std::int64_t>(0, i - first);
    ++p.first_col_bits[bits_needed(static_cast<std::uint32_t>(first))];

    // 32-byte sectors hold 4 fp64 entries of x; columns are sorted, so a row's distinct
    // sectors are the number of times col/4 changes along it, plus one.
    std::int32_t prev = col[begin];
    std::int64_t sectors = 1;
    for (std::int64_t k = begin + 1; k < end; ++k) {
      const std::int32_t c = col[k];
      ++p.delta_bits[bits_needed(static_cast<std::uint32_t>(c - prev))];
      sectors += (c >> 2) != (prev >> 2);
      prev = c;
    }
    p.x_sectors += sectors;
  }

  p.row_min = row_min;
  p.row_max = row_max;
  p.empty_rows = exact_bins[0];
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
    // 2^31 entries.
    double sum_sq = 0.0;
    for (std::int64_t i = 0; i < a.nrows; ++i) {
      const double d = static_cast<double>(a.row_length(i)) - p.row_mean;
      sum_sq += d * d;
    }
    p.row_stddev = std::sqrt(sum_sq / static_cast<double>(a.nrows));
  }
}

// Counts the aligned R×C tiles that hold a nonzero. stamp[bc] records the last block row that
// touched block column bc, so the array is never cleared between block rows; R and C are
// template arguments so the division by C is by a constant.
template <int R, int C>
BlockFill block_fill(const CsrMatrix& a, std::vector<std::int64_t>& stamp) {
  const std::int64_t block_cols = (a.ncols + C - 1) / C;
  std::fill(stamp.begin(), stamp.begin() + block_cols, -1);
  std::int64_t blocks = 0;
  const std::int32_t* col = a.col_idx.data();
  for (std::int64_t row0 = 0, br = 0; row0 < a.nrows; row0 += R, ++br) {
    const std::int64_t begin = a.row_ptr[row0];
    const std::int64_t end = a.row_ptr[std::min(row0 + R, a.nrows)];
    for (std::int64_t k = begin; k < end; ++k) {
      std::int64_t& s = stamp[col[k] / C];
      blocks += s != br;
      s = br;
    }
  }
  BlockFill f;
  f.r = R;
  f.c = C;
  f.blocks = blocks;
  f.fill = blocks == 0 ? 0.0 : static_cast<double>(a.nnz()) / (static_cast<double>(blocks) * R * C);
  return f;
}

void compute_block_fill(const CsrMatrix& a, Profile& p) {
  std::vector<std::int64_t> stamp(static_cast<std::size_t>(a.ncols));
  p.block_fill = {
      block_fill<1, 2>(a, stamp), block_fill<2, 1>(a, stamp), block_fill<2, 2>(a, stamp),
      block_fill<3, 3>(a, stamp), block_fill<4, 4>(a, stamp), block_fill<2, 4>(a, stamp),
      block_fill<4, 2>(a, stamp), block_fill<8, 8>(a, stamp), block_fill<1, 4>(a, stamp),
      block_fill<4, 1>(a, stamp),
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

// LSD radix sort on 11-bit digits. Digits where every key agrees (common: the sign and exponent
// of values from one scale) are skipped.
void radix_sort(std::vector<std::uint64_t>& keys) {
  constexpr int kDigitBits = 11;
  constexpr int kBuckets = 1 << kDigitBits;
  constexpr int kPasses = (64 + kDigitBits - 1) / kDigitBits;
  std::vector<std::array<std::size_t, kBuckets>> counts(kPasses);
  for (auto& c : counts) c.fill(0);
  for (const std::uint64_t k : keys) {
    for (int d = 0; d < kPasses; ++d) ++counts[d][(k >> (d * kDigitBits)) & (kBuckets - 1)];
  }
  std::vector<std::uint64_t> scratch(keys.size());
  for (int d = 0; d < kPasses; ++d) {
    auto& c = counts[d];
    if (std::any_of(c.begin(), c.end(), [&](std::size_t n) { return n == keys.size(); })) continue;
    std::size_t sum = 0;
    for (std::size_t& n : c) sum += std::exchange(n, sum);
    const int shift = d * kDigitBits;
    for (const std::uint64_t k : keys) scratch[c[(k >> shift) & (kBuckets - 1)]++] = k;
    keys.swap(scratch);
  }
}

std::int64_t count_distinct_sorted(const std::vector<double>& values) {
  std::vector<std::uint64_t> keys(values.size());
  std::transform(values.begin(), values.end(), keys.begin(), value_key);
  radix_sort(keys);
  return std::unique(keys.begin(), keys.end()) - keys.begin();
}

// Real matrices usually hold few distinct values (stencils: 2), which a hash table that stays in
// cache counts in one pass. Once the table would outgrow the cache (~8 MiB), random probes cost a
// miss each and a radix sort of all values is faster, so the count starts over that way.
// With `limit`, gives up once more than `limit` are seen and returns limit + 1.
std::int64_t count_distinct(const std::vector<double>& values,
                            std::int64_t limit = std::numeric_limits<std::int64_t>::max()) {
  constexpr std::size_t kMaxTable = std::size_t{1} << 20;
  // A NaN payload no arithmetic produces marks free slots; if it does occur, it is counted aside.
  constexpr std::uint64_t kFree = ~std::uint64_t{0};
  std::vector<std::uint64_t> table(1024, kFree);
  int table_bits = 10;
  std::size_t used = 0;
  bool free_key_seen = false;

  auto insert = [&](std::uint64_t key) {
    const std::size_t mask = table.size() - 1;
    for (std::size_t slot = mix(key) >> (64 - table_bits);; slot = (slot + 1) & mask) {
      if (table[slot] == key) return;
      if (table[slot] == kFree) {
        table[slot] = key;
        ++used;
        return;
      }
    }
  };

  for (const double v : values) {
    const std::uint64_t key = value_key(v);
    if (key == kFree) {
      free_key_seen = true;
      continue;
    }
    insert(key);
    if (static_cast<std::int64_t>(used) > limit) return limit + 1;
    if (2 * used > table.size()) {
      if (table.size() == kMaxTable) return count_distinct_sorted(values);
      std::vector<std::uint64_t> old(table.size() * 2, kFree);
      old.swap(table);
      ++table_bits;
      used = 0;
      for (const std::uint64_t k : old) {
        if (k != kFree) insert(k);
      }
    }
  }
  return static_cast<std::int64_t>(used) + (free_key_seen ? 1 : 0);
}

std::int64_t count_fp32_exact(const std::vector<double>& values) {
  std::int64_t n = 0;
  for (const double v : values) {
    // The range test comes first: narrowing a double beyond FLT_MAX to float is undefined.
    n += std::isinf(v) ||
         (std::fabs(v) <= FLT_MAX && static_cast<double>(static_cast<float>(v)) == v);
  }
  return n;
}

// Counting-sort transpose without materialising it: for a square matrix whose column counts
// equal its row lengths, the transpose has the same row_ptr, so entry (i, j) of A lands at the
// position in row j of A^T that also indexes row j of A. Comparing there checks pattern and
// values without allocating the transposed arrays.
void check_symmetry(const CsrMatrix& a, Profile& p) {
  p.square = a.nrows == a.ncols;
  if (!p.square) return;
  const std::int64_t n = a.nrows;

  std::vector<std::int64_t> next(static_cast<std::size_t>(n) + 1, 0);
  for (const std::int32_t j : a.col_idx) ++next[j + 1];
  for (std::int64_t j = 0; j < n; ++j) {
    if (next[j + 1] != a.row_length(j)) return;
  }
  std::copy(a.row_ptr.begin(), a.row_ptr.end() - 1, next.begin());

  bool numerical = true;
  const std::int32_t* col = a.col_idx.data();
  const double* val = a.values.data();
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
      const std::int64_t pos = next[col[k]]++;
      if (col[pos] != i) return;
      numerical = numerical && val[pos] == val[k];
    }
  }
  p.structurally_symmetric = true;
  p.numerically_symmetric = numerical;
}

}  // namespace

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
  p.unit_values = std::count(a.values.begin(), a.values.end(), 1.0);
  if (depth == InspectDepth::rows) {
    p.distinct_values = count_distinct(a.values, kDistinctValuesCap);
    p.inspect_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return p;
  }
  compute_block_fill(a, p);
  p.distinct_values = count_distinct(a.values);
  p.fp32_exact_values = count_fp32_exact(a.values);
  check_symmetry(a, p);
  p.inspect_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return p;
}

}  // namespace spmvc
