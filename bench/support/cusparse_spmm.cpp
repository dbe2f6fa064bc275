#include "spmvc/bench/cusparse_spmm.hpp"

#include <cusparse.h>
#include <library_types.h>

#include <climits>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cusparse_common.hpp"
#include "device.hpp"
#include "spmvc/error.hpp"

namespace spmvc::bench {

using namespace spmvc::runtime;
using detail::check_sparse;
using detail::upload;

namespace {

cusparseSpMMAlg_t to_cusparse(CusparseSpmmAlg a) {
  switch (a) {
    case CusparseSpmmAlg::csr_alg1:
      return CUSPARSE_SPMM_CSR_ALG1;
    case CusparseSpmmAlg::csr_alg2:
      return CUSPARSE_SPMM_CSR_ALG2;
    case CusparseSpmmAlg::csr_alg3:
      return CUSPARSE_SPMM_CSR_ALG3;
  }
  return CUSPARSE_SPMM_ALG_DEFAULT;
}

}  // namespace

std::string_view to_string(CusparseSpmmAlg a) {
  switch (a) {
    case CusparseSpmmAlg::csr_alg1:
      return "spmm_csr_alg1";
    case CusparseSpmmAlg::csr_alg2:
      return "spmm_csr_alg2";
    case CusparseSpmmAlg::csr_alg3:
      return "spmm_csr_alg3";
  }
  return "?";
}

struct CusparseSpmm::Impl {
  // One descriptor set per (alg, k, layout): preprocessing attaches to the matrix descriptor.
  struct Setup {
    cusparseSpMatDescr_t mat = nullptr;
    cusparseConstDnMatDescr_t x_mat = nullptr;
    cusparseDnMatDescr_t y_mat = nullptr;
    const void* x = nullptr;
    void* y = nullptr;
    DeviceBuffer work;
    std::optional<std::string> declined;
  };
  struct Transposed {
    cusparseSpMatDescr_t mat = nullptr;
    cusparseConstDnVecDescr_t x_vec = nullptr;
    cusparseDnVecDescr_t y_vec = nullptr;
    const void* x = nullptr;
    void* y = nullptr;
    DeviceBuffer work;
  };

  cusparseHandle_t handle = nullptr;
  std::int64_t nrows = 0, ncols = 0, nnz = 0;
  cudaDataType value_type = CUDA_R_64F;
  DeviceBuffer row_ptr, col_idx, values;
  std::map<std::tuple<int, int, int>, Setup> setups;
  Transposed transposed;

  ~Impl() {
    for (auto& [key, s] : setups) release(s);
    if (transposed.x_vec != nullptr) cusparseDestroyDnVec(transposed.x_vec);
    if (transposed.y_vec != nullptr) cusparseDestroyDnVec(transposed.y_vec);
    if (transposed.mat != nullptr) cusparseDestroySpMat(transposed.mat);
    if (handle != nullptr) cusparseDestroy(handle);
  }

  static void release(Setup& s) {
    if (s.x_mat != nullptr) cusparseDestroyDnMat(s.x_mat);
    if (s.y_mat != nullptr) cusparseDestroyDnMat(s.y_mat);
    if (s.mat != nullptr) cusparseDestroySpMat(s.mat);
    s.x_mat = nullptr;
    s.y_mat = nullptr;
    s.mat = nullptr;
  }

  void create_csr(cusparseSpMatDescr_t* mat) {
    check_sparse(cusparseCreateCsr(mat, nrows, ncols, nnz, row_ptr.get(), col_idx.get(),
                                   values.get(), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                   CUSPARSE_INDEX_BASE_ZERO, value_type),
                 "cusparseCreateCsr");
  }

  template <class F>
  void with_scalars(double alpha, double beta, F&& f) {
    detail::with_scalars(value_type, alpha, beta, std::forward<F>(f));
  }

  Setup& setup(CusparseSpmmAlg alg, int k, DenseLayout layout, const void* x, void* y) {
    Setup& s = setups[{static_cast<int>(alg), k, static_cast<int>(layout)}];
    if (s.mat != nullptr && s.x == x && s.y == y) return s;
    if (s.declined && s.x == x && s.y == y) return s;
    release(s);
    s.declined.reset();
    s.x = x;
    s.y = y;
    create_csr(&s.mat);
    const bool rm = layout == DenseLayout::row_major;
    const cusparseOrder_t order = rm ? CUSPARSE_ORDER_ROW : CUSPARSE_ORDER_COL;
    check_sparse(cusparseCreateConstDnMat(&s.x_mat, ncols, k, rm ? k : ncols, x, value_type, order),
                 "cusparseCreateConstDnMat(X)");
    check_sparse(cusparseCreateDnMat(&s.y_mat, nrows, k, rm ? k : nrows, y, value_type, order),
                 "cusparseCreateDnMat(Y)");
    const cusparseSpMMAlg_t a = to_cusparse(alg);
    std::size_t bytes = 0;
    cusparseStatus_t st = CUSPARSE_STATUS_SUCCESS;
    with_scalars(1.0, 0.0, [&](const void* al, const void* be) {
      st = cusparseSpMM_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                   CUSPARSE_OPERATION_NON_TRANSPOSE, al, s.mat, s.x_mat, be,
                                   s.y_mat, value_type, a, &bytes);
    });
    if (st != CUSPARSE_STATUS_SUCCESS) {
      s.declined = fmt::format("cusparseSpMM_bufferSize: {}", cusparseGetErrorName(st));
      release(s);
      return s;
    }
    s.work = DeviceBuffer(std::max<std::size_t>(bytes, 1));
    with_scalars(1.0, 0.0, [&](const void* al, const void* be) {
      st = cusparseSpMM_preprocess(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                   CUSPARSE_OPERATION_NON_TRANSPOSE, al, s.mat, s.x_mat, be,
                                   s.y_mat, value_type, a, s.work.get());
    });
    // Preprocessing is optional; an algorithm without one may decline it.
    if (st != CUSPARSE_STATUS_SUCCESS && st != CUSPARSE_STATUS_NOT_SUPPORTED) {
      s.declined = fmt::format("cusparseSpMM_preprocess: {}", cusparseGetErrorName(st));
      release(s);
    }
    return s;
  }
};

