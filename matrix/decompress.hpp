// Private to matrix/: whole-file input with transparent gzip/xz decompression, and the CSR
// row-normalisation step shared by the Matrix Market reader and csr_from_arrays.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "spmvc/matrix.hpp"

namespace spmvc::detail {

/// How a byte stream is compressed, judged by its magic bytes only (never by the file name:
/// downloaded files are often renamed or double-suffixed).
enum class Compression { kNone, kGzip, kXz };

Compression detect_compression(std::string_view bytes);

/// Reads the whole file into memory, decompressing gzip (1f 8b) or xz (FD 37 7A 58 5A 00) input.
/// Throws InputError naming `path` when the file cannot be read, the stream is truncated or
/// corrupt, the file or its decompressed text exceeds memory_budget(), or the first bytes of the
/// (decompressed) text cannot start a Matrix Market banner (checked before reading on).
std::string read_file_decompressed(const std::filesystem::path& path);

/// Decompresses a complete in-memory stream; `source` names it in errors. Concatenated gzip
/// members and concatenated xz streams are decoded as one, as gzip(1) and xz(1) do; anything
/// else after the last stream is reported as trailing garbage. Output beyond `max_output` bytes
/// is an InputError; with `check_banner`, so is output whose first bytes cannot start a Matrix
/// Market banner.
std::string gunzip(std::string_view bytes, const std::string& source,
                   std::uint64_t max_output = UINT64_MAX, bool check_banner = false);
std::string unxz(std::string_view bytes, const std::string& source,
                 std::uint64_t max_output = UINT64_MAX, bool check_banner = false);

/// Sorts every row's columns (stable, so duplicates are summed in input order and the result
/// does not depend on the sort's internals) and merges duplicate columns by summing their
/// values, compacting the arrays in place. Expects row_ptr to be valid already.
/// Returns the number of entries merged away. Duplicates whose sum overflows fp64 are an
/// InputError naming `source` and the entry, with row and column printed `index_base`-based.
std::int64_t sort_rows_sum_duplicates(CsrMatrix& a, const std::string& source, int index_base);

}  // namespace spmvc::detail
