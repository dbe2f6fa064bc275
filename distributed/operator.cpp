// The distributed operator (spmvc/distributed.hpp): the two blocks compiled by spmvc, the
// device buffers of the exchange, and the two transports.
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>

#include "device_kernels.hpp"
#include "spmvc/distributed.hpp"
#include "spmvc/error.hpp"

#ifdef SPMVC_HAVE_NCCL
#include <nccl.h>
#endif

namespace spmvc::distributed {

namespace {

void check(int code, const char* call) {
  if (code == cudaSuccess) return;
  const auto e = static_cast<cudaError_t>(code);
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
    throw NoDeviceError(fmt::format("{}: {}", call, cudaGetErrorString(e)));
  throw DeviceError(call, code, cudaGetErrorString(e));
}

#ifdef SPMVC_HAVE_NCCL
void check_nccl(ncclResult_t r, const char* call, ncclComm_t comm = nullptr) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  std::string detail = ncclGetErrorString(r);
  if (const char* last = ncclGetLastError(comm); last != nullptr && *last != '\0')
    detail += fmt::format(" ({})", last);
  throw DeviceError(call, static_cast<int>(r), detail);
}
#endif

int comm_rank(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}

// "host:pci-bus-id" of the current GPU: equal on two ranks exactly when they share it.
std::string device_id() {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  std::array<char, 64> bus{};
  check(cudaDeviceGetPCIBusId(bus.data(), static_cast<int>(bus.size()), device),
        "cudaDeviceGetPCIBusId");
  std::array<char, 256> host{};
  gethostname(host.data(), host.size() - 1);
  return fmt::format("{}:{}", host.data(), bus.data());
}

// NoDeviceError with device_available()'s reason (which already carries the error's prefix).
void require_device() {
  std::string why;
  if (device_available(&why)) return;
  constexpr std::string_view prefix = "no CUDA device available: ";
  if (why.starts_with(prefix)) why.erase(0, prefix.size());
  throw NoDeviceError(why);
}

}  // namespace

bool have_nccl() {
#ifdef SPMVC_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

int select_device(MPI_Comm comm) {
  require_device();
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, comm_rank(comm), MPI_INFO_NULL, &node);
  const int local_rank = comm_rank(node);
  MPI_Comm_free(&node);
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  const int device = local_rank % count;
  check(cudaSetDevice(device), "cudaSetDevice");
  return device;
}

struct Operator::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, nranks = 0;
  Transport transport = Transport::mpi;
  int value_bytes = 8;
  GhostSplit split;
  ExchangePlan plan;
  std::optional<spmvc::Operator> local, ghost;
  mutable std::optional<HostExchange> host_exchange;  // its request list changes per exchange

  // Device: the packing index, the packed send buffer and the ghost vector. Host (pinned):
  // their staging copies for the MPI transport.
  std::int32_t* index_dev = nullptr;
  void* send_dev = nullptr;
  void* ghost_dev = nullptr;
  // A compacted ghost block (GhostRows): its rows in y and its product (null otherwise).
  std::int32_t* ghost_rows_dev = nullptr;
  void* ghost_y_dev = nullptr;
  std::int64_t ghost_row_count = 0;
  void* send_host = nullptr;
  void* ghost_host = nullptr;
  // The exchange runs on `side`, ordered against the caller's stream by two events: x is
  // ready (x_ready), and what `side` holds is done (ghosts_ready: the ghost values, and the
  // compacted ghost block's products).
  cudaStream_t side = nullptr;
  cudaEvent_t x_ready = nullptr, ghosts_ready = nullptr;
#ifdef SPMVC_HAVE_NCCL
  ncclComm_t nccl = nullptr;
#endif

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
#ifdef SPMVC_HAVE_NCCL
    if (nccl != nullptr) ncclCommDestroy(nccl);
