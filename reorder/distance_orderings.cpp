// The distance-function orderings D and D_set (Pichel, Singh, Carretero, HPCC 2008), as
// "Optimization of sparse matrix-vector multiplication using reordering techniques on GPUs"
// (Pichel, Rivera, Fernandez, Rodriguez, 2011) describes them: rows whose column sets are alike
// are placed next to each other, so consecutive rows (one warp) read the same x entries; D moves
// single rows, D_set sets of consecutive rows, and both permute "rows/columns", so square
// matrices get the same permutation on their columns. That paper gives no formula; ours:
//
// Distance of rows i and j: the number of nonzeros they do not share,
//   d(i, j) = |C_i| + |C_j| - 2 |C_i ∩ C_j|.
// The ordering is a greedy path through the rows: start at the first unplaced row, then always
// move to the unplaced row nearest the current one (ties to the lowest row number); when no
// unplaced row shares a column with the current one, restart at the lowest-numbered unplaced row.
// The distance favours short rows, so on a grid the path runs along the boundary first.
//
// Bound on the search (the exact nearest neighbour is O(rows) per step, O(rows^2) in all): the
// candidates of a step are the unplaced rows found in the column lists of the current row, for
// at most kMaxColumnsScanned of its columns (evenly spread over it), at most
// kCandidateBudget / (columns scanned) rows of each list. So one step visits at most
// kCandidateBudget candidates beside removing the placed row from its columns' lists, which is
// O(nnz) over the whole run: O(rows x kCandidateBudget + nnz) in all. The overlaps counted are
// exact when the row and its columns' lists are short enough (always on G3_circuit); otherwise
// they are lower bounds from the sample, and the chosen row a near neighbour.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "reorder_internal.hpp"

