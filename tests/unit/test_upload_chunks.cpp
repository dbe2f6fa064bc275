// The staged upload's arithmetic (runtime/upload.hpp): chunks cover the bytes once, in order,
// in whole elements, never past the chunk size, and rotate through the staging buffers; the
// fill functions write the right (converted) elements for a chunk at any offset.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "spmvc/error.hpp"
#include "upload.hpp"

using spmvc::runtime::converting_part;
using spmvc::runtime::kUploadChunkBuffers;
using spmvc::runtime::kUploadChunkBytes;
using spmvc::runtime::upload_chunks;
using spmvc::runtime::upload_part;
using spmvc::runtime::UploadChunk;

namespace {
// The chunks tile [0, total) in order, each whole elements and at most `chunk` bytes, and the
// buffers follow first, first+1, ... mod `buffers`.
void check_tiling(const std::vector<UploadChunk>& chunks, std::size_t total, std::size_t element,
                  std::size_t chunk, int buffers, int first) {
  std::size_t at = 0;
  int buffer = first % buffers;
  for (const UploadChunk& c : chunks) {
    CHECK(c.offset == at);
    CHECK(c.bytes > 0);
    CHECK(c.bytes <= chunk);
    CHECK(c.bytes % element == 0);
    CHECK(c.buffer == buffer);
    at += c.bytes;
    buffer = (buffer + 1) % buffers;
  }
  CHECK(at == total);
}
}  // namespace

TEST_CASE("upload chunks: odd sizes around the chunk size") {
  const std::size_t chunk = 64;
  for (const std::size_t total :
       {std::size_t{0}, std::size_t{1}, chunk - 1, chunk, chunk + 1, 7 * chunk + 5}) {
    CAPTURE(total);
    const auto chunks = upload_chunks(total, 1, chunk, 3);
    check_tiling(chunks, total, 1, chunk, 3, 0);
    CHECK(chunks.size() == (total + chunk - 1) / chunk);
  }
  // chunk + 1 bytes: a full chunk then one byte, in the second buffer.
  const auto two = upload_chunks(chunk + 1, 1, chunk, 3);
  REQUIRE(two.size() == 2);
  CHECK(two[1].offset == chunk);
  CHECK(two[1].bytes == 1);
  CHECK(two[1].buffer == 1);
}

TEST_CASE("upload chunks: whole elements when the chunk size is not a multiple") {
  // 8-byte elements through 60-byte chunks: 56 bytes (7 elements) a chunk.
  const auto chunks = upload_chunks(8 * 20, 8, 60, 2, 1);
  check_tiling(chunks, 8 * 20, 8, 60, 2, 1);
  REQUIRE(chunks.size() == 3);
  CHECK(chunks[0].bytes == 56);
  CHECK(chunks[2].bytes == 8 * 20 - 2 * 56);
  CHECK(chunks[0].buffer == 1);
  CHECK(chunks[1].buffer == 0);
}

TEST_CASE("upload chunks: the runtime's sizes tile a large array") {
  const std::size_t total = 5 * kUploadChunkBytes + 12;
  const auto chunks = upload_chunks(total, 4, kUploadChunkBytes, kUploadChunkBuffers, 2);
  check_tiling(chunks, total, 4, kUploadChunkBytes, kUploadChunkBuffers, 2);
  CHECK(chunks.size() == 6);
}

TEST_CASE("upload chunks: impossible arguments are internal errors") {
  CHECK_THROWS_AS(upload_chunks(16, 0, 8, 2), spmvc::InternalError);
  CHECK_THROWS_AS(upload_chunks(16, 16, 8, 2), spmvc::InternalError);
  CHECK_THROWS_AS(upload_chunks(16, 4, 8, 0), spmvc::InternalError);
  CHECK_THROWS_WITH_AS(upload_chunks(16, 16, 8, 2), doctest::Contains("16-byte elements"),
                       spmvc::InternalError);
}

TEST_CASE("upload parts: fills copy and convert the chunk at its offset") {
  const std::vector<std::int64_t> offsets{0,  3,  7,
                                          12, 20, std::numeric_limits<std::int32_t>::max()};
  const auto narrow = converting_part<std::int32_t>(nullptr, offsets.data(), offsets.size());
  CHECK(narrow.bytes == offsets.size() * 4);
  CHECK(narrow.element_bytes == 4);
  std::vector<std::int32_t> out(3, -1);
  narrow.fill(2 * 4, 3 * 4, out.data());  // elements 2..4
  CHECK(out == std::vector<std::int32_t>{7, 12, 20});
  narrow.fill(5 * 4, 4, out.data());
  CHECK(out[0] == std::numeric_limits<std::int32_t>::max());

  const std::vector<double> values{0.5, 1.0 / 3.0, -2.25, 1e300};
  const auto f32 = converting_part<float>(nullptr, values.data(), values.size());
  CHECK(f32.bytes == 16);
  std::vector<float> fout(2, 0.0F);
  f32.fill(4, 8, fout.data());
  CHECK(fout[0] == static_cast<float>(1.0 / 3.0));
  CHECK(fout[1] == -2.25F);

  const auto same = upload_part(nullptr, values.data(), values.size());
  CHECK(same.bytes == 32);
  CHECK(same.element_bytes == 8);
  std::vector<double> dout(1, 0.0);
  same.fill(24, 8, dout.data());
  CHECK(dout[0] == 1e300);
}