#endif
    // Teardown errors are not actionable (the operator is going away): ignored.
    if (side != nullptr) (void)cudaStreamSynchronize(side);
    for (void* p : {static_cast<void*>(index_dev), send_dev, ghost_dev,
                    static_cast<void*>(ghost_rows_dev), ghost_y_dev})
      (void)cudaFree(p);
    for (void* p : {send_host, ghost_host}) (void)cudaFreeHost(p);
    if (x_ready != nullptr) (void)cudaEventDestroy(x_ready);
    if (ghosts_ready != nullptr) (void)cudaEventDestroy(ghosts_ready);
    if (side != nullptr) (void)cudaStreamDestroy(side);
  }

  bool exchanges() const { return !plan.sends.empty() || !plan.receives.empty(); }

  // Packs the values other ranks need from x (on `side`, after what `stream` holds now) and, for
  // the MPI transport, starts their copy to the host.
  void pack(const void* x, cudaStream_t stream) const {
    if (!exchanges()) return;
    check(cudaEventRecord(x_ready, stream), "cudaEventRecord");
    check(cudaStreamWaitEvent(side, x_ready, 0), "cudaStreamWaitEvent");
    check(device::launch_gather(x, index_dev, send_dev, plan.send_count(), value_bytes, side),
          "gather_values launch");
    if (transport == Transport::mpi && plan.send_count() > 0) {
      check(cudaMemcpyAsync(send_host, send_dev,
                            static_cast<std::size_t>(plan.send_count() * value_bytes),
                            cudaMemcpyDeviceToHost, side),
            "cudaMemcpyAsync(send buffer to host)");
    }
  }

  // NCCL: queues the grouped sends and receives on `side`, behind the packing.
  void post_device_exchange() const {
    if (!exchanges() || transport != Transport::nccl) return;
#ifdef SPMVC_HAVE_NCCL
    const ncclDataType_t type = value_bytes == 8 ? ncclFloat64 : ncclFloat32;
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (const auto& p : plan.sends)
      check_nccl(ncclSend(static_cast<const char*>(send_dev) + p.offset * value_bytes,
                          static_cast<std::size_t>(p.count), type, p.rank, nccl, side),
                 "ncclSend", nccl);
    for (const auto& p : plan.receives)
      check_nccl(ncclRecv(static_cast<char*>(ghost_dev) + p.offset * value_bytes,
                          static_cast<std::size_t>(p.count), type, p.rank, nccl, side),
                 "ncclRecv", nccl);
    check_nccl(ncclGroupEnd(), "ncclGroupEnd", nccl);
#endif
  }

  // Completes the exchange on `side`: its values are there for what is queued on `side` next.
  void finish_exchange() const {
    if (!exchanges()) return;
    if (transport == Transport::mpi) {
      // The host waits for the packed values, then MPI moves them; the local block's multiply,
      // already queued on `stream`, runs meanwhile.
      check(cudaStreamSynchronize(side), "cudaStreamSynchronize(exchange stream)");
      host_exchange->start(send_host, ghost_host);
      host_exchange->wait();
      if (plan.ghost_count > 0)
        check(cudaMemcpyAsync(ghost_dev, ghost_host,
                              static_cast<std::size_t>(plan.ghost_count * value_bytes),
                              cudaMemcpyHostToDevice, side),
              "cudaMemcpyAsync(ghost values to device)");
    }
  }

  // Makes `stream` wait for all that `side` holds: the exchange, and in apply() the compacted
  // ghost block's product. Also what keeps the caller's x (read by the packing) in use until
  // `stream` has passed this point.
  void join(cudaStream_t stream) const {
    check(cudaEventRecord(ghosts_ready, side), "cudaEventRecord");
    check(cudaStreamWaitEvent(stream, ghosts_ready, 0), "cudaStreamWaitEvent");
  }
};

Operator::Operator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Operator::Operator(Operator&&) noexcept = default;
Operator& Operator::operator=(Operator&&) noexcept = default;
Operator::~Operator() = default;

