// Locality measures of a matrix in its current order: bandwidth, profile, x cache lines per warp
// and the BRO-ELL index saving. Definitions in include/spmvc/reorder.hpp.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "reorder_internal.hpp"
#include "spmvc/error.hpp"
#include "spmvc/reorder.hpp"

namespace spmvc {
namespace {

using reorder_detail::delta_bits;
using reorder_detail::parallel_chunks;
using reorder_detail::parallel_dynamic;
using reorder_detail::worker_count;

// One warp of a one-row-per-thread kernel, and the size of a GPU L1/L2 cache line (the sector
// granularity is 32 bytes, but a warp's request is served line by line).
constexpr std::int64_t kWarpRows = 32;
constexpr std::int64_t kCacheLineBytes = 128;
// What an L1 miss fetches: one 32-byte sector.
constexpr std::int64_t kSectorBytes = 32;
// Groups of 32 rows a thread of lines_per_warp takes at a time (reordered rows put the long ones
// together, so the threads take work as they free up).
constexpr std::int64_t kGroupsGrain = 128;

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
  struct Partial {
    std::int64_t bandwidth = 0, profile = 0;
  };
  Partial all;
  std::mutex merge;
  parallel_chunks(a.nrows, worker_count(0), [&](std::int64_t begin, std::int64_t end) {
    Partial p;
    for (std::int64_t r = begin; r < end; ++r) {
      const std::int64_t from = a.row_ptr[r], to = a.row_ptr[r + 1];
      if (from == to) continue;
      p.bandwidth = std::max({p.bandwidth, r - a.col_idx[from], a.col_idx[to - 1] - r});
      p.profile += std::max<std::int64_t>(0, r - a.col_idx[from]);
    }
    const std::lock_guard lock(merge);
    all.bandwidth = std::max(all.bandwidth, p.bandwidth);
    all.profile += p.profile;
  });

