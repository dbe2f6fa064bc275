// cusparseSpMM as apply_many's engine (compiler::choose_spmm_engine): Y = alpha*A*X + beta*Y on
// the operator's plain CSR (32-bit offsets and columns, already on the device), with
// compiler::spmm_cusparse_algorithm's algorithm for the layout and precision. Each (k, layout) gets
// its descriptors, work buffer and cusparseSpMM_preprocess on first use; later calls only point the
// dense descriptors at the caller's X and Y and call cusparseSpMM.
#pragma once

#include <cstdint>
#include <memory>

#include "spmvc/dense.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/plan.hpp"

namespace spmvc::runtime {

class CusparseSpmmEngine {
 public:
  /// `a` in `precision` (f64 or f32; f32acc64 is refused, as cuSPARSE accumulates fp32 data in
  /// fp32). The arrays stay the caller's: they must outlive the engine.
  CusparseSpmmEngine(const DeviceCsr& a, Precision precision);
  ~CusparseSpmmEngine();
  CusparseSpmmEngine(const CusparseSpmmEngine&) = delete;
  CusparseSpmmEngine& operator=(const CusparseSpmmEngine&) = delete;

  /// Sets up (k, layout) ahead of its first multiply: descriptors, work buffer, preprocessing.
  /// Returns the algorithm's name: compiler::spmm_cusparse_algorithm's, or CSR_ALG1's where
  /// cuSPARSE declines that one.
  const char* prepare(int k, DenseLayout layout);
  /// Y = alpha * A * X + beta * Y, X (ncols x k) and Y (nrows x k) dense in `layout`, on
  /// `stream` (a cudaStream_t; nullptr for the default stream). Calls from several threads take
  /// turns.
  void apply(int k, DenseLayout layout, const void* x, void* y, double alpha, double beta,
             void* stream) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace spmvc::runtime
