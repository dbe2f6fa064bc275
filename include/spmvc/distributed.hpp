// The distributed operator: y = alpha*A*x + beta*y with A's rows spread over MPI ranks, one
// GPU per rank (or several ranks sharing one with the host-staged transport), in the shape of
// PETSc's MPIAIJ.
//
//   auto own = spmvc::distributed::broadcast_ownership(root ? &partition : nullptr, comm);
//   spmvc::CsrMatrix mine = spmvc::distributed::scatter_rows(root ? &a : nullptr, own, comm);
//   auto op = spmvc::distributed::compile(mine, own, comm, {.transport = Transport::nccl});
//   op.apply(d_x, d_y);   // this rank's rows of x and y, device memory
//
// Each rank holds its rows split into a local block (the columns it owns) and a ghost block
// (the columns other ranks own, compacted; spmvc/distributed_layout.hpp), each compiled by
// spmvc::compile with its own plan. apply() packs the values other ranks need and starts the
// exchange on a side stream, multiplies the local block on the caller's stream meanwhile, then
// adds the ghost block's product once the ghost values are in. MPI carries the sparsity
// metadata at compile(); the ghost values go by NCCL (device to device) or by MPI through host
// buffers. The permutation a METIS partition implies is hidden in the ownership: each rank's x
// and y are its rows in increasing global order, and scatter_vector/gather_vector move whole
// vectors in the global order.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spmvc/distributed_layout.hpp"
#include "spmvc/spmvc.hpp"

namespace spmvc::distributed {

/// How ghost values travel.
enum class Transport {
  /// device -> host, MPI_Isend/MPI_Irecv, host -> device: needs no CUDA-aware MPI and lets
  /// several ranks share one GPU.
  mpi,
  /// NCCL grouped ncclSend/ncclRecv, device to device; one GPU per rank.
  nccl,
};
/// "mpi" or "nccl"; InputError naming the value otherwise.
Transport parse_transport(std::string_view name);
std::string_view transport_name(Transport t);
/// True when this build has the NCCL transport.
bool have_nccl();
/// Makes GPU (local rank mod GPU count) current, the local rank counted among the ranks of
/// `comm` on this host; returns its ordinal. NoDeviceError without a GPU.
int select_device(MPI_Comm comm);

struct DistOptions {
  /// How each block is compiled (precision, planner, format, ...); both blocks use it.
  Options block;
  Transport transport = Transport::mpi;
};

// ---- Setup over MPI (host only; collective over `comm`) ----

/// The ownership from `root` (the pointer is read on root only) to every rank.
RowOwnership broadcast_ownership(const RowOwnership* on_root, MPI_Comm comm, int root = 0);
/// Each rank's rows of `a` (read on root only), global columns, in the rank's local order.
CsrMatrix scatter_rows(const CsrMatrix* a_on_root, const RowOwnership& ownership, MPI_Comm comm,
                       int root = 0);
/// This rank's part of a global vector held on root (read on root only).
std::vector<double> scatter_vector(std::span<const double> global_on_root,
                                   const RowOwnership& ownership, MPI_Comm comm, int root = 0);
/// The global vector on root from each rank's part (empty on the other ranks).
std::vector<double> gather_vector(std::span<const double> local, const RowOwnership& ownership,
                                  MPI_Comm comm, int root = 0);
/// This rank's exchange plan: every rank tells every owner which of its values it needs
/// (MPI_Alltoall of the counts, MPI_Alltoallv of the local indices).
ExchangePlan exchange_plan(const GhostSplit& split, const RowOwnership& ownership, MPI_Comm comm);

/// One ghost exchange on host buffers: MPI_Irecv into the ghost vector for each receive,
/// MPI_Isend from the packed send buffer for each send. value_bytes is 8 (double) or 4 (float).
class HostExchange {
 public:
  HostExchange(const ExchangePlan& plan, MPI_Comm comm, int value_bytes = 8);
  /// Posts every receive and send. The buffers must stay untouched until wait() returns.
  void start(const void* send, void* ghosts);
  /// Waits for every posted request; InputError naming the peer when MPI reports a failure.
  void wait();

