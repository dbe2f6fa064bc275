// What every GPU test file shares: the device check (a test with no device marks the run
// skipped), the tolerances, and one product on the device against the fp64 host reference.
#pragma once

#include <algorithm>
#include <limits>
#include <vector>

#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

namespace spmvc::test {

/// True with a device; otherwise marks the run as skipped (exit 77) and returns false.
inline bool have_device() {
  if (device_available()) return true;
  mark_device_missing();
  return false;
}

/// Options that force `params` (and so their format) at precision `p`, without the disk cache,
/// built by the host pipeline: the tests that force parameters check the host encoders' arrays
/// on the GPU (the GPU build has tests of its own).
inline Options forced(Precision p, const FormatParams& params) {
  Options o;
  o.build = BuildMode::host;
  o.precision = p;
  o.disk_cache = false;
  o.format = std::string(format_of(params));
  o.params = params;
  return o;
}

/// The accuracy every format must reach: fp64 1e-12, fp32 storage 1e-5 (relative, 2-norm).
inline double tolerance(Precision p) { return compiler::result_tolerance(p); }

/// Relative error of op's y = alpha*A*x + beta*y0 against the host CSR reference (x rounded to
/// the plan's precision first, so only the kernel's arithmetic is measured). With beta = 0, y
/// starts as NaN: the kernels must not read it, and must write every row.
inline double check(const CsrMatrix& a, const Operator& op, double alpha = 1.0, double beta = 0.0) {
  const Precision p = op.plan().precision;
  const std::vector<double> x = codegen::test_vector(a.ncols, p);
  std::vector<double> y0(static_cast<std::size_t>(a.nrows));
  for (std::size_t i = 0; i < y0.size(); ++i) y0[i] = 0.25 * static_cast<double>(i % 5) - 0.5;
  std::vector<double> y = y0, ref = y0;
  if (beta == 0.0) std::fill(y.begin(), y.end(), std::numeric_limits<double>::quiet_NaN());
  op.apply_host(x, y, alpha, beta);
  compiler::csr_reference_spmv(a, x, ref, alpha, beta);
  return compiler::relative_error(y, ref);
}

}  // namespace spmvc::test
