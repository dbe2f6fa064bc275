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
#include <system_error>

#include "spmvc/error.hpp"

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

std::string read_raw(const std::filesystem::path& path) {
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
  // The size is only a hint: pipes and /proc files report 0, so read until EOF regardless.
  const auto size_hint = std::filesystem::file_size(path, ec);
  std::size_t capacity = ec ? std::size_t{1} << 16 : static_cast<std::size_t>(size_hint) + 1;
  std::size_t used = 0;
  for (;;) {
    if (used == bytes.size()) bytes.resize(std::max(capacity, bytes.size() * 2));
    const std::size_t got = std::fread(bytes.data() + used, 1, bytes.size() - used, file.get());
    used += got;
    if (got == 0) break;
  }
  if (std::ferror(file.get())) {
    throw InputError(source, 0, fmt::format("read error: {}", std::strerror(errno)));
  }
  bytes.resize(used);
  return bytes;
}

// Grows `out` geometrically; returns the unused tail for the decoder to write into.
void grow(std::string& out, std::size_t used, std::size_t min_size) {
  if (out.size() - used < (1u << 16)) out.resize(std::max(min_size, out.size() * 2));
}

}  // namespace

Compression detect_compression(std::string_view bytes) {
  if (starts_with_bytes(bytes, kGzipMagic)) return Compression::kGzip;
  if (starts_with_bytes(bytes, kXzMagic)) return Compression::kXz;
  return Compression::kNone;
}

std::string gunzip(std::string_view bytes, const std::string& source) {
  z_stream zs{};
  // 15 + 16: gzip wrapper only (zlib also checks the CRC-32 and length in the trailer).
  if (inflateInit2(&zs, 15 + 16) != Z_OK) {
    throw InputError(source, 0, "cannot initialise the gzip decoder (out of memory?)");
  }
  struct Guard {
    z_stream* zs;
    ~Guard() { inflateEnd(zs); }
  } guard{&zs};

  std::string out;
  // The gzip trailer's ISIZE is the uncompressed size mod 2^32: a good first guess, but only a
  // guess. A damaged trailer can claim 4 GiB, so it is capped by deflate's largest possible
  // expansion (1032:1) rather than trusted.
  std::size_t guess = bytes.size() * 4;
  if (bytes.size() >= 18) {
    const auto* t = reinterpret_cast<const unsigned char*>(bytes.data() + bytes.size() - 4);
    const std::size_t isize = std::size_t{t[0]} | std::size_t{t[1]} << 8 | std::size_t{t[2]} << 16 |
                              std::size_t{t[3]} << 24;
    guess = std::max(guess, std::min(isize + 1, bytes.size() * 1032));
  }
  std::size_t used = 0;
  std::size_t in_pos = 0;
  constexpr std::size_t kMaxChunk = std::numeric_limits<uInt>::max();
  for (;;) {
    grow(out, used, guess);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + in_pos));
    zs.avail_in = static_cast<uInt>(std::min(bytes.size() - in_pos, kMaxChunk));
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + used);
    zs.avail_out = static_cast<uInt>(std::min(out.size() - used, kMaxChunk));
    const uInt in_before = zs.avail_in;
    const uInt out_before = zs.avail_out;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    in_pos += in_before - zs.avail_in;
    used += out_before - zs.avail_out;
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
  out.resize(used);
  return out;
}

std::string unxz(std::string_view bytes, const std::string& source) {
  lzma_stream xs = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&xs, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK) {
    throw InputError(source, 0, "cannot initialise the xz decoder (out of memory?)");
  }
  struct Guard {
    lzma_stream* xs;
    ~Guard() { lzma_end(xs); }
  } guard{&xs};

  std::string out;
  std::size_t used = 0;
  xs.next_in = reinterpret_cast<const std::uint8_t*>(bytes.data());
  xs.avail_in = bytes.size();
  for (;;) {
    grow(out, used, bytes.size() * 6);
    xs.next_out = reinterpret_cast<std::uint8_t*>(out.data() + used);
    xs.avail_out = out.size() - used;
    const std::size_t out_before = xs.avail_out;
    // LZMA_FINISH from the start: all input is present, and with LZMA_CONCATENATED the decoder
    // only reports the end after it has seen the input run out.
    const lzma_ret rc = lzma_code(&xs, LZMA_FINISH);
    used += out_before - xs.avail_out;
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
  out.resize(used);
  return out;
}

std::string read_file_decompressed(const std::filesystem::path& path) {
  std::string raw = read_raw(path);
  const std::string source = path.string();
  switch (detect_compression(raw)) {
    case Compression::kGzip:
      return gunzip(raw, source);
    case Compression::kXz:
      return unxz(raw, source);
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
