// Partitions, the local/ghost split and the exchange plan (spmvc/distributed_layout.hpp).
#include "spmvc/distributed_layout.hpp"

#include <fmt/format.h>
#include <metis.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "spmvc/error.hpp"

namespace spmvc::distributed {

std::vector<std::int64_t> RowOwnership::rows_of(int rank) const {
  std::vector<std::int64_t> rows;
  rows.reserve(static_cast<std::size_t>(counts.at(static_cast<std::size_t>(rank))));
  for (std::int64_t g = 0; g < global_rows(); ++g)
    if (owner[static_cast<std::size_t>(g)] == rank) rows.push_back(g);
  return rows;
}

RowOwnership RowOwnership::from_owners(int nranks, std::vector<std::int32_t> owners,
                                       const std::string& source) {
  if (nranks < 1) throw InputError(source, 0, fmt::format("{} ranks: need at least 1", nranks));
  if (owners.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw InputError(
        source, 0,
        fmt::format("{} rows: local indices are 32-bit, so at most 2^31-1 rows", owners.size()));
  RowOwnership o;
  o.nranks = nranks;
  o.counts.assign(static_cast<std::size_t>(nranks), 0);
  o.local_index.resize(owners.size());
  for (std::size_t g = 0; g < owners.size(); ++g) {
    const std::int32_t r = owners[g];
    if (r < 0 || r >= nranks)
      throw InputError(source, 0,
                       fmt::format("row {} is given to rank {}, outside [0, {})", g, r, nranks));
    o.local_index[g] = static_cast<std::int32_t>(o.counts[static_cast<std::size_t>(r)]++);
  }
  o.owner = std::move(owners);
  return o;
}

RowOwnership block_partition(std::int64_t n, int nranks) {
  if (nranks < 1) throw InputError("block partition", 0, fmt::format("{} ranks", nranks));
  std::vector<std::int32_t> owners(static_cast<std::size_t>(n));
  for (int r = 0; r < nranks; ++r) {
    const std::int64_t begin = n * r / nranks, end = n * (r + 1) / nranks;
    std::fill(owners.begin() + begin, owners.begin() + end, r);
  }
  return RowOwnership::from_owners(nranks, std::move(owners), "block partition");
}

namespace {

// The graph of A + A^T without the diagonal, as METIS wants it (both directions of each edge).
void symmetric_graph(const CsrMatrix& a, std::vector<idx_t>& xadj, std::vector<idx_t>& adjncy) {
  const auto n = static_cast<std::size_t>(a.nrows);
  std::vector<std::int64_t> degree(n, 0);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k)
      if (a.col_idx[k] != i) {
        ++degree[static_cast<std::size_t>(i)];
        ++degree[static_cast<std::size_t>(a.col_idx[k])];
      }
  std::vector<std::int64_t> start(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) start[i + 1] = start[i] + degree[i];
  if (start[n] > std::numeric_limits<idx_t>::max())
    throw InputError("metis partition", 0,
                     fmt::format("the graph of A + A^T has {} edge entries, more than this METIS "
                                 "build's {}-bit indices hold",
                                 start[n], IDXTYPEWIDTH));
  std::vector<std::int32_t> both(static_cast<std::size_t>(start[n]));
  std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
  for (std::int64_t i = 0; i < a.nrows; ++i)
    for (std::int64_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k) {
      const std::int32_t j = a.col_idx[k];
      if (j == i) continue;
      both[static_cast<std::size_t>(fill[static_cast<std::size_t>(i)]++)] = j;
      both[static_cast<std::size_t>(fill[static_cast<std::size_t>(j)]++)] =
          static_cast<std::int32_t>(i);
    }
  // An edge stored in both triangles appears twice: sort and drop the repeats.
  xadj.assign(n + 1, 0);
  adjncy.clear();
  adjncy.reserve(both.size());
  for (std::size_t i = 0; i < n; ++i) {
    auto b = both.begin() + start[i], e = both.begin() + start[i + 1];
    std::sort(b, e);
    e = std::unique(b, e);
    adjncy.insert(adjncy.end(), b, e);
    xadj[i + 1] = static_cast<idx_t>(adjncy.size());
  }
}

}  // namespace

RowOwnership metis_partition(const CsrMatrix& a, int nranks) {
  if (a.nrows != a.ncols)
    throw InputError("metis partition", 0,
                     fmt::format("matrix is {}x{}, not square", a.nrows, a.ncols));
  if (nranks < 1) throw InputError("metis partition", 0, fmt::format("{} ranks", nranks));
  std::vector<idx_t> xadj, adjncy;
  symmetric_graph(a, xadj, adjncy);
  if (nranks == 1 || adjncy.empty()) return block_partition(a.nrows, nranks);
  idx_t nvtxs = static_cast<idx_t>(a.nrows), ncon = 1, nparts = nranks, objval = 0;
  std::vector<idx_t> part(static_cast<std::size_t>(a.nrows));
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_NUMBERING] = 0;
  options[METIS_OPTION_SEED] = 1;  // the same partition on every run and every rank
  const int status =
      METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), nullptr, nullptr, nullptr,
                          &nparts, nullptr, nullptr, options, &objval, part.data());
  if (status == METIS_ERROR_MEMORY) throw std::bad_alloc();
  if (status != METIS_OK)
    throw InternalError(
        fmt::format("METIS_PartGraphKway failed on a {}-vertex graph into {} "
                    "parts (status {})",
                    a.nrows, nranks, status));
  std::vector<std::int32_t> owners(part.begin(), part.end());
  return RowOwnership::from_owners(nranks, std::move(owners), "metis partition");
}

