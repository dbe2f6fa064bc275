// What the cuSPARSE engines (cusparse_engine.cpp: SpMV, cusparse_spmm.cpp: SpMM) share: a
// status check that throws DeviceError naming the call, and the scalars in the compute type.
#pragma once

#include <cusparse.h>
#include <library_types.h>

#include <fmt/format.h>

#include "spmvc/error.hpp"

namespace spmvc::runtime {

inline void check_cusparse(cusparseStatus_t s, const char* call) {
  if (s != CUSPARSE_STATUS_SUCCESS)
    throw DeviceError(call, static_cast<int>(s),
                      fmt::format("{} ({})", cusparseGetErrorName(s), cusparseGetErrorString(s)));
}

/// Calls f(alpha, beta) with the scalars in `type` (fp64, or fp32 otherwise), as host pointers.
template <class F>
void with_cusparse_scalars(cudaDataType type, double alpha, double beta, F&& f) {
  if (type == CUDA_R_64F) {
    f(static_cast<const void*>(&alpha), static_cast<const void*>(&beta));
  } else {
    const float fa = static_cast<float>(alpha), fb = static_cast<float>(beta);
    f(static_cast<const void*>(&fa), static_cast<const void*>(&fb));
  }
}

}  // namespace spmvc::runtime
