// How much room diagonal storage leaves on the suite's structured matrices: each matrix stored
// by diagonals (DIA: one padded array per occupied diagonal, no column indices) and, where it is
// symmetric, by its lower diagonals alone (the upper diagonal at offset +o read from the lower
// one at -o, shifted by o rows), both multiplied by a plain row-per-thread kernel, timed against
// cuSPARSE's CSR SpMV (ALG1 and ALG2) on the same matrix in the same run, and checked against
// the CSR product on the host (normwise). No spmvc format is involved: this measured what a
// diagonal format could reach before dia was built (compiler/formats/dia).
//
//   spmvc_bench_dia_probe [SPEC...]   (default: suite v13's stencils and the banded matrix)
#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "dia_probe_kernels.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"

namespace {

using dia_probe::kMaxDiagonals;

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "error: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}
void check(cusparseStatus_t s, const char* what) {
  if (s == CUSPARSE_STATUS_SUCCESS) return;
  std::fprintf(stderr, "error: %s: cuSPARSE status %d\n", what, static_cast<int>(s));
  std::exit(1);
}

struct Dia {
  std::vector<int> offsets;    // every occupied diagonal, ascending
  std::vector<double> values;  // offsets.size() x n
  bool symmetric = false;
  std::int64_t stored = 0;  // padded entries
};

bool build_dia(const spmvc::CsrMatrix& a, Dia& d) {
  const std::int64_t n = a.nrows;
  std::map<std::int64_t, int> index;
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      index.emplace(a.col_idx[k] - r, 0);
      if (static_cast<int>(index.size()) > kMaxDiagonals) return false;
    }
  int i = 0;
  for (auto& [o, slot] : index) {
    slot = i++;
    d.offsets.push_back(static_cast<int>(o));
  }
  d.values.assign(d.offsets.size() * static_cast<std::size_t>(n), 0.0);
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k)
      d.values[static_cast<std::size_t>(index[a.col_idx[k] - r]) * n + r] = a.values[k];
  d.stored = static_cast<std::int64_t>(d.values.size());
  d.symmetric = a.nrows == a.ncols;
  for (std::size_t j = 0; j < d.offsets.size() && d.symmetric; ++j) {
    const int o = d.offsets[j];
    const auto mirror = index.find(-o);
    if (mirror == index.end()) {
      d.symmetric = false;
      break;
    }
    for (std::int64_t r = 0; r < n && d.symmetric; ++r) {
      const std::int64_t c = r + o;
      if (c < 0 || c >= n) continue;
      d.symmetric =
          d.values[j * n + r] == d.values[static_cast<std::size_t>(mirror->second) * n + c];
    }
  }
  return true;
}

template <typename T>
T* upload(const std::vector<T>& v) {
  T* p = nullptr;
  check(cudaMalloc(reinterpret_cast<void**>(&p), std::max<std::size_t>(v.size(), 1) * sizeof(T)),
        "cudaMalloc");
  check(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  return p;
}

template <typename F>
double median_us(F&& launch) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 5; ++i) launch();
  std::vector<double> t;
  for (int i = 0; i < 40; ++i) {
    cudaEventRecord(a);
    launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(1e3 * ms);
  }
  check(cudaGetLastError(), "launch");
  std::sort(t.begin(), t.end());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return t[t.size() / 2];
}

