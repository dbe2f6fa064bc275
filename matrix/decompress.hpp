// Private to matrix/: Matrix Market text as a stream, read from a file or memory and decompressed
// (gzip, xz) as it is read, and the CSR row-normalisation step shared by the Matrix Market reader
// and csr_from_arrays.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "spmvc/matrix.hpp"

namespace spmvc::detail {

/// How a byte stream is compressed, judged by its magic bytes only (never by the file name:
/// downloaded files are often renamed or double-suffixed).
enum class Compression { kNone, kGzip, kXz };

Compression detect_compression(std::string_view bytes);

/// The name of the compressed format `bytes` start with ("gzip", "xz", "bzip2" or "zstd"), or
/// nullptr when they start with none of their magic bytes.
const char* compressed_format(std::string_view bytes);

/// Where the raw (possibly compressed) bytes come from.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  /// Up to n bytes into dst; 0 only at the end. Throws InputError on a read error.
  virtual std::size_t read(char* dst, std::size_t n) = 0;
  /// The total size when known up front (a regular file), else UINT64_MAX.
  virtual std::uint64_t size_hint() const { return UINT64_MAX; }
};

/// A file, opened at construction: InputError naming `path` when it is a directory or cannot be
/// opened. Pipes and devices (/dev/zero) work; their size is unknown.
std::unique_ptr<ByteSource> open_file_source(const std::filesystem::path& path);

/// Bytes already in memory (not copied: they must outlive the source). With `report_size`
/// false the source does not tell its size, like a pipe.
std::unique_ptr<ByteSource> memory_source(std::string_view bytes, bool report_size = true);

/// The text of a Matrix Market file, decompressed while it is read: gzip (1f 8b) and xz
/// (FD 37 7A 58 5A 00) input is detected from its magic bytes, anything else is read as is. Only
/// the decoder's own buffers are held, never the whole text. Concatenated gzip members and
/// concatenated xz streams (with xz's stream padding) are decoded as one, as gzip(1) and xz(1)
/// do; anything else after the last stream is reported as trailing garbage. Every error is an
/// InputError naming `source`:
/// - the file (when its size is known up front), or the text it decompresses to, is longer than
///   `cap` bytes (read_matrix_market passes the memory budget: a bomb stops there), or the xz
///   decoder would need more memory than memory_budget();
/// - the first bytes of the text cannot start a Matrix Market banner (checked as soon as they
///   are out, before reading on; bzip2 and zstd input is named as such); for compressed input,
///   damage found within check_rest's reach is reported instead, as the cause;
/// - the stream is truncated or corrupt.
class TextStream {
 public:
  /// `check_banner` false skips the banner check (for decoding something else).
  TextStream(std::unique_ptr<ByteSource> raw, std::string source, std::uint64_t cap,
             bool check_banner = true);
  ~TextStream();
  TextStream(const TextStream&) = delete;
  TextStream& operator=(const TextStream&) = delete;

  /// Up to n bytes of text into dst (fewer is not the end); 0 only at the end of the text.
  std::size_t read(char* dst, std::size_t n);
  /// At most this many bytes of text are still to come: exact for a plain file of known size,
  /// else what the cap allows.
  std::uint64_t remaining_bound() const;
  /// True when remaining_bound() comes from the data (a plain regular file), not from the cap.
  bool size_known() const;
  const std::string& source() const { return source_; }
  /// Decodes the rest of a compressed stream (up to 16 MiB of text), discarding it, so that
  /// damage or truncation further on is reported: the parser calls it before reporting an error
  /// in the text, since text decoded from a damaged stream is garbage and the damage is the
  /// error to report. Does nothing after the stream's own error or for plain text.
  void check_rest();

 private:
  struct Decoder;
  std::size_t read_checked(char* dst, std::size_t n);
  void start();
  std::size_t read_plain(char* dst, std::size_t n);
  std::size_t read_gzip(char* dst, std::size_t n);
  std::size_t read_xz(char* dst, std::size_t n);
  std::size_t fill_input(std::size_t want);
  [[noreturn]] void trailing_garbage(std::uint64_t already, const char* kind);
  void produced(const char* dst, std::size_t n);

  std::unique_ptr<ByteSource> raw_;
  std::string source_;
  std::uint64_t cap_;
  std::uint64_t raw_size_;
  Compression kind_ = Compression::kNone;
  std::string in_;  // raw bytes read but not yet decoded: in_[in_pos_, in_end_)
  std::size_t in_pos_ = 0, in_end_ = 0;
  bool raw_eof_ = false;
  bool started_ = false;
  bool done_ = false;
  bool failed_ = false;
  bool banner_failed_ = false;
  std::uint64_t raw_read_ = 0;
  std::uint64_t produced_ = 0;
  std::string head_;  // the text's first bytes, until the banner check has decided
  bool banner_pending_;
  std::unique_ptr<Decoder> decoder_;
};

/// Decompresses a complete in-memory gzip or xz stream through TextStream; `source` names it
/// in errors. Output beyond `max_output` bytes is an InputError; with `check_banner`, so is
/// output whose first bytes cannot start a Matrix Market banner.
std::string gunzip(std::string_view bytes, const std::string& source,
                   std::uint64_t max_output = UINT64_MAX, bool check_banner = false);
std::string unxz(std::string_view bytes, const std::string& source,
                 std::uint64_t max_output = UINT64_MAX, bool check_banner = false);

/// Parses Matrix Market text from a stream, holding at most `window` bytes of it at a time (a
/// line longer than that widens the window). read_matrix_market uses it with 1 MiB; tests and
/// the fuzz targets pass a few bytes to exercise every line split.
CsrMatrix parse_matrix_market_stream(TextStream& text, MatrixMarketHeader* header,
                                     std::size_t window);

/// Sorts every row's columns (stable, so duplicates are summed in input order and the result
/// does not depend on the sort's internals) and merges duplicate columns by summing their
/// values, compacting the arrays in place. Expects row_ptr to be valid already.
/// Returns the number of entries merged away. Duplicates whose sum overflows fp64 are an
/// InputError naming `source` and the entry, with row and column printed `index_base`-based.
std::int64_t sort_rows_sum_duplicates(CsrMatrix& a, const std::string& source, int index_base);

}  // namespace spmvc::detail