 private:
  const ExchangePlan* plan_;
  MPI_Comm comm_;
  int value_bytes_;
  std::vector<MPI_Request> requests_;
};

// ---- The operator ----

/// Per-rank figures of a compiled distributed operator.
struct RankInfo {
  int rank = 0, nranks = 0;
  std::int64_t rows = 0, local_nnz = 0, ghost_nnz = 0, ghosts = 0, sent = 0;
  int neighbours = 0;                  ///< ranks this one receives from
  std::string local_plan, ghost_plan;  ///< the blocks' kernel names ("" for an empty block)
};

/// Compiled on every rank of `comm`: move-only. apply() is collective (every rank calls it).
class Operator {
 public:
  Operator(Operator&&) noexcept;
  Operator& operator=(Operator&&) noexcept;
  ~Operator();

  /// y = alpha*A*x + beta*y for this rank's rows: x and y hold local_rows() values of the
  /// plan's value type in device memory. Ordered on `stream` (a cudaStream_t; nullptr: the
  /// default stream); the host waits only for the host-staged transport's MPI exchange.
  void apply(const void* x, void* y, double alpha = 1.0, double beta = 0.0,
             void* stream = nullptr) const;
  /// The same on host arrays (fp64): copies in, multiplies, copies out, synchronises.
  void apply_host(std::span<const double> x, std::span<double> y, double alpha = 1.0,
                  double beta = 0.0) const;
  /// The exchange alone: packs x, sends and receives, and leaves the ghost values in
  /// ghost_values(), synchronised (what apply() overlaps with the local multiply).
  void exchange(const void* x, void* stream = nullptr) const;
  /// The ghost vector in device memory (ghost_count() values), as the last exchange left it.
  const void* ghost_values() const;
  /// The ghost vector copied to the host (fp64).
  std::vector<double> ghost_values_host() const;

  std::int64_t local_rows() const;
  std::int64_t ghost_count() const;
  Transport transport() const;
  const ExchangePlan& plan() const;
  const GhostSplit& split() const;
  RankInfo info() const;
  /// The compiled blocks (the ghost block is null when this rank has no ghost columns, the
  /// local block when it has no entries in its own columns). Where at most half of this rank's
  /// rows hold ghost entries, the ghost block is compiled over those rows alone (GhostRows in
  /// spmvc/distributed_layout.hpp) and apply() adds its product into them.
  const spmvc::Operator* local_block() const;
  const spmvc::Operator* ghost_block() const;

  struct Impl;

 private:
  explicit Operator(std::unique_ptr<Impl> impl);
  friend Operator compile(const CsrMatrix&, const RowOwnership&, MPI_Comm, const DistOptions&);
  std::unique_ptr<Impl> impl_;
};

/// Per-rank times of one distributed multiply and of its exchange alone (medians, seconds).
struct ApplyTiming {
  double apply = 0;  ///< apply(): from a barrier until this rank's y is complete
  /// apply() queued `batch` times back to back from a barrier, one synchronisation at the end,
  /// per multiply: as a loop of multiplies that does not wait between them runs, and as the
  /// single-GPU `spmvc bench` times (a launch's host cost hidden behind the GPU's work).
  double apply_queued = 0;
  double exchange = 0;  ///< exchange(): pack, move and unpack the ghost values only
  int repetitions = 0;
  int batch = 0;
};
/// Times `repetitions` applies, batches of `batch` queued applies and exchanges on device
/// vectors of this rank's rows (x = 1), after a warm-up, each from an MPI_Barrier. Collective.
ApplyTiming time_apply(const Operator& op, MPI_Comm comm, int repetitions = 20, int batch = 20);

/// Collective over `comm`: splits this rank's rows (global columns, the ownership's local
/// order), derives the exchange plan, compiles each block with spmvc::compile on the current
/// CUDA device (whatever DistOptions::block's device says) and sets up the transport. With
/// Transport::nccl, ranks that share a GPU are an InputError naming them. Every rank must pass the
/// same ownership.
Operator compile(const CsrMatrix& local_rows, const RowOwnership& ownership, MPI_Comm comm,
                 const DistOptions& options = {});

}  // namespace spmvc::distributed
