// eta, the BRO paper's space saving on index data (Tang et al., SC13, section 4.2.1):
// eta = 1 - C/O, C the compressed size of the index data, O its original size.
//
// O counts 32 bits per stored nonzero in each uncompressed index array the scheme replaces:
// one (the column index) for an ELL entry, two (row and column) for a COO entry, as in the
// paper's Table 4, where BRO-HYB matrices that are nearly all COO save about 45% (their 32-bit
// column indices stay). ELLPACK's padding is not counted in O, so eta never credits the slices
// for dropping it.
// C counts every bit the kernel reads to find its indices: the symbols with their padding (to
// whole symbols, the last slice's rows, the prefetch row), the bit-width tables, the per-slice
// numCol/symbol offsets (BRO-ELL), and for BRO-COO the interval tables and the plain column
// indices (padded to whole intervals).
#pragma once

#include "spmvc/matrix.hpp"
#include "spmvc/plan.hpp"

namespace spmvc::formats {

double bro_eta(const CsrMatrix& a, const BroEllParams& params);
double bro_eta(const CsrMatrix& a, const BroCooParams& params);
double bro_eta(const CsrMatrix& a, const BroHybParams& params);

}  // namespace spmvc::formats
