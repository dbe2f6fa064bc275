// cuSPARSE cusparseSpMV on CSR: the baseline every spmvc kernel is measured against.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "spmvc/matrix.hpp"
#include "spmvc/plan.hpp"

namespace spmvc::bench {

/// csr_alg1 and csr_alg2 run on the CSR arrays; sell_alg1 on a Sliced ELL copy (slices of
/// kCusparseSellSlice rows, built on first use).
enum class CusparseAlg { csr_alg1, csr_alg2, sell_alg1 };
std::string_view to_string(CusparseAlg a);

/// Rows per slice of the cuSPARSE Sliced ELL baseline (one warp).
inline constexpr std::int64_t kCusparseSellSlice = 32;
/// The Sliced ELL baseline applies while its padded size stays within this many times nnz (or
/// below 2^20 elements); beyond that (a few very long rows) it is skipped as not applicable.
inline constexpr std::int64_t kCusparseSellMaxPadding = 4;

/// How CusparseCsr uploads the CSR arrays: `plain` as a caller would (pageable cudaMemcpy of
/// each array, converted on the host first), `staged` through spmvc's pinned staging buffers
/// (the upload compile(CsrMatrix) uses), so both sides can be given the same upload.
enum class CusparseUpload { plain, staged };

/// The matrix uploaded as cuSPARSE CSR (32-bit or 64-bit indices as nnz needs), and as Sliced
/// ELL when sell_alg1 is first prepared, with dense vector descriptors over caller-provided
/// device vectors.
class CusparseCsr {
 public:
  /// Uploads `a` in `precision` (f32_acc64 runs as f32: cuSPARSE has no such mode). Indices are
  /// 32-bit when nnz < 2^31, else row offsets and column indices are both 64-bit (one index type
  /// per matrix, as cusparseSpMV documents it). Throws NoDeviceError without a device. `a` must
  /// outlive this object when sell_alg1 is used: its Sliced ELL copy is built from `a` on first
  /// use, so runs that never time SELL do not pay for it.
  CusparseCsr(const CsrMatrix& a, Precision precision,
              CusparseUpload upload = CusparseUpload::plain);
  ~CusparseCsr();
  CusparseCsr(const CusparseCsr&) = delete;
  CusparseCsr& operator=(const CusparseCsr&) = delete;

  /// Why `alg` cannot run on this matrix (SELL's padding past kCusparseSellMaxPadding x nnz, or
  /// 64-bit indices), or nullopt when it can.
  std::optional<std::string> not_applicable(CusparseAlg alg) const;

  /// Allocates the work buffer and runs cusparseSpMV_preprocess for `alg` (once per alg).
  void prepare(CusparseAlg alg, const void* x, void* y);
  /// Why prepare() went on without cusparseSpMV_preprocess for `alg` (it failed); empty when it
  /// ran or the algorithm has none.
  std::string note(CusparseAlg alg) const;
  /// y = alpha*A*x + beta*y with `alg`. x and y hold double for f64, float for f32 and
  /// f32_acc64. Runs prepare() first if it has not run for this alg with these x and y, so
  /// time calls only after one prepare() with the same vectors.
  void spmv(CusparseAlg alg, const void* x, void* y, double alpha, double beta, void* stream);
  /// Version as "12.6.3".
  static std::string version();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace spmvc::bench
