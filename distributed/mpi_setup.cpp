// The MPI side of the distributed operator that needs no GPU: moving the ownership, rows and
// vectors from the root, deriving the exchange plan, and the host-staged exchange.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "spmvc/distributed.hpp"
#include "spmvc/error.hpp"

namespace spmvc::distributed {

namespace {

// Tags: one per message kind, so a late message of one kind is never taken for another.
constexpr int kTagRowPtr = 2701, kTagCols = 2702, kTagValues = 2703, kTagVector = 2704,
              kTagGhosts = 2705;
// MPI counts are int: larger arrays go in pieces of this many elements.
constexpr std::int64_t kChunk = std::int64_t{1} << 30;

int comm_rank(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}
int comm_size(MPI_Comm comm) {
  int s = 0;
  MPI_Comm_size(comm, &s);
  return s;
}

template <class T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
  if constexpr (std::is_same_v<T, std::int64_t>) return MPI_INT64_T;
  if constexpr (std::is_same_v<T, std::int32_t>) return MPI_INT32_T;
}

template <class T>
void send_all(const T* data, std::int64_t count, int dest, int tag, MPI_Comm comm) {
  for (std::int64_t done = 0; done < count; done += kChunk)
    MPI_Send(data + done, static_cast<int>(std::min(kChunk, count - done)), mpi_type<T>(), dest,
             tag, comm);
}
template <class T>
void recv_all(T* data, std::int64_t count, int source, int tag, MPI_Comm comm) {
  for (std::int64_t done = 0; done < count; done += kChunk)
    MPI_Recv(data + done, static_cast<int>(std::min(kChunk, count - done)), mpi_type<T>(), source,
             tag, comm, MPI_STATUS_IGNORE);
}
template <class T>
void bcast_all(T* data, std::int64_t count, int root, MPI_Comm comm) {
  for (std::int64_t done = 0; done < count; done += kChunk)
    MPI_Bcast(data + done, static_cast<int>(std::min(kChunk, count - done)), mpi_type<T>(), root,
              comm);
}

int to_int(std::int64_t v, const char* what) {
  if (v > std::numeric_limits<int>::max())
    throw InputError("exchange plan", 0,
                     fmt::format("{} {} values: MPI counts are int, at most 2^31-1", v, what));
  return static_cast<int>(v);
}

}  // namespace

Transport parse_transport(std::string_view name) {
  if (name == "mpi") return Transport::mpi;
  if (name == "nccl") return Transport::nccl;
  throw InputError("--transport", 0, fmt::format("unknown transport '{}' (mpi, nccl)", name));
}

std::string_view transport_name(Transport t) { return t == Transport::nccl ? "nccl" : "mpi"; }

RowOwnership broadcast_ownership(const RowOwnership* on_root, MPI_Comm comm, int root) {
  const int rank = comm_rank(comm), size = comm_size(comm);
  std::int64_t header[2] = {0, 0};
  if (rank == root) {
    if (on_root == nullptr) throw InternalError("broadcast_ownership: no ownership on the root");
    header[0] = on_root->nranks;
    header[1] = on_root->global_rows();
  }
  MPI_Bcast(header, 2, MPI_INT64_T, root, comm);
  if (header[0] != size)
    throw InputError("row ownership", 0,
                     fmt::format("the partition has {} parts, but the communicator has {} ranks",
                                 header[0], size));
  std::vector<std::int32_t> owners;
  if (rank == root)
    owners = on_root->owner;
  else
    owners.resize(static_cast<std::size_t>(header[1]));
  bcast_all(owners.data(), header[1], root, comm);
  return RowOwnership::from_owners(size, std::move(owners), "row ownership");
}

