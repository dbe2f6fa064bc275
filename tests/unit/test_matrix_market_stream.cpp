// The Matrix Market reader streams: it holds a window of complete lines, refilled from a decoder
// that decompresses gzip and xz as it reads. Through any window (down to one byte) it gives what
// the parser gives on the whole text; a compressed file is read in memory that follows its
// entries, not its decompressed size; the xz decoder's own memory is held to the budget.
#include <doctest/doctest.h>
#include <lzma.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "../../matrix/decompress.hpp"
#include "spmvc/error.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/memory_budget.hpp"
#include "test_support.hpp"

using namespace spmvc;

namespace {

std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Outcome {
  std::optional<CsrMatrix> matrix;
  std::string error;
};

template <typename Fn>
Outcome outcome(Fn fn) {
  try {
    return {fn(), ""};
  } catch (const InputError& e) {
    return {std::nullopt, e.what()};
  }
}

bool same(const Outcome& a, const Outcome& b) {
  if (a.error != b.error || a.matrix.has_value() != b.matrix.has_value()) return false;
  if (!a.matrix) return true;
  const CsrMatrix &x = *a.matrix, &y = *b.matrix;
  return x.nrows == y.nrows && x.ncols == y.ncols && x.row_ptr == y.row_ptr &&
         x.col_idx == y.col_idx && x.values == y.values;
}

// Writes `pieces` times `piece` (after `head`, before `tail`) as one gzip member or xz stream,
// compressed as it is produced so the test never holds the whole text.
void write_compressed(const std::filesystem::path& path, bool xz, const std::string& head,
                      const std::string& piece, int pieces, const std::string& tail) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  std::string out(1 << 20, '\0');
  z_stream zs{};
  lzma_stream ls = LZMA_STREAM_INIT;
  if (xz) {
    REQUIRE(lzma_easy_encoder(&ls, 0, LZMA_CHECK_CRC64) == LZMA_OK);
  } else {
    REQUIRE(deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  }
  auto put = [&](const std::string& in, bool last) {
    if (xz) {
      ls.next_in = reinterpret_cast<const std::uint8_t*>(in.data());
      ls.avail_in = in.size();
      for (;;) {
        ls.next_out = reinterpret_cast<std::uint8_t*>(out.data());
        ls.avail_out = out.size();
        const lzma_ret rc = lzma_code(&ls, last ? LZMA_FINISH : LZMA_RUN);
        std::fwrite(out.data(), 1, out.size() - ls.avail_out, f);
        if (rc == LZMA_STREAM_END || (!last && ls.avail_in == 0)) break;
        REQUIRE(rc == LZMA_OK);
      }
    } else {
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
      zs.avail_in = static_cast<uInt>(in.size());
      for (;;) {
        zs.next_out = reinterpret_cast<Bytef*>(out.data());
        zs.avail_out = static_cast<uInt>(out.size());
        const int rc = deflate(&zs, last ? Z_FINISH : Z_NO_FLUSH);
        std::fwrite(out.data(), 1, out.size() - zs.avail_out, f);
        if (rc == Z_STREAM_END || (!last && zs.avail_in == 0)) break;
        REQUIRE(rc == Z_OK);
      }
    }
  };
  put(head, false);
  for (int i = 0; i < pieces; ++i) put(piece, false);
  put(tail, true);
  if (xz) {
    lzma_end(&ls);
  } else {
    deflateEnd(&zs);
  }
  std::fclose(f);
}

// Reads `path` in a child process and reports how far the child's peak resident memory rose
// (ru_maxrss, KiB) and the matrix's nonzero count. The child starts at the parent's current
// resident size, so its growth is the reader's peak, whatever the test process held before.
std::pair<long, long> child_read_peak(const std::filesystem::path& path) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    rusage before{}, after{};
    getrusage(RUSAGE_SELF, &before);
    // The budget caps the text at 1 GB here, whatever this machine's memory.
    setenv("SPMVC_MEMORY_BUDGET", "1000000000", 1);
    long nnz = -1;
    try {
      const CsrMatrix a = read_matrix_market(path);
      // (1, 1) summed from every copy, (2, 2) once: anything else reads as a wrong count.
      if (a.values.size() == 2 && a.values[1] == 5) nnz = a.nnz();
    } catch (...) {
    }
    getrusage(RUSAGE_SELF, &after);
    const long report[2] = {after.ru_maxrss - before.ru_maxrss, nnz};
    (void)!write(fds[1], report, sizeof report);
    _exit(0);
  }
  close(fds[1]);
  long report[2] = {-1, -1};
  const auto got = read(fds[0], report, sizeof report);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(got == static_cast<ssize_t>(sizeof report));
  return {report[0], report[1]};
}

}  // namespace

