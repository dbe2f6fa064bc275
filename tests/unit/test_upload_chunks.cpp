// The staged upload's arithmetic (runtime/upload.hpp): chunks cover every part's bytes once, in
// order, in whole elements, never past the chunk size; they go to the fillers in turn, each
// cycling through buffers no other filler touches; the fill functions write the right
// (converted) elements for a chunk at any offset. The filler pool runs every share once per run,
// the caller's on the caller's thread, as it grows, when a thread start is refused, and rethrows
// the lowest share's error.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

#include "spmvc/error.hpp"
#include "upload.hpp"

using spmvc::runtime::converting_part;
using spmvc::runtime::FillerPool;
using spmvc::runtime::kUploadBuffersPerFiller;
using spmvc::runtime::kUploadChunkBytes;
using spmvc::runtime::kUploadMaxFillers;
using spmvc::runtime::upload_chunks;
using spmvc::runtime::upload_fillers;
using spmvc::runtime::upload_part;
using spmvc::runtime::UploadChunk;
using spmvc::runtime::UploadPart;

namespace {
UploadPart sized(std::size_t bytes, std::size_t element) {
  UploadPart p;
  p.bytes = bytes;
  p.element_bytes = element;
  return p;
}

// The chunks tile each part's [0, bytes) in order, part after part, each whole elements and at
// most `chunk` bytes; chunk k goes to filler k mod fillers, which cycles through its own
// buffers; no two fillers share a buffer.
void check_schedule(const std::vector<UploadChunk>& chunks, const std::vector<UploadPart>& parts,
                    std::size_t chunk, int fillers, int per_filler) {
  std::vector<std::size_t> at(parts.size(), 0);
  std::vector<int> next_buffer(static_cast<std::size_t>(fillers));
  for (int f = 0; f < fillers; ++f) next_buffer[static_cast<std::size_t>(f)] = f * per_filler;
  std::size_t part = 0;
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const UploadChunk& c = chunks[k];
    CAPTURE(k);
    CHECK(c.part >= part);  // parts in order
    part = c.part;
    REQUIRE(c.part < parts.size());
    CHECK(c.offset == at[c.part]);
    CHECK(c.bytes > 0);
    CHECK(c.bytes <= chunk);
    CHECK(c.bytes % parts[c.part].element_bytes == 0);
    at[c.part] += c.bytes;
    CHECK(c.filler == static_cast<int>(k % static_cast<std::size_t>(fillers)));
    int& expected = next_buffer[static_cast<std::size_t>(c.filler)];
    CHECK(c.buffer == expected);
    CHECK(c.buffer / per_filler == c.filler);  // the filler's own buffers only
    expected = c.filler * per_filler + (expected - c.filler * per_filler + 1) % per_filler;
  }
  for (std::size_t i = 0; i < parts.size(); ++i) CHECK(at[i] == parts[i].bytes);
}
}  // namespace

TEST_CASE("upload chunks: odd sizes around the chunk size") {
  const std::size_t chunk = 64;
  for (const std::size_t total :
       {std::size_t{0}, std::size_t{1}, chunk - 1, chunk, chunk + 1, 7 * chunk + 5}) {
    CAPTURE(total);
    const std::vector<UploadPart> parts{sized(total, 1)};
    const auto chunks = upload_chunks(parts, chunk, 3, 2);
    check_schedule(chunks, parts, chunk, 3, 2);
    CHECK(chunks.size() == (total + chunk - 1) / chunk);
  }
  // chunk + 1 bytes: a full chunk then one byte, by the second filler into its first buffer.
  const auto two = upload_chunks({sized(chunk + 1, 1)}, chunk, 3, 2);
  REQUIRE(two.size() == 2);
  CHECK(two[1].offset == chunk);
  CHECK(two[1].bytes == 1);
  CHECK(two[1].filler == 1);
  CHECK(two[1].buffer == 2);
}

TEST_CASE("upload chunks: whole elements when the chunk size is not a multiple") {
  // 8-byte elements through 60-byte chunks: 56 bytes (7 elements) a chunk.
  const std::vector<UploadPart> parts{sized(8 * 20, 8)};
  const auto chunks = upload_chunks(parts, 60, 1, 2);
  check_schedule(chunks, parts, 60, 1, 2);
  REQUIRE(chunks.size() == 3);
  CHECK(chunks[0].bytes == 56);
  CHECK(chunks[2].bytes == 8 * 20 - 2 * 56);
  // One filler alternates its two buffers.
  CHECK(chunks[0].buffer == 0);
  CHECK(chunks[1].buffer == 1);
  CHECK(chunks[2].buffer == 0);
}

TEST_CASE("upload chunks: several parts share the fillers' rotation") {
  // A CSR's parts: 8-byte offsets, 4-byte columns, 8-byte values, an empty part between.
  const std::vector<UploadPart> parts{sized(8 * 11, 8), sized(0, 4), sized(4 * 50, 4),
                                      sized(8 * 50, 8)};
  for (const int fillers : {1, 2, 3, 8}) {
    CAPTURE(fillers);
    const auto chunks = upload_chunks(parts, 64, fillers, kUploadBuffersPerFiller);
    check_schedule(chunks, parts, 64, fillers, kUploadBuffersPerFiller);
    // 88 bytes: 2 chunks; 200: 4; 400: 7.
    CHECK(chunks.size() == 13);
    for (const UploadChunk& c : chunks) CHECK(c.part != 1);
  }
}

