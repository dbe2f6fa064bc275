// The symmetric graph orderings: RCM, AMD (SuiteSparse) and METIS nested dissection, all on the
// undirected graph of A + A^T.
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

#include "reorder_internal.hpp"
#include "spmvc/error.hpp"

namespace spmvc::reorder_detail {

namespace {

// Whether a's pattern is symmetric, the diagonal aside: each (i, j) with j != i has (j, i). Rows
// are checked in parallel, each entry by a binary search of the other row.
bool pattern_is_symmetric(const CsrMatrix& a, int threads) {
  std::atomic<bool> symmetric{true};
  parallel_chunks(a.nrows, threads, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end && symmetric.load(std::memory_order_relaxed); ++i) {
      for (std::int64_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
        const std::int32_t j = a.col_idx[static_cast<std::size_t>(k)];
        if (j == i) continue;
        if (!std::binary_search(a.col_idx.begin() + a.row_ptr[j],
                                a.col_idx.begin() + a.row_ptr[j + 1],
                                static_cast<std::int32_t>(i))) {
          symmetric.store(false, std::memory_order_relaxed);
          return;
        }
      }
    }
  });
  return symmetric.load();
}

// The graph of a symmetric pattern: a's rows without the diagonal, copied in parallel.
Pattern without_diagonal(const CsrMatrix& a, int threads) {
  Pattern g;
  g.n = a.nrows;
  g.ptr.assign(static_cast<std::size_t>(a.nrows) + 1, 0);
  const auto has_diagonal = [&](std::int64_t i) {
    return std::binary_search(a.col_idx.begin() + a.row_ptr[i],
                              a.col_idx.begin() + a.row_ptr[i + 1], static_cast<std::int32_t>(i));
  };
  parallel_chunks(a.nrows, threads, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i)
      g.ptr[static_cast<std::size_t>(i) + 1] = a.row_length(i) - (has_diagonal(i) ? 1 : 0);
  });
  std::partial_sum(g.ptr.begin(), g.ptr.end(), g.ptr.begin());
  g.idx.resize(static_cast<std::size_t>(g.ptr.back()));
  parallel_chunks(a.nrows, threads, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      std::remove_copy(a.col_idx.begin() + a.row_ptr[i], a.col_idx.begin() + a.row_ptr[i + 1],
                       g.idx.begin() + g.ptr[static_cast<std::size_t>(i)],
                       static_cast<std::int32_t>(i));
    }
  });
  return g;
}

}  // namespace

SymmetrisedPattern symmetrised_pattern(const CsrMatrix& a, int threads) {
  SymmetrisedPattern result;
  // A symmetric pattern (most that are ordered) is its own graph: no transpose to build.
  if (pattern_is_symmetric(a, threads)) {
    result.graph = without_diagonal(a, threads);
    return result;
  }
  result.was_symmetric = false;
  const std::int64_t n = a.nrows;
  // A^T's pattern: each column's entries counted and placed by the threads together (atomic
  // counters), then each column's list sorted, which makes the result independent of the threads.
  std::vector<std::int64_t> tptr(static_cast<std::size_t>(n) + 1, 0);
  parallel_chunks(n, threads, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t k = a.row_ptr[begin]; k < a.row_ptr[end]; ++k) {
      std::atomic_ref<std::int64_t>(tptr[static_cast<std::size_t>(a.col_idx[k]) + 1])
          .fetch_add(1, std::memory_order_relaxed);
    }
  });
  std::partial_sum(tptr.begin(), tptr.end(), tptr.begin());
  IndexArray tidx(a.col_idx.size());  // every entry placed below
  {
    std::vector<std::int64_t> next(tptr.begin(), tptr.end() - 1);
    parallel_chunks(n, threads, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        for (std::int64_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
          const std::int64_t at =
              std::atomic_ref<std::int64_t>(next[static_cast<std::size_t>(a.col_idx[k])])
                  .fetch_add(1, std::memory_order_relaxed);
          tidx[static_cast<std::size_t>(at)] = static_cast<std::int32_t>(i);
        }
      }
    });
  }
  parallel_dynamic(n, threads, kMinRowsPerThread, [&](const auto& take) {
    std::int64_t begin = 0, end = 0;
    while (take(begin, end)) {
      for (std::int64_t c = begin; c < end; ++c)
        std::sort(tidx.begin() + tptr[static_cast<std::size_t>(c)],
                  tidx.begin() + tptr[static_cast<std::size_t>(c) + 1]);
    }
  });

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

  Pattern& g = result.graph;
  g.n = n;
  g.ptr.assign(static_cast<std::size_t>(n) + 1, 0);
  parallel_chunks(n, threads, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i)
      g.ptr[static_cast<std::size_t>(i) + 1] = merge_row(i, nullptr);
  });
  std::partial_sum(g.ptr.begin(), g.ptr.end(), g.ptr.begin());
  g.idx.resize(static_cast<std::size_t>(g.ptr.back()));
  parallel_chunks(n, threads, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) merge_row(i, g.idx.data() + g.ptr[i]);
  });
  return result;
}