CsrMatrix scatter_rows(const CsrMatrix* a_on_root, const RowOwnership& ownership, MPI_Comm comm,
                       int root) {
  const int rank = comm_rank(comm);
  if (rank == root) {
    if (a_on_root == nullptr) throw InternalError("scatter_rows: no matrix on the root");
    if (a_on_root->nrows != ownership.global_rows())
      throw InputError("scatter_rows", 0,
                       fmt::format("matrix has {} rows, the ownership {}", a_on_root->nrows,
                                   ownership.global_rows()));
    CsrMatrix mine;
    for (int r = 0; r < ownership.nranks; ++r) {
      const std::vector<std::int64_t> rows = ownership.rows_of(r);
      CsrMatrix part = extract_rows(*a_on_root, rows);
      if (r == root) {
        mine = std::move(part);
        continue;
      }
      send_all(part.row_ptr.data(), part.nrows + 1, r, kTagRowPtr, comm);
      send_all(part.col_idx.data(), part.nnz(), r, kTagCols, comm);
      send_all(part.values.data(), part.nnz(), r, kTagValues, comm);
    }
    return mine;
  }
  CsrMatrix part;
  part.nrows = ownership.counts[static_cast<std::size_t>(rank)];
  part.ncols = ownership.global_rows();
  part.row_ptr.resize(static_cast<std::size_t>(part.nrows) + 1);
  recv_all(part.row_ptr.data(), part.nrows + 1, root, kTagRowPtr, comm);
  part.col_idx.resize(static_cast<std::size_t>(part.row_ptr.back()));
  part.values.resize(part.col_idx.size());
  recv_all(part.col_idx.data(), part.nnz(), root, kTagCols, comm);
  recv_all(part.values.data(), part.nnz(), root, kTagValues, comm);
  return part;
}

std::vector<double> scatter_vector(std::span<const double> global_on_root,
                                   const RowOwnership& ownership, MPI_Comm comm, int root) {
  const int rank = comm_rank(comm);
  if (rank == root) {
    if (static_cast<std::int64_t>(global_on_root.size()) != ownership.global_rows())
      throw InputError("scatter_vector", 0,
                       fmt::format("vector of {} values for {} rows", global_on_root.size(),
                                   ownership.global_rows()));
    std::vector<double> mine;
    for (int r = 0; r < ownership.nranks; ++r) {
      std::vector<double> part;
      for (const std::int64_t g : ownership.rows_of(r))
        part.push_back(global_on_root[static_cast<std::size_t>(g)]);
      if (r == root)
        mine = std::move(part);
      else
        send_all(part.data(), static_cast<std::int64_t>(part.size()), r, kTagVector, comm);
    }
    return mine;
  }
  std::vector<double> part(
      static_cast<std::size_t>(ownership.counts[static_cast<std::size_t>(rank)]));
  recv_all(part.data(), static_cast<std::int64_t>(part.size()), root, kTagVector, comm);
  return part;
}

std::vector<double> gather_vector(std::span<const double> local, const RowOwnership& ownership,
                                  MPI_Comm comm, int root) {
  const int rank = comm_rank(comm);
  if (static_cast<std::int64_t>(local.size()) != ownership.counts[static_cast<std::size_t>(rank)])
    throw InputError("gather_vector", 0,
                     fmt::format("rank {} gives {} values for its {} rows", rank, local.size(),
                                 ownership.counts[static_cast<std::size_t>(rank)]));
  if (rank != root) {
    send_all(local.data(), static_cast<std::int64_t>(local.size()), root, kTagVector, comm);
    return {};
  }
  std::vector<double> global(static_cast<std::size_t>(ownership.global_rows()));
  for (int r = 0; r < ownership.nranks; ++r) {
    std::vector<double> part;
    if (r == root) {
      part.assign(local.begin(), local.end());
    } else {
      part.resize(static_cast<std::size_t>(ownership.counts[static_cast<std::size_t>(r)]));
      recv_all(part.data(), static_cast<std::int64_t>(part.size()), r, kTagVector, comm);
    }
    const std::vector<std::int64_t> rows = ownership.rows_of(r);
    for (std::size_t k = 0; k < rows.size(); ++k)
      global[static_cast<std::size_t>(rows[k])] = part[k];
  }
  return global;
}

