#include "cusparse_spmm.hpp"

#include <cusparse.h>
#include <library_types.h>

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "cusparse_calls.hpp"
#include "device.hpp"
#include "spmvc/error.hpp"

namespace spmvc::runtime {

namespace {

void check(cusparseStatus_t s, const char* call) { check_cusparse(s, call); }

// compiler::spmm_cusparse_algorithm's choice, and its name.
cusparseSpMMAlg_t algorithm(DenseLayout layout, cudaDataType type) {
  if (layout == DenseLayout::col_major) return CUSPARSE_SPMM_CSR_ALG1;
  return type == CUDA_R_64F ? CUSPARSE_SPMM_CSR_ALG2 : CUSPARSE_SPMM_CSR_ALG3;
}

const char* name_of(cusparseSpMMAlg_t alg) {
  switch (alg) {
    case CUSPARSE_SPMM_CSR_ALG2:
      return "cusparseSpMM_CSR_ALG2";
    case CUSPARSE_SPMM_CSR_ALG3:
      return "cusparseSpMM_CSR_ALG3";
    default:
      return "cusparseSpMM_CSR_ALG1";
  }
}

}  // namespace

struct CusparseSpmmEngine::State {
  // One descriptor set per (k, layout): preprocessing belongs to the matrix descriptor and the
  // dense shapes, so each pair has its own matrix descriptor over the same arrays.
  struct Setup {
    cusparseSpMatDescr_t mat = nullptr;
    cusparseDnMatDescr_t x = nullptr;
    cusparseDnMatDescr_t y = nullptr;
    cusparseSpMMAlg_t alg = CUSPARSE_SPMM_CSR_ALG1;
    DeviceBuffer work;
    Setup() = default;
    Setup(const Setup&) = delete;
    Setup& operator=(const Setup&) = delete;
    ~Setup() {
      if (x != nullptr) cusparseDestroyDnMat(x);
      if (y != nullptr) cusparseDestroyDnMat(y);
      if (mat != nullptr) cusparseDestroySpMat(mat);
    }
  };

  cusparseHandle_t handle = nullptr;
  DeviceCsr a;
  cudaDataType type = CUDA_R_64F;
  std::map<std::pair<int, DenseLayout>, Setup> setups;
  std::mutex mutex;

  ~State() {
    setups.clear();
    if (handle != nullptr) cusparseDestroy(handle);
  }

  // Calls f(alpha, beta) with the scalars in the compute type, as host pointers.
  template <class F>
  void with_scalars(double alpha, double beta, F&& f) const {
    with_cusparse_scalars(type, alpha, beta, std::forward<F>(f));
  }

  // The setup of (k, layout), made on first use. Called with `mutex` held.
  Setup& setup(int k, DenseLayout layout) {
    if (auto found = setups.find({k, layout}); found != setups.end()) return found->second;
    Setup& s = setups[{k, layout}];
    check(cusparseCreateCsr(&s.mat, a.nrows, a.ncols, a.nnz, const_cast<std::int32_t*>(a.row_ptr),
                            const_cast<std::int32_t*>(a.col_idx), const_cast<void*>(a.values),
                            CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, type),
          "cusparseCreateCsr");
    const bool rm = layout == DenseLayout::row_major;
    const cusparseOrder_t order = rm ? CUSPARSE_ORDER_ROW : CUSPARSE_ORDER_COL;
    const std::int64_t rows_x = std::max<std::int64_t>(a.ncols, 1);
    const std::int64_t rows_y = std::max<std::int64_t>(a.nrows, 1);
    // Placeholder arrays to describe X and Y by: the preprocessing reads the matrix only, and
    // apply() points the descriptors at the caller's arrays.
    const std::size_t vb = type == CUDA_R_64F ? 8 : 4;
    DeviceBuffer vx(static_cast<std::size_t>(rows_x * k) * vb);
    DeviceBuffer vy(static_cast<std::size_t>(rows_y * k) * vb);
    check(cusparseCreateDnMat(&s.x, a.ncols, k, rm ? k : rows_x, vx.get(), type, order),
          "cusparseCreateDnMat(X)");
    check(cusparseCreateDnMat(&s.y, a.nrows, k, rm ? k : rows_y, vy.get(), type, order),
          "cusparseCreateDnMat(Y)");
    std::size_t bytes = 0;
    s.alg = algorithm(layout, type);
    with_scalars(1.0, 0.0, [&](const void* alpha, const void* beta) {
      auto size = [&] {
        return cusparseSpMM_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                       CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, s.mat, s.x, beta,
                                       s.y, type, s.alg, &bytes);
      };
      cusparseStatus_t st = size();
      // CSR_ALG1 takes every layout and shape: the one to fall back on.
      if (st == CUSPARSE_STATUS_NOT_SUPPORTED && s.alg != CUSPARSE_SPMM_CSR_ALG1) {
        s.alg = CUSPARSE_SPMM_CSR_ALG1;
        st = size();
      }
      check(st, "cusparseSpMM_bufferSize");
    });
    s.work = DeviceBuffer(std::max<std::size_t>(bytes, 1));
    with_scalars(1.0, 0.0, [&](const void* alpha, const void* beta) {
      const cusparseStatus_t st = cusparseSpMM_preprocess(
          handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha, s.mat,
          s.x, beta, s.y, type, s.alg, s.work.get());
      // Preprocessing is an optional speed-up that an algorithm may decline.
      if (st != CUSPARSE_STATUS_NOT_SUPPORTED) check(st, "cusparseSpMM_preprocess");
    });
    synchronize();
    return s;
  }
};

CusparseSpmmEngine::CusparseSpmmEngine(const DeviceCsr& a, Precision precision)
    : state_(std::make_unique<State>()) {
  if (precision == Precision::f32_acc64)
    throw InputError("spmm_cusparse", 0,
                     "cuSPARSE accumulates fp32 data in fp32: not with f32acc64");
  if (a.nnz > std::numeric_limits<std::int32_t>::max())
    throw InputError("spmm_cusparse", 0,
                     fmt::format("{} nonzeros do not fit the plain CSR's 32-bit offsets", a.nnz));
  State& s = *state_;
  s.a = a;
  s.type = precision == Precision::f64 ? CUDA_R_64F : CUDA_R_32F;
  check(cusparseCreate(&s.handle), "cusparseCreate");
}

CusparseSpmmEngine::~CusparseSpmmEngine() = default;

const char* CusparseSpmmEngine::prepare(int k, DenseLayout layout) {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  return name_of(s.setup(k, layout).alg);
}

void CusparseSpmmEngine::apply(int k, DenseLayout layout, const void* x, void* y, double alpha,
                               double beta, void* stream) const {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  State::Setup& u = s.setup(k, layout);
  check(cusparseSetStream(s.handle, static_cast<cudaStream_t>(stream)), "cusparseSetStream");
  check(cusparseDnMatSetValues(u.x, const_cast<void*>(x)), "cusparseDnMatSetValues(X)");
  check(cusparseDnMatSetValues(u.y, y), "cusparseDnMatSetValues(Y)");
  s.with_scalars(alpha, beta, [&](const void* a, const void* b) {
    check(cusparseSpMM(s.handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                       a, u.mat, u.x, b, u.y, s.type, u.alg, u.work.get()),
          "cusparseSpMM");
  });
}

}  // namespace spmvc::runtime