template <typename T>
void run(const std::string& spec, const spmvc::CsrMatrix& a, const Dia& dia) {
  const int n = static_cast<int>(a.nrows);
  const std::int64_t nnz = a.nnz();
  const cudaDataType type = sizeof(T) == 8 ? CUDA_R_64F : CUDA_R_32F;
  std::vector<T> x(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) x[i] = static_cast<T>(1.0 + (i % 7) * 0.125);
  T* dx = upload(x);
  T *dy = nullptr, *dref = nullptr;
  dy = upload(std::vector<T>(static_cast<std::size_t>(n)));
  dref = upload(std::vector<T>(static_cast<std::size_t>(n)));

  // cuSPARSE on the CSR.
  std::vector<int> rp(a.row_ptr.begin(), a.row_ptr.end());
  std::vector<T> vals(a.values.begin(), a.values.end());
  int* drp = upload(rp);
  int* dci = upload(a.col_idx);
  T* dv = upload(vals);
  cusparseHandle_t h;
  check(cusparseCreate(&h), "cusparseCreate");
  cusparseSpMatDescr_t m;
  cusparseDnVecDescr_t vx, vy;
  check(cusparseCreateCsr(&m, n, n, nnz, drp, dci, dv, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                          CUSPARSE_INDEX_BASE_ZERO, type),
        "cusparseCreateCsr");
  check(cusparseCreateDnVec(&vx, n, dx, type), "x");
  check(cusparseCreateDnVec(&vy, n, dref, type), "y");
  const T one = 1, zero = 0;
  double best_cusparse = 1e30;
  for (const cusparseSpMVAlg_t alg : {CUSPARSE_SPMV_CSR_ALG1, CUSPARSE_SPMV_CSR_ALG2}) {
    std::size_t bytes = 0;
    check(cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, m, vx, &zero, vy, type,
                                  alg, &bytes),
          "bufferSize");
    void* work = nullptr;
    check(cudaMalloc(&work, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
    if (alg == CUSPARSE_SPMV_CSR_ALG1)
      check(cusparseSpMV_preprocess(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, m, vx, &zero, vy,
                                    type, alg, work),
            "preprocess");
    const double us = median_us([&] {
      cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, m, vx, &zero, vy, type, alg, work);
    });
    best_cusparse = std::min(best_cusparse, us);
    cudaFree(work);
  }
  // The reference: the CSR product on the host in fp64, from the values and x as stored.
  std::vector<double> ref(static_cast<std::size_t>(n), 0.0);
  for (int r = 0; r < n; ++r)
    for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k)
      ref[r] += static_cast<double>(vals[k]) * static_cast<double>(x[a.col_idx[k]]);

  // Normwise: max |got - ref| over max |ref| (a Laplacian's rows sum to about 0, so a row's own
  // relative error says nothing).
  auto error = [&]() {
    std::vector<T> got(static_cast<std::size_t>(n));
    check(cudaMemcpy(got.data(), dy, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
    double worst = 0, scale = 0;
    for (int i = 0; i < n; ++i) {
      worst = std::max(worst, std::abs(static_cast<double>(got[i]) - ref[i]));
      scale = std::max(scale, std::abs(ref[i]));
    }
    return worst / std::max(scale, 1e-300);
  };
  const int nd = static_cast<int>(dia.offsets.size());
  std::vector<T> full(dia.values.begin(), dia.values.end());
  int* doff = upload(dia.offsets);
  T* dfull = upload(full);
  const double us_full = median_us([&] { dia_probe::launch_full<T>(n, nd, doff, dfull, dx, dy); });
  const double err_full = error();
  const double vb = sizeof(T);
  std::printf(
      "%-44s %s %2d diagonals, fill %.2f: DIA %7.1f us (%.2f B/nz, %.2fx cuSPARSE's best "
      "%.1f us), normwise err %.1e\n",
      spec.c_str(), sizeof(T) == 8 ? "f64" : "f32", nd,
      static_cast<double>(nnz) / static_cast<double>(dia.stored), us_full,
      vb * static_cast<double>(dia.stored) / static_cast<double>(nnz), best_cusparse / us_full,
      best_cusparse, err_full);
  cudaFree(dfull);
  if (dia.symmetric) {
    std::vector<int> lower;
    std::vector<T> lv, dg(static_cast<std::size_t>(n));
    for (int j = 0; j < nd; ++j) {
      const std::size_t base = static_cast<std::size_t>(j) * n;
      if (dia.offsets[j] < 0) {
        lower.push_back(dia.offsets[j]);
        lv.insert(lv.end(), dia.values.begin() + base, dia.values.begin() + base + n);
      } else if (dia.offsets[j] == 0) {
        std::copy(dia.values.begin() + base, dia.values.begin() + base + n, dg.begin());
      }
    }
    int* dlo = upload(lower);
    T* dlv = upload(lv);
    T* ddg = upload(dg);
    const int nl = static_cast<int>(lower.size());
    const double us_sym =
        median_us([&] { dia_probe::launch_sym<T>(n, nl, dlo, dlv, ddg, dx, dy); });
    std::printf(
        "%-44s %s symmetric: lower DIA %7.1f us (%.2f B/nz, %.2fx cuSPARSE's best), max "
        "normwise err %.1e\n",
        spec.c_str(), sizeof(T) == 8 ? "f64" : "f32", us_sym,
        vb * static_cast<double>(lv.size() + dg.size()) / static_cast<double>(nnz),
        best_cusparse / us_sym, error());
    cudaFree(dlo);
    cudaFree(dlv);
    cudaFree(ddg);
  }
  cudaFree(doff);
  cusparseDestroySpMat(m);
  cusparseDestroyDnVec(vx);
  cusparseDestroyDnVec(vy);
  cusparseDestroy(h);
  cudaFree(drp);
  cudaFree(dci);
  cudaFree(dv);
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dref);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> specs(argv + 1, argv + argc);
  if (specs.empty())
    specs = {"stencil2d:n=2000,contrast=1000", "stencil27:nx=126,ny=126,nz=126,contrast=1000",
             "stencil7:n=200,contrast=1000", "banded:n=1000000,hbw=8",
             "stencil27:nx=126,ny=126,nz=126"};
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("%s; times are medians of 40 multiplies\n", prop.name);
  for (const std::string& spec : specs) {
    const spmvc::CsrMatrix a = spmvc::gen::from_spec(spec);
    Dia dia;
    if (!build_dia(a, dia)) {
      std::printf("%-44s more than %d diagonals: not probed\n", spec.c_str(), kMaxDiagonals);
      continue;
    }
    run<double>(spec, a, dia);
    run<float>(spec, a, dia);
  }
  return 0;
}
