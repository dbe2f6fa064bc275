#include "decompress.hpp"

#include <fmt/format.h>
#include <lzma.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string_view>
#include <system_error>

#include "spmvc/error.hpp"
#include "spmvc/memory_budget.hpp"

namespace spmvc::detail {

namespace {

constexpr unsigned char kGzipMagic[] = {0x1f, 0x8b};
constexpr unsigned char kXzMagic[] = {0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00};
// Formats we do not decode, recognised only to give a better message than "missing banner".
constexpr unsigned char kBzip2Magic[] = {'B', 'Z', 'h'};
constexpr unsigned char kZstdMagic[] = {0x28, 0xb5, 0x2f, 0xfd};

template <std::size_t N>
bool starts_with_bytes(std::string_view bytes, const unsigned char (&magic)[N]) {
  if (bytes.size() < N) return false;
  for (std::size_t i = 0; i < N; ++i) {
    if (static_cast<unsigned char>(bytes[i]) != magic[i]) return false;
  }
  return true;
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// The banner every Matrix Market file starts with (keywords are case-insensitive).
constexpr std::string_view kBanner = "%%matrixmarket";

// Throws the parser's "missing banner" error when the first bytes of the (decompressed) text
// cannot start a Matrix Market banner, so that /dev/zero or a multi-gigabyte file of something
// else fails on its first bytes instead of after being read (or decompressed) in full. Returns
// false while too few bytes are in to tell.
bool check_banner_start(std::string_view head, bool complete, const std::string& source) {
  std::size_t i = 0;
  // The parser skips blanks before the first token; so does this.
  while (i < head.size() && (head[i] == ' ' || head[i] == '\t' || head[i] == '\r')) ++i;
  const std::string_view rest = head.substr(i);
  if (rest.size() < kBanner.size() && !complete) return false;
  for (std::size_t k = 0; k < std::min(rest.size(), kBanner.size()); ++k) {
    char c = rest[k];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c == kBanner[k]) continue;
    std::string shown;
    for (char x : rest.substr(0, 20)) {
      const auto u = static_cast<unsigned char>(x);
      if (x == '\n') break;
      shown += (u >= 0x20 && u < 0x7f) ? x : '?';
    }
    throw InputError(source, 1,
                     fmt::format("missing Matrix Market banner: the first line must start with "
                                 "'%%MatrixMarket', found '{}'",
                                 shown));
  }
  return true;
}

[[noreturn]] void over_budget(const std::string& source, const char* what, std::uint64_t cap) {
  throw InputError(source, 0,
                   fmt::format("{} exceeds the memory budget of {} bytes (set "
                               "SPMVC_MEMORY_BUDGET to change it)",
                               what, cap));
}

class FileSource final : public ByteSource {
 public:
  explicit FileSource(const std::filesystem::path& path) : source_(path.string()) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      throw InputError(source_, 0, "is a directory, not a Matrix Market file");
    }
    file_.reset(std::fopen(path.c_str(), "rb"));
    if (!file_) {
      throw InputError(source_, 0, fmt::format("cannot open file: {}", std::strerror(errno)));
    }
    // Only a regular file's size means anything: pipes, devices and /proc files report 0.
    struct stat st {};
    if (fstat(fileno(file_.get()), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      size_ = static_cast<std::uint64_t>(st.st_size);
    }
  }
  std::size_t read(char* dst, std::size_t n) override {
    const std::size_t got = std::fread(dst, 1, n, file_.get());
    if (got == 0 && std::ferror(file_.get())) {
      throw InputError(source_, 0, fmt::format("read error: {}", std::strerror(errno)));
    }
    return got;
  }
  std::uint64_t size_hint() const override { return size_; }

 private:
  std::string source_;
  std::unique_ptr<std::FILE, FileCloser> file_;
  std::uint64_t size_ = UINT64_MAX;
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string_view bytes, bool report_size)
      : bytes_(bytes), report_size_(report_size) {}
  std::size_t read(char* dst, std::size_t n) override {
    const std::size_t k = std::min(n, bytes_.size() - pos_);
    std::memcpy(dst, bytes_.data() + pos_, k);
    pos_ += k;
    return k;
  }
  std::uint64_t size_hint() const override { return report_size_ ? bytes_.size() : UINT64_MAX; }

 private:
  std::string_view bytes_;
  bool report_size_;
  std::size_t pos_ = 0;
};

// Raw input is read in blocks of this size (and the first block judged before decoding).
constexpr std::size_t kInputBlock = std::size_t{1} << 16;
// The banner check and the compression magic are judged on this many first bytes.
constexpr std::size_t kHeadBytes = 64;
constexpr std::size_t kMaxZlibChunk = std::numeric_limits<uInt>::max();

