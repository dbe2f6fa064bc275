// The generic tier: a CSR SpMV compiled into the library by nvcc (generic_csr.cu), which an
// operator runs while NVRTC compiles its specialised kernel in the background (operator.cpp,
// Options::tiered). It needs no NVRTC: the embedded fatbin is loaded like any other image.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "device.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/plan.hpp"

namespace spmvc::runtime {

/// The fatbin nvcc made of generic_csr.cu when the library was built (SASS for sm_90 and PTX).
std::span<const unsigned char> generic_csr_fatbin();

/// The entry point for `threads_per_row` lanes per row (1, 2, 4, ..., 32), `precision`, and
/// 64-bit (`offsets64`) or 32-bit row offsets, e.g. "spmvc_generic_csr_t8_f64_i32".
std::string generic_csr_entry(int threads_per_row, Precision precision, bool offsets64);

/// Lanes per row for a matrix of `nnz` nonzeros in `nrows` rows: the smallest power of two at
/// least the mean row length, at most a warp, so a typical row takes one step of its group and
/// short rows do not leave most of a warp idle.
int generic_threads_per_row(std::int64_t nnz, std::int64_t nrows);

/// Permutes a vector of `n` elements of `element_bytes` (4 or 8) on `stream`, with the kernels
/// the generic tier's image also holds: out[i] = in[map[i]] (gather), out[map[i]] = in[i]
/// (`scatter`), or a copy where `map` is null. Device memory throughout; `in` and `out` must
/// not overlap. Asynchronous; loads the entry point on the current device at its first use.
void permute_vector(const std::int32_t* map, std::int64_t n, const void* in, void* out,
                    int element_bytes, bool scatter, void* stream, int ordinal);

/// One operator's generic tier: CSR arrays on the device and the kernel that multiplies with
/// them. From a host matrix it uploads a copy (values in the precision's storage type); from a
/// DeviceCsr it reads the caller's arrays in place and owns no device memory.
class GenericCsr {
 public:
  GenericCsr(const CsrMatrix& a, Precision precision, int ordinal);
  /// Device bytes the copy of `a` takes (64-bit offsets, 32-bit columns, precision's values).
  static std::int64_t copy_bytes(const CsrMatrix& a, Precision precision);
  GenericCsr(const DeviceCsr& a, Precision precision, int ordinal);
  /// Loads the kernel that GenericCsr(DeviceCsr of `nrows` rows and `nnz` nonzeros, precision,
  /// ordinal) uses, so that its construction finds it loaded (a process's first load is a
  /// module load); on the current device.
  static void preload(std::int64_t nrows, std::int64_t nnz, Precision precision, int ordinal);
  /// The same for every row length: each threads-per-row entry of `precision` (one load of the
  /// image; spmvc::warm_up, before any matrix is known).
  static void preload(Precision precision, int ordinal);

  /// y = alpha*A*x + beta*y on `stream`, asynchronous like Operator::apply.
  void apply(const void* x, void* y, double alpha, double beta, void* stream) const;
  /// Device memory this tier owns (0 on the caller's arrays).
  std::int64_t device_bytes() const { return owned_bytes_; }
  const std::string& entry() const { return kernel_->name(); }

 private:
  void load(int ordinal, bool offsets64, std::int64_t nnz);

  Precision precision_;
  long long nrows_ = 0;
  int threads_per_row_ = 1;
  DeviceBuffer row_ptr_buffer_, col_idx_buffer_, values_buffer_;
  const void* row_ptr_ = nullptr;
  const void* col_idx_ = nullptr;
  const void* values_ = nullptr;
  std::int64_t owned_bytes_ = 0;
  std::shared_ptr<const LoadedKernel> kernel_;
};

}  // namespace spmvc::runtime
