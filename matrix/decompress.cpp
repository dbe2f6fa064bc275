#include "decompress.hpp"

#include <fmt/format.h>
#include <lzma.h>
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

// Reads the whole file, at most `cap` bytes of it. Unless the file starts with a compression
// magic, its first bytes must start a Matrix Market banner.
std::string read_raw(const std::filesystem::path& path, std::uint64_t cap) {
  const std::string source = path.string();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError(source, 0, "is a directory, not a Matrix Market file");
  }
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    throw InputError(source, 0, fmt::format("cannot open file: {}", std::strerror(errno)));
  }
  std::string bytes;
  // The size is only a hint: pipes, devices and /proc files report 0 or fail, so read until EOF
  // regardless, in chunks that start small so the first bytes are checked before much is read.
  const auto size_hint = std::filesystem::file_size(path, ec);
  std::size_t capacity = std::size_t{1} << 16;
  std::size_t used = 0;
  bool head_checked = false;
  for (;;) {
    if (used == bytes.size()) {
      if (used > cap) over_budget(source, "file size", cap);
      std::uint64_t next = std::max(capacity, bytes.size() * 2);
      if (!ec && head_checked) next = std::max<std::uint64_t>(next, size_hint + 1);
      // Never more than one byte past the budget (used <= cap here, so that is room to read).
      if (cap < UINT64_MAX) next = std::min(next, cap + 1);
      bytes.resize(static_cast<std::size_t>(next));
    }
    const std::size_t got = std::fread(bytes.data() + used, 1, bytes.size() - used, file.get());
    used += got;
    if (!head_checked && (got == 0 || used >= 64)) {
      const std::string_view head(bytes.data(), used);
      head_checked = true;
      if (detect_compression(head) == Compression::kNone && !starts_with_bytes(head, kBzip2Magic) &&
          !starts_with_bytes(head, kZstdMagic))
        check_banner_start(head, true, source);
    }
    // A file larger than the budget is refused once its first bytes have been judged (a file
    // that is not Matrix Market at all gets that message instead).
    if (head_checked && !ec && size_hint > cap) over_budget(source, "file size", cap);
    if (got == 0) break;
  }
  if (std::ferror(file.get())) {
    throw InputError(source, 0, fmt::format("read error: {}", std::strerror(errno)));
  }
  if (used > cap) over_budget(source, "file size", cap);
  bytes.resize(used);
  return bytes;
}

// Where a decoder writes: grows geometrically up to `cap` bytes (over it is an InputError), and
// checks the banner once the first bytes are out when asked to.
class Output {
 public:
  Output(const std::string& source, const char* kind, std::uint64_t cap, bool check_banner)
      : source_(source), kind_(kind), cap_(cap), banner_pending_(check_banner) {}

  // The unused tail for the decoder to write into, at least 64 KiB unless the cap is reached.
  std::span<char> tail(std::size_t first_guess) {
    constexpr std::uint64_t kMinTail = std::uint64_t{1} << 16;
    if (out_.size() - used_ < kMinTail) {
      if (used_ > cap_) over();
      // One byte past the cap tells "over" from "exactly at" it.
      const std::uint64_t limit = cap_ == UINT64_MAX ? cap_ : cap_ + 1;
      const std::uint64_t want =
          std::max({std::uint64_t{first_guess}, std::uint64_t{out_.size()} * 2, used_ + kMinTail});
      out_.resize(static_cast<std::size_t>(std::min(want, limit)));
    }
    return {out_.data() + used_, out_.size() - used_};
  }
  void wrote(std::size_t n) {
    used_ += n;
    if (used_ > cap_) over();
    if (banner_pending_)
      banner_pending_ = !check_banner_start({out_.data(), used_}, false, source_);
  }
  std::string finish() {
    if (banner_pending_) check_banner_start({out_.data(), used_}, true, source_);
    out_.resize(used_);
    return std::move(out_);
  }

 private:
  [[noreturn]] void over() const {
    over_budget(source_, fmt::format("decompressed {} data", kind_).c_str(), cap_);
  }
  const std::string& source_;
  const char* kind_;
  std::uint64_t cap_;
  bool banner_pending_;
  std::string out_;
  std::uint64_t used_ = 0;
};

}  // namespace

Compression detect_compression(std::string_view bytes) {
  if (starts_with_bytes(bytes, kGzipMagic)) return Compression::kGzip;
  if (starts_with_bytes(bytes, kXzMagic)) return Compression::kXz;
  return Compression::kNone;
}

