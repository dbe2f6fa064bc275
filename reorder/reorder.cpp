// The ordering table, compute_ordering's checks and timing, permute, and the two orderings too
// small for a file of their own (none, sort).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "reorder_internal.hpp"
#include "spmvc/error.hpp"
#include "spmvc/reorder.hpp"

namespace spmvc {
namespace {

using reorder_detail::parallel_chunks;
using reorder_detail::parallel_dynamic;
using reorder_detail::worker_count;

// The orderings in the order ordering_names() lists them.
// Rows a thread of permute takes at a time.
constexpr std::int64_t kPermuteGrain = 4096;
// How many rows ahead permute asks for the next old row's columns and values.
constexpr std::int64_t kPrefetchRows = 8;

constexpr std::array<std::string_view, 10> kOrderingNames = {
    "none", "rcm", "amd", "metis", "d", "dset", "bar", "sort", "degree", "dbg"};

void require_square(const CsrMatrix& a, std::string_view name) {
  if (a.nrows != a.ncols) {
    throw InputError(std::string(name), 0,
                     fmt::format("matrix is {}x{}, not square (this ordering renames rows and "
                                 "columns alike)",
                                 a.nrows, a.ncols));
  }
}

void check_options(const ReorderOptions& o) {
  auto bad = [](std::string_view what, int value, std::string_view want) {
    return InputError("reorder options", 0, fmt::format("{} = {}: {}", what, value, want));
  };
  if (o.window < 0) throw bad("window", o.window, "must be >= 0 (0: automatic)");
  if (o.bar_slice_height < 1) throw bad("bar_slice_height", o.bar_slice_height, "must be >= 1");
  if (o.bar_symbol_bits < 1 || o.bar_symbol_bits > 64) {
    throw bad("bar_symbol_bits", o.bar_symbol_bits, "must be in 1..64");
  }
  if (o.bar_candidate_clusters < 0) {
    throw bad("bar_candidate_clusters", o.bar_candidate_clusters, "must be >= 0 (0: all)");
  }
  if (o.dset_rows < 1) throw bad("dset_rows", o.dset_rows, "must be >= 1");
  if (o.threads < 0) throw bad("threads", o.threads, "must be >= 0 (0: all cores)");
}

std::vector<std::int32_t> identity(std::int64_t n) {
  std::vector<std::int32_t> perm(static_cast<std::size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  return perm;
}

std::vector<std::int32_t> sort_ordering(const CsrMatrix& a, std::int64_t window) {
  std::vector<std::int32_t> perm = identity(a.nrows);
  for (std::int64_t begin = 0; begin < a.nrows; begin += window) {
    const std::int64_t end = std::min(a.nrows, begin + window);
    std::stable_sort(perm.begin() + begin, perm.begin() + end, [&](std::int32_t x, std::int32_t y) {
      return a.row_length(x) > a.row_length(y);
    });
  }
  return perm;
}

// rcm, amd and metis: the graph of A + A^T, and a note when that differs from A's own pattern.
Ordering graph_ordering(const CsrMatrix& a, std::string_view name, int threads) {
  require_square(a, name);
  auto sym = reorder_detail::symmetrised_pattern(a, threads);
  Ordering o;
  o.kind = PermutationKind::symmetric;
  if (name == "rcm") o.perm = reorder_detail::rcm_ordering(sym.graph, threads);
  if (name == "amd") o.perm = reorder_detail::amd_ordering(sym.graph);
  if (name == "metis") o.perm = reorder_detail::metis_ordering(sym.graph);
  if (!sym.was_symmetric) {
    o.note = fmt::format(
        "the pattern is not structurally symmetric: ordered the graph of A + A^T "
        "({} edges)",
        sym.graph.idx.size() / 2);
  }
  return o;
}

}  // namespace

bool ordering_needs_square(std::string_view name) {
  return name == "rcm" || name == "amd" || name == "metis" || name == "degree" || name == "dbg";
}

std::vector<std::string> ordering_names() { return {kOrderingNames.begin(), kOrderingNames.end()}; }

Ordering compute_ordering(const CsrMatrix& a, std::string_view name,
                          const ReorderOptions& options) {
  if (std::find(kOrderingNames.begin(), kOrderingNames.end(), name) == kOrderingNames.end()) {
    throw InputError(
        "reorder", 0,
        fmt::format("unknown ordering '{}' (known: {})", name, fmt::join(kOrderingNames, ", ")));
  }
  check_options(options);
  if (a.nrows > std::numeric_limits<std::int32_t>::max()) {
    throw InputError(std::string(name), 0,
                     fmt::format("matrix has {} rows; orderings hold 32-bit row numbers", a.nrows));
  }
  const int threads = worker_count(options.threads);
  const auto start = std::chrono::steady_clock::now();

  Ordering o;
  if (name == "rcm" || name == "amd" || name == "metis") {
    o = graph_ordering(a, name, threads);
  } else if (name == "d" || name == "dset") {
    o.perm = name == "d" ? reorder_detail::distance_chain(a.row_ptr, a.col_idx, a.ncols)
                         : reorder_detail::distance_set_ordering(a, options.dset_rows, threads);
    if (a.nrows == a.ncols) {
      o.kind = PermutationKind::symmetric;
      o.note = "rows and columns permuted alike";
    } else {
      o.kind = PermutationKind::rows_only;
      o.note = "rectangular: rows permuted only";
    }
  } else if (name == "bar") {
    o.perm = reorder_detail::bar_ordering(a, options);
    // Algorithm 2 is a greedy heuristic and can lose to an order that is already good (a
    // stencil's); BAR exists to shrink equation 1, so it never returns a larger index stream.
    const std::int64_t h = options.bar_slice_height, alpha = options.bar_symbol_bits;
    const std::int64_t before = reorder_detail::bro_ell_index_bits(a, {}, h, alpha, threads);
    const std::int64_t after = reorder_detail::bro_ell_index_bits(a, o.perm, h, alpha, threads);
    if (after > before) {
      o.perm = identity(a.nrows);
      o.note = fmt::format(
          "kept the input order: Algorithm 2's clusters need {} index bits, the "
          "input order {} (slices of {} rows, {}-bit symbols)",
          after, before, h, alpha);
    } else {
      o.note = fmt::format("BRO-ELL index {} -> {} bits (slices of {} rows, {}-bit symbols)",
                           before, after, h, alpha);
    }
  } else if (name == "degree" || name == "dbg") {
    require_square(a, name);
    o.kind = PermutationKind::symmetric;
    o.perm = name == "degree" ? reorder_detail::degree_ordering(a)
                              : reorder_detail::dbg_ordering(a, &o.hub_columns);
  } else if (name == "sort") {
    const int window = options.window > 0 ? options.window : kDefaultSortWindow;
    o.perm = sort_ordering(a, window);
    o.note = fmt::format("window of {} rows", window);
  } else {
    o.perm = identity(a.nrows);
  }
  o.name = std::string(name);
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!is_permutation(o.perm, a.nrows)) {
    throw InternalError(fmt::format("ordering '{}' of a {}x{} matrix is not a permutation", name,
                                    a.nrows, a.ncols));
  }
  return o;
}

Ordering ordering_of(const RowColumnMap& map, std::string name) {
  Ordering o;
  o.name = std::move(name);
  o.hub_columns = map.hub_columns;
  if (map.cols.empty()) {
    o.kind = PermutationKind::rows_only;
    o.perm = map.rows;
  } else if (!map.ordering.empty()) {
    o.kind = PermutationKind::symmetric;
    o.perm = map.ordering;
  } else if (map.cols == map.rows) {
    o.kind = PermutationKind::symmetric;
    o.perm = map.rows;
  } else if (is_identity(map.rows)) {
    o.kind = PermutationKind::columns_only;
    o.perm = map.cols;
  } else {
    throw InputError("ordering '" + o.name + "'", 0,
                     "the map moves the rows and the columns differently: no one ordering");
  }
  return o;
}

std::vector<std::int32_t> nonempty_rows_first(CsrMatrix& a, std::int64_t* nonempty) {
  std::vector<std::int32_t> order;
  order.reserve(static_cast<std::size_t>(a.nrows));
  for (std::int64_t r = 0; r < a.nrows; ++r)
    if (a.row_ptr[r + 1] > a.row_ptr[r]) order.push_back(static_cast<std::int32_t>(r));
  const auto filled = static_cast<std::int64_t>(order.size());
  if (nonempty) *nonempty = filled;
  for (std::int64_t r = 0; r < a.nrows; ++r)
    if (a.row_ptr[r + 1] == a.row_ptr[r]) order.push_back(static_cast<std::int32_t>(r));
  // The rows with entries keep their order and so their entries' places: new row i < filled ends
  // where its old row ended, and every empty row after them ends at nnz.
  for (std::int64_t i = 0; i < filled; ++i)
    a.row_ptr[i + 1] = a.row_ptr[order[static_cast<std::size_t>(i)] + 1];
  std::fill(a.row_ptr.begin() + filled + 1, a.row_ptr.end(), a.nnz());
  return order;
}

CsrMatrix packed_like(CsrMatrix moved, const RowColumnMap& map) {
  if (map.packed_columns > 0) {
    const std::vector<std::int32_t> read = columns_read(moved);
    if (static_cast<std::int64_t>(read.size()) != map.packed_columns)
      throw InputError(
          "packed_like", 0,
          fmt::format("{} columns read where the map packed {}", read.size(), map.packed_columns));
    (void)pack_read_columns(moved, read);
  }
  if (map.packed_rows > 0) {
    std::int64_t nonempty = 0;
    (void)nonempty_rows_first(moved, &nonempty);
    if (nonempty != map.packed_rows)
      throw InputError(
          "packed_like", 0,
          fmt::format("{} rows with entries where the map packed {}", nonempty, map.packed_rows));
  }
  return moved;
}

Ordering columns_only(Ordering o) {
  if (o.kind == PermutationKind::rows_only)
    throw InputError("ordering '" + o.name + "'", 0,
                     "a rows-only ordering has no column numbers to apply alone");
  o.kind = PermutationKind::columns_only;
  return o;
}

bool is_identity(std::span<const std::int32_t> perm) {
  for (std::size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<std::int32_t>(i)) return false;
  return true;
}

bool is_permutation(std::span<const std::int32_t> perm, std::int64_t n) {
  if (static_cast<std::int64_t>(perm.size()) != n) return false;
  std::vector<char> seen(static_cast<std::size_t>(n), 0);
  for (const std::int32_t p : perm) {
    if (p < 0 || p >= n || seen[static_cast<std::size_t>(p)]) return false;
    seen[static_cast<std::size_t>(p)] = 1;
  }
  return true;
}

void check_ordering(const CsrMatrix& a, const Ordering& o, const std::string& source) {
  const bool columns = o.kind == PermutationKind::columns_only;
  const std::int64_t n = columns ? a.ncols : a.nrows;
  if (!is_permutation(o.perm, n)) {
    throw InputError(source, 0,
                     fmt::format("the ordering ({} entries) is not a permutation of the {} {}",
                                 o.perm.size(), n, columns ? "columns" : "rows"));
  }
  if (o.kind == PermutationKind::symmetric && a.nrows != a.ncols) {
    throw InputError(
        source, 0,
        fmt::format("a symmetric ordering needs a square matrix, not {}x{}", a.nrows, a.ncols));
  }
}

CsrMatrix permute(const CsrMatrix& a, const Ordering& o, std::vector<std::int64_t>* sources) {
  check_ordering(a, o, "permute (" + o.name + ")");
  const bool columns = o.kind == PermutationKind::columns_only;
  const bool symmetric = o.kind == PermutationKind::symmetric;
  const int threads = worker_count(0);
  CsrMatrix b;
  b.nrows = a.nrows;
  b.ncols = a.ncols;
  b.row_ptr.assign(static_cast<std::size_t>(a.nrows) + 1, 0);
  // Old row of new row i: the ordering's, or row i itself where only the columns move.
  const auto old_row = [&](std::int64_t i) -> std::int64_t { return columns ? i : o.perm[i]; };
  for (std::int64_t i = 0; i < a.nrows; ++i) {
    b.row_ptr[static_cast<std::size_t>(i) + 1] = b.row_ptr[i] + a.row_length(old_row(i));
  }
  b.col_idx.resize(a.col_idx.size());
  b.values.resize(a.values.size());
  if (sources) sources->resize(a.col_idx.size());
  const bool renumber = symmetric || columns;
  std::vector<std::int32_t> new_col;  // new number of each old column (columns renumbered only)
  if (renumber) {
    new_col.resize(static_cast<std::size_t>(a.ncols));
    for (std::int64_t j = 0; j < a.ncols; ++j) new_col[o.perm[j]] = static_cast<std::int32_t>(j);
  }
  // Rows in ranges handed out as threads free up: an ordering by degree puts the long rows
  // together, and equal row counts per thread would leave one thread all the hubs' sorting.
  parallel_dynamic(a.nrows, threads, kPermuteGrain, [&](const auto& take) {
    std::vector<std::uint64_t> row;
    std::int64_t begin = 0, end = 0;
    while (take(begin, end)) {
      for (std::int64_t i = begin; i < end; ++i) {
        // The old rows come in the ordering's order, scattered over a's arrays: ask for a row a
        // few ahead while this one is copied.
        if (!columns && i + kPrefetchRows < end) {
          const std::int64_t ahead = a.row_ptr[o.perm[i + kPrefetchRows]];
          __builtin_prefetch(a.col_idx.data() + ahead);
          if (!a.values.empty()) __builtin_prefetch(a.values.data() + ahead);
        }
        const std::int64_t from = a.row_ptr[old_row(i)];
        const std::int64_t len = a.row_length(old_row(i));
        const std::int64_t to = b.row_ptr[i];
        if (!renumber) {
          std::copy_n(a.col_idx.begin() + from, len, b.col_idx.begin() + to);
          std::copy_n(a.values.begin() + from, len, b.values.begin() + to);
          if (sources) std::iota(sources->begin() + to, sources->begin() + to + len, from);
          continue;
        }
        // Each entry as (new column, place in the old row) in one 64-bit key: a row holds
        // fewer than 2^31 entries, so the place fits the low half, and plain integers sort
        // fastest.
        row.clear();
        for (std::int64_t k = 0; k < len; ++k) {
          row.push_back(static_cast<std::uint64_t>(new_col[a.col_idx[from + k]]) << 32 |
                        static_cast<std::uint64_t>(k));
        }
        std::sort(row.begin(), row.end());
        for (std::int64_t k = 0; k < len; ++k) {
          const std::int64_t at = from + static_cast<std::int64_t>(row[k] & 0xffffffffU);
          b.col_idx[to + k] = static_cast<std::int32_t>(row[k] >> 32);
          b.values[to + k] = a.values[at];
          if (sources) (*sources)[static_cast<std::size_t>(to + k)] = at;
        }
      }
    }
  });
  return b;
}

}  // namespace spmvc