RowOwnership make_partition(const CsrMatrix& a, std::string_view kind, int nranks) {
  RowOwnership o;
  if (kind == "block")
    o = block_partition(a.nrows, nranks);
  else if (kind == "metis")
    o = metis_partition(a, nranks);
  else
    throw InputError("--partition", 0, fmt::format("unknown partition '{}' (block, metis)", kind));
  for (int r = 0; r < nranks; ++r)
    if (o.counts[static_cast<std::size_t>(r)] == 0)
      throw InputError(std::string(kind) + " partition", 0,
                       fmt::format("rank {} of {} gets no rows of a {}-row matrix; use fewer ranks",
                                   r, nranks, a.nrows));
  return o;
}

CsrMatrix extract_rows(const CsrMatrix& a, std::span<const std::int64_t> rows) {
  CsrMatrix out;
  out.nrows = static_cast<std::int64_t>(rows.size());
  out.ncols = a.ncols;
  out.row_ptr.assign(rows.size() + 1, 0);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= a.nrows)
      throw InputError("extract_rows", 0, fmt::format("row {} outside [0, {})", rows[i], a.nrows));
    out.row_ptr[i + 1] = out.row_ptr[i] + a.row_length(rows[i]);
  }
  out.col_idx.reserve(static_cast<std::size_t>(out.row_ptr.back()));
  out.values.reserve(out.col_idx.capacity());
  for (const std::int64_t r : rows) {
    out.col_idx.insert(out.col_idx.end(), a.col_idx.begin() + a.row_ptr[r],
                       a.col_idx.begin() + a.row_ptr[r + 1]);
    out.values.insert(out.values.end(), a.values.begin() + a.row_ptr[r],
                      a.values.begin() + a.row_ptr[r + 1]);
  }
  return out;
}

