// Conjugate gradients with the distributed operator: rank 0 reads a symmetric positive definite
// matrix, partitions it and scatters the rows; every rank multiplies its rows with
// spmvc::distributed::Operator and does its part of the vector work with cuBLAS, the dot
// products summed over ranks with MPI_Allreduce. Then rank 0 solves the same system on one GPU
// with spmvc::Operator and the same CG, and checks that both converged alike: iteration counts
// within 1% of each other (at least one iteration apart allowed) and final relative residuals
// within 1e-10. Not the same count: the ranks sum their rows' products and their parts of each
// dot product in another order than one GPU does, and on an ill-conditioned system that many
// iterations amplify (G3_circuit on two H200s: 10,049 iterations distributed, 10,035 on one).
//
//   mpirun -n 4 cg_distributed A.mtx[.gz|.xz] | SPEC [--partition block|metis]
//          [--transport mpi|nccl] [--tol 1e-10] [--max-iter 5000]
//
// Exit codes: 0 converged alike, 1 bad input, no convergence or a mismatch, 77 no GPU.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <spmvc/distributed.hpp>
#include <spmvc/generators.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + " failed");
}

struct CgResult {
  int iterations = 0;
  double relative_residual = 0;
  double seconds = 0;
};

// Solves A x = b from x = 0 over the ranks of `comm` (MPI_COMM_SELF: one GPU). `multiply(in,
// out)` writes out = A in for this rank's n rows; `b` is this rank's part of b on the host.
CgResult cg(MPI_Comm comm, cublasHandle_t blas, const std::vector<double>& b,
            const std::function<void(const double*, double*)>& multiply, double tol, int max_iter) {
  const int n = static_cast<int>(b.size());
  const auto bytes = b.size() * sizeof(double) + 1;
  double *x, *r, *p, *ap;
  for (double** v : {&x, &r, &p, &ap}) check(cudaMalloc(v, bytes), "cudaMalloc");
  check(cudaMemset(x, 0, bytes), "cudaMemset");
  check(cudaMemcpy(r, b.data(), b.size() * sizeof(double), cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(p, r, b.size() * sizeof(double), cudaMemcpyDeviceToDevice), "cudaMemcpy");
  // A dot product over all ranks: each rank's part with cuBLAS, summed with MPI.
  auto dot = [&](const double* u, const double* v) {
    double mine = 0, all = 0;
    if (n > 0) check(cublasDdot(blas, n, u, 1, v, 1, &mine), "cublasDdot");
    MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, comm);
    return all;
  };
  const double bnorm = std::sqrt(dot(r, r));
  double rr = bnorm * bnorm;
  CgResult out;
  MPI_Barrier(comm);
  const double start = MPI_Wtime();
  while (out.iterations < max_iter && std::sqrt(rr) > tol * bnorm) {
    multiply(p, ap);
    const double alpha = rr / dot(p, ap), minus_alpha = -alpha;
    check(cublasDaxpy(blas, n, &alpha, p, 1, x, 1), "cublasDaxpy");
    check(cublasDaxpy(blas, n, &minus_alpha, ap, 1, r, 1), "cublasDaxpy");
    const double rr_next = dot(r, r);
    const double beta = rr_next / rr, one = 1;
    check(cublasDscal(blas, n, &beta, p, 1), "cublasDscal");       // p = beta p
    check(cublasDaxpy(blas, n, &one, r, 1, p, 1), "cublasDaxpy");  // p += r
    rr = rr_next;
    ++out.iterations;
  }
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  out.seconds = MPI_Wtime() - start;
  // The true residual ||b - A x|| / ||b||, not the recurrence's.
  multiply(x, ap);
  std::vector<double> ax(b.size());
  check(cudaMemcpy(ax.data(), ap, b.size() * sizeof(double), cudaMemcpyDeviceToHost), "cudaMemcpy");
  double mine = 0, all = 0;
  for (std::size_t i = 0; i < b.size(); ++i) mine += (b[i] - ax[i]) * (b[i] - ax[i]);
  MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, comm);
  out.relative_residual = std::sqrt(all) / bnorm;
  for (double* v : {x, r, p, ap}) check(cudaFree(v), "cudaFree");
  return out;
}

