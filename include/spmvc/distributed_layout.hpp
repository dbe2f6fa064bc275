// How a square matrix is laid out over MPI ranks, without MPI: who owns each row, each rank's
// local block and compacted ghost block, and the exchange plan that fills the ghost vector.
// spmvc/distributed.hpp builds the distributed operator on these; they are host code only, so
// every decision that places a row or a ghost value is testable without MPI or a GPU.
//
// Numbering. The matrix is square (n x n) and column j belongs to the rank that owns row j. A
// rank's rows are numbered locally in increasing global order; so are the owned columns of its
// local block (local index = the owner's local row index). Ghost columns (entries whose column
// another rank owns) are compacted into a vector ordered by (owner rank, owner's local index):
// each neighbour's values arrive as one contiguous range, in the order the owner stores them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spmvc/matrix.hpp"

namespace spmvc::distributed {

/// Which rank owns each global row, and the row's position on its owner. Every rank holds the
/// whole map (4 bytes per row for the owner, 4 for the local index): the partition can be any
/// assignment, such as METIS's, not only contiguous blocks.
struct RowOwnership {
  int nranks = 0;
  std::vector<std::int32_t> owner;        ///< per global row: the rank that owns it
  std::vector<std::int32_t> local_index;  ///< per global row: its index among its owner's rows
  std::vector<std::int64_t> counts;       ///< rows per rank

  std::int64_t global_rows() const { return static_cast<std::int64_t>(owner.size()); }
  /// The global rows `rank` owns, increasing (its local order).
  std::vector<std::int64_t> rows_of(int rank) const;
  /// From an owner per row: fills local_index and counts. InputError (source `source`) for
  /// nranks < 1 or an owner outside [0, nranks), naming the row.
  static RowOwnership from_owners(int nranks, std::vector<std::int32_t> owners,
                                  const std::string& source = "<partition>");
};

/// Contiguous blocks: rank r owns rows [r*n/P, (r+1)*n/P) (sizes differ by at most one).
RowOwnership block_partition(std::int64_t n, int nranks);
/// METIS_PartGraphKway on the graph of A + A^T (diagonal dropped): balanced parts with few cut
/// edges, so each rank's ghost vector is small. Deterministic (fixed seed). The matrix must be
/// square; nranks = 1 (or a graph without edges) gives block_partition.
RowOwnership metis_partition(const CsrMatrix& a, int nranks);
/// "block" or "metis"; InputError naming the kind otherwise.
RowOwnership make_partition(const CsrMatrix& a, std::string_view kind, int nranks);

/// The rows `rows` of `a` in that order, columns unchanged (global).
CsrMatrix extract_rows(const CsrMatrix& a, std::span<const std::int64_t> rows);

/// One rank's rows split into the block over its own columns and the block over ghost columns.
struct GhostSplit {
  /// nrows x (rows this rank owns); columns are local indices.
  CsrMatrix local;
  /// nrows x ghosts; columns index the compacted ghost vector.
  CsrMatrix ghost;
  /// The global column of each ghost entry, ordered by (owner, owner's local index).
  std::vector<std::int64_t> ghost_globals;
  /// Per rank, the range [ghost_offsets[r], ghost_offsets[r+1]) of the ghost vector r sends.
  std::vector<std::int64_t> ghost_offsets;

  std::int64_t ghost_count() const { return static_cast<std::int64_t>(ghost_globals.size()); }
};

/// Splits this rank's rows (global columns, ncols = n, rows in the rank's local order). InputError
/// when the matrix is not n wide or the rank's row count differs from the ownership's.
GhostSplit split_rows(const CsrMatrix& local_rows, const RowOwnership& ownership, int rank);

/// The rows of a ghost block that hold entries, and the block over those rows alone. A rank's
/// ghost entries usually sit in a few of its rows (a slab of a mesh reads one plane of each
/// neighbour): multiplying the whole block would read and write y in every row, where the
/// compacted block touches only `rows` (y[rows[i]] += its row i), so its time follows its
/// entries, as the scaling model charges it.
struct GhostRows {
  std::vector<std::int32_t> rows;  ///< increasing: the rows of the ghost block with entries
  CsrMatrix block;                 ///< rows.size() x ghosts: row i is the ghost block's rows[i]
};
/// GhostRows of `ghost` where at most half its rows hold entries, else nullopt (the block is
/// multiplied whole: a scatter would cost more than the empty rows it skips). Rows beyond
/// 2^31 - 1 are an InputError: the row list is 32-bit.
std::optional<GhostRows> ghost_rows(const CsrMatrix& ghost);

/// Who sends which values to whom in one ghost exchange, from one rank's side.
struct ExchangePlan {
  struct Peer {
    int rank = 0;
    std::int64_t offset = 0;  ///< into the send buffer (sends) or the ghost vector (receives)
    std::int64_t count = 0;
  };
  std::vector<Peer> sends;     ///< by increasing rank; only peers with count > 0
  std::vector<Peer> receives;  ///< by increasing rank; only peers with count > 0
  /// Packing: send buffer entry k is x_local[send_index[k]].
  std::vector<std::int32_t> send_index;
  std::int64_t ghost_count = 0;

  std::int64_t send_count() const { return static_cast<std::int64_t>(send_index.size()); }
};

/// What this rank asks of each rank: requests[r] holds the local indices, on rank r, of the
/// ghosts r sends here, in ghost order (empty for itself).
std::vector<std::vector<std::int32_t>> ghost_requests(const GhostSplit& split,
                                                      const RowOwnership& ownership);
/// The plan of rank `rank`, given what every rank asks of it (asked_by[r] = ghost_requests of
/// rank r, entry `rank`). InputError when a request names an index this rank does not own.
ExchangePlan make_exchange_plan(const GhostSplit& split, const RowOwnership& ownership, int rank,
                                std::span<const std::vector<std::int32_t>> asked_by);

/// send[k] = x_local[plan.send_index[k]] (host packing; the device does the same in a kernel).
void pack(const ExchangePlan& plan, std::span<const double> x_local, std::span<double> send);

/// Given each rank's "host:pci-bus-id" of its GPU, a message naming the first two ranks that
/// share one (NCCL needs a GPU per rank), or "" when all differ.
std::string shared_gpu_message(std::span<const std::string> device_ids);

/// Halo statistics of a partition, computed serially (what the scaling model reads).
struct HaloStats {
  int nranks = 0;
  std::int64_t max_rows = 0, max_nnz = 0;
  std::int64_t max_ghosts = 0;  ///< the largest ghost vector of any rank
  double mean_ghosts = 0;
  std::int64_t max_send = 0;  ///< the most values any rank sends in one exchange
  int max_neighbours = 0;     ///< the most peers any rank receives from
  double mean_neighbours = 0;
  double ghost_nnz_share = 0;  ///< nonzeros in ghost blocks over all nonzeros
};
HaloStats halo_stats(const CsrMatrix& a, const RowOwnership& ownership);

}  // namespace spmvc::distributed