namespace spmvc::reorder_detail {
namespace {

// Candidate search bounds (see the header comment): at most 4096 candidate visits per step, and
// at least 64 rows of every column list scanned.
constexpr std::int64_t kMaxColumnsScanned = 64;
constexpr std::int64_t kCandidateBudget = 4096;

}  // namespace

std::vector<std::int32_t> distance_chain(std::span<const std::int64_t> ptr,
                                         std::span<const std::int32_t> idx, std::int64_t ncols) {
  const std::int64_t nrows = static_cast<std::int64_t>(ptr.size()) - 1;
  const std::int64_t nnz = static_cast<std::int64_t>(idx.size());
  // Column lists of unplaced rows. slot_of[e] is where nonzero e sits in its column's list and
  // entry_at[s] the nonzero in slot s, so placing a row removes its entries in O(1) each by
  // moving the column's last live entry into the hole.
  std::vector<std::int64_t> col_begin(static_cast<std::size_t>(ncols) + 1, 0);
  for (const std::int32_t c : idx) ++col_begin[static_cast<std::size_t>(c) + 1];
  std::partial_sum(col_begin.begin(), col_begin.end(), col_begin.begin());
  std::vector<std::int64_t> col_live(static_cast<std::size_t>(ncols), 0);
  std::vector<std::int32_t> row_at(static_cast<std::size_t>(nnz));
  std::vector<std::int64_t> entry_at(static_cast<std::size_t>(nnz));
  std::vector<std::int64_t> slot_of(static_cast<std::size_t>(nnz));
  for (std::int64_t r = 0; r < nrows; ++r) {
    for (std::int64_t e = ptr[r]; e < ptr[r + 1]; ++e) {
      const auto c = static_cast<std::size_t>(idx[e]);
      const std::int64_t s = col_begin[c] + col_live[c]++;
      row_at[s] = static_cast<std::int32_t>(r);
      entry_at[s] = e;
      slot_of[e] = s;
    }
  }

  std::vector<char> placed(static_cast<std::size_t>(nrows), 0);
  std::vector<std::int32_t> overlap(static_cast<std::size_t>(nrows), 0);
  std::vector<std::int32_t> touched;
  std::vector<std::int32_t> order;
  order.reserve(static_cast<std::size_t>(nrows));
  std::int64_t next_unplaced = 0;

  auto place = [&](std::int64_t r) {
    placed[r] = 1;
    order.push_back(static_cast<std::int32_t>(r));
    for (std::int64_t e = ptr[r]; e < ptr[r + 1]; ++e) {
      const auto c = static_cast<std::size_t>(idx[e]);
      const std::int64_t hole = slot_of[e];
      const std::int64_t last = col_begin[c] + --col_live[c];
      row_at[hole] = row_at[last];
      entry_at[hole] = entry_at[last];
      slot_of[entry_at[hole]] = hole;
    }
  };

  std::int64_t current = -1;
  while (static_cast<std::int64_t>(order.size()) < nrows) {
    if (current < 0) {
      while (placed[next_unplaced]) ++next_unplaced;
      current = next_unplaced;
    }
    place(current);
    const std::int64_t len = ptr[current + 1] - ptr[current];
    const std::int64_t scanned = std::min(len, kMaxColumnsScanned);
    const std::int64_t per_column = scanned > 0 ? kCandidateBudget / scanned : 0;
    for (std::int64_t t = 0; t < scanned; ++t) {
      const auto c = static_cast<std::size_t>(idx[ptr[current] + t * len / scanned]);
      const std::int64_t live = std::min(col_live[c], per_column);
      for (std::int64_t s = col_begin[c]; s < col_begin[c] + live; ++s) {
        const std::int32_t r = row_at[s];
        if (overlap[r]++ == 0) touched.push_back(r);
      }
    }
    std::int64_t best = -1;
    std::int64_t best_distance = std::numeric_limits<std::int64_t>::max();
    for (const std::int32_t r : touched) {
      const std::int64_t d = len + (ptr[r + 1] - ptr[r]) - 2 * std::int64_t{overlap[r]};
      // Ties go to the lowest row number, which keeps the original order where it is as good.
      if (d < best_distance || (d == best_distance && r < best)) {
        best_distance = d;
        best = r;
      }
      overlap[r] = 0;
    }
    touched.clear();
    current = best;
  }
  return order;
}

std::vector<std::int32_t> distance_set_ordering(const CsrMatrix& a, int set_rows, int threads) {
  const std::int64_t nsets = (a.nrows + set_rows - 1) / set_rows;
  auto first_row = [&](std::int64_t s) { return std::min(a.nrows, s * set_rows); };
  // A set's column set is the sorted union of its rows' columns; built in two parallel passes.
  std::vector<std::int64_t> ptr(static_cast<std::size_t>(nsets) + 1, 0);
  auto union_of = [&](std::int64_t s, std::vector<std::int32_t>& cols) {
    cols.assign(a.col_idx.begin() + a.row_ptr[first_row(s)],
                a.col_idx.begin() + a.row_ptr[first_row(s + 1)]);
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
  };
  parallel_chunks(nsets, threads, [&](std::int64_t begin, std::int64_t end) {
    std::vector<std::int32_t> cols;
    for (std::int64_t s = begin; s < end; ++s) {
      union_of(s, cols);
      ptr[static_cast<std::size_t>(s) + 1] = static_cast<std::int64_t>(cols.size());
    }
  });
  std::partial_sum(ptr.begin(), ptr.end(), ptr.begin());
  std::vector<std::int32_t> idx(static_cast<std::size_t>(ptr.back()));
  parallel_chunks(nsets, threads, [&](std::int64_t begin, std::int64_t end) {
    std::vector<std::int32_t> cols;
    for (std::int64_t s = begin; s < end; ++s) {
      union_of(s, cols);
      std::copy(cols.begin(), cols.end(), idx.begin() + ptr[s]);
    }
  });

  const std::vector<std::int32_t> set_order = distance_chain(ptr, idx, a.ncols);
  std::vector<std::int32_t> perm;
  perm.reserve(static_cast<std::size_t>(a.nrows));
  for (const std::int32_t s : set_order) {
    for (std::int64_t r = first_row(s); r < first_row(s + 1); ++r) {
      perm.push_back(static_cast<std::int32_t>(r));
    }
  }
  return perm;
}

}  // namespace spmvc::reorder_detail