  LocalityStats s;
  s.bandwidth = all.bandwidth;
  s.profile = all.profile;
  s.lines_per_warp = lines_per_warp(a, value_bytes);
  const std::int64_t nnz = a.nnz();
  s.bro_eta = nnz > 0 ? 1.0 - static_cast<double>(bro_ell_index_bits(a, 32, 32)) /
                                  (32.0 * static_cast<double>(nnz))
                      : 0;
  return s;
}

namespace {

// Distinct 128-byte lines of x per 32 consecutive rows, averaged over the groups, for the rows
// taken in the order row(i) (i = 0..nrows-1), each column c read as column(c).
template <typename Row, typename Column>
double warp_lines(const CsrMatrix& a, int value_bytes, const Row& row, const Column& column) {
  if (value_bytes < 1) {
    throw InputError("lines_per_warp", 0, fmt::format("value size {} bytes", value_bytes));
  }
  const std::int64_t ngroups = (a.nrows + kWarpRows - 1) / kWarpRows;
  if (ngroups == 0) return 0;
  const std::int64_t nlines = (a.ncols * value_bytes + kCacheLineBytes - 1) / kCacheLineBytes;
  const int threads = worker_count(0);
  // A group's lines are told apart by stamping each line of x with the group that last read it,
  // in an array over x's lines per thread, where those arrays together take at most 4 bytes a
  // nonzero (a third of the matrix's CSR); else by sorting the group's lines.
  const bool stamped = nlines * threads <= a.nnz() && ngroups < std::int64_t{UINT32_MAX};
  std::atomic<std::int64_t> all{0};
  parallel_dynamic(ngroups, threads, kGroupsGrain, [&](const auto& take) {
    std::int64_t count = 0;
    std::vector<std::uint32_t> stamp(stamped ? static_cast<std::size_t>(nlines) : 0, 0);
    std::vector<std::int64_t> lines;
    std::int64_t begin = 0, end = 0;
    while (take(begin, end)) {
      for (std::int64_t g = begin; g < end; ++g) {
        // Below UINT32_MAX groups (stamped), g + 1 fits and is never the initial 0.
        const auto mark = static_cast<std::uint32_t>(g + 1);
        lines.clear();
        const std::int64_t last = std::min(a.nrows, (g + 1) * kWarpRows);
        for (std::int64_t i = g * kWarpRows; i < last; ++i) {
          const std::int64_t r = row(i);
          for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
            const std::int64_t line = column(a.col_idx[k]) * value_bytes / kCacheLineBytes;
            if (!stamped) {
              lines.push_back(line);
            } else if (stamp[static_cast<std::size_t>(line)] != mark) {
              stamp[static_cast<std::size_t>(line)] = mark;
              ++count;
            }
          }
        }
        if (!stamped) {
          std::sort(lines.begin(), lines.end());
          count += std::unique(lines.begin(), lines.end()) - lines.begin();
        }
      }
    }
    all += count;
  });
  return static_cast<double>(all.load()) / static_cast<double>(ngroups);
}

// Calls measure(row, column) with the row and column maps of permute(a, ordering) (row(i): the
// old row of new row i; column(c): the new number of old column c), after checking that
// `ordering` is a permutation of a's rows (and, symmetric, of a square a's columns; columns_only,
// of a's columns alone).
template <typename Measure>
auto under_ordering(const CsrMatrix& a, const Ordering& ordering, const char* what,
                    const Measure& measure) {
  check_ordering(a, ordering, fmt::format("{} (ordering '{}')", what, ordering.name));
  const bool symmetric = ordering.kind == PermutationKind::symmetric;
  const bool columns = ordering.kind == PermutationKind::columns_only;
  const std::vector<std::int32_t>& perm = ordering.perm;
  const auto row = [&](std::int64_t i) {
    return columns ? i : std::int64_t{perm[static_cast<std::size_t>(i)]};
  };
  if (!symmetric && !columns) return measure(row, [](std::int32_t c) { return std::int64_t{c}; });
  std::vector<std::int32_t> renamed(perm.size());  // old column -> new
  for (std::size_t i = 0; i < perm.size(); ++i)
    renamed[static_cast<std::size_t>(perm[i])] = static_cast<std::int32_t>(i);
  return measure(
      row, [&](std::int32_t c) { return std::int64_t{renamed[static_cast<std::size_t>(c)]}; });
}

// x_gather_miss_share over the rows taken in the order row(i) (i = 0..nrows-1), each column c
// read as column(c).
template <typename Row, typename Column>
double miss_share(const CsrMatrix& a, int value_bytes, std::int64_t band_rows,
                  std::int64_t cache_bytes, std::int64_t max_bands, const Row& row,
                  const Column& column) {
  if (value_bytes < 1 || band_rows < 1 || cache_bytes < kSectorBytes || max_bands < 0) {
    throw InputError("x_gather_miss_share", 0,
                     fmt::format("value size {} bytes, band {} rows, cache {} bytes, at most {} "
                                 "bands (each must be at least 1, the cache at least one {}-byte "
                                 "sector; the bands 0 for all)",
                                 value_bytes, band_rows, cache_bytes, max_bands, kSectorBytes));
  }
  if (a.nnz() == 0) return 0;
  const std::int64_t per_sector = std::max<std::int64_t>(1, kSectorBytes / value_bytes);
  const auto kept = static_cast<std::size_t>(cache_bytes / kSectorBytes);
  const std::int64_t sectors = (a.ncols + per_sector - 1) / per_sector;
  const std::int64_t nbands = (a.nrows + band_rows - 1) / band_rows;
  // Bands taken: every one up to max_bands (0: no bound), else max_bands spread evenly over the
  // rows (the first included), the share then over their nonzeros.
  const std::int64_t taken = max_bands > 0 ? std::min(nbands, max_bands) : nbands;
  const auto band_of = [&](std::int64_t j) { return j * nbands / taken; };
  const int threads = static_cast<int>(std::min<std::int64_t>(worker_count(0), taken));
  const bool counted = sectors * threads <= a.nnz() && a.nnz() <= std::int64_t{UINT32_MAX};
  std::atomic<std::int64_t> hits{0}, read{0};
  parallel_dynamic(taken, threads, 1, [&](const auto& take) {
    // The uses of each sector the band reads: counted in an array over x's sectors per
    // thread where those arrays together take at most 4 bytes a nonzero (a third of the
    // matrix's CSR), else by sorting the band's sectors (memory for the band alone).
    std::vector<std::uint32_t> count(counted ? static_cast<std::size_t>(sectors) : 0, 0);
    std::vector<std::int64_t> gathered;
    std::vector<std::int64_t> uses;
    std::int64_t h = 0, n = 0;
    std::int64_t begin = 0, end = 0;
    while (take(begin, end)) {
      for (std::int64_t j = begin; j < end; ++j) {
        const std::int64_t band = band_of(j);
        gathered.clear();
        uses.clear();
        const std::int64_t last = std::min(a.nrows, (band + 1) * band_rows);
        for (std::int64_t i = band * band_rows; i < last; ++i) {
          const std::int64_t r = row(i);
          n += a.row_ptr[r + 1] - a.row_ptr[r];
          for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
            const std::int64_t s = column(a.col_idx[k]) / per_sector;
            if (!counted || count[static_cast<std::size_t>(s)]++ == 0) gathered.push_back(s);
          }
        }
        if (counted) {
          for (const std::int64_t s : gathered) {
            uses.push_back(count[static_cast<std::size_t>(s)]);
            count[static_cast<std::size_t>(s)] = 0;
          }
        } else {
          std::sort(gathered.begin(), gathered.end());
          for (std::size_t k = 0; k < gathered.size();) {
            std::size_t run = k + 1;
            while (run < gathered.size() && gathered[run] == gathered[k]) ++run;
            uses.push_back(static_cast<std::int64_t>(run - k));
            k = run;
          }
        }
        if (uses.size() > kept) {
          std::nth_element(uses.begin(), uses.begin() + static_cast<std::ptrdiff_t>(kept),
                           uses.end(), std::greater<>());
          uses.resize(kept);
        }
        for (const std::int64_t u : uses) h += u - 1;
      }
    }
    hits += h;
    read += n;
  });
  return read.load() == 0
             ? 0.0
             : 1.0 - static_cast<double>(hits.load()) / static_cast<double>(read.load());
}

}  // namespace

