// inspect_blocks(): every candidate block shape in one sweep per block height r. For each block
// row the distinct columns of its r rows are gathered once (sorted, unique); every block width c
// and placement is then a linear pass over that list, so the cost is about
// 8 · (sort + 30 passes) over the nonzeros visited. Above BlockOptions::exact_max_nnz only a
// fixed set of evenly spaced row windows is visited and the counts are scaled by nonzeros.
// The (r, window) sweeps run on the host threads (spmvc/parallel.hpp); their counts are integer
// sums, so the report does not depend on the thread count.
#include "spmvc/blocks.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "spmvc/parallel.hpp"

namespace spmvc {
namespace {

constexpr int kWideCols[] = {16, 32, 64};

struct Window {
  std::int64_t begin = 0, end = 0;  // rows
};

std::vector<Window> windows_for(const CsrMatrix& a, const BlockOptions& o, bool& sampled) {
  sampled = a.nnz() > o.exact_max_nnz && a.nrows > 8 * std::max(o.sample_windows, 1);
  if (!sampled) return {{0, a.nrows}};
  const std::int64_t w = std::max(o.sample_windows, 1);
  const double mean = static_cast<double>(a.nnz()) / static_cast<double>(a.nrows);
  std::int64_t len = static_cast<std::int64_t>(static_cast<double>(o.sample_nnz) /
                                               (static_cast<double>(w) * std::max(mean, 1.0)));
  // At least 24 rows (a whole number of block rows for r = 1, 2, 3, 4, 6, 8).
  len = std::clamp<std::int64_t>(len, 24, a.nrows / w);
  std::vector<Window> out;
  for (std::int64_t i = 0; i < w; ++i) {
    const std::int64_t begin = i * a.nrows / w;
    out.push_back({begin, begin + len});
  }
  return out;
}

// Counters for one (r, c, placement, alignment), summed over the visited block rows.
struct Counter {
  BlockShape shape;
  std::int64_t blocks = 0, padded = 0, nnz = 0;
};

// Number of greedy blocks of width c whose starts are rounded down to multiples of align, over
// the sorted distinct columns u; their starts are appended to `starts` when it is given.
std::int64_t greedy_blocks(const std::vector<std::int32_t>& u, int c, int align,
                           std::vector<std::int64_t>* starts) {
  std::int64_t blocks = 0;
  std::size_t i = 0;
  while (i < u.size()) {
    const std::int64_t s = u[i] / align * align;
    const std::int64_t e = s + c;
    if (starts) starts->push_back(s);
    ++blocks;
    while (i < u.size() && u[i] < e) ++i;
  }
  return blocks;
}

std::int64_t aligned_blocks(const std::vector<std::int32_t>& u, int c) {
  std::int64_t blocks = 0, last = -1;
  for (const std::int32_t v : u) {
    const std::int64_t b = v / c;
    blocks += b != last;
    last = b;
  }
  return blocks;
}

// Entries stored when each row of each block keeps the prefix up to its last nonzero, rounded up
// to a multiple of align (blocks given by their sorted starts, width c).
std::int64_t row_padded(const CsrMatrix& a, std::int64_t r0, std::int64_t r1,
                        const std::vector<std::int64_t>& starts, int c, int align) {
  std::int64_t stored = 0;
  for (std::int64_t row = r0; row < r1; ++row) {
    std::size_t j = 0;
    std::int64_t last = -1;  // last column of this row in block j
    for (std::int64_t k = a.row_ptr[row]; k < a.row_ptr[row + 1]; ++k) {
      const std::int64_t col = a.col_idx[k];
      if (col >= starts[j] + c) {
        if (last >= 0) stored += (last - starts[j] + align) / align * align;
        while (col >= starts[j] + c) ++j;
        last = -1;
      }
      last = col;
    }
    if (last >= 0) stored += (last - starts[j] + align) / align * align;
  }
  return stored;
}

}  // namespace

double BlockShape::fill() const {
  return blocks == 0 ? 0.0 : static_cast<double>(nnz) / (static_cast<double>(blocks) * r * c);
}

double BlockShape::row_padded_fill() const {
  return stored_row_padded == 0 ? 0.0
                                : static_cast<double>(nnz) / static_cast<double>(stored_row_padded);
}

const BlockShape* BlockReport::find(int r, int c, BlockPlacement placement, int col_align) const {
  for (const BlockShape& s : shapes) {
    if (s.r == r && s.c == c && s.placement == placement &&
        (placement == BlockPlacement::aligned || s.col_align == col_align))
      return &s;
  }
  return nullptr;
}

BlockReport inspect_blocks(const CsrMatrix& a, const BlockOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  BlockReport rep;
  rep.nrows = a.nrows;
  rep.ncols = a.ncols;
  rep.nnz = a.nnz();
  const std::vector<Window> windows = windows_for(a, o, rep.sampled);
  const int max_small = std::clamp(o.max_small, 1, 8);

  // Every r's counters, in a fixed order: small aligned, small unaligned, then per wide width
  // aligned and one unaligned per alignment.
  std::vector<std::vector<Counter>> counters(8);
  for (int r = 1; r <= 8; ++r) {
    std::vector<Counter>& cs = counters[static_cast<std::size_t>(r - 1)];
    if (r <= max_small) {
      for (int c = 1; c <= max_small; ++c)
        cs.push_back({{r, c, BlockPlacement::aligned, c, 0, 0, 0}});
      for (int c = 1; c <= max_small; ++c)
        cs.push_back({{r, c, BlockPlacement::unaligned, 1, 0, 0, 0}});
    }
    for (const int c : kWideCols) {
      cs.push_back({{r, c, BlockPlacement::aligned, c, 0, 0, 0}});
      for (const int al : o.wide_aligns)
        cs.push_back({{r, c, BlockPlacement::unaligned, std::max(al, 1), 0, 0, 0}});
    }
  }

  // One task per (r, window), spread over the host threads; each range of tasks sums into its
  // own copy of the counters, and the copies add up in task order (integer sums: the same for
  // any split).
  struct Partial {
    std::vector<std::vector<Counter>> counters;
    std::array<std::int64_t, 8> visited{};
  };
  const std::int64_t nwindows = static_cast<std::int64_t>(windows.size());
  const std::vector<Partial> partials =
      map_ranges(split_range(8 * nwindows, 1), [&](std::int64_t task0, std::int64_t task1) {
        Partial part{counters, {}};
        std::vector<std::int32_t> u;
        std::vector<std::int64_t> starts;
        for (std::int64_t t = task0; t < task1; ++t) {
          const int r = static_cast<int>(t / nwindows) + 1;
          const Window& w = windows[static_cast<std::size_t>(t % nwindows)];
          std::vector<Counter>& cs = part.counters[static_cast<std::size_t>(r - 1)];
          std::int64_t& visited = part.visited[static_cast<std::size_t>(r - 1)];
          // Block rows lying wholly inside the window (the last block row of the matrix may be
          // short).
          const std::int64_t first = (w.begin + r - 1) / r;
          for (std::int64_t br = first;; ++br) {
            const std::int64_t r0 = br * r;
            const std::int64_t r1 = std::min(r0 + r, a.nrows);
            if (r0 >= a.nrows || (r1 > w.end && w.end < a.nrows)) break;
            const std::int64_t b = a.row_ptr[r0], e = a.row_ptr[r1];
            if (b == e) continue;
            visited += e - b;
            u.assign(a.col_idx.begin() + b, a.col_idx.begin() + e);
            if (r > 1) {
              std::sort(u.begin(), u.end());
              u.erase(std::unique(u.begin(), u.end()), u.end());
            }
            for (Counter& cn : cs) {
              const BlockShape& s = cn.shape;
              if (s.placement == BlockPlacement::aligned) {
                cn.blocks += aligned_blocks(u, s.c);
              } else if (s.c < 16) {
                cn.blocks += greedy_blocks(u, s.c, s.col_align, nullptr);
              } else {
                starts.clear();
                cn.blocks += greedy_blocks(u, s.c, s.col_align, &starts);
                cn.padded += row_padded(a, r0, r1, starts, s.c, s.col_align);
              }
            }
          }
        }
        return part;
      });

  for (std::size_t ri = 0; ri < counters.size(); ++ri) {
    std::vector<Counter>& cs = counters[ri];
    std::int64_t visited = 0;
    for (const Partial& part : partials) {
      visited += part.visited[ri];
      for (std::size_t k = 0; k < cs.size(); ++k) {
        cs[k].blocks += part.counters[ri][k].blocks;
        cs[k].padded += part.counters[ri][k].padded;
      }
    }
    // Sampled counts stand for the whole matrix in proportion to nonzeros.
    const double scale = rep.sampled && visited > 0
                             ? static_cast<double>(a.nnz()) / static_cast<double>(visited)
                             : 1.0;
    for (Counter& cn : cs) {
      BlockShape s = cn.shape;
      s.nnz = a.nnz();
      s.blocks = static_cast<std::int64_t>(static_cast<double>(cn.blocks) * scale + 0.5);
      s.stored_row_padded = static_cast<std::int64_t>(static_cast<double>(cn.padded) * scale + 0.5);
      rep.shapes.push_back(s);
    }
  }

  // Natural row groups and the visited totals, over the same windows.
  for (const Window& w : windows) {
    std::int64_t height = 0;
    auto close = [&] {
      if (height > 0) rep.groups.rows_in[std::min<std::int64_t>(height, 8)] += height;
      height = 0;
    };
    const std::int64_t end = std::min(w.end, a.nrows);
    for (std::int64_t row = w.begin; row < end; ++row) {
      const std::int64_t len = a.row_length(row);
      rep.sampled_rows += 1;
      rep.sampled_nnz += len;
      if (len == 0) {
        close();
        ++rep.groups.rows_in[0];
        continue;
      }
      const bool same = height > 0 && a.row_length(row - 1) == len &&
                        std::memcmp(&a.col_idx[a.row_ptr[row - 1]], &a.col_idx[a.row_ptr[row]],
                                    static_cast<std::size_t>(len) * sizeof(std::int32_t)) == 0;
      if (!same) close();
      ++height;
    }
    close();
  }
  rep.groups.rows = rep.sampled_rows;

  // The best dense shape: largest area with fill >= kDenseFill; aligned before unaligned, then
  // the smaller alignment, then the measured order (shorter blocks first).
  rep.best = BlockShape{0, 0, BlockPlacement::aligned, 1, 0, 0, 0};
  for (const BlockShape& s : rep.shapes) {
    if (s.r * s.c < 2 || s.fill() < BlockReport::kDenseFill) continue;
    const int area = s.r * s.c, best_area = rep.best.r * rep.best.c;
    const bool better =
        area > best_area || (area == best_area && s.placement == BlockPlacement::aligned &&
                             rep.best.placement == BlockPlacement::unaligned);
    if (better) rep.best = s;
  }
  if (rep.best.r > 0) {
    rep.structure =
        fmt::format("uniform {}x{}, {}", rep.best.r, rep.best.c,
                    rep.best.placement == BlockPlacement::aligned ? "aligned" : "unaligned");
  } else {
    // No single shape packs densely; rows that come in identical groups still mean blocks of
    // varied sizes.
    std::int64_t grouped = 0, nonempty = 0;
    for (int h = 1; h <= 8; ++h) {
      nonempty += rep.groups.rows_in[static_cast<std::size_t>(h)];
      if (h >= 2) grouped += rep.groups.rows_in[static_cast<std::size_t>(h)];
    }
    rep.structure = nonempty > 0 && 2 * grouped >= nonempty ? "mixed" : "none";
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

std::string to_report(const BlockReport& rep) {
  std::string out;
  out += fmt::format("Block structure: {}", rep.structure);
  if (rep.best.r > 0) out += fmt::format(" (fill {:.3f})", rep.best.fill());
  out += '\n';
  out +=
      rep.sampled
          ? fmt::format("Sampled: {} of {} rows, {} of {} nonzeros (counts scaled by nonzeros)\n",
                        rep.sampled_rows, rep.nrows, rep.sampled_nnz, rep.nnz)
          : fmt::format("Exact: every row ({} rows, {} nonzeros)\n", rep.nrows, rep.nnz);
  out += "Rows in identical-pattern groups of height";
  for (std::size_t h = 1; h <= 8; ++h)
    out += fmt::format(" {}{}:{}", h, h == 8 ? "+" : "", rep.groups.rows_in[h]);
  out += fmt::format(", empty:{}\n", rep.groups.rows_in[0]);

  auto table = [&](auto keep, const char* title) {
    out += fmt::format("{}\n  {:>5} {:>9} {:>5} {:>13} {:>7} {:>9}\n", title, "shape", "placement",
                       "align", "blocks", "fill", "row-pad");
    for (const BlockShape& s : rep.shapes) {
      if (!keep(s)) continue;
      out += fmt::format(
          "  {:>5} {:>9} {:>5} {:>13} {:>7.3f} {:>9}\n", fmt::format("{}x{}", s.r, s.c),
          s.placement == BlockPlacement::aligned ? "aligned" : "unaligned", s.col_align, s.blocks,
          s.fill(),
          s.stored_row_padded > 0 ? fmt::format("{:.3f}", s.row_padded_fill()) : std::string("-"));
    }
  };
  // Small shapes: the best few by fill (ties: larger area first); wide shapes: all of them.
  std::vector<BlockShape> small;
  for (const BlockShape& s : rep.shapes)
    if (s.c < 16 && s.r * s.c >= 2) small.push_back(s);
  std::stable_sort(small.begin(), small.end(), [](const BlockShape& x, const BlockShape& y) {
    if (x.fill() != y.fill()) return x.fill() > y.fill();
    return x.r * x.c > y.r * y.c;
  });
  if (small.size() > 12) small.resize(12);
  out +=
      fmt::format("Small shapes, best fill first ({} of {} shown):\n  {:>5} {:>9} {:>13} {:>7}\n",
                  small.size(), 2 * 64 - 2, "shape", "placement", "blocks", "fill");
  for (const BlockShape& s : small)
    out += fmt::format("  {:>5} {:>9} {:>13} {:>7.3f}\n", fmt::format("{}x{}", s.r, s.c),
                       s.placement == BlockPlacement::aligned ? "aligned" : "unaligned", s.blocks,
                       s.fill());
  table([](const BlockShape& s) { return s.c >= 16; },
        "Wide shapes (Baskaran): row-pad = fill with each block row padded to the alignment");
  out += fmt::format("Inspected in {:.4f} s\n", rep.seconds);
  return out;
}

}  // namespace spmvc