CusparseSpmm::CusparseSpmm(const CsrMatrix& a, Precision precision)
    : impl_(std::make_unique<Impl>()) {
  if (a.nnz() > INT_MAX)
    throw InputError("<matrix>", 0,
                     fmt::format("{} nonzeros: the SpMM baseline uses 32-bit indices", a.nnz()));
  (void)probe_device();
  Impl& m = *impl_;
  check_sparse(cusparseCreate(&m.handle), "cusparseCreate");
  m.nrows = a.nrows;
  m.ncols = a.ncols;
  m.nnz = a.nnz();
  m.value_type = precision == Precision::f64 ? CUDA_R_64F : CUDA_R_32F;
  m.row_ptr = upload(std::vector<std::int32_t>(a.row_ptr.begin(), a.row_ptr.end()));
  m.col_idx = upload(a.col_idx);
  if (precision == Precision::f64) {
    m.values = upload(a.values);
  } else {
    m.values = upload(std::vector<float>(a.values.begin(), a.values.end()));
  }
}

CusparseSpmm::~CusparseSpmm() = default;

std::optional<std::string> CusparseSpmm::prepare(CusparseSpmmAlg alg, int k, DenseLayout layout,
                                                 const void* x, void* y) {
  return impl_->setup(alg, k, layout, x, y).declined;
}

void CusparseSpmm::spmm(CusparseSpmmAlg alg, int k, DenseLayout layout, const void* x, void* y,
                        double alpha, double beta, void* stream) {
  Impl& m = *impl_;
  Impl::Setup& s = m.setup(alg, k, layout, x, y);
  if (s.declined)
    throw InputError("<matrix>", 0, fmt::format("cuSPARSE {}: {}", to_string(alg), *s.declined));
  check_sparse(cusparseSetStream(m.handle, static_cast<cudaStream_t>(stream)), "cusparseSetStream");
  m.with_scalars(alpha, beta, [&](const void* a, const void* b) {
    check_sparse(
        cusparseSpMM(m.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                     a, s.mat, s.x_mat, b, s.y_mat, m.value_type, to_cusparse(alg), s.work.get()),
        "cusparseSpMM");
  });
}

void CusparseSpmm::spmv_transpose(const void* x, void* y, double alpha, double beta, void* stream) {
  Impl& m = *impl_;
  Impl::Transposed& t = m.transposed;
  if (t.mat == nullptr || t.x != x || t.y != y) {
    if (t.x_vec != nullptr) cusparseDestroyDnVec(t.x_vec);
    if (t.y_vec != nullptr) cusparseDestroyDnVec(t.y_vec);
    if (t.mat != nullptr) cusparseDestroySpMat(t.mat);
    m.create_csr(&t.mat);
    check_sparse(cusparseCreateConstDnVec(&t.x_vec, m.nrows, x, m.value_type),
                 "cusparseCreateConstDnVec(x)");
    check_sparse(cusparseCreateDnVec(&t.y_vec, m.ncols, y, m.value_type), "cusparseCreateDnVec(y)");
    t.x = x;
    t.y = y;
    std::size_t bytes = 0;
    m.with_scalars(1.0, 0.0, [&](const void* a, const void* b) {
      check_sparse(
          cusparseSpMV_bufferSize(m.handle, CUSPARSE_OPERATION_TRANSPOSE, a, t.mat, t.x_vec, b,
                                  t.y_vec, m.value_type, CUSPARSE_SPMV_CSR_ALG1, &bytes),
          "cusparseSpMV_bufferSize(transpose)");
    });
    t.work = DeviceBuffer(std::max<std::size_t>(bytes, 1));
    m.with_scalars(1.0, 0.0, [&](const void* a, const void* b) {
      const cusparseStatus_t st =
          cusparseSpMV_preprocess(m.handle, CUSPARSE_OPERATION_TRANSPOSE, a, t.mat, t.x_vec, b,
                                  t.y_vec, m.value_type, CUSPARSE_SPMV_CSR_ALG1, t.work.get());
      if (st != CUSPARSE_STATUS_NOT_SUPPORTED) check_sparse(st, "cusparseSpMV_preprocess");
    });
  }
  check_sparse(cusparseSetStream(m.handle, static_cast<cudaStream_t>(stream)), "cusparseSetStream");
  m.with_scalars(alpha, beta, [&](const void* a, const void* b) {
    check_sparse(cusparseSpMV(m.handle, CUSPARSE_OPERATION_TRANSPOSE, a, t.mat, t.x_vec, b, t.y_vec,
                              m.value_type, CUSPARSE_SPMV_CSR_ALG1, t.work.get()),
                 "cusparseSpMV(transpose)");
  });
}

}  // namespace spmvc::bench