const char* kind_name(Compression c) {
  return c == Compression::kGzip ? "gzip" : c == Compression::kXz ? "xz" : "plain";
}

}  // namespace

Compression detect_compression(std::string_view bytes) {
  if (starts_with_bytes(bytes, kGzipMagic)) return Compression::kGzip;
  if (starts_with_bytes(bytes, kXzMagic)) return Compression::kXz;
  return Compression::kNone;
}

const char* compressed_format(std::string_view bytes) {
  switch (detect_compression(bytes)) {
    case Compression::kGzip:
      return "gzip";
    case Compression::kXz:
      return "xz";
    case Compression::kNone:
      break;
  }
  if (starts_with_bytes(bytes, kBzip2Magic)) return "bzip2";
  if (starts_with_bytes(bytes, kZstdMagic)) return "zstd";
  return nullptr;
}

std::unique_ptr<ByteSource> open_file_source(const std::filesystem::path& path) {
  return std::make_unique<FileSource>(path);
}

std::unique_ptr<ByteSource> memory_source(std::string_view bytes, bool report_size) {
  return std::make_unique<MemorySource>(bytes, report_size);
}

struct TextStream::Decoder {
  z_stream zs{};
  bool zs_live = false;
  lzma_stream xs = LZMA_STREAM_INIT;
  ~Decoder() {
    if (zs_live) inflateEnd(&zs);
    lzma_end(&xs);
  }
};

TextStream::TextStream(std::unique_ptr<ByteSource> raw, std::string source, std::uint64_t cap,
                       bool check_banner)
    : raw_(std::move(raw)),
      source_(std::move(source)),
      cap_(cap),
      raw_size_(raw_->size_hint()),
      banner_pending_(check_banner),
      decoder_(std::make_unique<Decoder>()) {}

TextStream::~TextStream() = default;

std::size_t TextStream::fill_input(std::size_t want) {
  std::size_t avail = in_end_ - in_pos_;
  if (avail >= want || raw_eof_) return avail;
  if (in_pos_ > 0) {
    std::memmove(in_.data(), in_.data() + in_pos_, avail);
    in_pos_ = 0;
    in_end_ = avail;
  }
  if (in_.size() < std::max(want, kInputBlock)) in_.resize(std::max(want, kInputBlock));
  while (in_end_ < want && !raw_eof_) {
    const std::size_t got = raw_->read(in_.data() + in_end_, in_.size() - in_end_);
    if (got == 0) raw_eof_ = true;
    in_end_ += got;
    raw_read_ += got;
  }
  return in_end_ - in_pos_;
}

void TextStream::start() {
  started_ = true;
  const std::size_t head_size = fill_input(kHeadBytes);  // may reallocate in_
  const std::string_view head(in_.data(), head_size);
  kind_ = detect_compression(head);
  if (kind_ == Compression::kNone) {
    if (starts_with_bytes(head, kBzip2Magic)) {
      throw InputError(source_, 0,
                       "file is bzip2-compressed; only plain, gzip and xz are supported");
    }
    if (starts_with_bytes(head, kZstdMagic)) {
      throw InputError(source_, 0,
                       "file is zstd-compressed; only plain, gzip and xz are supported");
    }
    // A file that is not Matrix Market at all gets that message before any size refusal.
    if (banner_pending_) banner_pending_ = !check_banner_start(head, true, source_);
  }
  if (raw_size_ != UINT64_MAX && raw_size_ > cap_) over_budget(source_, "file size", cap_);
  if (kind_ == Compression::kGzip) {
    // 15 + 16: gzip wrapper only (zlib also checks the CRC-32 and length in the trailer).
    if (inflateInit2(&decoder_->zs, 15 + 16) != Z_OK) {
      throw InputError(source_, 0, "cannot initialise the gzip decoder (out of memory?)");
    }
    decoder_->zs_live = true;
  } else if (kind_ == Compression::kXz) {
    // The decoder's memory (mostly the dictionary an xz header declares, up to 4 GiB) is held
    // to the budget too: a few bytes of header must not allocate gigabytes.
    if (lzma_stream_decoder(&decoder_->xs, memory_budget(), 0) != LZMA_OK) {
      throw InputError(source_, 0, "cannot initialise the xz decoder (out of memory?)");
    }
  }
}

void TextStream::produced(const char* dst, std::size_t n) {
  produced_ += n;
  if (produced_ > cap_) {
    over_budget(
        source_,
        kind_ == Compression::kNone
            ? "file size"
            : (kind_ == Compression::kGzip ? "decompressed gzip data" : "decompressed xz data"),
        cap_);
  }
  if (banner_pending_ && n > 0) {
    head_.append(dst, std::min(n, kHeadBytes - std::min(head_.size(), kHeadBytes)));
    banner_failed_ = true;
    banner_pending_ = !check_banner_start(head_, head_.size() >= kHeadBytes, source_);
    banner_failed_ = false;
  }
}

