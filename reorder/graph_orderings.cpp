// The symmetric graph orderings: RCM (Boost.Graph), AMD (SuiteSparse) and METIS nested
// dissection, all on the undirected graph of A + A^T.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <new>
#include <numeric>
#include <string>
#include <vector>

#include <amd.h>  // SuiteSparse AMD (its directory is on the include path)
#include <fmt/format.h>
#include <metis.h>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/cuthill_mckee_ordering.hpp>
#include <boost/property_map/property_map.hpp>

#include "reorder_internal.hpp"
#include "spmvc/error.hpp"

namespace spmvc::reorder_detail {

SymmetrisedPattern symmetrised_pattern(const CsrMatrix& a, int threads) {
  const std::int64_t n = a.nrows;
  // A^T's pattern by a counting pass; scanning rows in order leaves each column list sorted.
  std::vector<std::int64_t> tptr(static_cast<std::size_t>(n) + 1, 0);
  for (const std::int32_t c : a.col_idx) ++tptr[static_cast<std::size_t>(c) + 1];
  std::partial_sum(tptr.begin(), tptr.end(), tptr.begin());
  std::vector<std::int32_t> tidx(a.col_idx.size());
  {
    std::vector<std::int64_t> next(tptr.begin(), tptr.end() - 1);
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
        tidx[static_cast<std::size_t>(next[static_cast<std::size_t>(a.col_idx[k])]++)] =
            static_cast<std::int32_t>(i);
      }
    }
  }

  // Row i of the result is the sorted union of row i of A and of A^T, without i itself. Two
  // passes over the rows (count, then fill), each split among the threads.
  auto merge_row = [&](std::int64_t i, std::int32_t* out) -> std::int64_t {
    const std::int32_t* p = a.col_idx.data() + a.row_ptr[i];
    const std::int32_t* pe = a.col_idx.data() + a.row_ptr[i + 1];
    const std::int32_t* q = tidx.data() + tptr[i];
    const std::int32_t* qe = tidx.data() + tptr[i + 1];
    std::int64_t count = 0;
    while (p != pe || q != qe) {
      std::int32_t v;
      if (q == qe || (p != pe && *p < *q)) {
        v = *p++;
      } else if (p == pe || *q < *p) {
        v = *q++;
      } else {
        v = *p++;
        ++q;
      }
      if (v == i) continue;
      if (out) out[count] = v;
      ++count;
    }
    return count;
  };

  SymmetrisedPattern result;
  Pattern& g = result.graph;
  g.n = n;
  g.ptr.assign(static_cast<std::size_t>(n) + 1, 0);
  std::vector<char> symmetric_rows(static_cast<std::size_t>(n), 1);
  parallel_chunks(n, threads, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const std::int64_t merged = merge_row(i, nullptr);
      g.ptr[static_cast<std::size_t>(i) + 1] = merged;
      // Without the diagonal, A's row and A^T's row both equal the union exactly when the
      // pattern is symmetric at row i.
      const bool diag =
          std::binary_search(a.col_idx.begin() + a.row_ptr[i], a.col_idx.begin() + a.row_ptr[i + 1],
                             static_cast<std::int32_t>(i));
      const std::int64_t own = a.row_length(i) - (diag ? 1 : 0);
      const std::int64_t transposed = tptr[i + 1] - tptr[i] - (diag ? 1 : 0);
      symmetric_rows[static_cast<std::size_t>(i)] = own == merged && transposed == merged;
    }
  });
  std::partial_sum(g.ptr.begin(), g.ptr.end(), g.ptr.begin());
  g.idx.resize(static_cast<std::size_t>(g.ptr.back()));
  parallel_chunks(n, threads, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) merge_row(i, g.idx.data() + g.ptr[i]);
  });
  result.was_symmetric =
      std::all_of(symmetric_rows.begin(), symmetric_rows.end(), [](char s) { return s != 0; });
  return result;
}

