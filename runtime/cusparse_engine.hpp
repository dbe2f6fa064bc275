// cuSPARSE as a plan's engine (spmvc::Engine::cusparse): cusparseSpMV with
// CUSPARSE_SPMV_CSR_ALG1, or CSR_ALG2 for deterministic plans (Plan::cusparse_algorithm), on the
// plan's plain CSR arrays (the csr format's row_ptr, col_idx and values, already on the device),
// its work buffer allocated and cusparseSpMV_preprocess run once when the operator is built, so
// apply() only sets the stream and the vectors and calls cusparseSpMV: no allocation, and
// capturable in a CUDA graph.
#pragma once

#include <cstdint>
#include <memory>

#include "spmvc/plan.hpp"

namespace spmvc::runtime {

class CusparseEngine {
 public:
  /// The CSR matrix of `nrows` x `ncols` with `nnz` nonzeros in device memory: 32-bit row
  /// offsets and column indices, values in `precision` (f64 or f32; f32acc64 is refused, as
  /// cuSPARSE accumulates fp32 data in fp32), multiplied with `algorithm`.
  CusparseEngine(std::int64_t nrows, std::int64_t ncols, std::int64_t nnz, const void* row_ptr,
                 const void* col_idx, const void* values, Precision precision,
                 CusparseAlgorithm algorithm);
  ~CusparseEngine();
  CusparseEngine(const CusparseEngine&) = delete;
  CusparseEngine& operator=(const CusparseEngine&) = delete;

  /// y = alpha * A * x + beta * y on `stream` (a cudaStream_t; nullptr for the default stream).
  /// Calls from several threads take turns (the handle's stream is set per call).
  void apply(const void* x, void* y, double alpha, double beta, void* stream) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace spmvc::runtime