TEST_CASE("streamed through any window, the reader gives what the parser gives on the text") {
  int compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::data_dir())) {
    const std::filesystem::path path = entry.path();
    CAPTURE(path.string());
    const std::string raw = file_bytes(path);
    const std::string source = path.string();
    // The text as the whole-buffer decoders give it (or their error).
    std::string text;
    std::string decode_error;
    try {
      switch (detail::detect_compression(raw)) {
        case detail::Compression::kGzip:
          text = detail::gunzip(raw, source);
          break;
        case detail::Compression::kXz:
          text = detail::unxz(raw, source);
          break;
        case detail::Compression::kNone:
          text = raw;
          break;
      }
    } catch (const InputError& e) {
      decode_error = e.what();
    }
    const Outcome whole = decode_error.empty()
                              ? outcome([&] { return parse_matrix_market(text, source); })
                              : Outcome{std::nullopt, decode_error};
    const Outcome file = outcome([&] { return read_matrix_market(path); });
    // Text that is not Matrix Market is refused on its first bytes by the stream, with the
    // parser's wording; both name the banner.
    if (whole.error.find("missing Matrix Market banner") != std::string::npos) {
      CHECK(file.error.find("missing Matrix Market banner") != std::string::npos);
      continue;
    }
    CHECK(same(file, whole));
    for (std::size_t window : {1, 2, 3, 7, 64, 4096}) {
      CAPTURE(window);
      const Outcome streamed = outcome([&] {
        detail::TextStream stream(detail::memory_source(raw), source, memory_budget());
        return detail::parse_matrix_market_stream(stream, nullptr, window);
      });
      INFO(streamed.error, " vs ", whole.error);
      CHECK(same(streamed, whole));
    }
    ++compared;
  }
  CHECK(compared >= 14);
}

TEST_CASE("a large compressed file is read in memory bounded by its entries, not its text") {
  // 2,000 copies of entry (1, 1), each after 2,048 comment lines of 62 bytes, then entry (2, 2):
  // 254 MB of text with gzip, half that with xz (slower to compress). Held whole, the text alone
  // would raise the reader's peak by that much; streamed, only the window and the decoder's
  // buffers are held beside the 2,001 entries.
  std::string comments;
  for (int i = 0; i < 2048; ++i) {
    comments += "% a comment line that only makes the text long, 62 bytes ....\n";
  }
  REQUIRE(comments.size() == 2048 * 62);
  for (const bool xz : {false, true}) {
    CAPTURE(xz);
    const int pieces = xz ? 1000 : 2000;
    const std::filesystem::path path =
        std::filesystem::temp_directory_path() /
        ("spmvc_test_stream_" + std::to_string(getpid()) + (xz ? ".mtx.xz" : ".mtx.gz"));
    const std::string head =
        "%%MatrixMarket matrix coordinate real general\n2 2 " + std::to_string(pieces + 1) + "\n";
    write_compressed(path, xz, head, comments + "1 1 1\n", pieces, "2 2 5\n");
    const double text_mb =
        static_cast<double>(pieces) * static_cast<double>(comments.size() + 6) / 1e6;
    const auto [peak_kib, nnz] = child_read_peak(path);
    std::filesystem::remove(path);
    INFO("text ", text_mb, " MB, reader's peak rise ", peak_kib / 1024, " MiB");
    CHECK(nnz == 2);
    CHECK(text_mb > 120);
    CHECK(peak_kib < 48 * 1024);
  }
}

