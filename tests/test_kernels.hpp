// Small hand-written kernels the runtime tests compile, load and launch.
#pragma once

#include "spmvc/kernel.hpp"

namespace spmvc::test {

/// y[i] = 2*x[i] + i over n doubles: every output depends on its index, so a wrong launch
/// geometry or argument order shows.
inline KernelSource axpy_source() {
  KernelSource src;
  src.kernel_name = "spmvc_test_axpy";
  src.file_name = "spmvc_test_axpy.cu";
  src.source =
      "extern \"C\" __global__ void spmvc_test_axpy(const double* x, double* y, long long n) {\n"
      "  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) y[i] = 2.0 * x[i] + (double)i;\n"
      "}\n";
  src.block = 128;
  return src;
}

}  // namespace spmvc::test
