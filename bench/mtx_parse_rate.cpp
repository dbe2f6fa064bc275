// Matrix Market parse rate: MB/s of text and entries/s, single thread.
//
//   spmvc_bench_mtx_parse              two generated ~10M-entry texts held in memory
//   spmvc_bench_mtx_parse FILE...      the given files (compressed ones are timed with their
//                                      decompression, through read_matrix_market)
//
// The generated cases bracket real files: a 27-point stencil has short integer-valued entries
// ("-1"), the elasticity matrix has full 17-significant-digit values, as written by tools that
// print round-trip exact doubles.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "spmvc/error.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"

namespace {

constexpr int kRepetitions = 3;

struct Rate {
  double best_seconds;
  std::int64_t entries;
};

// Best of kRepetitions: the machine is shared, and the minimum is the least disturbed run.
Rate time_best(const std::function<spmvc::CsrMatrix()>& run) {
  double best = 1e300;
  std::int64_t entries = 0;
  for (int i = 0; i < kRepetitions; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const spmvc::CsrMatrix a = run();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
    entries = a.nnz();
  }
  return {best, entries};
}

void report(const std::string& name, std::size_t text_bytes, std::int64_t stored, const Rate& r) {
  fmt::print(
      "{:<40} {:>8.1f} MB  {:>10} entries  {:>7.3f} s  {:>7.1f} MB/s  {:>6.1f} M entries/s\n", name,
      static_cast<double>(text_bytes) / 1e6, stored, r.best_seconds,
      static_cast<double>(text_bytes) / 1e6 / r.best_seconds,
      static_cast<double>(stored) / 1e6 / r.best_seconds);
}

void bench_text(const std::string& name, const std::string& text) {
  spmvc::MatrixMarketHeader header;
  spmvc::parse_matrix_market(text, name, &header);
  const Rate r = time_best([&] { return spmvc::parse_matrix_market(text, name); });
  report(name, text.size(), header.stored_entries, r);
}

bool is_compressed(const std::string& bytes) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]); };
  return (bytes.size() >= 2 && b(0) == 0x1f && b(1) == 0x8b) ||
         (bytes.size() >= 6 && b(0) == 0xfd && bytes.compare(1, 5, std::string("7zXZ\0", 5)) == 0);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc > 1) {
      for (int i = 1; i < argc; ++i) {
        std::ifstream in(argv[i], std::ios::binary);
        if (!in) throw spmvc::InputError(argv[i], 0, "cannot open file");
        const std::string bytes{std::istreambuf_iterator<char>(in), {}};
        if (!is_compressed(bytes)) {
          bench_text(argv[i], bytes);
          continue;
        }
        spmvc::MatrixMarketHeader header;
        spmvc::read_matrix_market(argv[i], &header);
        const Rate r = time_best([&] { return spmvc::read_matrix_market(argv[i]); });
        report(std::string(argv[i]) + " (with decompression, compressed MB)", bytes.size(),
               header.stored_entries, r);
      }
      return 0;
    }
    fmt::print("generating...\n");
    std::fflush(stdout);
    bench_text("stencil27:n=72 (short values)",
               spmvc::to_matrix_market(spmvc::gen::stencil_3d_27pt(72, 72, 72)));
    bench_text("elasticity:n=36 (17-digit values)",
               spmvc::to_matrix_market(spmvc::gen::elasticity_3d(36, 36, 36, 1)));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spmvc_bench_mtx_parse: %s\n", e.what());
    return 1;
  }
}