void TextStream::trailing_garbage(std::uint64_t already, const char* kind) {
  std::uint64_t count = already + (in_end_ - in_pos_);
  in_pos_ = in_end_ = 0;
  while (!raw_eof_) count += fill_input(in_.size());
  throw InputError(source_, 0,
                   fmt::format("corrupt {} stream: {} bytes of trailing garbage after the "
                               "compressed data",
                               kind, count));
}

std::size_t TextStream::read(char* dst, std::size_t n) {
  try {
    return read_checked(dst, n);
  } catch (const InputError&) {
    // Garbage where the banner should be may come from a damaged stream: the damage, when it
    // shows within check_rest's reach, is the error to report.
    if (banner_failed_ && kind_ != Compression::kNone) {
      banner_failed_ = false;
      banner_pending_ = false;
      check_rest();
    }
    failed_ = true;
    throw;
  }
}

std::size_t TextStream::read_checked(char* dst, std::size_t n) {
  if (!started_) start();
  if (done_ || n == 0) return 0;
  // At most one byte past the cap, which tells "over" from "exactly at" it.
  if (cap_ < UINT64_MAX)
    n = static_cast<std::size_t>(std::min<std::uint64_t>(n, cap_ - produced_ + 1));
  std::size_t got = 0;
  switch (kind_) {
    case Compression::kNone:
      got = read_plain(dst, n);
      break;
    case Compression::kGzip:
      got = read_gzip(dst, n);
      break;
    case Compression::kXz:
      got = read_xz(dst, n);
      break;
  }
  produced(dst, got);
  if (got == 0) {
    done_ = true;
    if (banner_pending_) check_banner_start(head_, true, source_);
  }
  return got;
}

std::size_t TextStream::read_plain(char* dst, std::size_t n) {
  if (in_pos_ < in_end_) {
    const std::size_t k = std::min(n, in_end_ - in_pos_);
    std::memcpy(dst, in_.data() + in_pos_, k);
    in_pos_ += k;
    return k;
  }
  if (raw_eof_) return 0;
  const std::size_t got = raw_->read(dst, n);
  raw_read_ += got;
  if (got == 0) raw_eof_ = true;
  return got;
}

std::size_t TextStream::read_gzip(char* dst, std::size_t n) {
  z_stream& zs = decoder_->zs;
  for (;;) {
    if (in_pos_ == in_end_) fill_input(1);
    zs.next_in = reinterpret_cast<Bytef*>(in_.data() + in_pos_);
    zs.avail_in = static_cast<uInt>(std::min(in_end_ - in_pos_, kMaxZlibChunk));
    zs.next_out = reinterpret_cast<Bytef*>(dst);
    zs.avail_out = static_cast<uInt>(std::min(n, kMaxZlibChunk));
    const uInt in_before = zs.avail_in;
    const uInt out_before = zs.avail_out;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    in_pos_ += in_before - zs.avail_in;
    const std::size_t got = out_before - zs.avail_out;
    if (rc == Z_STREAM_END) {
      // Another gzip member may follow (gzip(1) concatenates them); anything else is garbage
      // that we refuse rather than silently ignore.
      const std::size_t next = fill_input(sizeof kGzipMagic);
      if (next == 0) return got;  // the end: read() sees 0 next time
      if (!starts_with_bytes({in_.data() + in_pos_, next}, kGzipMagic)) {
        trailing_garbage(0, "gzip");
      }
      inflateReset(&zs);
      if (got > 0) return got;
      continue;
    }
    if (rc == Z_OK || rc == Z_BUF_ERROR) {
      if (got > 0) return got;
      if (in_pos_ == in_end_ && raw_eof_) {
        throw InputError(source_, 0,
                         "truncated gzip stream: the compressed data ends before the "
                         "end-of-stream marker (incomplete download?)");
      }
      continue;
    }
    throw InputError(source_, 0,
                     fmt::format("corrupt gzip stream: {}", zs.msg ? zs.msg : "inflate failed"));
  }
}