double x_gather_miss_share(const CsrMatrix& a, int value_bytes, std::int64_t band_rows,
                           std::int64_t cache_bytes, std::int64_t max_bands) {
  return miss_share(
      a, value_bytes, band_rows, cache_bytes, max_bands, [](std::int64_t i) { return i; },
      [](std::int32_t c) { return std::int64_t{c}; });
}

double x_gather_miss_share(const CsrMatrix& a, const Ordering& ordering, int value_bytes,
                           std::int64_t band_rows, std::int64_t cache_bytes,
                           std::int64_t max_bands) {
  return under_ordering(a, ordering, "x_gather_miss_share", [&](const auto& row, const auto& col) {
    return miss_share(a, value_bytes, band_rows, cache_bytes, max_bands, row, col);
  });
}

std::vector<std::int32_t> columns_read(const CsrMatrix& a) {
  std::vector<std::uint8_t> read(static_cast<std::size_t>(a.ncols), 0);
  // Threads mark the columns of their stretch of entries; a byte set twice holds 1 either way.
  reorder_detail::parallel_chunks(
      a.nnz(), worker_count(0),
      [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t k = begin; k < end; ++k)
          std::atomic_ref<std::uint8_t>(read[static_cast<std::size_t>(a.col_idx[k])])
              .store(1, std::memory_order_relaxed);
      },
      std::int64_t{1} << 20);
  std::vector<std::int32_t> out;
  for (std::int64_t j = 0; j < a.ncols; ++j)
    if (read[static_cast<std::size_t>(j)] != 0) out.push_back(static_cast<std::int32_t>(j));
  return out;
}

std::vector<std::int32_t> pack_read_columns(CsrMatrix& a, std::span<const std::int32_t> read) {
  const auto ncols = static_cast<std::size_t>(a.ncols);
  std::vector<std::int32_t> rank(ncols, -1);
  for (std::size_t i = 0; i < read.size(); ++i) {
    const std::int32_t j = read[i];
    if (j < 0 || j >= a.ncols || (i > 0 && j <= read[i - 1]))
      throw InputError("pack_read_columns", static_cast<std::int64_t>(i),
                       fmt::format("read column {} (of {}) after {}: not ascending in range", j,
                                   a.ncols, i > 0 ? read[i - 1] : -1));
    rank[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(i);
  }
  std::vector<std::int32_t> order(read.begin(), read.end());
  order.reserve(ncols);
  for (std::size_t j = 0; j < ncols; ++j)
    if (rank[j] < 0) {
      rank[j] = static_cast<std::int32_t>(order.size());
      order.push_back(static_cast<std::int32_t>(j));
    }
  // Ranks ascend with the columns read, so each row's columns keep their order. An entry whose
  // column `read` leaves out is checked for first: a's columns are left as they were.
  const auto listed = static_cast<std::int32_t>(read.size());
  std::atomic<std::int64_t> unlisted{-1};
  reorder_detail::parallel_chunks(
      a.nnz(), worker_count(0),
      [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t k = begin; k < end; ++k)
          if (rank[static_cast<std::size_t>(a.col_idx[k])] >= listed) {
            unlisted.store(k, std::memory_order_relaxed);
            return;
          }
      },
      std::int64_t{1} << 20);
  if (const std::int64_t k = unlisted.load(); k >= 0)
    throw InputError("pack_read_columns", k,
                     fmt::format("entry {} reads column {}, which the list of read columns "
                                 "leaves out",
                                 k, a.col_idx[static_cast<std::size_t>(k)]));
  reorder_detail::parallel_chunks(
      a.nnz(), worker_count(0),
      [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t k = begin; k < end; ++k)
          a.col_idx[k] = rank[static_cast<std::size_t>(a.col_idx[k])];
      },
      std::int64_t{1} << 20);
  return order;
}

std::int64_t columns_gathered(std::int64_t ncols, std::int64_t read) {
  return static_cast<double>(read) <= kGatherReadShare * static_cast<double>(ncols) ? read : ncols;
}

