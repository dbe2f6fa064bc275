// Compressed Matrix Market input. The first byte picks how the rest is used:
//   0: as raw file bytes (gzip, xz or plain, detected from the magic bytes);
//   1: gzip-compressed here, as one member or two (split at a point the next byte picks);
//   2: xz-compressed here, as one stream or two, with stream padding between them.
// In modes 1 and 2 the decompressing stream, read through a window of 1 to 32 bytes, must give
// what parse_matrix_market gives on the uncompressed text: the same matrix or the same error.
#include <lzma.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "decompress.hpp"
#include "fuzz_support.hpp"
#include "spmvc/error.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/memory_budget.hpp"

using namespace spmvc;

namespace {

std::string gzip(std::string_view text) {
  z_stream zs{};
  // 15 + 16: a gzip wrapper.
  if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::string out(deflateBound(&zs, static_cast<uLong>(text.size())) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string xz(std::string_view text) {
  std::string out(lzma_stream_buffer_bound(text.size()), '\0');
  std::size_t pos = 0;
  if (lzma_easy_buffer_encode(
          0, LZMA_CHECK_CRC64, nullptr, reinterpret_cast<const std::uint8_t*>(text.data()),
          text.size(), reinterpret_cast<std::uint8_t*>(out.data()), &pos, out.size()) != LZMA_OK)
    std::abort();
  out.resize(pos);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::set_budget();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const int mode = data[0] % 3;
  const std::size_t window = 1 + data[1] % 32;
  const std::string_view rest(reinterpret_cast<const char*>(data + 2), size - 2);
  if (mode == 0) {
    try {
      detail::TextStream stream(detail::memory_source(rest), "fuzz.mtx.gz", memory_budget());
      validate(detail::parse_matrix_market_stream(stream, nullptr, window), "fuzz");
    } catch (const InputError&) {
    }
    return 0;
  }
  // Two members or streams when the split point falls inside the text.
  const std::size_t split = rest.empty() ? 0 : data[1] * 7 % (rest.size() + 1);
  const auto compress = [&](std::string_view t) { return mode == 1 ? gzip(t) : xz(t); };
  std::string bytes;
  if (split == 0 || split == rest.size()) {
    bytes = compress(rest);
  } else {
    bytes = compress(rest.substr(0, split));
    if (mode == 2) bytes += std::string(4 * (data[1] % 3), '\0');  // stream padding
    bytes += compress(rest.substr(split));
  }
  std::string plain_error, stream_error;
  CsrMatrix plain, streamed;
  try {
    plain = parse_matrix_market(rest, "fuzz.mtx");
  } catch (const InputError& e) {
    plain_error = e.what();
  }
  try {
    detail::TextStream stream(detail::memory_source(bytes), "fuzz.mtx", memory_budget());
    streamed = detail::parse_matrix_market_stream(stream, nullptr, window);
  } catch (const InputError& e) {
    stream_error = e.what();
  }
  if (plain_error != stream_error) {
    const bool both_banner = plain_error.find("banner") != std::string::npos &&
                             stream_error.find("banner") != std::string::npos;
    if (!both_banner)
      fuzz::finding("compressed and plain parses disagree", plain_error, stream_error);
    return 0;
  }
  if (plain_error.empty() && !fuzz::same_matrix(plain, streamed)) {
    fuzz::finding("compressed and plain parses give different matrices");
  }
  return 0;
}
