// `spmvc run|bench --distributed` under mpirun (spmvc::distributed). Rank 0 reads the matrix,
// partitions the rows and scatters them; every rank compiles its blocks; rank 0 prints.
#include <fmt/format.h>

#include <exception>
#include <vector>

#include "commands.hpp"

#ifdef SPMVC_HAVE_DISTRIBUTED
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/distributed.hpp"
#endif

namespace spmvc::cli {

#ifndef SPMVC_HAVE_DISTRIBUTED

int run_distributed(const MatrixArgs&, const BenchArgs&, bool) {
  throw UsageError(
      "--distributed: this spmvc was built without MPI (install libopenmpi-dev, see "
      "README.md, and configure again)");
}

#else

namespace {

namespace dist = spmvc::distributed;

// What each rank reports to rank 0: its figures, and its two kernels' names.
struct RankLine {
  std::array<std::int64_t, 6> counts{};  // rows, local nnz, ghost nnz, ghosts, sent, peers
  std::array<char, 96> local_kernel{}, ghost_kernel{};
  std::array<double, 3> seconds{};  // apply, apply queued, exchange (bench)
};

// Multiplies a batch of the queued timing: enough that one batch's launch and synchronisation
// are small beside its multiplies.
constexpr int kQueuedBatch = 20;

void copy_name(std::array<char, 96>& to, const std::string& name) {
  std::strncpy(to.data(), name.c_str(), to.size() - 1);
}

int body(const MatrixArgs& args, const BenchArgs& bench, bool timing, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  dist::select_device(comm);

  CsrMatrix a;
  dist::RowOwnership own;
  std::string label;
  if (rank == 0) {
    current_stage() = "reading the matrix";
    a = load_matrix(args, &label);
    if (a.nrows != a.ncols)
      throw InputError(label, 0,
                       fmt::format("--distributed: matrix is {}x{}, not square (each rank owns "
                                   "rows and the columns of the same numbers)",
                                   a.nrows, a.ncols));
    current_stage() = fmt::format("partitioning ({})", args.partition);
    own = dist::make_partition(a, args.partition, size);
  }
  current_stage() = "scattering the rows";
  own = dist::broadcast_ownership(rank == 0 ? &own : nullptr, comm);
  const CsrMatrix mine = dist::scatter_rows(rank == 0 ? &a : nullptr, own, comm);
  dist::DistOptions options;
  options.block = make_options(args);
  // bench times the blocks' specialised kernels, as the single-GPU bench does: with tiering a
  // rank could time the generic tier while its specialised build finished in the background.
  if (timing) options.block.tiered = false;
  options.transport = dist::parse_transport(args.transport);
  current_stage() = "compiling the blocks";
  MPI_Barrier(comm);
  const double start = MPI_Wtime();
  const dist::Operator op = dist::compile(mine, own, comm, options);
  double compile_seconds = MPI_Wtime() - start;
  MPI_Allreduce(MPI_IN_PLACE, &compile_seconds, 1, MPI_DOUBLE, MPI_MAX, comm);

  RankLine line;
  const dist::RankInfo info = op.info();
  line.counts = {info.rows,   info.local_nnz, info.ghost_nnz,
                 info.ghosts, info.sent,      info.neighbours};
  copy_name(line.local_kernel, info.local_plan.empty() ? "-" : info.local_plan);
  copy_name(line.ghost_kernel, info.ghost_plan.empty() ? "-" : info.ghost_plan);

  int status = 0;
  double error = 0;
  const Precision precision = options.block.precision;
  if (timing) {
    current_stage() = "timing";
    const dist::ApplyTiming t =
        dist::time_apply(op, comm, std::max(bench.repetitions, 10), kQueuedBatch);
    line.seconds = {t.apply, t.apply_queued, t.exchange};
  } else {
    current_stage() = "multiplying";
    std::vector<double> x_global;
    if (rank == 0) x_global = codegen::test_vector(a.ncols, precision);
    const std::vector<double> x = dist::scatter_vector(x_global, own, comm);
    std::vector<double> y(x.size(), 0.0);
    op.apply_host(x, y);
    const std::vector<double> y_global = dist::gather_vector(y, own, comm);
    if (rank == 0) {
      std::vector<double> ref(static_cast<std::size_t>(a.nrows));
      compiler::csr_reference_spmv(a, x_global, ref);
      error = compiler::relative_error(y_global, ref);
      status = error <= compiler::result_tolerance(precision) ? 0 : 1;
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, comm);
  }

  std::vector<RankLine> lines(static_cast<std::size_t>(size));
  MPI_Gather(&line, static_cast<int>(sizeof line), MPI_BYTE, lines.data(),
             static_cast<int>(sizeof line), MPI_BYTE, 0, comm);
  if (rank != 0) return status;

  fmt::print(
      "distributed: {}: {} rows, {} nonzeros over {} ranks (partition {}, transport {}); "
      "compile {:.2f} s\n",
      label, a.nrows, a.nnz(), size, args.partition, args.transport, compile_seconds);
  fmt::print("{:>4} {:>10} {:>11} {:>11} {:>9} {:>9} {:>5}  {}\n", "rank", "rows", "local nnz",
             "ghost nnz", "ghosts", "sent", "peers", "local kernel / ghost kernel");
  for (int r = 0; r < size; ++r) {
    const RankLine& l = lines[static_cast<std::size_t>(r)];
    fmt::print("{:>4} {:>10} {:>11} {:>11} {:>9} {:>9} {:>5}  {} / {}\n", r, l.counts[0],
               l.counts[1], l.counts[2], l.counts[3], l.counts[4], l.counts[5],
               l.local_kernel.data(), l.ghost_kernel.data());
  }
  if (!timing) {
    fmt::print(
        "y = A x gathered on rank 0: relative error {:.3e} against the host fp64 "
        "reference (tolerance {:.0e}): {}\n",
        error, compiler::result_tolerance(precision), status == 0 ? "ok" : "FAILED");
    return status;
  }
  fmt::print("{:>4} {:>12} {:>12} {:>14} {:>15}\n", "rank", "apply ms", "queued ms", "exchange ms",
             "exchange share");
  double slowest = 0, slowest_queued = 0;
  for (int r = 0; r < size; ++r) {
    const RankLine& l = lines[static_cast<std::size_t>(r)];
    slowest = std::max(slowest, l.seconds[0]);
    slowest_queued = std::max(slowest_queued, l.seconds[1]);
    fmt::print("{:>4} {:>12.4f} {:>12.4f} {:>14.4f} {:>14.1f}%\n", r, l.seconds[0] * 1e3,
               l.seconds[1] * 1e3, l.seconds[2] * 1e3,
               l.seconds[0] > 0 ? 100.0 * l.seconds[2] / l.seconds[0] : 0.0);
  }
  const auto gflops = [&](double s) {
    return s > 0 ? 2.0 * static_cast<double>(a.nnz()) / s / 1e9 : 0.0;
  };
  const int reps = std::max(bench.repetitions, 10);
  fmt::print(
      "slowest rank: {:.4f} ms per multiply, {:.1f} GFLOP/s over all ranks (medians of "
      "{} multiplies each)\n",
      slowest * 1e3, gflops(slowest), reps);
  fmt::print(
      "slowest rank queued: {:.4f} ms per multiply, {:.1f} GFLOP/s over all ranks (medians of "
      "{} batches of {} multiplies queued back to back)\n",
      slowest_queued * 1e3, gflops(slowest_queued), reps, kQueuedBatch);
  return 0;
}

// The exit code README.md gives each kind of error (as main() does).
int exit_code(const std::exception_ptr& e, std::string& message) {
  try {
    std::rethrow_exception(e);
  } catch (const UsageError& x) {
    message = fmt::format("error: {}", x.what());
    return 2;
  } catch (const NoDeviceError& x) {
    message = fmt::format(
        "{} (--distributed needs a GPU per rank, or one shared with "
        "--transport mpi)",
        x.what());
    return 3;
  } catch (const InputError& x) {
    message = fmt::format("error: {}", x.what());
    return 1;
  } catch (const std::bad_alloc&) {
    message = fmt::format("error: out of memory while {}", current_stage());
    return 1;
  } catch (const std::exception& x) {
    message = x.what();
    return 4;
  }
}

}  // namespace

int run_distributed(const MatrixArgs& args, const BenchArgs& bench, bool timing) {
  if (args.k > 0 || args.transpose || args.update_values)
    throw UsageError(
        "--distributed multiplies one vector: it excludes --k, --transpose and "
        "--update-values");
  if (args.matrix.empty()) throw UsageError("--distributed: give a matrix (file or spec)");
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized == 0) MPI_Init(nullptr, nullptr);
  const MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int code = 0;
  try {
    code = body(args, bench, timing, comm);
  } catch (...) {
    std::string message;
    code = exit_code(std::current_exception(), message);
    // Without a GPU every rank fails alike and stops by itself; anything else may leave
    // other ranks waiting in a collective, so it ends them all.
    if (code == 3) {
      if (rank == 0) fmt::print(stderr, "spmvc: {}\n", message);
    } else {
      fmt::print(stderr, "spmvc: rank {}: {}\n", rank, message);
      if (size > 1) MPI_Abort(comm, code);
    }
  }
  MPI_Finalize();
  return code;
}

#endif

}  // namespace spmvc::cli