namespace {

// A breadth-first walk's level structure, kept in a queue array: the walk from `root` over the
// vertices not yet stamped `pass` (stamping them), written to queue[0..size). Returns the number
// of levels past the root's (the root's eccentricity in its component) and the vertex of least
// degree in the last level, the first such in the walk's order.
struct Walk {
  std::int64_t size = 0;
  std::int32_t depth = 0;
  std::int32_t far = 0;
};
Walk level_walk(const Pattern& g, std::int32_t root, std::int32_t pass, std::int32_t* stamp,
                std::int32_t* queue) {
  Walk w;
  std::int64_t head = 0, tail = 0, level_begin = 0, level_end = 1;
  stamp[root] = pass;
  queue[tail++] = root;
  for (; head < tail; ++head) {
    if (head == level_end) {
      level_begin = level_end;
      level_end = tail;
      ++w.depth;
    }
    const std::int32_t v = queue[head];
    for (std::int64_t k = g.ptr[v]; k < g.ptr[v + 1]; ++k) {
      const std::int32_t u = g.idx[static_cast<std::size_t>(k)];
      if (stamp[u] == pass) continue;
      stamp[u] = pass;
      queue[tail++] = u;
    }
  }
  w.size = tail;
  w.far = queue[level_begin];
  for (std::int64_t i = level_begin + 1; i < tail; ++i) {
    const std::int32_t v = queue[i];
    if (g.ptr[v + 1] - g.ptr[v] < g.ptr[w.far + 1] - g.ptr[w.far]) w.far = v;
  }
  return w;
}

}  // namespace

