// BRO-aware reordering (BAR): W. T. Tang et al., "Accelerating sparse matrix-vector multiplication
// on GPUs using bit-representation-optimized schemes", SC13, section 3.4.
//
// BRO-ELL codes each row's column indices as deltas (first column from 0) and packs a slice of h
// rows with one bit width per position k: the widest delta any row of the slice has at k. Rows
// whose delta widths look alike therefore compress better together. BAR splits the rows into
// equal clusters of h rows that minimise equation 1,
//   Phi = sum over clusters S of  h/w * ceil(sum_k d(S, k) / alpha)      (+ an x cache-line term)
// with d(S, k) the widest delta at position k in S (equation 2), by the greedy Algorithm 2: sort
// the rows by length, seed cluster t with sorted row t*h, then put every other row, in sorted
// order, into the non-full cluster where it raises Phi least. Clusters are emitted in seed order,
// rows within a cluster in insertion order, so cluster t becomes slice t.
//
// What is ours:
// - The x cache-line term c(S, k) of equation 1 is left out: BAR here optimises the index stream
//   only (the locality orderings D, D_set and RCM look after x), as the task of this step is the
//   BRO-ELL slice size.
// - Ties in Phi (frequent: a row often fits into the unused bits of a slice's last symbol) are
//   broken by the raw bits added, sum_k max(0, width_k - d(S, k)), then by the lower cluster.
// - Scaling. The paper weighs every row against every cluster: O(rows x clusters x row length),
//   10^12 steps on a million rows. Here a pre-pass sorts the rows by (length descending, then the
//   delta-width signature descending, position by position), which puts rows of equal length and
//   similar widths next to each other. The sorted rows are then cut into groups of
//   `bar_candidate_clusters` x h consecutive rows and Algorithm 2 runs exactly inside each group,
//   the groups in parallel. Bound: O(nnz x bar_candidate_clusters) in all; 0 candidates means one
//   group, the paper's full search. Measured (eta = BRO index saving, slices of 32): the pre-pass
//   alone (1 candidate) gives most of the gain; 64 candidates came within 2.2 points of the full
//   search on wave, cage11, delaunay_n16 and email-Enron (better on cage11, where the greedy
//   full search lost), at 0.08 s instead of 5.1 s on wave.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "reorder_internal.hpp"

