// The degree orderings, for power-law graphs: vertices renumbered by how often x reads them, so
// the few columns that most nonzeros read sit together in x and share cache lines.
//
// A column's heat is its count of nonzeros (its in-degree in the graph of A): on a power-law graph
// a small set of hub columns takes most of the reads, and with random vertex labels each hub's x
// entry shares its 32-byte sector with cold neighbours, so every read of it moves a sector to
// serve one value. Placing the hubs side by side lets the sectors (and the L1 lines) that hold
// them serve many reads each.
//
//   degree  all vertices by decreasing column count; ties keep the input order (a stable sort).
//   dbg     degree-based grouping: vertices in a handful of groups by column count, the hottest
//           group first, the input order kept inside each group. Coarser than `degree`, it keeps
//           most of the input order's locality (a matrix made of independent copies of one graph
//           keeps each copy's vertices together inside every group) while still packing the hubs.
//
// The groups of dbg are bounded by the mean column count m: [32m, inf), [16m, 32m), ..., [m, 2m),
// [m/2, m), [0, m/2), hottest first. Faldu, Diamond and Grot ("A Closer Look at Lightweight Graph
// Reordering", IISWC 2019) describe grouping by degree against the mean; the boundaries here are
// ours.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "reorder_internal.hpp"

namespace spmvc::reorder_detail {
namespace {

/// Nonzeros in each column of a square pattern.
std::vector<std::int64_t> column_counts(const CsrMatrix& a) {
  std::vector<std::int64_t> count(static_cast<std::size_t>(a.ncols), 0);
  for (const std::int32_t c : a.col_idx) ++count[static_cast<std::size_t>(c)];
  return count;
}

/// Groups of dbg, hottest first: the group index of a column with `count` nonzeros when the mean
/// is `mean` (0 is the hottest).
constexpr int kDbgHotGroups = 6;  // [32m, inf) .. [m, 2m): six groups at or above the mean
int dbg_group(std::int64_t count, double mean) {
  const double c = static_cast<double>(count);
  if (c < mean / 2) return kDbgHotGroups + 1;
  if (c < mean) return kDbgHotGroups;
  // c >= mean: group k for c in [2^(5-k) m, 2^(6-k) m), k = 0..5, the top one open-ended.
  int k = kDbgHotGroups - 1;
  double bound = 2 * mean;
  while (k > 0 && c >= bound) {
    --k;
    bound *= 2;
  }
  return k;
}

}  // namespace

std::vector<std::int32_t> degree_ordering(const CsrMatrix& a) {
  const std::vector<std::int64_t> count = column_counts(a);
  std::vector<std::int32_t> perm(static_cast<std::size_t>(a.nrows));
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](std::int32_t x, std::int32_t y) {
    return count[static_cast<std::size_t>(x)] > count[static_cast<std::size_t>(y)];
  });
  return perm;
}

std::vector<std::int32_t> dbg_ordering(const CsrMatrix& a, std::int64_t* hubs) {
  const std::vector<std::int64_t> count = column_counts(a);
  const double mean =
      a.ncols > 0 ? static_cast<double>(a.nnz()) / static_cast<double>(a.ncols) : 0.0;
  // A counting sort by group keeps the input order inside each group.
  constexpr int kGroups = kDbgHotGroups + 2;
  std::vector<std::int64_t> start(kGroups + 1, 0);
  std::vector<std::int8_t> group(static_cast<std::size_t>(a.nrows));
  for (std::int64_t v = 0; v < a.nrows; ++v) {
    const int g = dbg_group(count[static_cast<std::size_t>(v)], mean);
    group[static_cast<std::size_t>(v)] = static_cast<std::int8_t>(g);
    ++start[static_cast<std::size_t>(g) + 1];
  }
  std::partial_sum(start.begin(), start.end(), start.begin());
  if (hubs) *hubs = start[kDbgHotGroups];  // groups 0 .. kDbgHotGroups - 1: at or above the mean
  std::vector<std::int32_t> perm(static_cast<std::size_t>(a.nrows));
  for (std::int64_t v = 0; v < a.nrows; ++v) {
    perm[static_cast<std::size_t>(start[group[static_cast<std::size_t>(v)]]++)] =
        static_cast<std::int32_t>(v);
  }
  return perm;
}

}  // namespace spmvc::reorder_detail
