// Dense blocks of vectors: the X and Y of Operator::apply_many (Y = alpha*A*X + beta*Y).
#pragma once

#include <string_view>

namespace spmvc {

/// How a block of k vectors is stored. X (ncols x k) and Y (nrows x k) are dense with no gaps:
/// row-major puts element (i, j) at i*k + j; column-major at j*n + i (n = ncols for X, nrows for
/// Y), so each column is a vector as apply() takes it.
enum class DenseLayout { row_major, col_major };

/// "row" or "col".
std::string_view to_string(DenseLayout layout);
/// Parses "row" / "row_major" or "col" / "col_major"; InputError otherwise.
DenseLayout parse_dense_layout(std::string_view text);

/// Vectors one apply_many() call takes at most.
inline constexpr int kMaxDenseColumns = 64;

}  // namespace spmvc