Operator compile(const CsrMatrix& local_rows, const RowOwnership& ownership, MPI_Comm comm,
                 const DistOptions& options) {
  require_device();
  auto impl = std::make_unique<Operator::Impl>();
  impl->comm = comm;
  impl->rank = comm_rank(comm);
  MPI_Comm_size(comm, &impl->nranks);
  impl->transport = options.transport;
  impl->value_bytes = value_bytes(options.block.precision);
  if (options.transport == Transport::nccl && !have_nccl())
    throw InputError("--transport nccl", 0,
                     "this build has no NCCL (nccl.h and libnccl were not found at configure "
                     "time); use --transport mpi");

  impl->split = split_rows(local_rows, ownership, impl->rank);
  impl->plan = exchange_plan(impl->split, ownership, comm);
  const GhostSplit& s = impl->split;
  // Both blocks on this rank's GPU, the current one (select_device's): Options::device would
  // make every rank's blocks GPU 0's otherwise.
  Options block_options = options.block;
  check(cudaGetDevice(&block_options.device), "cudaGetDevice");
  if (s.local.nnz() > 0) impl->local.emplace(spmvc::compile(s.local, block_options));
  if (s.ghost.nnz() > 0) {
    Options ghost_options = block_options;
    // Where at most half the rows hold ghost entries, the ghost block is compiled over those
    // rows alone and added into y by a scatter (GhostRows): multiplied whole it read and wrote
    // y in every row. On two H200s that took a multiply of a 27-point stencil (its slabs read
    // one plane of 80 and of 100 from the other rank) from 0.119 to 0.105 ms at 160^3 and from
    // 0.224 to 0.179 ms at 200^3 (bench/results/2026-11-30-h200x2-scaling).
    const std::optional<GhostRows> rows = ghost_rows(s.ghost);
    const bool compact = rows.has_value();
    const CsrMatrix& block = compact ? rows->block : s.ghost;
    // The ghost block is rectangular (rows x ghosts): the symmetric orderings do not apply.
    if (ghost_options.reorder != "auto" && block.nrows != block.ncols)
      ghost_options.reorder = "none";
    impl->ghost.emplace(spmvc::compile(block, ghost_options));
    if (compact) {
      const std::size_t n = rows->rows.size();
      impl->ghost_row_count = static_cast<std::int64_t>(n);
      check(
          cudaMalloc(reinterpret_cast<void**>(&impl->ghost_rows_dev), n * sizeof(std::int32_t) + 1),
          "cudaMalloc(ghost rows)");
      check(cudaMemcpy(impl->ghost_rows_dev, rows->rows.data(), n * sizeof(std::int32_t),
                       cudaMemcpyHostToDevice),
            "cudaMemcpy(ghost rows)");
      check(cudaMalloc(&impl->ghost_y_dev, n * static_cast<std::size_t>(impl->value_bytes) + 1),
            "cudaMalloc(ghost rows' products)");
    }
  }

  const ExchangePlan& plan = impl->plan;
  const auto vb = static_cast<std::size_t>(impl->value_bytes);
  // The exchange's stream has the device's greatest priority: its kernels (the packing,
  // NCCL's) take multiprocessors ahead of the local block's waiting thread blocks, though NCCL's
  // are queued after the local block's launch (apply).
  int least_priority = 0, greatest_priority = 0;
  check(cudaDeviceGetStreamPriorityRange(&least_priority, &greatest_priority),
        "cudaDeviceGetStreamPriorityRange");
  check(cudaStreamCreateWithPriority(&impl->side, cudaStreamNonBlocking, greatest_priority),
        "cudaStreamCreateWithPriority");
  check(cudaEventCreateWithFlags(&impl->x_ready, cudaEventDisableTiming), "cudaEventCreate");
  check(cudaEventCreateWithFlags(&impl->ghosts_ready, cudaEventDisableTiming), "cudaEventCreate");
  // One byte more than needed, so an empty buffer is still a valid allocation.
  check(cudaMalloc(reinterpret_cast<void**>(&impl->index_dev),
                   static_cast<std::size_t>(plan.send_count()) * sizeof(std::int32_t) + 1),
        "cudaMalloc(send index)");
  check(cudaMemcpy(impl->index_dev, plan.send_index.data(),
                   static_cast<std::size_t>(plan.send_count()) * sizeof(std::int32_t),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy(send index)");
  check(cudaMalloc(&impl->send_dev, static_cast<std::size_t>(plan.send_count()) * vb + 1),
        "cudaMalloc(send buffer)");
  check(cudaMalloc(&impl->ghost_dev, static_cast<std::size_t>(plan.ghost_count) * vb + 1),
        "cudaMalloc(ghost vector)");

  if (options.transport == Transport::mpi) {
    check(cudaMallocHost(&impl->send_host, static_cast<std::size_t>(plan.send_count()) * vb + 1),
          "cudaMallocHost(send buffer)");
    check(cudaMallocHost(&impl->ghost_host, static_cast<std::size_t>(plan.ghost_count) * vb + 1),
          "cudaMallocHost(ghost vector)");
    impl->host_exchange.emplace(impl->plan, comm, impl->value_bytes);
  } else {
#ifdef SPMVC_HAVE_NCCL
    // NCCL refuses two ranks on one GPU; say so before it does, naming the ranks.
    const std::string id = device_id();
    std::array<char, 320> mine{};
    std::strncpy(mine.data(), id.c_str(), mine.size() - 1);
    std::vector<char> all(mine.size() * static_cast<std::size_t>(impl->nranks));
    MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_CHAR, all.data(),
                  static_cast<int>(mine.size()), MPI_CHAR, comm);
    std::vector<std::string> ids;
    for (int r = 0; r < impl->nranks; ++r) ids.emplace_back(all.data() + r * mine.size());
    if (const std::string shared = shared_gpu_message(ids); !shared.empty())
      throw InputError("--transport nccl", 0, shared);
    // NVLink SHARP (multicast) is left off: it takes memory per communicator and is not needed
    // for point-to-point traffic. A value the user set wins.
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    ncclUniqueId unique{};
    if (impl->rank == 0) check_nccl(ncclGetUniqueId(&unique), "ncclGetUniqueId");
    MPI_Bcast(&unique, sizeof unique, MPI_BYTE, 0, comm);
    check_nccl(ncclCommInitRank(&impl->nccl, impl->nranks, unique, impl->rank), "ncclCommInitRank");
#endif
  }
  return Operator(std::move(impl));
}

void Operator::apply(const void* x, void* y, double alpha, double beta, void* stream) const {
  const Impl& m = *impl_;
  auto s = static_cast<cudaStream_t>(stream);
  // The local block's multiply is queued before NCCL's calls, which take the host some
  // microseconds: the GPU starts on it at once (on two H200s this took 3-11% off a multiply of a
  // 27-point stencil of 109M and 214M nonzeros, and 2-6% off Kronecker scale 23's).
  m.pack(x, s);
  if (m.local)
    m.local->apply(x, y, alpha, beta, s);
  else
    check(device::launch_scale(y, beta, m.split.local.nrows, m.value_bytes, s),
          "scale_values launch");
  m.post_device_exchange();
  m.finish_exchange();
  // A compacted ghost block writes only its own products: it runs on the exchange's stream as
  // soon as the ghost values arrive, beside the local block, and `s` adds them into y after both.
  const bool compacted = m.ghost && m.ghost_rows_dev != nullptr;
  if (compacted) m.ghost->apply(m.ghost_dev, m.ghost_y_dev, alpha, 0.0, m.side);
  m.join(s);
  if (!m.ghost) return;
  if (compacted) {
    check(device::launch_scatter_add(y, m.ghost_rows_dev, m.ghost_y_dev, m.ghost_row_count,
                                     m.value_bytes, s),
          "scatter_add launch");
  } else {
    // The whole ghost block adds into every row of y: after the local block, on `s`.
    m.ghost->apply(m.ghost_dev, y, alpha, 1.0, s);
  }
}

void Operator::exchange(const void* x, void* stream) const {
  auto s = static_cast<cudaStream_t>(stream);
  impl_->pack(x, s);
  impl_->post_device_exchange();
  impl_->finish_exchange();
  impl_->join(s);
  check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

namespace {

// Host fp64 values to a device buffer of the plan's value type, and back.
void* upload(std::span<const double> v, int value_bytes) {
  void* d = nullptr;
  check(cudaMalloc(&d, v.size() * static_cast<std::size_t>(value_bytes) + 1), "cudaMalloc");
  if (value_bytes == 8) {
    check(cudaMemcpy(d, v.data(), v.size() * sizeof(double), cudaMemcpyHostToDevice), "cudaMemcpy");
  } else {
    std::vector<float> f(v.begin(), v.end());
    check(cudaMemcpy(d, f.data(), f.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  return d;
}
void download(const void* d, std::span<double> v, int value_bytes) {
  if (value_bytes == 8) {
    check(cudaMemcpy(v.data(), d, v.size() * sizeof(double), cudaMemcpyDeviceToHost), "cudaMemcpy");
  } else {
    std::vector<float> f(v.size());
    check(cudaMemcpy(f.data(), d, f.size() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
    std::copy(f.begin(), f.end(), v.begin());
  }
}

}  // namespace

void Operator::apply_host(std::span<const double> x, std::span<double> y, double alpha,
                          double beta) const {
  const auto n = static_cast<std::size_t>(local_rows());
  if (x.size() != n || y.size() != n)
    throw InputError(
        "distributed apply_host", 0,
        fmt::format("x has {} and y {} values; this rank owns {} rows", x.size(), y.size(), n));
  void* dx = upload(x, impl_->value_bytes);
  void* dy = upload(y, impl_->value_bytes);
  try {
    apply(dx, dy, alpha, beta, nullptr);
    check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
    download(dy, y, impl_->value_bytes);
  } catch (...) {
    (void)cudaFree(dx);
    (void)cudaFree(dy);
    throw;
  }
  check(cudaFree(dx), "cudaFree");
  check(cudaFree(dy), "cudaFree");
}

const void* Operator::ghost_values() const { return impl_->ghost_dev; }

std::vector<double> Operator::ghost_values_host() const {
  std::vector<double> g(static_cast<std::size_t>(impl_->plan.ghost_count));
  download(impl_->ghost_dev, g, impl_->value_bytes);
  return g;
}

std::int64_t Operator::local_rows() const { return impl_->split.local.nrows; }
std::int64_t Operator::ghost_count() const { return impl_->plan.ghost_count; }
Transport Operator::transport() const { return impl_->transport; }
const ExchangePlan& Operator::plan() const { return impl_->plan; }
const GhostSplit& Operator::split() const { return impl_->split; }
const spmvc::Operator* Operator::local_block() const {
  return impl_->local ? &*impl_->local : nullptr;
}
const spmvc::Operator* Operator::ghost_block() const {
  return impl_->ghost ? &*impl_->ghost : nullptr;
}

ApplyTiming time_apply(const Operator& op, MPI_Comm comm, int repetitions, int batch) {
  const std::vector<double> ones(static_cast<std::size_t>(op.local_rows()), 1.0);
  const int vb = op.local_block() != nullptr   ? value_bytes(op.local_block()->plan().precision)
                 : op.ghost_block() != nullptr ? value_bytes(op.ghost_block()->plan().precision)
                                               : 8;
  void* x = upload(ones, vb);
  void* y = upload(ones, vb);
  auto median_of = [&](const std::function<void()>& run) {
    run();  // warm-up: first launches, lazy loading
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::vector<double> t;
    for (int k = 0; k < repetitions; ++k) {
      MPI_Barrier(comm);
      const double start = MPI_Wtime();
      run();
      check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
      t.push_back(MPI_Wtime() - start);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  ApplyTiming timing;
  timing.repetitions = std::max(repetitions, 1);
  repetitions = timing.repetitions;
  timing.apply = median_of([&] { op.apply(x, y); });
  timing.batch = std::max(batch, 1);
  timing.apply_queued = median_of([&] {
                          for (int k = 0; k < timing.batch; ++k) op.apply(x, y);
                        }) /
                        timing.batch;
  timing.exchange = median_of([&] { op.exchange(x); });
  (void)cudaFree(x);
  (void)cudaFree(y);
  return timing;
}

RankInfo Operator::info() const {
  const Impl& m = *impl_;
  RankInfo i;
  i.rank = m.rank;
  i.nranks = m.nranks;
  i.rows = m.split.local.nrows;
  i.local_nnz = m.split.local.nnz();
  i.ghost_nnz = m.split.ghost.nnz();
  i.ghosts = m.plan.ghost_count;
  i.sent = m.plan.send_count();
  i.neighbours = static_cast<int>(m.plan.receives.size());
  if (m.local) i.local_plan = m.local->source().kernel_name;
  if (m.ghost) i.ghost_plan = m.ghost->source().kernel_name;
  return i;
}

}  // namespace spmvc::distributed