TEST_CASE("upload chunks: the runtime's sizes tile a large array") {
  const std::vector<UploadPart> parts{sized(5 * kUploadChunkBytes + 12, 4)};
  const int fillers = upload_fillers(parts[0].bytes, 64);
  CHECK(fillers == std::min(6, kUploadMaxFillers));
  const auto chunks = upload_chunks(parts, kUploadChunkBytes, fillers, kUploadBuffersPerFiller);
  check_schedule(chunks, parts, kUploadChunkBytes, fillers, kUploadBuffersPerFiller);
  CHECK(chunks.size() == 6);
}

TEST_CASE("upload fillers: bounded by the threads, the chunks and the maximum") {
  CHECK(upload_fillers(0, 16) == 1);
  CHECK(upload_fillers(1, 16) == 1);
  CHECK(upload_fillers(kUploadChunkBytes, 16) == 1);
  CHECK(upload_fillers(kUploadChunkBytes + 1, 16) == 2);
  CHECK(upload_fillers(100 * kUploadChunkBytes, 3) == 3);
  CHECK(upload_fillers(100 * kUploadChunkBytes, 0) == 1);
  CHECK(upload_fillers(100 * kUploadChunkBytes, 1000) == kUploadMaxFillers);
}

TEST_CASE("upload chunks: impossible arguments are internal errors") {
  CHECK_THROWS_AS(upload_chunks({sized(16, 0)}, 8, 1, 2), spmvc::InternalError);
  CHECK_THROWS_AS(upload_chunks({sized(16, 16)}, 8, 1, 2), spmvc::InternalError);
  CHECK_THROWS_AS(upload_chunks({sized(16, 4)}, 8, 0, 2), spmvc::InternalError);
  CHECK_THROWS_AS(upload_chunks({sized(16, 4)}, 8, 1, 0), spmvc::InternalError);
  CHECK_THROWS_WITH_AS(upload_chunks({sized(8, 4), sized(16, 16)}, 8, 1, 2),
                       doctest::Contains("part 1's 16-byte elements"), spmvc::InternalError);
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

namespace {
// Runs `n` shares on `pool` and checks each ran once, share 0 on this thread.
void check_run(FillerPool& pool, int n) {
  std::array<std::atomic<int>, 32> ran{};
  std::atomic<bool> zero_here{false};
  const std::thread::id me = std::this_thread::get_id();
  pool.run(n, [&](int i) {
    ran[static_cast<std::size_t>(i)].fetch_add(1);
    if (i == 0) zero_here = std::this_thread::get_id() == me;
  });
  CAPTURE(n);
  for (int i = 0; i < 32; ++i) CHECK(ran[static_cast<std::size_t>(i)].load() == (i < n ? 1 : 0));
  CHECK(zero_here.load());
}
}  // namespace

TEST_CASE("filler pool: every share once per run, as the pool grows and shrinks") {
  // Never destroyed: its threads park until the process ends.
  auto* pool = new FillerPool;
  for (const int n : {1, 3, 16, 5, 16, 2, 9}) check_run(*pool, n);
  CHECK(pool->threads() == 15);
}

TEST_CASE("filler pool: a thread the system refuses is run by the one that tried") {
  // Thread 1 (a root, started by the caller) and thread 6 (started by thread 3) are refused:
  // the caller runs share 1 and starts 2 and 3; thread 3 runs share 6 and starts 12 and 13.
  auto* pool = new FillerPool([](int i) { return i == 1 || i == 6; });
  for (const int n : {16, 4, 16, 7}) check_run(*pool, n);
  CHECK(pool->threads() == 13);
  // Refused roots of a later growth too.
  auto* grown = new FillerPool([](int i) { return i >= 4 && i % 2 == 0; });
  for (const int n : {3, 10, 16}) check_run(*grown, n);
}

TEST_CASE("filler pool: every share's prologue runs before a share waits for them all") {
  // Threads 1 and 6 refused: their shares run after others' on the caller's and thread 3's.
  // Each share waits (bounded) until all prologues ran, as an upload's fillers wait for their
  // staging group's pinning, which waits for every filler's buffers to be faulted in.
  auto* pool = new FillerPool([](int i) { return i == 1 || i == 6; });
  for (const int n : {16, 9}) {
    std::atomic<int> prologues{0};
    std::atomic<int> saw_all{0};
    pool->run(
        n,
        [&](int) {
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (prologues.load() < n && std::chrono::steady_clock::now() < deadline)
            std::this_thread::yield();
          if (prologues.load() == n) saw_all.fetch_add(1);
        },
        [&](int) { prologues.fetch_add(1); });
    CAPTURE(n);
    CHECK(saw_all.load() == n);
  }
  // A share whose prologue throws is not run; the error is the lowest share's.
  std::atomic<int> ran{0};
  CHECK_THROWS_WITH_AS(pool->run(
                           8, [&](int) { ran.fetch_add(1); },
                           [](int i) {
                             if (i == 5) throw std::runtime_error("prologue 5");
                           }),
                       "prologue 5", std::runtime_error);
  CHECK(ran.load() == 7);
}

TEST_CASE("filler pool: the lowest share's error is rethrown once all are done") {
  auto* pool = new FillerPool;
  std::atomic<int> finished{0};
  CHECK_THROWS_WITH_AS(pool->run(16,
                                 [&](int i) {
                                   if (i == 7) throw std::runtime_error("share 7");
                                   if (i == 3) throw std::runtime_error("share 3");
                                   finished.fetch_add(1);
                                 }),
                       "share 3", std::runtime_error);
  CHECK(finished.load() == 14);
  CHECK_THROWS_WITH_AS(pool->run(4,
                                 [](int i) {
                                   if (i == 0) throw std::runtime_error("share 0");
                                   throw std::runtime_error("other");
                                 }),
                       "share 0", std::runtime_error);
  check_run(*pool, 16);  // and the pool still works
}