std::size_t TextStream::read_xz(char* dst, std::size_t n) {
  lzma_stream& xs = decoder_->xs;
  for (;;) {
    if (in_pos_ == in_end_) fill_input(1);
    xs.next_in = reinterpret_cast<const std::uint8_t*>(in_.data() + in_pos_);
    xs.avail_in = in_end_ - in_pos_;
    xs.next_out = reinterpret_cast<std::uint8_t*>(dst);
    xs.avail_out = n;
    // One stream at a time (not LZMA_CONCATENATED), so that what follows a complete stream can
    // be judged here: stream padding, another stream, or trailing garbage, which the
    // concatenated decoder would report as a truncated or invalid stream.
    const lzma_ret rc = lzma_code(&xs, raw_eof_ ? LZMA_FINISH : LZMA_RUN);
    in_pos_ = in_end_ - xs.avail_in;
    const std::size_t got = n - xs.avail_out;
    if (rc == LZMA_STREAM_END) {
      // Stream padding: null bytes, a multiple of four (xz file format 1.1.0, section 2.2).
      std::uint64_t nulls = 0;
      while (fill_input(1) > 0 && in_[in_pos_] == '\0') {
        ++in_pos_;
        ++nulls;
      }
      if (in_pos_ == in_end_) {
        if (nulls % 4 != 0) trailing_garbage(nulls, "xz");
        return got;  // the end: read() sees 0 next time
      }
      const std::size_t next = fill_input(sizeof kXzMagic);
      if (!starts_with_bytes({in_.data() + in_pos_, next}, kXzMagic)) {
        trailing_garbage(nulls, "xz");
      }
      if (lzma_stream_decoder(&xs, memory_budget(), 0) != LZMA_OK) {
        throw InputError(source_, 0, "cannot initialise the xz decoder (out of memory?)");
      }
      if (got > 0) return got;
      continue;
    }
    if (rc == LZMA_OK) {
      if (got > 0) return got;
      continue;
    }
    const char* what = "decoder error";
    switch (rc) {
      case LZMA_BUF_ERROR:
        what = "truncated xz stream: the compressed data ends early (incomplete download?)";
        break;
      case LZMA_DATA_ERROR:
        what = "corrupt xz stream: compressed data is damaged";
        break;
      case LZMA_FORMAT_ERROR:
        what = "corrupt xz stream: not a valid .xz container";
        break;
      case LZMA_OPTIONS_ERROR:
        what = "xz stream uses unsupported options";
        break;
      case LZMA_MEMLIMIT_ERROR:
        throw InputError(
            source_, 0,
            fmt::format("xz stream needs {} bytes of memory to decode, over the memory "
                        "budget of {} bytes (set SPMVC_MEMORY_BUDGET to change it)",
                        lzma_memusage(&xs), memory_budget()));
      case LZMA_MEM_ERROR:
        what = "out of memory while decoding xz stream";
        break;
      default:
        break;
    }
    throw InputError(source_, 0, what);
  }
}

void TextStream::check_rest() {
  // Not after the stream's own error (it is the one to report), and not for ever: a damaged
  // stream is usually caught within its next block, and a bomb must not be decoded to the cap
  // just to report a parse error.
  constexpr std::uint64_t kMaxCheck = std::uint64_t{16} << 20;
  if (kind_ == Compression::kNone || failed_ || done_) return;
  std::string scratch(kInputBlock, '\0');
  for (std::uint64_t checked = 0; checked < kMaxCheck;) {
    const std::size_t got = read(scratch.data(), scratch.size());
    if (got == 0) break;
    checked += got;
  }
}

std::uint64_t TextStream::remaining_bound() const {
  if (size_known()) return raw_size_ > produced_ ? raw_size_ - produced_ : 0;
  return cap_ > produced_ ? cap_ - produced_ : 0;
}

bool TextStream::size_known() const {
  return kind_ == Compression::kNone && raw_size_ != UINT64_MAX;
}

namespace {

std::string decode_all(std::string_view bytes, Compression expect, const std::string& source,
                       std::uint64_t max_output, bool check_banner) {
  if (detect_compression(bytes) != expect) {
    throw InputError(
        source, 0,
        fmt::format("corrupt {0} stream: not {0} data (no magic bytes)", kind_name(expect)));
  }
  // Only the output is capped: the input is in memory already.
  TextStream text(memory_source(bytes, false), source, max_output, check_banner);
  std::string out;
  std::size_t used = 0;
  for (;;) {
    if (out.size() - used < kInputBlock) out.resize(std::max(out.size() * 2, used + kInputBlock));
    const std::size_t got = text.read(out.data() + used, out.size() - used);
    if (got == 0) break;
    used += got;
  }
  out.resize(used);
  return out;
}

}  // namespace

std::string gunzip(std::string_view bytes, const std::string& source, std::uint64_t max_output,
                   bool check_banner) {
  return decode_all(bytes, Compression::kGzip, source, max_output, check_banner);
}

std::string unxz(std::string_view bytes, const std::string& source, std::uint64_t max_output,
                 bool check_banner) {
  return decode_all(bytes, Compression::kXz, source, max_output, check_banner);
}

}  // namespace spmvc::detail
