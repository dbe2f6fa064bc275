#include "spmvc/parallel.hpp"

#include <atomic>
#include <cstdlib>
#include <string>

namespace spmvc {
namespace {

std::atomic<int> g_threads{0};
std::atomic<bool> g_split_small{false};

int default_threads() {
  if (const char* env = std::getenv("SPMVC_THREADS"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (*end == '\0' && n > 0) return static_cast<int>(std::min<long>(n, 1024));
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::int64_t effective_grain(std::int64_t grain) {
  return g_split_small.load() ? 1 : std::max<std::int64_t>(grain, 1);
}

}  // namespace

void set_host_parallelism(const HostParallelism& parallelism) {
  g_threads.store(std::max(parallelism.threads, 0));
  g_split_small.store(parallelism.split_small);
}

HostParallelism host_parallelism() {
  const int set = g_threads.load();
  // The environment is read once: it does not change under a running process.
  static const int kDefault = default_threads();
  return {set > 0 ? set : kDefault, g_split_small.load()};
}

int host_threads() { return host_parallelism().threads; }

std::vector<Range> split_range(std::int64_t n, std::int64_t grain) {
  n = std::max<std::int64_t>(n, 0);
  const std::int64_t parts =
      std::clamp<std::int64_t>(n / effective_grain(grain), 1, host_threads());
  std::vector<Range> out(static_cast<std::size_t>(parts));
  for (std::int64_t p = 0; p < parts; ++p)
    out[static_cast<std::size_t>(p)] = {n * p / parts, n * (p + 1) / parts};
  return out;
}

std::vector<Range> split_rows(const CsrMatrix& a, std::int64_t grain) {
  // Work before row r: row_ptr[r] + r, strictly increasing in r.
  const std::int64_t work = a.nnz() + a.nrows;
  const std::int64_t parts =
      std::clamp<std::int64_t>(work / effective_grain(grain), 1, host_threads());
  std::vector<Range> out(static_cast<std::size_t>(parts));
  std::int64_t begin = 0;
  for (std::int64_t p = 0; p < parts; ++p) {
    std::int64_t end = a.nrows;
    if (p + 1 < parts) {
      // 128-bit-free: work * (p + 1) stays below 2^63 for any matrix that fits in memory.
      const std::int64_t target = work * (p + 1) / parts;
      std::int64_t lo = begin, hi = a.nrows;  // first row r in [lo, hi] with work(r) >= target
      while (lo < hi) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        if (a.row_ptr[mid] + mid < target) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      end = lo;
    }
    out[static_cast<std::size_t>(p)] = {begin, end};
    begin = end;
  }
  return out;
}

}  // namespace spmvc