ExchangePlan exchange_plan(const GhostSplit& split, const RowOwnership& ownership, MPI_Comm comm) {
  const int rank = comm_rank(comm), size = comm_size(comm);
  if (size != ownership.nranks)
    throw InputError(
        "exchange plan", 0,
        fmt::format("the ownership has {} ranks, the communicator {}", ownership.nranks, size));
  const std::vector<std::vector<std::int32_t>> requests = ghost_requests(split, ownership);
  std::vector<int> send_counts(static_cast<std::size_t>(size)), recv_counts(send_counts.size());
  std::vector<int> send_displs(send_counts.size() + 1, 0), recv_displs(send_counts.size() + 1, 0);
  std::vector<std::int32_t> flat;
  for (int r = 0; r < size; ++r) {
    const auto& req = requests[static_cast<std::size_t>(r)];
    send_counts[static_cast<std::size_t>(r)] =
        to_int(static_cast<std::int64_t>(req.size()), "requested");
    flat.insert(flat.end(), req.begin(), req.end());
  }
  MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm);
  std::int64_t sent = 0, received = 0;
  for (int r = 0; r < size; ++r) {
    sent += send_counts[static_cast<std::size_t>(r)];
    received += recv_counts[static_cast<std::size_t>(r)];
    send_displs[static_cast<std::size_t>(r) + 1] = to_int(sent, "requested");
    recv_displs[static_cast<std::size_t>(r) + 1] = to_int(received, "asked-for");
  }
  std::vector<std::int32_t> asked_flat(static_cast<std::size_t>(received));
  MPI_Alltoallv(flat.data(), send_counts.data(), send_displs.data(), MPI_INT32_T, asked_flat.data(),
                recv_counts.data(), recv_displs.data(), MPI_INT32_T, comm);
  std::vector<std::vector<std::int32_t>> asked_by(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r)
    asked_by[static_cast<std::size_t>(r)].assign(
        asked_flat.begin() + recv_displs[static_cast<std::size_t>(r)],
        asked_flat.begin() + recv_displs[static_cast<std::size_t>(r) + 1]);
  return make_exchange_plan(split, ownership, rank, asked_by);
}

HostExchange::HostExchange(const ExchangePlan& plan, MPI_Comm comm, int value_bytes)
    : plan_(&plan), comm_(comm), value_bytes_(value_bytes) {
  if (value_bytes != 8 && value_bytes != 4)
    throw InternalError(fmt::format("HostExchange: {}-byte values", value_bytes));
  for (const auto& p : plan.sends) to_int(p.count, "sent");
  for (const auto& p : plan.receives) to_int(p.count, "received");
}

void HostExchange::start(const void* send, void* ghosts) {
  const MPI_Datatype type = value_bytes_ == 8 ? MPI_DOUBLE : MPI_FLOAT;
  requests_.assign(plan_->receives.size() + plan_->sends.size(), MPI_REQUEST_NULL);
  std::size_t k = 0;
  auto* g = static_cast<char*>(ghosts);
  const auto* s = static_cast<const char*>(send);
  for (const auto& p : plan_->receives)
    MPI_Irecv(g + p.offset * value_bytes_, static_cast<int>(p.count), type, p.rank, kTagGhosts,
              comm_, &requests_[k++]);
  for (const auto& p : plan_->sends)
    MPI_Isend(s + p.offset * value_bytes_, static_cast<int>(p.count), type, p.rank, kTagGhosts,
              comm_, &requests_[k++]);
}

void HostExchange::wait() {
  std::vector<MPI_Status> statuses(requests_.size());
  const int rc = MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), statuses.data());
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw DeviceError("MPI_Waitall", rc,
                      fmt::format("ghost exchange failed: {}", std::string(text, len)));
  }
  // A receive that got fewer values than planned means the peers disagree on the plan.
  for (std::size_t k = 0; k < plan_->receives.size(); ++k) {
    int got = 0;
    MPI_Get_count(&statuses[k], value_bytes_ == 8 ? MPI_DOUBLE : MPI_FLOAT, &got);
    if (got != plan_->receives[k].count)
      throw InternalError(fmt::format("ghost exchange: {} values from rank {}, {} planned", got,
                                      plan_->receives[k].rank, plan_->receives[k].count));
  }
  requests_.clear();
}

}  // namespace spmvc::distributed
