// The host-side sparse matrix every stage of spmvc consumes, and the ways to get one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace spmvc {

/// A sparse matrix in 0-based CSR on the host. Column indices are 32-bit (the kernels index x
/// with 32-bit integers); row offsets are 64-bit so matrices with more than 2^31 nonzeros are
/// representable. Invariants (checked by `validate`): row_ptr has nrows+1 non-decreasing entries
/// starting at 0 and ending at nnz; every column index is in [0, ncols); columns are strictly
/// increasing within each row (no duplicates). Values are held in fp64.
struct CsrMatrix {
  std::int64_t nrows = 0;
  std::int64_t ncols = 0;
  std::vector<std::int64_t> row_ptr{0};
  std::vector<std::int32_t> col_idx;
  std::vector<double> values;

  std::int64_t nnz() const { return static_cast<std::int64_t>(col_idx.size()); }
  std::int64_t row_length(std::int64_t row) const { return row_ptr[row + 1] - row_ptr[row]; }
};

/// Throws InputError (source = `source`) naming the first broken invariant.
void validate(const CsrMatrix& a, const std::string& source = "<matrix>");

/// Builds a CsrMatrix from caller-held CSR arrays (0-based). Rows may be unsorted and may hold
/// duplicate columns: columns are sorted and duplicates summed. Anything else that is wrong
/// (sizes, offsets, out-of-range columns) is an InputError naming the array and position.
CsrMatrix csr_from_arrays(std::int64_t nrows, std::int64_t ncols,
                          std::span<const std::int64_t> row_ptr,
                          std::span<const std::int32_t> col_idx, std::span<const double> values);
CsrMatrix csr_from_arrays(std::int64_t nrows, std::int64_t ncols,
                          std::span<const std::int32_t> row_ptr,
                          std::span<const std::int32_t> col_idx, std::span<const double> values);

/// A CSR matrix whose arrays are already in device memory (for instance the ones a cuSPARSE
/// descriptor was made from). compile(DeviceCsr) builds on the GPU from them without copying:
/// the Operator reads these arrays in every multiply, so they must stay allocated and unchanged
/// for its lifetime.
struct DeviceCsr {
  std::int64_t nrows = 0, ncols = 0, nnz = 0;
  const std::int32_t* row_ptr = nullptr;  ///< nrows+1 offsets: row_ptr[0] = 0, row_ptr[nrows] = nnz
  const std::int32_t* col_idx = nullptr;  ///< nnz column indices in [0, ncols), any order in a row
  /// nnz values: double for Precision::f64, float for f32 and f32_acc64.
  const void* values = nullptr;
};

/// What the header of a Matrix Market file declared.
struct MatrixMarketHeader {
  std::string field;     // "real", "integer" or "pattern"
  std::string symmetry;  // "general", "symmetric" or "skew-symmetric"
  std::int64_t nrows = 0, ncols = 0;
  std::int64_t stored_entries = 0;  // entries listed in the file (before symmetric expansion)
  // Entries merged into an earlier one with the same (row, column), counted in the expanded
  // matrix: a repeated off-diagonal entry of a symmetric file counts once in each triangle.
  std::int64_t duplicates_summed = 0;
};

/// Reads a Matrix Market coordinate file: plain, gzip (.gz) or xz (.xz) compressed, detected
/// from the file's magic bytes. Symmetric and skew-symmetric files are expanded; duplicates
/// are summed; explicit zeros are kept; pattern entries get the value 1. Every malformed input
/// is an InputError naming the file and line.
CsrMatrix read_matrix_market(const std::filesystem::path& path,
                             MatrixMarketHeader* header = nullptr);

/// Parses Matrix Market text already in memory; `source` names it in errors. The text is not
/// decompressed: bytes that start with gzip, xz, bzip2 or zstd magic are refused naming the
/// format.
CsrMatrix parse_matrix_market(std::string_view text, const std::string& source,
                              MatrixMarketHeader* header = nullptr);

/// Writes `a` as a general real coordinate Matrix Market file (values printed round-trip exact).
void write_matrix_market(const CsrMatrix& a, const std::filesystem::path& path);
std::string to_matrix_market(const CsrMatrix& a);

}  // namespace spmvc
