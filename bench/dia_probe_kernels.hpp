// The diagonal probe's kernels (dia_probe_kernels.cu): row-per-thread SpMV over diagonal
// storage, 256-thread blocks on the default stream.
#pragma once

namespace dia_probe {

constexpr int kMaxDiagonals = 64;

/// y[r] = sum over the ndiag diagonals d of val[d*n + r] * x[r + off[d]].
template <typename T>
void launch_full(int n, int ndiag, const int* off, const T* val, const T* x, T* y);

/// The symmetric form: nlower lower offsets (off < 0) in `off`, their values in `val` (row r of
/// diagonal d at val[d*n + r]), the main diagonal in `diag`; the upper entries read mirrored.
template <typename T>
void launch_sym(int n, int nlower, const int* off, const T* val, const T* diag, const T* x, T* y);

}  // namespace dia_probe