std::vector<std::int32_t> rcm_ordering(const Pattern& g, int threads) {
  // 32-bit vertices, 64-bit edge offsets: the graph's own arrays stay as small as ours.
  using Graph =
      boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, boost::no_property,
                                         boost::no_property, std::uint32_t, std::uint64_t>;
  // Each connected component is ordered as a graph of its own. Boost's whole-graph overload
  // looks for a pseudo-peripheral start vertex per component with find_starting_node, which
  // whitens every vertex of the graph on each call: its time grows as vertices x components
  // (105 s for ca-CondMat replicated to 16M nonzeros, 70,000 components). Components are taken
  // in the order of their lowest vertex, each found by a breadth-first walk that lists its
  // vertices (`members`, component c at [first[c], first[c + 1])) and numbers them within it.
  const auto n = static_cast<std::size_t>(g.n);
  std::vector<std::int32_t> members;
  members.reserve(n);
  std::vector<std::size_t> first{0};
  std::vector<std::int32_t> local(n, -1);  // a vertex's index in its component
  for (std::size_t start = 0; start < n; ++start) {
    if (local[start] >= 0) continue;
    const std::size_t base = members.size();
    members.push_back(static_cast<std::int32_t>(start));
    local[start] = 0;
    for (std::size_t head = base; head < members.size(); ++head) {
      const auto v = static_cast<std::size_t>(members[head]);
      for (std::int64_t k = g.ptr[v]; k < g.ptr[v + 1]; ++k) {
        const auto u = static_cast<std::size_t>(g.idx[static_cast<std::size_t>(k)]);
        if (local[u] >= 0) continue;
        local[u] = static_cast<std::int32_t>(members.size() - base);
        members.push_back(static_cast<std::int32_t>(u));
      }
    }
    first.push_back(members.size());
  }
  const std::size_t components = first.size() - 1;

  // Cuthill-McKee on each component, the components side by side (the largest first, so that
  // one large component does not start last): each writes its order over its own slice of
  // `perm`, so the result is the same whatever the threads.
  std::vector<std::int32_t> perm(n);
  std::vector<std::size_t> largest_first(components);
  std::iota(largest_first.begin(), largest_first.end(), std::size_t{0});
  std::stable_sort(largest_first.begin(), largest_first.end(), [&](std::size_t x, std::size_t y) {
    return first[x + 1] - first[x] > first[y + 1] - first[y];
  });
  std::atomic<std::size_t> next{0};
  auto worker = [&](std::int64_t, std::int64_t) {
    std::vector<std::uint32_t> sources, targets, order;
    std::vector<boost::default_color_type> colors;
    for (std::size_t t = next++; t < components; t = next++) {
      const std::size_t c = largest_first[t];
      const std::size_t begin = first[c], size = first[c + 1] - begin;
      if (size == 1) {
        perm[begin] = members[begin];
        continue;
      }
      sources.clear();
      targets.clear();
      for (std::size_t i = 0; i < size; ++i) {
        const auto v = static_cast<std::size_t>(members[begin + i]);
        for (std::int64_t k = g.ptr[v]; k < g.ptr[v + 1]; ++k) {
          sources.push_back(static_cast<std::uint32_t>(i));
          targets.push_back(static_cast<std::uint32_t>(
              local[static_cast<std::size_t>(g.idx[static_cast<std::size_t>(k)])]));
        }
      }
      // Every edge is stored in both directions, so the directed CSR graph's out-edges are the
      // undirected neighbourhoods Cuthill-McKee walks. The construction sorts by source itself.
      const auto m = static_cast<std::uint32_t>(size);
      const Graph graph(boost::construct_inplace_from_sources_and_targets, sources, targets, m);
      colors.assign(m, boost::default_color_type{});
      auto color =
          boost::make_iterator_property_map(colors.begin(), get(boost::vertex_index, graph));
      order.assign(m, 0);
      // One component: one start-vertex search. Writing through a reverse iterator turns
      // Cuthill-McKee into reverse Cuthill-McKee.
      boost::cuthill_mckee_ordering(graph, order.rbegin(), color,
                                    boost::make_out_degree_map(graph));
      for (std::size_t i = 0; i < size; ++i) perm[begin + i] = members[begin + order[i]];
    }
  };
  // One task per thread; each takes components until none is left.
  const int workers = static_cast<int>(std::min<std::size_t>(
      static_cast<std::size_t>(std::max(threads, 1)), std::max<std::size_t>(components, 1)));
  parallel_chunks(workers, workers, worker, 1);
  return perm;
}