std::string gunzip(std::string_view bytes, const std::string& source, std::uint64_t max_output,
                   bool check_banner) {
  z_stream zs{};
  // 15 + 16: gzip wrapper only (zlib also checks the CRC-32 and length in the trailer).
  if (inflateInit2(&zs, 15 + 16) != Z_OK) {
    throw InputError(source, 0, "cannot initialise the gzip decoder (out of memory?)");
  }
  struct Guard {
    z_stream* zs;
    ~Guard() { inflateEnd(zs); }
  } guard{&zs};

  Output out(source, "gzip", max_output, check_banner);
  // The gzip trailer's ISIZE is the uncompressed size mod 2^32: a good first guess, but only a
  // guess. A damaged trailer can claim 4 GiB, so it is capped by deflate's largest possible
  // expansion (1032:1) rather than trusted (and Output caps it by the budget).
  std::size_t guess = bytes.size() * 4;
  if (bytes.size() >= 18) {
    const auto* t = reinterpret_cast<const unsigned char*>(bytes.data() + bytes.size() - 4);
    const std::size_t isize = std::size_t{t[0]} | std::size_t{t[1]} << 8 | std::size_t{t[2]} << 16 |
                              std::size_t{t[3]} << 24;
    guess = std::max(guess, std::min(isize + 1, bytes.size() * 1032));
  }
  std::size_t in_pos = 0;
  constexpr std::size_t kMaxChunk = std::numeric_limits<uInt>::max();
  for (;;) {
    const std::span<char> tail = out.tail(guess);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + in_pos));
    zs.avail_in = static_cast<uInt>(std::min(bytes.size() - in_pos, kMaxChunk));
    zs.next_out = reinterpret_cast<Bytef*>(tail.data());
    zs.avail_out = static_cast<uInt>(std::min(tail.size(), kMaxChunk));
    const uInt in_before = zs.avail_in;
    const uInt out_before = zs.avail_out;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    in_pos += in_before - zs.avail_in;
    out.wrote(out_before - zs.avail_out);
    if (rc == Z_STREAM_END) {
      if (in_pos == bytes.size()) break;
      // Another gzip member follows (gzip(1) concatenates them); anything else is garbage that
      // we refuse rather than silently ignore.
      if (!starts_with_bytes(bytes.substr(in_pos), kGzipMagic)) {
        throw InputError(source, 0,
                         fmt::format("corrupt gzip stream: {} bytes of trailing garbage after the "
                                     "compressed data",
                                     bytes.size() - in_pos));
      }
      inflateReset(&zs);
      continue;
    }
    if (rc == Z_OK || rc == Z_BUF_ERROR) {
      if (in_pos == bytes.size() && zs.avail_out > 0) {
        throw InputError(source, 0,
                         "truncated gzip stream: the compressed data ends before the end-of-stream "
                         "marker (incomplete download?)");
      }
      continue;
    }
    throw InputError(source, 0,
                     fmt::format("corrupt gzip stream: {}", zs.msg ? zs.msg : "inflate failed"));
  }
  return out.finish();
}

std::string unxz(std::string_view bytes, const std::string& source, std::uint64_t max_output,
                 bool check_banner) {
  lzma_stream xs = LZMA_STREAM_INIT;
  struct Guard {
    lzma_stream* xs;
    ~Guard() { lzma_end(xs); }
  } guard{&xs};

  Output out(source, "xz", max_output, check_banner);
  std::size_t in_pos = 0;
  // One stream at a time (not LZMA_CONCATENATED), so that what follows a complete stream can be
  // judged here: stream padding, another stream (xz(1) concatenates them), or trailing garbage,
  // which the concatenated decoder would report as a truncated or invalid stream.
  for (bool first = true;; first = false) {
    if (!first) {
      // Stream padding: null bytes, a multiple of four (xz file format 1.1.0, section 2.2).
      std::size_t pad = in_pos;
      while (pad < bytes.size() && bytes[pad] == '\0') ++pad;
      if (pad == bytes.size() && (pad - in_pos) % 4 == 0) break;
      if (pad == bytes.size() || !starts_with_bytes(bytes.substr(pad), kXzMagic)) {
        throw InputError(source, 0,
                         fmt::format("corrupt xz stream: {} bytes of trailing garbage after the "
                                     "compressed data",
                                     bytes.size() - in_pos));
      }
      in_pos = pad;
    }
    if (lzma_stream_decoder(&xs, UINT64_MAX, 0) != LZMA_OK) {
      throw InputError(source, 0, "cannot initialise the xz decoder (out of memory?)");
    }
    xs.next_in = reinterpret_cast<const std::uint8_t*>(bytes.data() + in_pos);
    xs.avail_in = bytes.size() - in_pos;
    for (;;) {
      const std::span<char> tail = out.tail(bytes.size() * 6);
      xs.next_out = reinterpret_cast<std::uint8_t*>(tail.data());
      xs.avail_out = tail.size();
      const std::size_t out_before = xs.avail_out;
      // LZMA_FINISH from the start: all input is present.
      const lzma_ret rc = lzma_code(&xs, LZMA_FINISH);
      out.wrote(out_before - xs.avail_out);
      if (rc == LZMA_STREAM_END) break;
      if (rc == LZMA_OK) continue;
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
        case LZMA_MEM_ERROR:
          what = "out of memory while decoding xz stream";
          break;
        default:
          break;
      }
      throw InputError(source, 0, what);
    }
    in_pos = bytes.size() - xs.avail_in;
  }
  return out.finish();
}

std::string read_file_decompressed(const std::filesystem::path& path) {
  // Neither the file nor what it decompresses to may exceed the budget: it is read whole and
  // parsed in memory, and a matrix needs more than its text anyway.
  const std::uint64_t cap = memory_budget();
  std::string raw = read_raw(path, cap);
  const std::string source = path.string();
  switch (detect_compression(raw)) {
    case Compression::kGzip:
      return gunzip(raw, source, cap, true);
    case Compression::kXz:
      return unxz(raw, source, cap, true);
    case Compression::kNone:
      break;
  }
  if (starts_with_bytes(raw, kBzip2Magic)) {
    throw InputError(source, 0, "file is bzip2-compressed; only plain, gzip and xz are supported");
  }
  if (starts_with_bytes(raw, kZstdMagic)) {
    throw InputError(source, 0, "file is zstd-compressed; only plain, gzip and xz are supported");
  }
  return raw;
}

}  // namespace spmvc::detail
