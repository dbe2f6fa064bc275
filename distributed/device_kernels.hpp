// The small kernels the distributed operator launches itself (device_kernels.cu, compiled by
// nvcc): packing the values other ranks need, y = beta*y for a rank whose local block is empty,
// and adding the compacted ghost block's rows into y. Declared without CUDA headers; `stream` is a
// cudaStream_t, the result a cudaError_t.
#pragma once

#include <cstdint>

namespace spmvc::distributed::device {

/// out[k] = x[index[k]] for k < n; value_bytes 8 (double) or 4 (float).
int launch_gather(const void* x, const std::int32_t* index, void* out, std::int64_t n,
                  int value_bytes, void* stream);
/// y[i] = beta * y[i] for i < n (0 when beta is 0, whatever y held).
int launch_scale(void* y, double beta, std::int64_t n, int value_bytes, void* stream);

/// y[rows[i]] += part[i] for i < n (rows distinct, so no two threads add to one row).
int launch_scatter_add(void* y, const std::int32_t* rows, const void* part, std::int64_t n,
                       int value_bytes, void* stream);

}  // namespace spmvc::distributed::device
