// Matrix Market coordinate reader and writer.
//
// The reader walks the text once with a hand-written tokenizer: std::from_chars for numbers, a
// running line counter for error messages, no per-entry allocation. A file is not held whole:
// the parser sees a window of the (decompressed) text holding at least one complete line, and
// refills it from the stream when the next line is not all in it, so memory follows the entries
// read, not the size of the text. Entries go to COO arrays, then to CSR by counting sort (row
// counts, prefix sum, scatter), then each row is sorted and its duplicates summed. Files written
// column-major (as most tools do) scatter into already-sorted rows, so the sort is usually a
// linear check.
//
// What is accepted (and what is not) follows the NIST Matrix Market specification
// (math.nist.gov/MatrixMarket/reports/MMformat.ps): keywords are case-insensitive; comment
// lines start with '%'; blank lines are tolerated anywhere after the banner; symmetric and
// skew-symmetric files list only the lower triangle. Every deviation is an InputError naming
// the file and 1-based line.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "decompress.hpp"
#include "spmvc/error.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/memory_budget.hpp"

namespace spmvc {

namespace {

constexpr std::int64_t kMaxIndex = std::numeric_limits<std::int32_t>::max();
// The shortest possible entry line ("1 1\n") is 4 bytes: the text left after the size line bounds
// how many entries a file can hold, whatever its size line declares.
constexpr std::int64_t kMinEntryBytes = 4;
// Integers beyond 2^53 cannot be held exactly in the fp64 values array.
constexpr std::int64_t kMaxExactInteger = std::int64_t{1} << 53;

enum class Field { kReal, kInteger, kPattern };
enum class Symmetry { kGeneral, kSymmetric, kSkew };

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
bool is_line_end(const char* p, const char* end) { return p == end || *p == '\n'; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// For quoting a token in an error without dumping a megabyte of binary garbage.
std::string quote(std::string_view token) {
  std::string s;
  for (char c : token.substr(0, 40)) {
    const auto u = static_cast<unsigned char>(c);
    s += (u >= 0x20 && u < 0x7f) ? c : '?';
  }
  if (token.size() > 40) s += "...";
  return "'" + s + "'";
}

class Parser {
 public:
  // Over text already in memory.
  Parser(std::string_view text, const std::string& source)
      : p_(text.data()), end_(text.data() + text.size()), source_(source), eof_(true) {
    if (!text.empty()) last_char_ = text.back();
  }
  // Over a stream, `window` bytes at a time (more for a longer line).
  Parser(detail::TextStream& stream, std::size_t window)
      : source_(stream.source()), stream_(&stream), window_(std::max<std::size_t>(window, 1)) {}

  CsrMatrix parse(MatrixMarketHeader* header);

 private:
  [[noreturn]] void fail(const std::string& detail) const {
    throw InputError(source_, line_, detail);
  }

  // Makes sure the window holds the whole line p_ is on: a '\n' at or after p_, or the end of
  // the text. Every token function below then stays inside [p_, end_).
  void ensure_line() {
    if (eof_ || p_ < line_limit_) return;
    refill();
  }
  void refill();
  // Bytes of text still to come, at most (exact for text in memory or a plain file).
  std::uint64_t remaining_bound() const {
    return static_cast<std::uint64_t>(end_ - p_) + (stream_ ? stream_->remaining_bound() : 0);
  }
  bool size_known() const { return stream_ == nullptr || stream_->size_known(); }
  // Bytes one stored entry costs until the CSR is built: staging COO (row, column, value), then
  // its CSR column and value, twice for a mirrored file.
  double entry_bytes() const { return 16.0 + 12.0 * (symmetry_ != Symmetry::kGeneral ? 2.0 : 1.0); }

  void skip_blanks() {
    while (p_ != end_ && is_blank(*p_)) ++p_;
  }
  std::string_view next_token() {
    skip_blanks();
    const char* b = p_;
    while (p_ != end_ && *p_ != '\n' && !is_blank(*p_)) ++p_;
    return {b, static_cast<std::size_t>(p_ - b)};
  }
  std::string_view peek_token() const {
    const char* q = p_;
    while (q != end_ && is_blank(*q)) ++q;
    const char* b = q;
    while (q != end_ && *q != '\n' && !is_blank(*q)) ++q;
    return {b, static_cast<std::size_t>(q - b)};
  }
  // Consumes the rest of the current line, which must hold nothing but whitespace.
  void end_line(const char* what) {
    skip_blanks();
    if (!is_line_end(p_, end_)) {
      fail(fmt::format("extra token {} after {}", quote(peek_token()), what));
    }
    if (p_ != end_) {
      ++p_;
      ++line_;
    }
  }
  void skip_line() {
    const void* nl = std::memchr(p_, '\n', static_cast<std::size_t>(end_ - p_));
    p_ = nl ? static_cast<const char*>(nl) + 1 : end_;
    if (nl) ++line_;
  }
  // Skips blank and comment lines; false at end of text.
  bool skip_to_content() {
    for (;;) {
      ensure_line();
      skip_blanks();
      if (p_ == end_) return false;
      if (*p_ == '\n' || *p_ == '%') {
        skip_line();
        continue;
      }
      return true;
    }
  }

  void parse_banner();
  void parse_size_line();
  std::int64_t parse_integer(const char* what);
  std::int64_t parse_index(const char* what, std::int64_t limit);
  double parse_value();
  [[noreturn]] void fail_number(const char* what, const char* kind);

  const char* p_ = nullptr;
  const char* end_ = nullptr;
  const std::string& source_;
  std::uint64_t line_ = 1;  // 1 + the newlines consumed
  // The stream and the window onto it; p_ < line_limit_ means a '\n' lies in [p_, end_).
  detail::TextStream* stream_ = nullptr;
  std::size_t window_ = 0;
  std::string buf_;
  const char* line_limit_ = nullptr;
  bool eof_ = false;
  char last_char_ = '\n';  // the text's last byte seen so far

  Field field_ = Field::kReal;
  Symmetry symmetry_ = Symmetry::kGeneral;
  MatrixMarketHeader header_;
};

void Parser::refill() {
  // Keep the unread part of the window (the start of the current line), then read until the
  // window holds a '\n' or the text ends. A line longer than the window widens it: its length
  // is bounded by the stream's cap.
  for (;;) {
    const auto keep = static_cast<std::size_t>(end_ - p_);
    if (buf_.size() < window_) buf_.resize(window_);
    if (keep > 0 && p_ != buf_.data()) std::memmove(buf_.data(), p_, keep);
    if (keep == buf_.size()) buf_.resize(buf_.size() * 2);
    const std::size_t got = stream_->read(buf_.data() + keep, buf_.size() - keep);
    p_ = buf_.data();
    end_ = p_ + keep + got;
    if (got == 0) {
      eof_ = true;
      return;
    }
    last_char_ = *(end_ - 1);
    const char* scan = p_ + keep;
    const void* nl = memrchr(scan, '\n', got);
    if (nl) {
      line_limit_ = static_cast<const char*>(nl) + 1;
      return;
    }
    line_limit_ = nullptr;
  }
}

void Parser::parse_banner() {
  ensure_line();
  if (p_ == end_) fail("file is empty (expected a '%%MatrixMarket' banner)");
  const char* compressed = detail::compressed_format(std::string_view(p_, end_ - p_));
  const std::string_view banner = next_token();
  if (!iequals(banner, "%%MatrixMarket")) {
    // Compressed bytes handed over as text: say what they are (only a file or stream read by
    // read_matrix_market is decompressed).
    if (compressed) {
      fail(
          fmt::format("missing Matrix Market banner: the text is {}-compressed data, not "
                      "Matrix Market text (read_matrix_market decompresses gzip and xz files)",
                      compressed));
    }
    fail(
        fmt::format("missing Matrix Market banner: the first line must start with "
                    "'%%MatrixMarket', found {}",
                    quote(banner)));
  }
  const std::string_view object = next_token();
  const std::string_view format = next_token();
  const std::string_view field = next_token();
  const std::string_view symmetry = next_token();
  if (symmetry.empty()) {
    fail("malformed banner: expected '%%MatrixMarket matrix coordinate <field> <symmetry>'");
  }
  if (!iequals(object, "matrix")) {
    fail(fmt::format("unsupported object {} in banner: only 'matrix' is supported", quote(object)));
  }
  if (iequals(format, "array")) {
    fail("array (dense) format is not supported: only 'coordinate' (sparse) files can be read");
  }
  if (!iequals(format, "coordinate")) {
    fail(fmt::format("unknown format {} in banner: expected 'coordinate'", quote(format)));
  }
  if (iequals(field, "real")) {
    field_ = Field::kReal;
    header_.field = "real";
  } else if (iequals(field, "integer")) {
    field_ = Field::kInteger;
    header_.field = "integer";
  } else if (iequals(field, "pattern")) {
    field_ = Field::kPattern;
    header_.field = "pattern";
  } else if (iequals(field, "complex")) {
    fail("complex field is not supported: spmvc handles real, integer and pattern matrices");
  } else {
    fail(
        fmt::format("unknown field {} in banner: expected real, integer or pattern", quote(field)));
  }
  if (iequals(symmetry, "general")) {
    symmetry_ = Symmetry::kGeneral;
    header_.symmetry = "general";
  } else if (iequals(symmetry, "symmetric")) {
    symmetry_ = Symmetry::kSymmetric;
    header_.symmetry = "symmetric";
  } else if (iequals(symmetry, "skew-symmetric")) {
    symmetry_ = Symmetry::kSkew;
    header_.symmetry = "skew-symmetric";
  } else if (iequals(symmetry, "hermitian")) {
    fail("hermitian symmetry is not supported (it implies complex values)");
  } else {
    fail(
        fmt::format("unknown symmetry {} in banner: expected general, symmetric or "
                    "skew-symmetric",
                    quote(symmetry)));
  }
  end_line("the banner");
}

void Parser::fail_number(const char* what, const char* kind) {
  const std::string_view token = peek_token();
  if (token.empty()) fail(fmt::format("missing {} (line ends early)", what));
  fail(fmt::format("{} {} is not {}", what, quote(token), kind));
}

std::int64_t Parser::parse_integer(const char* what) {
  skip_blanks();
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(p_, end_, v);
  if (ptr == p_ || (ptr != end_ && *ptr != '\n' && !is_blank(*ptr))) {
    fail_number(what, "an integer");
  }
  if (ec == std::errc::result_out_of_range) {
    fail(fmt::format("{} {} is too large", what, quote(peek_token())));
  }
  p_ = ptr;
  return v;
}

// 1-based index in [1, limit]; returned 0-based. Out-of-range values are reported as written.
std::int64_t Parser::parse_index(const char* what, std::int64_t limit) {
  skip_blanks();
  // Fast path for the common case, plain digits followed by a separator: it is inlined here,
  // where std::from_chars was a third of the parse time. Anything else (signs, overlong
  // numbers, garbage) goes through parse_integer, which also words the errors.
  {
    const char* q = p_;
    std::int64_t v = 0;
    int digits = 0;
    while (q != end_ && static_cast<unsigned>(*q - '0') < 10 && digits < 18) {
      v = v * 10 + (*q - '0');
      ++q;
      ++digits;
    }
    if (digits > 0 && digits < 18 && (q == end_ || *q == '\n' || is_blank(*q)) && v >= 1 &&
        v <= limit) {
      p_ = q;
      return v - 1;
    }
  }
  const char* start = p_;
  const std::int64_t v = parse_integer(what);
  if (v < 1 || v > limit) {
    p_ = start;
    fail(fmt::format("{} {} is out of range [1, {}] (Matrix Market indices are 1-based)", what, v,
                     limit));
  }
  return v - 1;
}

double Parser::parse_value() {
  skip_blanks();
  const char* b = p_;
  // from_chars does not take a leading '+', which some writers emit.
  if (b != end_ && *b == '+' && b + 1 != end_ && *(b + 1) != '-') ++b;
  if (field_ == Field::kInteger) {
    std::int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(b, end_, v);
    if (ptr == b || (ptr != end_ && *ptr != '\n' && !is_blank(*ptr))) {
      fail_number("value", "an integer (the banner declares an integer field)");
    }
    if (ec == std::errc::result_out_of_range || v > kMaxExactInteger || v < -kMaxExactInteger) {
      fail(fmt::format("integer value {} cannot be held exactly in fp64 (|v| > 2^53)",
                       quote(peek_token())));
    }
    p_ = ptr;
    return static_cast<double>(v);
  }
  double v = 0;
  const auto [ptr, ec] = std::from_chars(b, end_, v, std::chars_format::general);
  if (ptr == b || (ptr != end_ && *ptr != '\n' && !is_blank(*ptr))) {
    fail_number("value", "a real number");
  }
  if (ec == std::errc::result_out_of_range) {
    // from_chars reports both overflow and underflow this way and leaves v untouched; strtod
    // tells them apart. Underflow rounds to zero or a subnormal, as any reader of the decimal
    // text would; overflow has no finite value and is an error.
    const std::string token(b, ptr);
    errno = 0;
    v = std::strtod(token.c_str(), nullptr);
    if (std::isinf(v)) fail(fmt::format("value {} overflows fp64", quote(token)));
  }
  // inf and nan are rejected: no Matrix Market writer produces them for a valid matrix, they
  // poison every SpMV result they touch, and a file holding them is far more often corrupt
  // than intended.
  if (!std::isfinite(v)) {
    fail(fmt::format("value {} is not a finite number (inf and nan are rejected)",
                     quote(std::string_view(b, static_cast<std::size_t>(ptr - b)))));
  }
  p_ = ptr;
  return v;
}

void Parser::parse_size_line() {
  if (!skip_to_content()) fail("missing size line: expected '<rows> <columns> <entries>'");
  auto size_value = [&](const char* what) {
    if (is_line_end(p_, end_) || peek_token().empty()) {
      fail(fmt::format("malformed size line: missing {} (expected '<rows> <columns> <entries>')",
                       what));
    }
    if (peek_token().front() == '-') {
      fail(fmt::format("size line: {} {} is negative", what, quote(peek_token())));
    }
    return parse_integer(what);
  };
  header_.nrows = size_value("row count");
  header_.ncols = size_value("column count");
  header_.stored_entries = size_value("entry count");
  if (header_.ncols > kMaxIndex) {
    fail(fmt::format("column count {} exceeds 2^31-1: spmvc column indices are 32-bit",
                     header_.ncols));
  }
  // Rows are stored 32-bit in the COO staging arrays, and a row count beyond that would also
  // allocate an enormous row_ptr from a few bytes of header.
  if (header_.nrows > kMaxIndex) {
    fail(fmt::format("row count {} exceeds 2^31-1, the largest row count spmvc supports",
                     header_.nrows));
  }
  if (symmetry_ != Symmetry::kGeneral && header_.nrows != header_.ncols) {
    fail(fmt::format("a {} matrix must be square, but the size line declares {} x {}",
                     header_.symmetry, header_.nrows, header_.ncols));
  }
  // The size line alone must not drive allocations: the row offsets (nrows+1 of them) are
  // allocated before any entry is read, so their size is checked against the budget here. The
  // entry arrays are held to what is left of the budget as entries are read (parse), never from
  // the declared count, so that plain text and compressed text (whose size is not known) are
  // refused alike.
  check_memory_budget(source_, line_,
                      fmt::format("the size line declares {} x {} with {} entries", header_.nrows,
                                  header_.ncols, header_.stored_entries),
                      8.0 * (static_cast<double>(header_.nrows) + 1.0));
  end_line("the size line (expected '<rows> <columns> <entries>')");
}

CsrMatrix Parser::parse(MatrixMarketHeader* header) {
  parse_banner();
  parse_size_line();

  const std::int64_t nrows = header_.nrows;
  const std::int64_t ncols = header_.ncols;
  const std::int64_t declared = header_.stored_entries;
  const bool mirror = symmetry_ != Symmetry::kGeneral;

  // A declared count beyond what the text can hold is caught below as a truncated file, so never
  // reserve more than the text could hold; where its size is not known (compressed input) the
  // arrays grow with the entries read.
  constexpr std::int64_t kUnknownSizeReserve = std::int64_t{1} << 16;
  const auto max_possible = static_cast<std::int64_t>(std::min<std::uint64_t>(
      remaining_bound() / static_cast<std::uint64_t>(kMinEntryBytes) + 1, INT64_MAX));
  // The entries that fit in the budget beside the row offsets: staging COO, then CSR (doubled
  // for a mirrored file). Whether the text's size is known or not, one entry more is refused.
  const double offsets_bytes = 8.0 * (static_cast<double>(nrows) + 1.0);
  const auto max_entries = static_cast<std::int64_t>(
      std::clamp(std::floor((static_cast<double>(memory_budget()) - offsets_bytes) / entry_bytes()),
                 0.0, 1e18));
  const std::size_t reserve = static_cast<std::size_t>(std::min(
      {declared, max_possible, size_known() ? declared : kUnknownSizeReserve, max_entries}));
  std::vector<std::int32_t> rows, cols;
  std::vector<double> vals;
  rows.reserve(reserve);
  cols.reserve(reserve);
  vals.reserve(reserve);
  std::vector<std::int64_t> row_ptr(static_cast<std::size_t>(nrows) + 1, 0);

  std::int64_t found = 0;
  while (found < declared && skip_to_content()) {
    const std::int64_t r = parse_index("row index", nrows);
    if (is_line_end(p_, end_) || !is_blank(*p_)) fail_number("column index", "an integer");
    const std::int64_t c = parse_index("column index", ncols);
    double v = 1.0;
    if (field_ != Field::kPattern) {
      skip_blanks();
      if (is_line_end(p_, end_)) {
        fail(
            fmt::format("missing value: a {} entry needs '<row> <column> <value>'", header_.field));
      }
      v = parse_value();
    }
    if (mirror) {
      if (c > r) {
        fail(
            fmt::format("entry ({}, {}) lies above the diagonal: a {} file stores only the "
                        "lower triangle",
                        r + 1, c + 1, header_.symmetry));
      }
      if (c == r && symmetry_ == Symmetry::kSkew) {
        fail(
            fmt::format("diagonal entry ({}, {}) in a skew-symmetric file (its diagonal is zero "
                        "by definition and must not be stored)",
                        r + 1, c + 1));
      }
    }
    end_line(field_ == Field::kPattern ? "'<row> <column>' (pattern entries have no value)"
                                       : "'<row> <column> <value>'");
    if (found >= max_entries) {
      check_memory_budget(source_, line_,
                          fmt::format("the file holds more than {} entries (its size line "
                                      "declares {})",
                                      found, declared),
                          offsets_bytes + entry_bytes() * static_cast<double>(found + 1));
    }
    if (rows.size() == rows.capacity()) {
      // Grown by doubling, but never past what the budget leaves for entries.
      const auto grown = static_cast<std::size_t>(std::min<std::int64_t>(
          std::max<std::int64_t>(2 * static_cast<std::int64_t>(rows.capacity()), 16), max_entries));
      rows.reserve(grown);
      cols.reserve(grown);
      vals.reserve(grown);
    }
    rows.push_back(static_cast<std::int32_t>(r));
    cols.push_back(static_cast<std::int32_t>(c));
    vals.push_back(v);
    ++row_ptr[r + 1];
    if (mirror && c != r) ++row_ptr[c + 1];
    ++found;
  }
  if (found < declared) {
    // Name the file's last line, however the text ended (with or without a final newline):
    // all of it has been consumed here, so line_ is one past the newlines.
    if (last_char_ == '\n') line_ = std::max<std::uint64_t>(1, line_ - 1);
    fail(fmt::format("file ends early: expected {} entries, found {} (truncated file?)", declared,
                     found));
  }
  if (skip_to_content()) {
    fail(
        fmt::format("more entries than declared: the size line declares {} entries, this line "
                    "holds another",
                    declared));
  }

  for (std::int64_t i = 0; i < nrows; ++i) row_ptr[i + 1] += row_ptr[i];
  CsrMatrix a;
  a.nrows = nrows;
  a.ncols = ncols;
  const auto total = static_cast<std::size_t>(row_ptr[nrows]);
  a.col_idx.resize(total);
  a.values.resize(total);
  {
    // row_ptr[r] serves as row r's cursor (no second array of nrows offsets): after the scatter
    // it holds row r's end, which is row r+1's start, so shifting by one restores the offsets.
    const double sign = symmetry_ == Symmetry::kSkew ? -1.0 : 1.0;
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const std::int32_t r = rows[k], c = cols[k];
      const std::int64_t dst = row_ptr[r]++;
      a.col_idx[dst] = c;
      a.values[dst] = vals[k];
      if (mirror && r != c) {
        const std::int64_t mdst = row_ptr[c]++;
        a.col_idx[mdst] = r;
        a.values[mdst] = sign * vals[k];
      }
    }
    for (std::int64_t i = nrows; i > 0; --i) row_ptr[i] = row_ptr[i - 1];
    row_ptr[0] = 0;
  }
  a.row_ptr = std::move(row_ptr);
  header_.duplicates_summed = detail::sort_rows_sum_duplicates(a, source_, 1);
  if (header) *header = header_;
  return a;
}

}  // namespace

CsrMatrix parse_matrix_market(std::string_view text, const std::string& source,
                              MatrixMarketHeader* header) {
  return Parser(text, source).parse(header);
}

namespace detail {

CsrMatrix parse_matrix_market_stream(TextStream& text, MatrixMarketHeader* header,
                                     std::size_t window) {
  try {
    return Parser(text, window).parse(header);
  } catch (const InputError&) {
    // Compressed text is checked (CRC, sizes) only as it is decoded: an error in text that
    // comes from a damaged or truncated stream is reported as that damage.
    text.check_rest();
    throw;
  }
}

}  // namespace detail

CsrMatrix read_matrix_market(const std::filesystem::path& path, MatrixMarketHeader* header) {
  // Neither the file nor what it decompresses to may exceed the budget (a bomb stops there);
  // only a window of the text is held at a time.
  constexpr std::size_t kWindow = std::size_t{1} << 20;
  detail::TextStream text(detail::open_file_source(path), path.string(), memory_budget());
  return detail::parse_matrix_market_stream(text, header, kWindow);
}

std::string to_matrix_market(const CsrMatrix& a) {
  validate(a);
  fmt::memory_buffer out;
  out.reserve(static_cast<std::size_t>(a.nnz()) * 24 + 128);
  fmt::format_to(fmt::appender(out), "%%MatrixMarket matrix coordinate real general\n{} {} {}\n",
                 a.nrows, a.ncols, a.nnz());
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      const double v = a.values[k];
      if (!std::isfinite(v)) {
        // The reader rejects inf and nan, so writing them would produce an unreadable file.
        throw InputError("<matrix>", 0,
                         fmt::format("value at ({}, {}) is {}: Matrix Market output must be finite",
                                     r, a.col_idx[k], v));
      }
      // "{}" is the shortest representation that reads back to the same double.
      fmt::format_to(fmt::appender(out), "{} {} {}\n", r + 1, a.col_idx[k] + 1, v);
    }
  }
  return fmt::to_string(out);
}

void write_matrix_market(const CsrMatrix& a, const std::filesystem::path& path) {
  const std::string text = to_matrix_market(a);
  const std::string source = path.string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw InputError(source, 0, fmt::format("cannot create file: {}", std::strerror(errno)));
  const std::size_t written = std::fwrite(text.data(), 1, text.size(), f);
  const int close_rc = std::fclose(f);
  if (written != text.size() || close_rc != 0) {
    throw InputError(source, 0, fmt::format("write failed: {}", std::strerror(errno)));
  }
}

}  // namespace spmvc
