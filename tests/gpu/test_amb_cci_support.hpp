// Shared by the amb and cci GPU tests: the product on the device against the fp64 host CSR
// reference, and the matrices every format is checked on. Skipped without a GPU.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "spmvc/compiler/compiler.hpp"
#include "spmvc/compiler/test_vector.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

namespace spmvc::test {

inline bool amb_cci_have_device() {
  if (device_available()) return true;
  mark_device_missing();
  return false;
}

inline double amb_cci_tolerance(Precision p) { return compiler::result_tolerance(p); }

/// op's y = alpha*A*x + beta*y0 on the device (y poisoned with NaN when beta is zero).
inline std::vector<double> amb_cci_apply(const CsrMatrix& a, const Operator& op, double alpha,
                                         double beta) {
  const std::vector<double> x = codegen::test_vector(a.ncols, op.plan().precision);
  std::vector<double> y(static_cast<std::size_t>(a.nrows));
  for (std::size_t i = 0; i < y.size(); ++i)
    y[i] = beta == 0.0 ? std::numeric_limits<double>::quiet_NaN()
                       : 0.25 * static_cast<double>(i % 5) - 0.5;
  op.apply_host(x, y, alpha, beta);
  return y;
}

/// Relative error of the device product against the host reference.
inline double amb_cci_check(const CsrMatrix& a, const Operator& op, double alpha = 1.0,
                            double beta = 0.0) {
  const std::vector<double> x = codegen::test_vector(a.ncols, op.plan().precision);
  std::vector<double> ref(static_cast<std::size_t>(a.nrows));
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = 0.25 * static_cast<double>(i % 5) - 0.5;
  compiler::csr_reference_spmv(a, x, ref, alpha, beta);
  return compiler::relative_error(amb_cci_apply(a, op, alpha, beta), ref);
}

inline Options amb_cci_options(Precision p, FormatParams params) {
  Options o;
  o.precision = p;
  o.disk_cache = false;
  o.params = std::move(params);
  return o;
}

/// Calls f(name, matrix) for every public matrix with at least 10k nonzeros; returns how many.
inline int for_each_public_matrix(
    const std::function<void(const std::string&, const CsrMatrix&)>& f) {
  std::filesystem::path dir = shared_matrices();
  if (const char* env = std::getenv("SPMVC_MATRIX_DIR")) dir = env;
  if (dir.empty() || !std::filesystem::exists(dir / "index.csv")) return -1;
  std::ifstream index(dir / "index.csv");
  std::string line;
  std::getline(index, line);  // header
  int tested = 0;
  while (std::getline(index, line)) {
    std::stringstream ss(line);
    std::vector<std::string> cells;
    for (std::string cell; std::getline(ss, cell, ',') && cells.size() < 7;) cells.push_back(cell);
    if (cells.size() < 7 || cells[6] == "complex" || std::stoll(cells[5]) < 10000) continue;
    const std::filesystem::path file = dir / (cells[0] + ".mtx.xz");
    if (!std::filesystem::exists(file)) continue;
    f(cells[0], read_matrix_market(file));
    ++tested;
  }
  return tested;
}

}  // namespace spmvc::test