namespace spmvc::reorder_detail {
namespace {

struct Cluster {
  std::vector<std::uint8_t> width;  // d(S, k) for k below the longest row so far
  std::int64_t bits = 0;            // sum_k d(S, k)
  std::int64_t capacity = 0;
  std::vector<std::int32_t> rows;  // in insertion order
};

struct RowWidths {
  std::span<const std::uint8_t> of(std::int64_t r) const {
    return {widths.data() + ptr[r], static_cast<std::size_t>(ptr[r + 1] - ptr[r])};
  }
  std::span<const std::int64_t> ptr;
  std::vector<std::uint8_t> widths;  // one per nonzero, aligned with the matrix's col_idx
};

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Raw bits a row adds to a cluster: sum_k max(0, width_k - d(S, k)).
std::int64_t added_bits(const Cluster& s, std::span<const std::uint8_t> w) {
  std::int64_t added = 0;
  const std::size_t shared = std::min(w.size(), s.width.size());
  for (std::size_t k = 0; k < shared; ++k) added += std::max(0, int{w[k]} - int{s.width[k]});
  for (std::size_t k = shared; k < w.size(); ++k) added += w[k];
  return added;
}

void add_row(Cluster& s, std::int32_t row, std::span<const std::uint8_t> w, std::int64_t added) {
  if (s.width.size() < w.size()) s.width.resize(w.size(), 0);
  for (std::size_t k = 0; k < w.size(); ++k) s.width[k] = std::max(s.width[k], w[k]);
  s.bits += added;
  s.rows.push_back(row);
}

// Algorithm 2 on `rows` (already in sorted order): clusters of h rows, the last one holding
// `last_capacity`. Appends the clusters' rows to `out` in cluster order.
void cluster_group(std::span<const std::int32_t> rows, const RowWidths& rw, std::int64_t h,
                   std::int64_t alpha, std::int64_t last_capacity, std::int32_t* out) {
  const std::int64_t m = static_cast<std::int64_t>(rows.size());
  const std::int64_t v = ceil_div(m, h);
  std::vector<Cluster> clusters(static_cast<std::size_t>(v));
  std::vector<char> is_seed(static_cast<std::size_t>(m), 0);
  for (std::int64_t t = 0; t < v; ++t) {
    Cluster& s = clusters[static_cast<std::size_t>(t)];
    s.capacity = t + 1 < v ? h : last_capacity;
    s.rows.reserve(static_cast<std::size_t>(s.capacity));
    const std::int32_t seed = rows[static_cast<std::size_t>(t * h)];
    add_row(s, seed, rw.of(seed), added_bits(s, rw.of(seed)));
    is_seed[static_cast<std::size_t>(t * h)] = 1;
  }
  for (std::int64_t i = 0; i < m; ++i) {
    if (is_seed[static_cast<std::size_t>(i)]) continue;
    const std::int32_t row = rows[static_cast<std::size_t>(i)];
    const auto w = rw.of(row);
    std::int64_t best = -1, best_symbols = 0, best_bits = 0;
    for (std::int64_t t = 0; t < v; ++t) {
      const Cluster& s = clusters[static_cast<std::size_t>(t)];
      if (static_cast<std::int64_t>(s.rows.size()) >= s.capacity) continue;
      const std::int64_t bits = added_bits(s, w);
      // The change of cluster t's term of equation 1 (the constant h/w factor dropped).
      const std::int64_t symbols = ceil_div(s.bits + bits, alpha) - ceil_div(s.bits, alpha);
      if (best < 0 || symbols < best_symbols || (symbols == best_symbols && bits < best_bits)) {
        best = t;
        best_symbols = symbols;
        best_bits = bits;
      }
    }
    add_row(clusters[static_cast<std::size_t>(best)], row, w, best_bits);
  }
  for (const Cluster& s : clusters) out = std::copy(s.rows.begin(), s.rows.end(), out);
}

}  // namespace

std::vector<std::int32_t> bar_ordering(const CsrMatrix& a, const ReorderOptions& options) {
  const std::int64_t n = a.nrows;
  const std::int64_t h = options.bar_slice_height;
  const std::int64_t alpha = options.bar_symbol_bits;
  const int threads = worker_count(options.threads);
  std::vector<std::int32_t> perm(static_cast<std::size_t>(n));
  if (n == 0) return perm;

  RowWidths rw{a.row_ptr, std::vector<std::uint8_t>(a.col_idx.size())};
  parallel_chunks(n, threads, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      std::int64_t prev = 0;
      for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
        rw.widths[static_cast<std::size_t>(k)] =
            static_cast<std::uint8_t>(delta_bits(a.col_idx[k] - prev));
        prev = a.col_idx[k];
      }
    }
  });

  // The signature pre-pass (and Algorithm 2's line 2): length descending, then the width
  // signature descending, then the original row number (so the result is deterministic).
  std::vector<std::int32_t> sorted(static_cast<std::size_t>(n));
  std::iota(sorted.begin(), sorted.end(), 0);
  std::sort(sorted.begin(), sorted.end(), [&](std::int32_t x, std::int32_t y) {
    const auto wx = rw.of(x), wy = rw.of(y);
    if (wx.size() != wy.size()) return wx.size() > wy.size();
    const auto c =
        std::lexicographical_compare_three_way(wx.begin(), wx.end(), wy.begin(), wy.end());
    if (c != 0) return c > 0;
    return x < y;
  });

  const std::int64_t group_rows =
      options.bar_candidate_clusters > 0 ? options.bar_candidate_clusters * h : n;
  const std::int64_t ngroups = ceil_div(n, group_rows);
  // Every cluster holds h rows except the very last, so cluster t is exactly slice t.
  const std::int64_t last_capacity = n - (ceil_div(n, h) - 1) * h;
  parallel_chunks(
      ngroups, threads,
      [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t g = begin; g < end; ++g) {
          const std::int64_t first = g * group_rows;
          const std::int64_t count = std::min(group_rows, n - first);
          cluster_group(std::span<const std::int32_t>(sorted).subspan(
                            static_cast<std::size_t>(first), static_cast<std::size_t>(count)),
                        rw, h, alpha, g + 1 < ngroups ? h : last_capacity, perm.data() + first);
        }
      },
      /*min_items=*/1);
  return perm;
}

}  // namespace spmvc::reorder_detail