TEST_CASE("the xz decoder's memory is held to the budget") {
  // Preset 9 declares a 64 MiB dictionary: decoding needs about 65 MB whatever the text's size.
  const std::string text = "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 2\n";
  std::string xz(lzma_stream_buffer_bound(text.size()), '\0');
  std::size_t pos = 0;
  REQUIRE(lzma_easy_buffer_encode(
              9, LZMA_CHECK_CRC64, nullptr, reinterpret_cast<const std::uint8_t*>(text.data()),
              text.size(), reinterpret_cast<std::uint8_t*>(xz.data()), &pos, xz.size()) == LZMA_OK);
  xz.resize(pos);
  const std::string old =
      std::getenv("SPMVC_MEMORY_BUDGET") ? std::getenv("SPMVC_MEMORY_BUDGET") : "";
  setenv("SPMVC_MEMORY_BUDGET", "10000000", 1);
  const Outcome small = outcome([&] {
    detail::TextStream stream(detail::memory_source(xz), "dict.mtx.xz", memory_budget());
    return detail::parse_matrix_market_stream(stream, nullptr, 64);
  });
  setenv("SPMVC_MEMORY_BUDGET", "100000000", 1);
  INFO(small.error);
  CHECK(small.error.find("xz stream needs") != std::string::npos);
  CHECK(small.error.find("over the memory budget of 10000000 bytes") != std::string::npos);
  const Outcome enough = outcome([&] {
    detail::TextStream stream(detail::memory_source(xz), "dict.mtx.xz", memory_budget());
    return detail::parse_matrix_market_stream(stream, nullptr, 64);
  });
  if (old.empty()) {
    unsetenv("SPMVC_MEMORY_BUDGET");
  } else {
    setenv("SPMVC_MEMORY_BUDGET", old.c_str(), 1);
  }
  REQUIRE(enough.matrix.has_value());
  CHECK(enough.matrix->values == std::vector<double>{2.0});
}

TEST_CASE(
    "streamed: garbage after the compressed data is named as such, a cut stream as truncated") {
  for (const char* name : {"general.mtx.gz", "general.mtx.xz"}) {
    CAPTURE(name);
    const std::string bytes = file_bytes(test::data_dir() / name);
    const bool xz = std::string(name).ends_with(".xz");
    for (std::size_t window : {1, 4096}) {
      CAPTURE(window);
      auto read_bytes = [&](const std::string& b) {
        return outcome([&] {
          detail::TextStream stream(detail::memory_source(b), name, memory_budget());
          return detail::parse_matrix_market_stream(stream, nullptr, window);
        });
      };
      const Outcome garbage = read_bytes(bytes + "junk!");
      INFO(garbage.error);
      CHECK(garbage.error.find("5 bytes of trailing garbage after the compressed data") !=
            std::string::npos);
      CHECK(garbage.error.find("truncated") == std::string::npos);
      const Outcome cut = read_bytes(bytes.substr(0, bytes.size() - 12));
      INFO(cut.error);
      CHECK(cut.error.find(xz ? "truncated xz stream" : "truncated gzip stream") !=
            std::string::npos);
      // Two members or streams, with xz's stream padding between them, read as one text: the
      // second copy's entries are more than the first copy's size line declares.
      const Outcome twice = read_bytes(bytes + (xz ? std::string(4, '\0') : "") + bytes);
      INFO(twice.error);
      CHECK(twice.error.find("more entries than declared") != std::string::npos);
    }
  }
}

