// cuSPARSE cusparseSpMV on CSR: the baseline every spmvc kernel is measured against.
#pragma once

#include <memory>
#include <string>

#include "spmvc/matrix.hpp"
#include "spmvc/plan.hpp"

namespace spmvc::runtime {

enum class CusparseAlg { csr_alg1, csr_alg2 };
std::string_view to_string(CusparseAlg a);

/// The matrix uploaded as cuSPARSE CSR (32-bit or 64-bit indices as nnz needs), with dense
/// vector descriptors over caller-provided device vectors.
class CusparseCsr {
 public:
  /// Uploads `a` in `precision` (f32_acc64 runs as f32: cuSPARSE has no such mode).
  CusparseCsr(const CsrMatrix& a, Precision precision);
  ~CusparseCsr();
  CusparseCsr(const CusparseCsr&) = delete;
  CusparseCsr& operator=(const CusparseCsr&) = delete;

  /// Allocates the work buffer and runs cusparseSpMV_preprocess for `alg` (once per alg).
  void prepare(CusparseAlg alg, const void* x, void* y);
  /// y = alpha*A*x + beta*y with `alg` (prepare() must have run for it).
  void spmv(CusparseAlg alg, const void* x, void* y, double alpha, double beta, void* stream);
  /// Version as "12.6.3".
  static std::string version();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace spmvc::runtime
