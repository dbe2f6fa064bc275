// Conjugate gradients on a symmetric positive definite Matrix Market matrix, twice: with the
// spmvc operator and with cuSPARSE's CSR SpMV as the multiply. Vector work is cuBLAS in both, so
// the two runs differ only in the multiply. Prints iterations, residuals, times and how far the
// two solutions are apart. spmvc::warm_up runs on a thread of its own while the matrix is read,
// so the compile's time is the matrix's own.
//
//   cg_cusparse A.mtx[.gz|.xz] | SPEC [--tol 1e-10] [--max-iter 2000]
//
// SPEC is a generator spec, e.g. stencil7:n=100 (the 7-point Laplacian, SPD).
//
// Exit codes: 0 solved (both runs agree), 1 bad input or no convergence, 77 no GPU.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <spmvc/generators.hpp>
#include <spmvc/spmvc.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + " failed");
}
void check(cusparseStatus_t e, const char* what) {
  if (e != CUSPARSE_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": " + cusparseGetErrorString(e));
}

template <class T>
T* device_copy(const std::vector<T>& host) {
  T* d = nullptr;
  check(cudaMalloc(&d, host.size() * sizeof(T) + 1), "cudaMalloc");
  check(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  return d;
}

struct CgResult {
  int iterations = 0;
  double relative_residual = 0;
  double seconds = 0;
  std::vector<double> x;
};

// Solves A x = b from x = 0; `multiply(in, out)` writes out = A in on the device.
CgResult cg(cublasHandle_t blas, int n, const double* d_b,
            const std::function<void(const double*, double*)>& multiply, double tol, int max_iter) {
  double *x, *r, *p, *ap;
  for (double** v : {&x, &r, &p, &ap}) check(cudaMalloc(v, n * sizeof(double)), "cudaMalloc");
  check(cudaMemset(x, 0, n * sizeof(double)), "cudaMemset");
  check(cudaMemcpy(r, d_b, n * sizeof(double), cudaMemcpyDeviceToDevice), "cudaMemcpy");
  check(cudaMemcpy(p, d_b, n * sizeof(double), cudaMemcpyDeviceToDevice), "cudaMemcpy");
  double bnorm = 0, rr = 0;
  check(cublasDnrm2(blas, n, d_b, 1, &bnorm), "cublasDnrm2");
  check(cublasDdot(blas, n, r, 1, r, 1, &rr), "cublasDdot");
  CgResult out;
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const auto start = std::chrono::steady_clock::now();
  while (out.iterations < max_iter && std::sqrt(rr) > tol * bnorm) {
    multiply(p, ap);
    double pap = 0;
    check(cublasDdot(blas, n, p, 1, ap, 1, &pap), "cublasDdot");
    const double alpha = rr / pap, minus_alpha = -alpha;
    check(cublasDaxpy(blas, n, &alpha, p, 1, x, 1), "cublasDaxpy");
    check(cublasDaxpy(blas, n, &minus_alpha, ap, 1, r, 1), "cublasDaxpy");
    double rr_next = 0;
    check(cublasDdot(blas, n, r, 1, r, 1, &rr_next), "cublasDdot");
    const double beta = rr_next / rr, one = 1;
    check(cublasDscal(blas, n, &beta, p, 1), "cublasDscal");       // p = beta p
    check(cublasDaxpy(blas, n, &one, r, 1, p, 1), "cublasDaxpy");  // p += r
    rr = rr_next;
    ++out.iterations;
  }
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.relative_residual = std::sqrt(rr) / bnorm;
  out.x.resize(n);
  check(cudaMemcpy(out.x.data(), x, n * sizeof(double), cudaMemcpyDeviceToHost), "cudaMemcpy");
  for (double* v : {x, r, p, ap}) cudaFree(v);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cg_cusparse A.mtx|SPEC [--tol 1e-10] [--max-iter 2000]\n");
    return 1;
  }
  double tol = 1e-10;
  int max_iter = 2000;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--tol") {
      tol = std::atof(argv[i + 1]);
    } else if (flag == "--max-iter") {
      max_iter = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "unknown option %s\n", flag.c_str());
      return 1;
    }
  }
  try {
    std::string why;
    if (!spmvc::device_available(&why)) {
      std::printf("no GPU: %s\n", why.c_str());
      return 77;
    }
    spmvc::Options options;
    options.precision = spmvc::Precision::f64;
    // The process's CUDA context, upload buffers and build kernels, ready while the file is read.
    std::exception_ptr warm_up_error;
    std::thread warming([&] {
      try {
        spmvc::warm_up(options);
      } catch (...) {
        warm_up_error = std::current_exception();
      }
    });
    spmvc::CsrMatrix a;
    try {
      a = spmvc::gen::is_spec(argv[1]) ? spmvc::gen::from_spec(argv[1])
                                       : spmvc::read_matrix_market(argv[1]);
    } catch (...) {
      warming.join();
      throw;
    }
    warming.join();
    if (warm_up_error) std::rethrow_exception(warm_up_error);
    if (a.nrows != a.ncols) throw std::runtime_error("CG needs a square matrix");
    const int n = static_cast<int>(a.nrows);
    const auto nnz = static_cast<std::int64_t>(a.nnz());

    // spmvc: compile once (the one-time cost), then multiply.
    const auto t0 = std::chrono::steady_clock::now();
    const spmvc::Operator op = spmvc::compile(a, options);
    const double compile_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    // cuSPARSE: the same matrix with 32-bit offsets.
    const std::vector<int> row_ptr(a.row_ptr.begin(), a.row_ptr.end());
    int* d_row_ptr = device_copy(row_ptr);
    int* d_col_idx = device_copy(a.col_idx);
    double* d_values = device_copy(a.values);
    const std::vector<double> b(n, 1.0);
    double* d_b = device_copy(b);

    cublasHandle_t blas;
    check(cublasCreate(&blas), "cublasCreate");
    cusparseHandle_t sparse;
    check(cusparseCreate(&sparse), "cusparseCreate");
    cusparseSpMatDescr_t mat;
    check(cusparseCreateCsr(&mat, n, n, nnz, d_row_ptr, d_col_idx, d_values, CUSPARSE_INDEX_32I,
                            CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F),
          "cusparseCreateCsr");
    double *d_in, *d_out;
    check(cudaMalloc(&d_in, n * sizeof(double)), "cudaMalloc");
    check(cudaMalloc(&d_out, n * sizeof(double)), "cudaMalloc");
    cusparseDnVecDescr_t vin, vout;
    check(cusparseCreateDnVec(&vin, n, d_in, CUDA_R_64F), "cusparseCreateDnVec");
    check(cusparseCreateDnVec(&vout, n, d_out, CUDA_R_64F), "cusparseCreateDnVec");
    const double one = 1, zero = 0;
    std::size_t buffer_bytes = 0;
    check(cusparseSpMV_bufferSize(sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat, vin, &zero,
                                  vout, CUDA_R_64F, CUSPARSE_SPMV_CSR_ALG1, &buffer_bytes),
          "cusparseSpMV_bufferSize");
    void* buffer = nullptr;
    check(cudaMalloc(&buffer, buffer_bytes + 1), "cudaMalloc");

    const CgResult ours = cg(
        blas, n, d_b, [&](const double* in, double* out) { op.apply(in, out); }, tol, max_iter);
    const CgResult theirs = cg(
        blas, n, d_b,
        [&](const double* in, double* out) {
          check(cusparseDnVecSetValues(vin, const_cast<double*>(in)), "cusparseDnVecSetValues");
          check(cusparseDnVecSetValues(vout, out), "cusparseDnVecSetValues");
          check(cusparseSpMV(sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, mat, vin, &zero, vout,
                             CUDA_R_64F, CUSPARSE_SPMV_CSR_ALG1, buffer),
                "cusparseSpMV");
        },
        tol, max_iter);

    double diff = 0, norm = 0;
    for (int i = 0; i < n; ++i) {
      diff = std::max(diff, std::abs(ours.x[i] - theirs.x[i]));
      norm = std::max(norm, std::abs(theirs.x[i]));
    }
    std::printf("%s: %d x %d, %lld nonzeros; spmvc plan %s (%s), compiled in %.3f s (kernel %s)\n",
                argv[1], n, n, static_cast<long long>(nnz), op.plan().format.c_str(),
                spmvc::describe(op.plan().params).c_str(), compile_seconds,
                op.timings().kernel_origin.c_str());
    std::printf("%-9s %10s %14s %10s\n", "multiply", "iterations", "rel. residual", "seconds");
    std::printf("%-9s %10d %14.3e %10.4f\n", "spmvc", ours.iterations, ours.relative_residual,
                ours.seconds);
    std::printf("%-9s %10d %14.3e %10.4f\n", "cuSPARSE", theirs.iterations,
                theirs.relative_residual, theirs.seconds);
    std::printf("max |x_spmvc - x_cusparse| / max |x| = %.3e\n", diff / norm);

    cusparseDestroyDnVec(vin);
    cusparseDestroyDnVec(vout);
    cusparseDestroySpMat(mat);
    cusparseDestroy(sparse);
    cublasDestroy(blas);
    for (void* p : {static_cast<void*>(d_row_ptr), static_cast<void*>(d_col_idx),
                    static_cast<void*>(d_values), static_cast<void*>(d_b), static_cast<void*>(d_in),
                    static_cast<void*>(d_out), buffer})
      cudaFree(p);
    const bool converged = ours.relative_residual <= tol && theirs.relative_residual <= tol;
    const bool agree = diff <= 1e-6 * norm;
    if (!converged) std::printf("did not converge in %d iterations\n", max_iter);
    if (!agree) std::printf("the two solutions differ\n");
    return converged && agree ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cg_cusparse: %s\n", e.what());
    return 1;
  }
}
