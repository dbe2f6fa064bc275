// What the cuSPARSE baselines (cusparse.cpp: SpMV; cusparse_spmm.cpp: SpMM and the transposed
// SpMV) share: status checks, uploads and scalars in the matrix's value type. Private to
// bench/support.
#pragma once

#include <cusparse.h>
#include <library_types.h>

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "device.hpp"
#include "spmvc/error.hpp"

namespace spmvc::bench::detail {

/// A cuSPARSE status other than success as a DeviceError naming the call.
inline void check_sparse(cusparseStatus_t s, const char* call) {
  if (s != CUSPARSE_STATUS_SUCCESS)
    throw DeviceError(call, static_cast<int>(s),
                      fmt::format("{} ({})", cusparseGetErrorName(s), cusparseGetErrorString(s)));
}

/// Uploads `host` (at least one element's room, so cuSPARSE never sees a null array for an
/// empty matrix).
template <class T>
runtime::DeviceBuffer upload(const std::vector<T>& host) {
  runtime::DeviceBuffer b(std::max<std::size_t>(host.size(), 1) * sizeof(T));
  if (!host.empty()) b.upload(host.data(), host.size() * sizeof(T));
  return b;
}

/// Calls f(&alpha, &beta) with the scalars in `value_type` (double for CUDA_R_64F, else float),
/// as cuSPARSE reads them.
template <class F>
void with_scalars(cudaDataType value_type, double alpha, double beta, F&& f) {
  if (value_type == CUDA_R_64F) {
    f(static_cast<const void*>(&alpha), static_cast<const void*>(&beta));
    return;
  }
  const float a = static_cast<float>(alpha), b = static_cast<float>(beta);
  f(static_cast<const void*>(&a), static_cast<const void*>(&b));
}

}  // namespace spmvc::bench::detail