int run(int argc, char** argv, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (argc < 2) {
    if (rank == 0)
      std::fprintf(stderr,
                   "usage: cg_distributed A.mtx|SPEC [--partition block|metis] "
                   "[--transport mpi|nccl] [--tol T] [--max-iter N]\n");
    return 1;
  }
  std::string source = argv[1], partition = "block", transport = "mpi";
  double tol = 1e-10;
  int max_iter = 5000;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string opt = argv[i], value = argv[i + 1];
    if (opt == "--partition")
      partition = value;
    else if (opt == "--transport")
      transport = value;
    else if (opt == "--tol")
      tol = std::stod(value);
    else if (opt == "--max-iter")
      max_iter = std::stoi(value);
    else
      throw spmvc::InputError("cg_distributed", 0, "unknown option " + opt);
  }
  namespace dist = spmvc::distributed;
  if (!spmvc::device_available()) {
    if (rank == 0) std::fprintf(stderr, "cg_distributed: no GPU; skipped\n");
    return 77;
  }
  dist::select_device(comm);

  // Rank 0 reads and partitions; b = A * ones (so x = ones solves it).
  spmvc::CsrMatrix a;
  dist::RowOwnership own;
  std::vector<double> b_global;
  if (rank == 0) {
    a = spmvc::gen::is_spec(source) ? spmvc::gen::from_spec(source)
                                    : spmvc::read_matrix_market(source);
    own = dist::make_partition(a, partition, size);
    b_global.assign(static_cast<std::size_t>(a.nrows), 0.0);
    for (std::int64_t i = 0; i < a.nrows; ++i)
      for (std::int64_t k = a.row_ptr[i]; k < a.row_ptr[i + 1]; ++k)
        b_global[static_cast<std::size_t>(i)] += a.values[k];
  }
  own = dist::broadcast_ownership(rank == 0 ? &own : nullptr, comm);
  const spmvc::CsrMatrix mine = dist::scatter_rows(rank == 0 ? &a : nullptr, own, comm);
  const std::vector<double> b = dist::scatter_vector(b_global, own, comm);
  dist::DistOptions options;
  options.transport = dist::parse_transport(transport);
  const dist::Operator op = dist::compile(mine, own, comm, options);

  cublasHandle_t blas = nullptr;
  check(cublasCreate(&blas), "cublasCreate");
  const CgResult d = cg(
      comm, blas, b, [&](const double* in, double* out) { op.apply(in, out); }, tol, max_iter);
  int status = 0;
  if (rank == 0) {
    const spmvc::Operator single = spmvc::compile(a);
    const CgResult s = cg(
        MPI_COMM_SELF, blas, b_global,
        [&](const double* in, double* out) { single.apply(in, out); }, tol, max_iter);
    const double gap = std::abs(d.relative_residual - s.relative_residual);
    const bool converged = d.iterations < max_iter;
    const int apart = std::abs(d.iterations - s.iterations);
    const bool alike = apart <= std::max(1, s.iterations / 100) && gap <= 1e-10;
    std::printf(
        "cg_distributed: %s, %lld rows, %lld nonzeros, %d ranks, partition %s, transport %s\n",
        source.c_str(), static_cast<long long>(a.nrows), static_cast<long long>(a.nnz()), size,
        partition.c_str(), transport.c_str());
    std::printf("  distributed: %d iterations, relative residual %.3e, %.4f s\n", d.iterations,
                d.relative_residual, d.seconds);
    std::printf("  single GPU:  %d iterations, relative residual %.3e, %.4f s\n", s.iterations,
                s.relative_residual, s.seconds);
    std::printf("  %s\n", !converged ? "FAILED: no convergence within --max-iter"
                          : alike    ? "ok: iterations within 1%, residuals within 1e-10"
                                     : "FAILED: the runs differ");
    status = converged && alike ? 0 : 1;
  }
  check(cublasDestroy(blas), "cublasDestroy");
  MPI_Bcast(&status, 1, MPI_INT, 0, comm);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 1;
  try {
    status = run(argc, argv, MPI_COMM_WORLD);
  } catch (const std::exception& e) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "cg_distributed: rank %d: error: %s\n", rank, e.what());
    // Other ranks may wait in a collective: end them all.
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