double lines_per_warp(const CsrMatrix& a, int value_bytes) {
  return warp_lines(
      a, value_bytes, [](std::int64_t i) { return i; },
      [](std::int32_t c) { return std::int64_t{c}; });
}

double lines_per_warp(const CsrMatrix& a, const Ordering& ordering, int value_bytes) {
  return under_ordering(a, ordering, "lines_per_warp", [&](const auto& row, const auto& col) {
    return warp_lines(a, value_bytes, row, col);
  });
}

bool TreeLikeness::tree_like() const {
  return closure < 0.01 && mean_degree >= 4 && growth >= 0.5 * row_mean;
}

double TreeLikeness::rcm_lines_left() const { return mean_degree > 2 ? 1 - 2 / mean_degree : 0.0; }

TreeLikeness tree_likeness(const CsrMatrix& a, int samples) {
  if (a.nrows != a.ncols)
    throw InputError("tree_likeness", 0,
                     fmt::format("the matrix is {} x {}, not square", a.nrows, a.ncols));
  if (samples < 1) throw InputError("tree_likeness", 0, "the sample count is below 1");
  TreeLikeness t;
  if (a.nrows == 0 || a.nnz() == 0) return t;
  const auto row = [&](std::int64_t v) {
    return std::span<const std::int32_t>(a.col_idx.data() + a.row_ptr[v],
                                         static_cast<std::size_t>(a.row_length(v)));
  };
  const auto holds = [&](std::int64_t v, std::int32_t c) {
    const auto r = row(v);
    return std::binary_search(r.begin(), r.end(), c);
  };
  // A row's first columns only: the pairs, and the walk to two steps, stay bounded on long rows
  // (a hub's row is met often, as one of many rows' columns).
  constexpr std::size_t kFirst = 32;
  const auto first_of = [&](std::int64_t v) {
    const auto r = row(v);
    return r.first(std::min(r.size(), kFirst));
  };
  double pairs = 0, closed = 0, growth = 0, reciprocal = 0;
  int grown = 0, edges = 0, diagonal = 0;
  std::vector<std::int32_t> ball;
  for (int i = 0; i < samples; ++i) {
    // Rows spread over the matrix by a multiplicative hash of the sample's number.
    const auto v = static_cast<std::int64_t>(
        (static_cast<std::uint64_t>(i) * 2654435761ULL + static_cast<std::uint64_t>(i) / 7) %
        static_cast<std::uint64_t>(a.nrows));
    const auto rv = first_of(v);
    if (rv.empty()) continue;
    diagonal += holds(v, static_cast<std::int32_t>(v)) ? 1 : 0;
    // Growth: distinct rows within one and within two steps (v's first columns, and theirs).
    ball.assign(rv.begin(), rv.end());
    ball.push_back(static_cast<std::int32_t>(v));
    std::sort(ball.begin(), ball.end());
    ball.erase(std::unique(ball.begin(), ball.end()), ball.end());
    const double one = static_cast<double>(ball.size());
    for (const std::int32_t c : rv) {
      const auto rc = first_of(c);
      ball.insert(ball.end(), rc.begin(), rc.end());
    }
    std::sort(ball.begin(), ball.end());
    ball.erase(std::unique(ball.begin(), ball.end()), ball.end());
    growth += static_cast<double>(ball.size()) / one;
    ++grown;
    // Closure and reciprocity through the entry (v, u), u one of v's columns other than v: each
    // pair (c, b) of another column c of v's row and another b of u's closes a triangle (b == c)
    // or a 4-cycle v, c, b, u (b in c's row).
    const std::int32_t u = rv[static_cast<std::size_t>(i) % rv.size()];
    if (u == v) continue;
    ++edges;
    reciprocal += holds(u, static_cast<std::int32_t>(v)) ? 1 : 0;
    const auto ru = first_of(u);
    for (const std::int32_t c : rv) {
      if (c == u || c == v) continue;
      for (const std::int32_t b : ru) {
        if (b == u || b == v) continue;
        pairs += 1;
        closed += b == c || holds(c, b) ? 1 : 0;
      }
    }
  }
  t.closure = pairs > 0 ? closed / pairs : 0;
  t.growth = grown > 0 ? growth / grown : 0;
  t.reciprocity = edges > 0 ? reciprocal / edges : 0;
  t.row_mean = static_cast<double>(a.nnz()) / static_cast<double>(a.nrows);
  // The diagonal is no edge: its share of the sampled rows comes off each row's entries. A + A^T
  // holds each other entry once or, where its transpose is stored too, the two once each.
  const double off_diagonal =
      std::max(0.0, t.row_mean - (grown > 0 ? static_cast<double>(diagonal) / grown : 0.0));
  t.mean_degree = off_diagonal * (2 - t.reciprocity);
  return t;
}

}  // namespace spmvc
