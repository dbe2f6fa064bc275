#include "cusparse_engine.hpp"

#include <cusparse.h>
#include <library_types.h>

#include <algorithm>
#include <limits>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "cusparse_calls.hpp"
#include "device.hpp"
#include "spmvc/error.hpp"

namespace spmvc::runtime {

namespace {

void check(cusparseStatus_t s, const char* call) { check_cusparse(s, call); }

}  // namespace

struct CusparseEngine::State {
  cusparseHandle_t handle = nullptr;
  cusparseSpMatDescr_t mat = nullptr;
  // Non-const descriptors for both vectors: cusparseDnVecSetValues points them at each call's x
  // and y (x is only read: cusparseSpMV takes it as a const descriptor).
  cusparseDnVecDescr_t x = nullptr;
  cusparseDnVecDescr_t y = nullptr;
  cudaDataType type = CUDA_R_64F;
  cusparseSpMVAlg_t algorithm = CUSPARSE_SPMV_CSR_ALG1;
  DeviceBuffer work;
  std::mutex mutex;

  ~State() {
    if (x != nullptr) cusparseDestroyDnVec(x);
    if (y != nullptr) cusparseDestroyDnVec(y);
    if (mat != nullptr) cusparseDestroySpMat(mat);
    if (handle != nullptr) cusparseDestroy(handle);
  }

  // Calls f(alpha, beta) with the scalars in the compute type, as host pointers.
  template <class F>
  void with_scalars(double alpha, double beta, F&& f) const {
    with_cusparse_scalars(type, alpha, beta, std::forward<F>(f));
  }
};

CusparseEngine::CusparseEngine(std::int64_t nrows, std::int64_t ncols, std::int64_t nnz,
                               const void* row_ptr, const void* col_idx, const void* values,
                               Precision precision, CusparseAlgorithm algorithm)
    : state_(std::make_unique<State>()) {
  if (precision == Precision::f32_acc64)
    throw InputError("cusparse", 0, "cuSPARSE accumulates fp32 data in fp32: not with f32acc64");
  if (nnz > std::numeric_limits<std::int32_t>::max())
    throw InputError("cusparse", 0,
                     fmt::format("{} nonzeros need 64-bit row offsets; the cuSPARSE engine takes "
                                 "the csr plan's 32-bit ones",
                                 nnz));
  State& s = *state_;
  s.type = precision == Precision::f64 ? CUDA_R_64F : CUDA_R_32F;
  s.algorithm =
      algorithm == CusparseAlgorithm::csr_alg2 ? CUSPARSE_SPMV_CSR_ALG2 : CUSPARSE_SPMV_CSR_ALG1;
  check(cusparseCreate(&s.handle), "cusparseCreate");
  // cuSPARSE's CSR takes non-const pointers; it only reads them in SpMV.
  check(cusparseCreateCsr(&s.mat, nrows, ncols, nnz, const_cast<void*>(row_ptr),
                          const_cast<void*>(col_idx), const_cast<void*>(values), CUSPARSE_INDEX_32I,
                          CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, s.type),
        "cusparseCreateCsr");
  // The vectors need some device pointer to be described; the preprocessing reads none of them
  // (the analysis is of the matrix), and apply() points them at the caller's arrays.
  DeviceBuffer vx(static_cast<std::size_t>(std::max<std::int64_t>(ncols, 1)) * 8);
  DeviceBuffer vy(static_cast<std::size_t>(std::max<std::int64_t>(nrows, 1)) * 8);
  check(cusparseCreateDnVec(&s.x, ncols, vx.get(), s.type), "cusparseCreateDnVec(x)");
  check(cusparseCreateDnVec(&s.y, nrows, vy.get(), s.type), "cusparseCreateDnVec(y)");
  std::size_t bytes = 0;
  s.with_scalars(1.0, 0.0, [&](const void* alpha, const void* beta) {
    check(cusparseSpMV_bufferSize(s.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, s.mat, s.x,
                                  beta, s.y, s.type, s.algorithm, &bytes),
          "cusparseSpMV_bufferSize");
  });
  s.work = DeviceBuffer(std::max<std::size_t>(bytes, 1));
  s.with_scalars(1.0, 0.0, [&](const void* alpha, const void* beta) {
    const cusparseStatus_t st =
        cusparseSpMV_preprocess(s.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, s.mat, s.x, beta,
                                s.y, s.type, s.algorithm, s.work.get());
    // Preprocessing is an optional speed-up that an algorithm may decline.
    if (st != CUSPARSE_STATUS_NOT_SUPPORTED) check(st, "cusparseSpMV_preprocess");
  });
  synchronize();
}

CusparseEngine::~CusparseEngine() = default;

void CusparseEngine::apply(const void* x, void* y, double alpha, double beta, void* stream) const {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  check(cusparseSetStream(s.handle, static_cast<cudaStream_t>(stream)), "cusparseSetStream");
  check(cusparseDnVecSetValues(s.x, const_cast<void*>(x)), "cusparseDnVecSetValues(x)");
  check(cusparseDnVecSetValues(s.y, y), "cusparseDnVecSetValues(y)");
  s.with_scalars(alpha, beta, [&](const void* a, const void* b) {
    check(cusparseSpMV(s.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, a, s.mat, s.x, b, s.y, s.type,
                       s.algorithm, s.work.get()),
          "cusparseSpMV");
  });
}

}  // namespace spmvc::runtime