GhostSplit split_rows(const CsrMatrix& local_rows, const RowOwnership& ownership, int rank) {
  const std::string source = fmt::format("rank {}'s rows", rank);
  if (rank < 0 || rank >= ownership.nranks)
    throw InputError(source, 0, fmt::format("rank outside [0, {})", ownership.nranks));
  const std::int64_t n = ownership.global_rows();
  const std::int64_t mine = ownership.counts[static_cast<std::size_t>(rank)];
  if (local_rows.ncols != n)
    throw InputError(source, 0,
                     fmt::format("{} columns, but the row ownership covers {} rows: the "
                                 "distributed matrix is square and its columns are global",
                                 local_rows.ncols, n));
  if (local_rows.nrows != mine)
    throw InputError(source, 0,
                     fmt::format("{} rows, but the row ownership gives rank {} {} rows",
                                 local_rows.nrows, rank, mine));
  validate(local_rows, source);

  // Ghost columns: every column another rank owns, once, in (owner, owner's local index) order.
  std::vector<std::int64_t> ghosts;
  for (const std::int32_t j : local_rows.col_idx)
    if (ownership.owner[static_cast<std::size_t>(j)] != rank) ghosts.push_back(j);
  auto ghost_order = [&](std::int64_t a, std::int64_t b) {
    const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
    if (ownership.owner[ua] != ownership.owner[ub])
      return ownership.owner[ua] < ownership.owner[ub];
    return ownership.local_index[ua] < ownership.local_index[ub];
  };
  std::sort(ghosts.begin(), ghosts.end(), ghost_order);
  ghosts.erase(std::unique(ghosts.begin(), ghosts.end()), ghosts.end());
  if (ghosts.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw InputError(source, 0, fmt::format("{} ghost columns, over 2^31-1", ghosts.size()));

  GhostSplit s;
  s.ghost_offsets.assign(static_cast<std::size_t>(ownership.nranks) + 1, 0);
  for (const std::int64_t g : ghosts)
    ++s.ghost_offsets[static_cast<std::size_t>(ownership.owner[static_cast<std::size_t>(g)]) + 1];
  std::partial_sum(s.ghost_offsets.begin(), s.ghost_offsets.end(), s.ghost_offsets.begin());

  // Ghost position of each global column this rank reads (a sorted search per entry would do
  // too; a map over n is simpler and n is already held per rank in the ownership).
  std::vector<std::int32_t> ghost_of(static_cast<std::size_t>(n), -1);
  for (std::size_t k = 0; k < ghosts.size(); ++k)
    ghost_of[static_cast<std::size_t>(ghosts[k])] = static_cast<std::int32_t>(k);

  s.local.nrows = s.ghost.nrows = local_rows.nrows;
  s.local.ncols = mine;
  s.ghost.ncols = static_cast<std::int64_t>(ghosts.size());
  s.local.row_ptr.assign(static_cast<std::size_t>(local_rows.nrows) + 1, 0);
  s.ghost.row_ptr.assign(static_cast<std::size_t>(local_rows.nrows) + 1, 0);
  for (std::int64_t i = 0; i < local_rows.nrows; ++i) {
    // Columns stay increasing within a row: local indices grow with the global column among
    // one owner's columns, and ghost positions are ordered by (owner, local index), which a
    // row's ghost columns may visit out of global order; so the ghost row is sorted after.
    const std::size_t ghost_begin = s.ghost.col_idx.size();
    for (std::int64_t k = local_rows.row_ptr[i]; k < local_rows.row_ptr[i + 1]; ++k) {
      const auto j = static_cast<std::size_t>(local_rows.col_idx[k]);
      if (ownership.owner[j] == rank) {
        s.local.col_idx.push_back(ownership.local_index[j]);
        s.local.values.push_back(local_rows.values[k]);
      } else {
        s.ghost.col_idx.push_back(ghost_of[j]);
        s.ghost.values.push_back(local_rows.values[k]);
      }
    }
    const std::size_t ghost_end = s.ghost.col_idx.size();
    if (ghost_end - ghost_begin > 1) {
      std::vector<std::pair<std::int32_t, double>> row;
      for (std::size_t k = ghost_begin; k < ghost_end; ++k)
        row.emplace_back(s.ghost.col_idx[k], s.ghost.values[k]);
      std::sort(row.begin(), row.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      for (std::size_t k = ghost_begin; k < ghost_end; ++k) {
        s.ghost.col_idx[k] = row[k - ghost_begin].first;
        s.ghost.values[k] = row[k - ghost_begin].second;
      }
    }
    s.local.row_ptr[static_cast<std::size_t>(i) + 1] = s.local.nnz();
    s.ghost.row_ptr[static_cast<std::size_t>(i) + 1] = s.ghost.nnz();
  }
  s.ghost_globals = std::move(ghosts);
  return s;
}

std::optional<GhostRows> ghost_rows(const CsrMatrix& ghost) {
  if (ghost.nrows > std::numeric_limits<std::int32_t>::max())
    throw InputError("ghost_rows", 0,
                     fmt::format("{} rows exceed the 32-bit row list", ghost.nrows));
  std::int64_t with_entries = 0;
  for (std::int64_t i = 0; i < ghost.nrows; ++i) with_entries += ghost.row_length(i) > 0;
  if (with_entries * 2 > ghost.nrows) return std::nullopt;
  GhostRows g;
  g.rows.reserve(static_cast<std::size_t>(with_entries));
  for (std::int64_t i = 0; i < ghost.nrows; ++i)
    if (ghost.row_length(i) > 0) g.rows.push_back(static_cast<std::int32_t>(i));
  g.block.nrows = static_cast<std::int64_t>(g.rows.size());
  g.block.ncols = ghost.ncols;
  g.block.row_ptr.reserve(g.rows.size() + 1);
  g.block.row_ptr.assign(1, 0);
  g.block.col_idx.reserve(ghost.col_idx.size());
  g.block.values.reserve(ghost.values.size());
  for (const std::int32_t r : g.rows) {
    const auto begin = static_cast<std::size_t>(ghost.row_ptr[static_cast<std::size_t>(r)]);
    const auto end = static_cast<std::size_t>(ghost.row_ptr[static_cast<std::size_t>(r) + 1]);
    g.block.col_idx.insert(g.block.col_idx.end(), ghost.col_idx.begin() + begin,
                           ghost.col_idx.begin() + end);
    g.block.values.insert(g.block.values.end(), ghost.values.begin() + begin,
                          ghost.values.begin() + end);
    g.block.row_ptr.push_back(static_cast<std::int64_t>(g.block.col_idx.size()));
  }
  return g;
}

std::vector<std::vector<std::int32_t>> ghost_requests(const GhostSplit& split,
                                                      const RowOwnership& ownership) {
  std::vector<std::vector<std::int32_t>> requests(static_cast<std::size_t>(ownership.nranks));
  for (int r = 0; r < ownership.nranks; ++r) {
    auto& req = requests[static_cast<std::size_t>(r)];
    for (std::int64_t k = split.ghost_offsets[static_cast<std::size_t>(r)];
         k < split.ghost_offsets[static_cast<std::size_t>(r) + 1]; ++k)
      req.push_back(ownership.local_index[static_cast<std::size_t>(
          split.ghost_globals[static_cast<std::size_t>(k)])]);
  }
  return requests;
}

ExchangePlan make_exchange_plan(const GhostSplit& split, const RowOwnership& ownership, int rank,
                                std::span<const std::vector<std::int32_t>> asked_by) {
  if (asked_by.size() != static_cast<std::size_t>(ownership.nranks))
    throw InternalError(fmt::format("exchange plan: {} request lists for {} ranks", asked_by.size(),
                                    ownership.nranks));
  ExchangePlan plan;
  plan.ghost_count = split.ghost_count();
  for (int r = 0; r < ownership.nranks; ++r) {
    const std::int64_t begin = split.ghost_offsets[static_cast<std::size_t>(r)];
    const std::int64_t count = split.ghost_offsets[static_cast<std::size_t>(r) + 1] - begin;
    if (count > 0) plan.receives.push_back({r, begin, count});
  }
  const std::int64_t mine = ownership.counts[static_cast<std::size_t>(rank)];
  for (int r = 0; r < ownership.nranks; ++r) {
    const auto& asked = asked_by[static_cast<std::size_t>(r)];
    if (asked.empty()) continue;
    if (r == rank)
      throw InputError(fmt::format("exchange plan of rank {}", rank), 0,
                       "the rank asks itself for ghost values");
    for (std::size_t k = 0; k < asked.size(); ++k)
      if (asked[k] < 0 || asked[k] >= mine)
        throw InputError(fmt::format("exchange plan of rank {}", rank), 0,
                         fmt::format("rank {} asks for local index {} (entry {}), but this rank "
                                     "owns {} rows",
                                     r, asked[k], k, mine));
    plan.sends.push_back({r, plan.send_count(), static_cast<std::int64_t>(asked.size())});
    plan.send_index.insert(plan.send_index.end(), asked.begin(), asked.end());
  }
  return plan;
}

void pack(const ExchangePlan& plan, std::span<const double> x_local, std::span<double> send) {
  if (send.size() != plan.send_index.size())
    throw InternalError(
        fmt::format("pack: send buffer of {} for {} values", send.size(), plan.send_index.size()));
  for (std::size_t k = 0; k < send.size(); ++k)
    send[k] = x_local[static_cast<std::size_t>(plan.send_index[k])];
}

std::string shared_gpu_message(std::span<const std::string> device_ids) {
  for (std::size_t a = 0; a < device_ids.size(); ++a)
    for (std::size_t b = a + 1; b < device_ids.size(); ++b)
      if (device_ids[a] == device_ids[b])
        return fmt::format(
            "ranks {} and {} share GPU {}: NCCL needs one GPU per rank (it fails with "
            "\"Duplicate GPU detected\"); run one rank per GPU, or use the host-staged MPI "
            "transport (--transport mpi), which lets ranks share a GPU",
            a, b, device_ids[a]);
  return {};
}

HaloStats halo_stats(const CsrMatrix& a, const RowOwnership& ownership) {
  HaloStats h;
  h.nranks = ownership.nranks;
  std::vector<std::int64_t> sends(static_cast<std::size_t>(ownership.nranks), 0);
  std::int64_t ghost_nnz = 0, total_ghosts = 0, total_neighbours = 0;
  for (int r = 0; r < ownership.nranks; ++r) {
    const std::vector<std::int64_t> rows = ownership.rows_of(r);
    const GhostSplit s = split_rows(extract_rows(a, rows), ownership, r);
    h.max_rows = std::max<std::int64_t>(h.max_rows, s.local.nrows);
    h.max_nnz = std::max(h.max_nnz, s.local.nnz() + s.ghost.nnz());
    h.max_ghosts = std::max(h.max_ghosts, s.ghost_count());
    total_ghosts += s.ghost_count();
    ghost_nnz += s.ghost.nnz();
    int neighbours = 0;
    for (int q = 0; q < ownership.nranks; ++q) {
      const std::int64_t c = s.ghost_offsets[static_cast<std::size_t>(q) + 1] -
                             s.ghost_offsets[static_cast<std::size_t>(q)];
      sends[static_cast<std::size_t>(q)] += c;
      neighbours += c > 0;
    }
    h.max_neighbours = std::max(h.max_neighbours, neighbours);
    total_neighbours += neighbours;
  }
  h.max_send = *std::max_element(sends.begin(), sends.end());
  h.mean_ghosts = static_cast<double>(total_ghosts) / ownership.nranks;
  h.mean_neighbours = static_cast<double>(total_neighbours) / ownership.nranks;
  h.ghost_nnz_share =
      a.nnz() > 0 ? static_cast<double>(ghost_nnz) / static_cast<double>(a.nnz()) : 0.0;
  return h;
}

}  // namespace spmvc::distributed
