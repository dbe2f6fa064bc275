// Locality measures of a matrix in its current order: bandwidth, profile, x cache lines per warp
// and the BRO-ELL index saving. Definitions in include/spmvc/reorder.hpp.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "reorder_internal.hpp"
#include "spmvc/error.hpp"
#include "spmvc/reorder.hpp"

namespace spmvc {
namespace {

using reorder_detail::delta_bits;
using reorder_detail::parallel_chunks;
using reorder_detail::worker_count;

// One warp of a one-row-per-thread kernel, and the size of a GPU L1/L2 cache line (the sector
// granularity is 32 bytes, but a warp's request is served line by line).
constexpr std::int64_t kWarpRows = 32;
constexpr std::int64_t kCacheLineBytes = 128;

// Index bits of the slices [first_slice, last_slice) of the rows taken in `order` (the
// identity when empty).
std::int64_t slice_bits(const CsrMatrix& a, std::span<const std::int32_t> order, std::int64_t h,
                        std::int64_t alpha, std::int64_t first_slice, std::int64_t last_slice,
                        std::vector<int>& width) {
  std::int64_t bits = 0;
  for (std::int64_t s = first_slice; s < last_slice; ++s) {
    const std::int64_t begin = s * h;
    const std::int64_t end = std::min(a.nrows, begin + h);
    width.clear();
    for (std::int64_t i = begin; i < end; ++i) {
      const std::int64_t r = order.empty() ? i : order[static_cast<std::size_t>(i)];
      std::int64_t prev = 0;
      const std::int64_t len = a.row_length(r);
      if (static_cast<std::int64_t>(width.size()) < len) width.resize(len, 0);
      for (std::int64_t k = 0; k < len; ++k) {
        const std::int64_t col = a.col_idx[a.row_ptr[r] + k];
        width[k] = std::max(width[k], delta_bits(col - prev));
        prev = col;
      }
    }
    std::int64_t slice_row_bits = 0;
    for (const int w : width) slice_row_bits += w;
    bits += (end - begin) * alpha * ((slice_row_bits + alpha - 1) / alpha);
  }
  return bits;
}

}  // namespace

namespace reorder_detail {

std::int64_t bro_ell_index_bits(const CsrMatrix& a, std::span<const std::int32_t> order,
                                std::int64_t slice_height, std::int64_t symbol_bits, int threads) {
  const std::int64_t nslices = (a.nrows + slice_height - 1) / slice_height;
  std::atomic<std::int64_t> total{0};
  parallel_chunks(
      nslices, threads,
      [&](std::int64_t begin, std::int64_t end) {
        std::vector<int> width;
        total += slice_bits(a, order, slice_height, symbol_bits, begin, end, width);
      },
      std::max<std::int64_t>(1, kMinRowsPerThread / slice_height));
  return total;
}

}  // namespace reorder_detail

std::int64_t bro_ell_index_bits(const CsrMatrix& a, int slice_height, int symbol_bits) {
  if (slice_height < 1 || symbol_bits < 1) {
    throw InputError("bro_ell_index_bits", 0,
                     fmt::format("slice height {} and symbol length {} must be positive",
                                 slice_height, symbol_bits));
  }
  return reorder_detail::bro_ell_index_bits(a, {}, slice_height, symbol_bits, worker_count(0));
}

LocalityStats locality(const CsrMatrix& a, int value_bytes) {
  if (value_bytes < 1) {
    throw InputError("locality", 0, fmt::format("value size {} bytes", value_bytes));
  }
  const std::int64_t ngroups = (a.nrows + kWarpRows - 1) / kWarpRows;
  struct Partial {
    std::int64_t bandwidth = 0, profile = 0, lines = 0;
  };
  Partial all;
  std::mutex merge;
  parallel_chunks(
      ngroups, worker_count(0),
      [&](std::int64_t begin, std::int64_t end) {
        Partial p;
        std::vector<std::int64_t> lines;
        for (std::int64_t g = begin; g < end; ++g) {
          lines.clear();
          const std::int64_t last = std::min(a.nrows, (g + 1) * kWarpRows);
          for (std::int64_t r = g * kWarpRows; r < last; ++r) {
            const std::int64_t from = a.row_ptr[r], to = a.row_ptr[r + 1];
            if (from == to) continue;
            p.bandwidth = std::max({p.bandwidth, r - a.col_idx[from], a.col_idx[to - 1] - r});
            p.profile += std::max<std::int64_t>(0, r - a.col_idx[from]);
            for (std::int64_t k = from; k < to; ++k) {
              lines.push_back(std::int64_t{a.col_idx[k]} * value_bytes / kCacheLineBytes);
            }
          }
          std::sort(lines.begin(), lines.end());
          p.lines += std::unique(lines.begin(), lines.end()) - lines.begin();
        }
        const std::lock_guard lock(merge);
        all.bandwidth = std::max(all.bandwidth, p.bandwidth);
        all.profile += p.profile;
        all.lines += p.lines;
      },
      reorder_detail::kMinRowsPerThread / kWarpRows);

  LocalityStats s;
  s.bandwidth = all.bandwidth;
  s.profile = all.profile;
  s.lines_per_warp =
      ngroups > 0 ? static_cast<double>(all.lines) / static_cast<double>(ngroups) : 0;
  const std::int64_t nnz = a.nnz();
  s.bro_eta = nnz > 0 ? 1.0 - static_cast<double>(bro_ell_index_bits(a, 32, 32)) /
                                  (32.0 * static_cast<double>(nnz))
                      : 0;
  return s;
}

}  // namespace spmvc
