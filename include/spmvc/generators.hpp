// Deterministic matrix generators: the classes the benchmarks need and the real matrices lack.
// The same arguments (and seed) always give the same matrix, on every machine.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "spmvc/matrix.hpp"

namespace spmvc::gen {

/// 2D 5-point Laplacian on an nx×ny grid (4 on the diagonal, -1 off it).
CsrMatrix stencil_2d_5pt(std::int64_t nx, std::int64_t ny);
/// 3D 7-point Laplacian on an nx×ny×nz grid.
CsrMatrix stencil_3d_7pt(std::int64_t nx, std::int64_t ny, std::int64_t nz);
/// 3D 27-point stencil on an nx×ny×nz grid (26 on the diagonal, -1 for each neighbour).
CsrMatrix stencil_3d_27pt(std::int64_t nx, std::int64_t ny, std::int64_t nz);
/// 3D linear elasticity pattern: a 27-point grid stencil whose entries are dense 3×3 blocks
/// (3 unknowns per grid point), values deterministic from `seed`, diagonally dominant.
CsrMatrix elasticity_3d(std::int64_t nx, std::int64_t ny, std::int64_t nz, std::uint64_t seed = 1);
/// Graph500 Kronecker (R-MAT) graph: 2^scale vertices, edge_factor·2^scale edges drawn with
/// probabilities (a, b, c, 1-a-b-c), vertex labels permuted, duplicates merged, self loops kept.
CsrMatrix rmat(int scale, int edge_factor, std::uint64_t seed = 1, double a = 0.57, double b = 0.19,
               double c = 0.19);
/// Random matrix with exactly `per_row` distinct uniformly random columns in every row.
CsrMatrix random_uniform(std::int64_t nrows, std::int64_t ncols, std::int64_t per_row,
                         std::uint64_t seed = 1);
/// Banded n×n matrix: every entry with |i-j| <= half_bandwidth present, values from `seed`.
CsrMatrix banded(std::int64_t n, std::int64_t half_bandwidth, std::uint64_t seed = 1);
/// I_k ⊗ A: k copies of `a` down the diagonal (keeps each row's pattern, grows x past L2).
CsrMatrix replicate(const CsrMatrix& a, std::int64_t k);

/// Builds a matrix from a spec such as "stencil27:nx=128", "stencil2d:nx=1024,ny=1024",
/// "stencil7:n=64", "elasticity:n=40", "rmat:scale=20,ef=16,seed=1", "random:n=100000,per_row=16",
/// "banded:n=100000,hbw=8". Unknown generators or keys are an InputError naming the spec.
CsrMatrix from_spec(std::string_view spec);
/// True when `text` names a generator (has the form "name:..." with a known name).
bool is_spec(std::string_view text);
/// One line per generator with its keys and defaults, for help texts.
std::string spec_help();

}  // namespace spmvc::gen
