// Deterministic matrix generators: the classes the benchmarks need and the real matrices lack.
// The same arguments (and seed) always give the same matrix, on every machine.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "spmvc/matrix.hpp"

namespace spmvc::gen {

// The stencils are diffusion operators with a coefficient per grid point in [1, contrast]
// (log-uniform, deterministic from `seed`); a neighbour coupling is minus the harmonic mean of the
// two points' coefficients and the diagonal sums every neighbour offset's coupling (Dirichlet
// boundary), so they are symmetric positive definite. contrast = 1, the default, is the
// constant-coefficient Laplacian (-1 off the diagonal, the neighbour count on it); above 1 nearly
// every coupling is a distinct value, as in a real heterogeneous medium.

/// 2D 5-point stencil on an nx×ny grid (constant coefficient: 4 on the diagonal, -1 off it).
CsrMatrix stencil_2d_5pt(std::int64_t nx, std::int64_t ny, double contrast = 1.0,
                         std::uint64_t seed = 1);
/// 3D 7-point stencil on an nx×ny×nz grid.
CsrMatrix stencil_3d_7pt(std::int64_t nx, std::int64_t ny, std::int64_t nz, double contrast = 1.0,
                         std::uint64_t seed = 1);
/// 3D 27-point stencil on an nx×ny×nz grid (constant coefficient: 26 on the diagonal, -1 for
/// each neighbour).
CsrMatrix stencil_3d_27pt(std::int64_t nx, std::int64_t ny, std::int64_t nz, double contrast = 1.0,
                          std::uint64_t seed = 1);
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
/// Random geometric graph: n points uniform in the unit square, an edge (both directions) between
/// points closer than the radius that gives `degree` neighbours on average. Vertices are numbered
/// cell by cell of a grid of radius-sized cells (row-major), the spatial order such graphs are
/// usually stored in. A pattern matrix (every value 1), no self loops.
CsrMatrix random_geometric(std::int64_t n, double degree, std::uint64_t seed = 1);

/// The values of I_k ⊗ A's copies.
enum class ReplicaValues {
  /// Copy c's values are A's times a factor in (0.5, 2] drawn from (seed, c) (copy 0 keeps A's):
  /// distinct values grow with k as in a real matrix k times larger. A matrix whose values are
  /// all one number (pattern, unit weights) keeps it in every copy.
  scaled,
  /// Every copy repeats A's values (suite v1's replication: at most A's distinct values).
  repeated,
};

/// I_k ⊗ A: k copies of `a` down the diagonal (keeps each row's pattern, grows x past L2).
CsrMatrix replicate(const CsrMatrix& a, std::int64_t k,
                    ReplicaValues values = ReplicaValues::scaled, std::uint64_t seed = 1);

/// Builds a matrix from a spec such as "stencil27:nx=128", "stencil2d:nx=1024,ny=1024",
/// "stencil7:n=64,contrast=1000", "elasticity:n=40", "rgg:n=1000000,degree=16",
/// "rmat:scale=20,ef=16,seed=1", "random:n=100000,per_row=16", "banded:n=100000,hbw=8". Unknown
/// generators or keys are an InputError naming the spec.
CsrMatrix from_spec(std::string_view spec);
/// True when `text` names a generator (has the form "name:..." with a known name).
bool is_spec(std::string_view text);
/// One line per generator with its keys and defaults, for help texts.
std::string spec_help();

}  // namespace spmvc::gen
