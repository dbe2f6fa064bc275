// What the format unit tests share: a format's host reference over its own encoding, against
// plain CSR.
#pragma once

#include <vector>

#include "formats/format.hpp"
#include "spmvc/compiler/compiler.hpp"

namespace spmvc::test {

/// Relative error of the host reference of `params`' format, over its encoding of `a` at
/// `precision`, against plain CSR (the values rounded to fp32 first for the fp32 precisions):
/// y = alpha*A*x + beta*y with x_i = 1 + (i % 7) / 4 and y_i = 0.5 - (i % 3) beforehand.
inline double reference_roundtrip_error(const CsrMatrix& a, const FormatParams& params,
                                        double alpha = 1.0, double beta = 0.0,
                                        Precision precision = Precision::f64) {
  const formats::FormatUnit& unit = formats::find_format(format_of(params));
  const Encoded e = unit.encode(a, params, precision);
  std::vector<double> x(static_cast<std::size_t>(a.ncols));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0 + static_cast<double>(i % 7) * 0.25;
  std::vector<double> y(static_cast<std::size_t>(a.nrows)), ref(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = ref[i] = 0.5 - static_cast<double>(i % 3);
  unit.reference_spmv(e, params, x, y, alpha, beta);
  CsrMatrix rounded = a;
  if (precision != Precision::f64) {
    for (double& v : rounded.values) v = static_cast<double>(static_cast<float>(v));
  }
  compiler::csr_reference_spmv(rounded, x, ref, alpha, beta);
  return compiler::relative_error(y, ref);
}

}  // namespace spmvc::test