std::vector<std::int32_t> amd_ordering(const Pattern& g) {
  if (g.idx.empty()) {
    // No edges: every order is minimum degree (and AMD rejects the empty index array).
    std::vector<std::int32_t> perm(static_cast<std::size_t>(g.n));
    std::iota(perm.begin(), perm.end(), 0);
    return perm;
  }
  // SuiteSparse's 64-bit interface, so no size limit beyond the matrix's own.
  std::vector<SuiteSparse_long> ap(g.ptr.begin(), g.ptr.end());
  std::vector<SuiteSparse_long> ai(g.idx.begin(), g.idx.end());
  std::vector<SuiteSparse_long> p(static_cast<std::size_t>(g.n));
  double control[AMD_CONTROL];
  double info[AMD_INFO];
  amd_l_defaults(control);
  const SuiteSparse_long status = amd_l_order(static_cast<SuiteSparse_long>(g.n), ap.data(),
                                              ai.data(), p.data(), control, info);
  if (status == AMD_OUT_OF_MEMORY) throw std::bad_alloc();
  if (status != AMD_OK && status != AMD_OK_BUT_JUMBLED) {
    throw InternalError(
        fmt::format("amd_l_order rejected a {}-vertex graph (status {})", g.n, status));
  }
  // P[k] = i: row i of A is the k-th pivot, i.e. new row k is old row i.
  std::vector<std::int32_t> perm(p.size());
  std::transform(p.begin(), p.end(), perm.begin(),
                 [](SuiteSparse_long v) { return static_cast<std::int32_t>(v); });
  return perm;
}

std::vector<std::int32_t> metis_ordering(const Pattern& g) {
  std::vector<std::int32_t> perm(static_cast<std::size_t>(g.n));
  std::iota(perm.begin(), perm.end(), 0);
  // METIS has nothing to dissect in a graph without edges (and rejects some of them).
  if (g.idx.empty()) return perm;
  if (g.ptr.back() > std::numeric_limits<idx_t>::max()) {
    throw InputError("metis", 0,
                     fmt::format("the graph of A + A^T has {} edge entries, more than this "
                                 "METIS build's {}-bit indices hold",
                                 g.ptr.back(), IDXTYPEWIDTH));
  }
  // One sequential call. Splitting the top level here and ordering the halves on two threads
  // would halve the time, but METIS 5.1 keeps its random generator in process-wide state:
  // concurrent calls race on it (measured: different orderings from run to run).
  idx_t nvtxs = static_cast<idx_t>(g.n);
  std::vector<idx_t> xadj(g.ptr.begin(), g.ptr.end());
  std::vector<idx_t> adjncy(g.idx.begin(), g.idx.end());
  std::vector<idx_t> mperm(static_cast<std::size_t>(g.n)), miperm(mperm.size());
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_NUMBERING] = 0;
  const int status = METIS_NodeND(&nvtxs, xadj.data(), adjncy.data(), nullptr, options,
                                  mperm.data(), miperm.data());
  if (status == METIS_ERROR_MEMORY) throw std::bad_alloc();
  if (status != METIS_OK) {
    // GKlib, under METIS, traps SIGTERM while METIS runs and turns it into METIS_ERROR: a process
    // told to stop (by `timeout`, say) mid-order ends here, not by the signal.
    throw InternalError(fmt::format(
        "METIS_NodeND failed on a {}-vertex graph (status {}{})", g.n, status,
        status == METIS_ERROR ? ", METIS_ERROR: an error inside METIS, or a SIGTERM that METIS "
                                "trapped while it ordered"
                              : ""));
  }
  // The manuals disagree on which of the two arrays is which. Measured on METIS 5.1: the `perm`
  // argument lists old vertices in elimination order (a 2D grid's top-level separator is at its
  // end), which is our "new i is old perm[i]". The unit tests check that separator.
  for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<std::int32_t>(mperm[i]);
  return perm;
}

}  // namespace spmvc::reorder_detail
