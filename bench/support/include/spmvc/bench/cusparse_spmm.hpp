// cuSPARSE baselines for apply_many and apply_transpose: cusparseSpMM on CSR (ALG1, ALG2, ALG3)
// with dense X and Y in either layout, and cusparseSpMV with opA = TRANSPOSE.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "spmvc/dense.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/plan.hpp"

namespace spmvc::bench {

enum class CusparseSpmmAlg { csr_alg1, csr_alg2, csr_alg3 };
std::string_view to_string(CusparseSpmmAlg a);

/// The matrix uploaded as cuSPARSE CSR with 32-bit indices (InputError from 2^31 nonzeros).
class CusparseSpmm {
 public:
  CusparseSpmm(const CsrMatrix& a, Precision precision);
  ~CusparseSpmm();
  CusparseSpmm(const CusparseSpmm&) = delete;
  CusparseSpmm& operator=(const CusparseSpmm&) = delete;

  /// Prepares `alg` for (k, layout, x, y): descriptors, work buffer, cusparseSpMM_preprocess.
  /// Returns why cuSPARSE declines the combination (its status), or nullopt when it runs.
  std::optional<std::string> prepare(CusparseSpmmAlg alg, int k, DenseLayout layout, const void* x,
                                     void* y);
  /// Y = alpha*A*X + beta*Y with `alg`, prepared for these arguments first if it was not.
  void spmm(CusparseSpmmAlg alg, int k, DenseLayout layout, const void* x, void* y, double alpha,
            double beta, void* stream);
  /// y = alpha*A^T*x + beta*y: cusparseSpMV with opA = TRANSPOSE (CSR ALG1, the algorithm that
  /// takes a transposed CSR; preprocessed once per x and y).
  void spmv_transpose(const void* x, void* y, double alpha, double beta, void* stream);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace spmvc::bench