std::vector<std::int32_t> rcm_ordering(const Pattern& g, int threads) {
  // Reverse Cuthill-McKee per connected component: a start far from the component's middle (a
  // pseudo-peripheral vertex, George and Liu's search), a breadth-first numbering from it that
  // takes each vertex's unnumbered neighbours in order of increasing degree, and that numbering
  // reversed. Components take slices of the result in the order of their lowest vertex.
  const auto n = static_cast<std::size_t>(g.n);
  std::vector<std::int32_t> perm(n);
  // stamp[v]: the last walk that reached v. Each component's walks stamp only its own vertices,
  // with numbers above any already there, so components share the array across threads.
  std::vector<std::int32_t> stamp(n, -1);

  // The components, each at [first[c], first[c + 1]) of `perm` in the order of their lowest
  // vertex: found by a union-find over the edges in parallel, each vertex's root its component's
  // lowest vertex (a union links the higher root below the lower). A breadth-first walk from that
  // vertex, the start search's first level structure, then runs with the component's other
  // walks below, on the component's own thread.
  std::vector<std::int32_t> root(n);
  std::iota(root.begin(), root.end(), 0);
  const auto find = [&](std::int32_t v) {
    for (;;) {
      const std::int32_t p = std::atomic_ref<std::int32_t>(root[v]).load(std::memory_order_relaxed);
      if (p == v) return v;
      const std::int32_t pp =
          std::atomic_ref<std::int32_t>(root[p]).load(std::memory_order_relaxed);
      // Halving: v skips to its grandparent (any ancestor keeps v in its component).
      if (pp != p) std::atomic_ref<std::int32_t>(root[v]).store(pp, std::memory_order_relaxed);
      v = pp;
    }
  };
  parallel_chunks(g.n, threads, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t v = begin; v < end; ++v) {
      for (std::int64_t k = g.ptr[v]; k < g.ptr[v + 1]; ++k) {
        const std::int32_t u = g.idx[static_cast<std::size_t>(k)];
        if (u >= v) continue;  // each edge once (the graph is symmetric)
        for (;;) {
          std::int32_t a = find(static_cast<std::int32_t>(v)), b = find(u);
          if (a == b) break;
          if (a < b) std::swap(a, b);  // link the higher root a below b
          std::int32_t expected = a;
          if (std::atomic_ref<std::int32_t>(root[a]).compare_exchange_strong(
                  expected, b, std::memory_order_relaxed))
            break;
        }
      }
    }
  });
  parallel_chunks(g.n, threads, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t v = begin; v < end; ++v) {
      const std::int32_t r = find(static_cast<std::int32_t>(v));
      std::atomic_ref<std::int32_t>(root[static_cast<std::size_t>(v)])
          .store(r, std::memory_order_relaxed);
    }
  });
  struct Component {
    std::int32_t lowest = 0;
    std::int64_t first = 0;
    std::int64_t size = 0;
  };
  std::vector<std::int64_t> size(n, 0);
  for (std::size_t v = 0; v < n; ++v) ++size[static_cast<std::size_t>(root[v])];
  std::vector<Component> components;
  std::int64_t placed = 0;
  for (std::size_t v = 0; v < n; ++v) {
    if (root[v] != static_cast<std::int32_t>(v)) continue;
    components.push_back({static_cast<std::int32_t>(v), placed, size[v]});
    placed += size[v];
  }

  // The components side by side, the largest first (so that one large component does not start
  // last); each works within its own slice of `perm`, so the result is the same whatever the
  // threads.
  std::vector<std::size_t> largest_first(components.size());
  std::iota(largest_first.begin(), largest_first.end(), std::size_t{0});
  std::stable_sort(largest_first.begin(), largest_first.end(), [&](std::size_t x, std::size_t y) {
    return components[x].size > components[y].size;
  });
  const auto degree = [&](std::int32_t v) { return g.ptr[v + 1] - g.ptr[v]; };
  std::atomic<std::size_t> next{0};
  auto worker = [&](std::int64_t, std::int64_t) {
    for (std::size_t t = next++; t < components.size(); t = next++) {
      const Component& c = components[largest_first[t]];
      std::int32_t* slice = perm.data() + c.first;
      if (c.size == 1) {
        slice[0] = c.lowest;
        continue;
      }
      // George and Liu: walk from the lowest vertex, then again from the last level's
      // least-degree vertex while that finds a deeper level structure.
      std::int32_t pass = 1;
      Walk from = level_walk(g, c.lowest, 0, stamp.data(), slice);
      std::int32_t start = from.far;
      for (;;) {
        const Walk w = level_walk(g, start, pass++, stamp.data(), slice);
        if (w.depth <= from.depth) break;
        from = w;
        start = w.far;
      }
      // Cuthill-McKee from `start`, each vertex's new neighbours by increasing degree (ties in
      // the order the pattern lists them), then reversed.
      std::int64_t tail = 0;
      stamp[start] = pass;
      slice[tail++] = start;
      for (std::int64_t head = 0; head < tail; ++head) {
        const std::int32_t v = slice[head];
        const std::int64_t added = tail;
        for (std::int64_t k = g.ptr[v]; k < g.ptr[v + 1]; ++k) {
          const std::int32_t u = g.idx[static_cast<std::size_t>(k)];
          if (stamp[u] == pass) continue;
          stamp[u] = pass;
          slice[tail++] = u;
        }
        std::stable_sort(slice + added, slice + tail,
                         [&](std::int32_t x, std::int32_t y) { return degree(x) < degree(y); });
      }
      std::reverse(slice, slice + tail);
    }
  };
  // One task per thread; each takes components until none is left.
  const int workers = static_cast<int>(std::min<std::size_t>(
      static_cast<std::size_t>(std::max(threads, 1)), std::max<std::size_t>(components.size(), 1)));
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