TEST_CASE("compressed input: entries are checked against the budget as they are read") {
  // The text's size is unknown until it is decoded, so a size line that declares more entries
  // than the file holds is found out as a short file, as for plain text, not refused from the
  // declared count; entries that are really there are checked as the arrays grow.
  const char* old_budget = std::getenv("SPMVC_MEMORY_BUDGET");
  const std::string saved = old_budget ? old_budget : "";
  setenv("SPMVC_MEMORY_BUDGET", "1000000", 1);
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("spmvc_test_entries_" + std::to_string(getpid()) + ".mtx.gz");
  write_compressed(path, false, "%%MatrixMarket matrix coordinate real general\n3 3 2147483647\n",
                   "1 1 1\n", 3, "");
  const Outcome lying = outcome([&] { return read_matrix_market(path); });
  INFO(lying.error);
  CHECK(lying.error.find("file ends early: expected 2147483647 entries, found 3") !=
        std::string::npos);
  // 100,000 entries in 600 kB of text: within the 1 MB cap on the text, but their arrays are
  // not.
  write_compressed(path, false, "%%MatrixMarket matrix coordinate real general\n3 3 100000\n",
                   "1 1 1\n", 100000, "");
  const Outcome many = outcome([&] { return read_matrix_market(path); });
  INFO(many.error);
  CHECK(many.error.find("the file holds more than 35713 entries (its size line declares "
                        "100000): that needs about") != std::string::npos);
  CHECK(many.error.find("over the memory budget of 1000000 bytes") != std::string::npos);
  std::filesystem::remove(path);
  if (old_budget) {
    setenv("SPMVC_MEMORY_BUDGET", saved.c_str(), 1);
  } else {
    unsetenv("SPMVC_MEMORY_BUDGET");
  }
}

TEST_CASE("a row count over the budget by itself is refused alike, plain or compressed") {
  // The row offsets are allocated from the size line alone, so a row count whose offsets exceed
  // the budget is refused there. Plain text (size known) and compressed text (size unknown)
  // must give the same error: the figure is the offsets', not an estimate that depends on how
  // much text follows.
  const char* old_budget = std::getenv("SPMVC_MEMORY_BUDGET");
  const std::string saved = old_budget ? old_budget : "";
  setenv("SPMVC_MEMORY_BUDGET", "67108864", 1);
  const std::string head = "%%MatrixMarket matrix coordinate real general\n9223373 4 7\n";
  std::string text = head;
  for (int i = 0; i < 7; ++i) text += "1 1 1\n";
  const Outcome plain = outcome([&] { return parse_matrix_market(text, "rows.mtx"); });
  INFO(plain.error);
  CHECK(plain.error.find("the size line declares 9223373 x 4 with 7 entries: that needs about "
                         "73786992 bytes") != std::string::npos);
  for (const bool xz : {false, true}) {
    CAPTURE(xz);
    const std::filesystem::path path =
        std::filesystem::temp_directory_path() /
        ("spmvc_test_rows_" + std::to_string(getpid()) + (xz ? ".mtx.xz" : ".mtx.gz"));
    write_compressed(path, xz, head, "1 1 1\n", 7, "");
    const std::string raw = file_bytes(path);
    std::filesystem::remove(path);
    for (std::size_t window : {1, 5, 4096}) {
      CAPTURE(window);
      const Outcome streamed = outcome([&] {
        detail::TextStream stream(detail::memory_source(raw), "rows.mtx", memory_budget());
        return detail::parse_matrix_market_stream(stream, nullptr, window);
      });
      INFO(streamed.error);
      CHECK(same(streamed, plain));
    }
  }
  // Offsets within the budget, and a declared count whose entries would not fit beside them:
  // the entries are not refused from the declared count (compressed text could not be), so
  // both find the file short.
  const std::string near = "%%MatrixMarket matrix coordinate real general\n8388000 3 1000\n";
  const std::string short_text = near + "1 1 1\n" + std::string(700, '%') + "\n";
  const Outcome short_plain = outcome([&] { return parse_matrix_market(short_text, "near.mtx"); });
  INFO(short_plain.error);
  CHECK(short_plain.error.find("file ends early: expected 1000 entries, found 1") !=
        std::string::npos);
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("spmvc_test_near_" + std::to_string(getpid()) + ".mtx.gz");
  write_compressed(path, false, near, "1 1 1\n" + std::string(700, '%') + "\n", 1, "");
  const std::string raw = file_bytes(path);
  std::filesystem::remove(path);
  const Outcome short_streamed = outcome([&] {
    detail::TextStream stream(detail::memory_source(raw), "near.mtx", memory_budget());
    return detail::parse_matrix_market_stream(stream, nullptr, 7);
  });
  CHECK(same(short_streamed, short_plain));
  if (old_budget) {
    setenv("SPMVC_MEMORY_BUDGET", saved.c_str(), 1);
  } else {
    unsetenv("SPMVC_MEMORY_BUDGET");
  }
}
