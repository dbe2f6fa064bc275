#include "formats/csr_stream/csr_stream_format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/arrays.hpp"
#include "formats/csr_stream/csr_stream_model.hpp"
#include "formats/model_shortcuts.hpp"
#include "formats/values/values.hpp"
#include "heuristics.hpp"
#include "spmvc/error.hpp"

namespace spmvc::formats {

namespace {

// (block size, tile, rows a lane) the planner tries: 4 and 8 nonzeros per thread at 256 threads,
// a small block for matrices with few rows, and in fp32 for short rows (fewer than
// kShortRowMean nonzeros on average, where a block's rows, not its tile, would end it) 512
// threads with two rows a lane and 8 nonzeros a thread. That last shape measured 1.11-1.15x
// cuSPARSE's best on the four census graphs x16M fp32 on the H200, against 0.99-1.08x for 256
// threads and 1,024 nonzeros (bench/results/2026-11-29-h200-dia-tiles/census-rows-per-lane.txt);
// in fp64 it measured 0.95-0.99x of the 256 x 1024 shape (census-rows-per-lane-f64.txt), and its
// 16-bit value table spills registers there.
struct Shape {
  int block, tile, rows_per_lane;
};
constexpr Shape kShapes[] = {{256, 1024, 1}, {256, 2048, 1}, {128, 512, 1}, {512, 4096, 2}};
constexpr double kShortRowMean = 8.0;

const CsrStreamParams& params_of(const FormatParams& params) {
  const auto* p = std::get_if<CsrStreamParams>(&params);
  if (p == nullptr) throw InternalError("csr_stream format given another format's parameters");
  return *p;
}

// The column of every nonzero, from col_idx or from the narrow layout (col_base, col16,
// col_wide): what the kernel reads, decoded independently of the encoder.
template <typename Offset>
std::vector<std::int32_t> decoded_columns(const Encoded& e, const std::int32_t* blocks,
                                          const Offset* row_ptr) {
  const bool wide_only = std::any_of(e.arrays.begin(), e.arrays.end(),
                                     [](const EncodedArray& a) { return a.name == "col_idx"; });
  if (wide_only) {
    const EncodedArray& a = e.array("col_idx");
    const std::int32_t* c = typed<std::int32_t>(a);
    return {c, c + a.count()};
  }
  const std::int32_t* base = typed<std::int32_t>(e.array("col_base"));
  const std::uint16_t* narrow = typed<std::uint16_t>(e.array("col16"));
  const EncodedArray& wide_arr = e.array("col_wide");
  const std::int32_t* wide = typed<std::int32_t>(wide_arr);
  const auto nblocks = static_cast<std::size_t>(e.array("row_blocks").count() - 1);
  std::vector<std::int32_t> out(static_cast<std::size_t>(e.nnz));
  for (std::size_t b = 0; b < nblocks; ++b) {
    const std::int64_t start = row_ptr[blocks[b]], end = row_ptr[blocks[b + 1]];
    for (std::int64_t k = start; k < end; ++k) {
      const auto i = static_cast<std::size_t>(k);
      if (base[b] >= 0) {
        out[i] = base[b] + narrow[i];
      } else {
        const std::int64_t w = -1 - static_cast<std::int64_t>(base[b]) + (k - start);
        if (w >= wide_arr.count()) throw InternalError("csr_stream: wide columns out of range");
        out[i] = wide[w];
      }
    }
  }
  return out;
}

// Sorted tiles (CsrStreamParams::sorted) back in CSR order: nonzero k of a block goes to its
// slot, as the kernel's product does. A slot outside the block, or two nonzeros sent to one slot,
// is an encoding error.
template <typename Offset, typename Value>
void unsort_tiles(const Encoded& e, const std::int32_t* blocks, const Offset* row_ptr,
                  std::vector<std::int32_t>& col, std::vector<Value>& values) {
  const EncodedArray& slots_arr = e.array("slots");
  if (slots_arr.count() != static_cast<std::int64_t>(col.size()))
    throw InternalError("csr_stream: a slot per nonzero expected");
  const std::uint16_t* slots = typed<std::uint16_t>(slots_arr);
  std::vector<std::int32_t> in_order_col(col.size());
  std::vector<Value> in_order_values(values.size());
  std::vector<char> taken(col.size(), 0);
  const auto nblocks = static_cast<std::size_t>(e.array("row_blocks").count() - 1);
  for (std::size_t b = 0; b < nblocks; ++b) {
    const std::int64_t start = row_ptr[blocks[b]], end = row_ptr[blocks[b + 1]];
    for (std::int64_t k = start; k < end; ++k) {
      const std::int64_t to = start + slots[static_cast<std::size_t>(k)];
      if (to >= end || taken[static_cast<std::size_t>(to)])
        throw InternalError(fmt::format("csr_stream: block {} sends nonzero {} to slot {} wrongly",
                                        b, k, to - start));
      taken[static_cast<std::size_t>(to)] = 1;
      in_order_col[static_cast<std::size_t>(to)] = col[static_cast<std::size_t>(k)];
      in_order_values[static_cast<std::size_t>(to)] = values[static_cast<std::size_t>(k)];
    }
  }
  col = std::move(in_order_col);
  values = std::move(in_order_values);
}

// y[r] = alpha * sum + beta * y[r] for row r of block b, once: a row out of range or written
// twice is an encoding error.
void write_row(std::span<double> y, std::vector<char>& written, std::size_t b, std::int64_t r,
               double sum, double alpha, double beta) {
  if (r < 0 || r >= static_cast<std::int64_t>(y.size()) || written[static_cast<std::size_t>(r)])
    throw InternalError(fmt::format("csr_stream: block {} covers row {} wrongly", b, r));
  written[static_cast<std::size_t>(r)] = 1;
  const double prior = beta != 0.0 ? beta * y[static_cast<std::size_t>(r)] : 0.0;
  y[static_cast<std::size_t>(r)] = alpha * sum + prior;
}

// Split rows: block b's rows summed as the kernel sums them, from its lane descriptors alone
// (products in shared memory, each lane's segment, the partial sums left at their segments'
// first places and added by their heads). A descriptor reaching outside its block, two segments
// over one product, a product no segment sums, a head reading a place that no lane of its warp
// filled, or a row out of the block is an encoding error. Marks the rows written.
template <typename Offset, typename Value>
void multiply_split_block(const Encoded& e, const CsrStreamParams& p, std::size_t b,
                          const std::int32_t* blocks, const Offset* row_ptr,
                          const std::vector<std::int32_t>& col, const std::vector<Value>& values,
                          std::span<const double> x, std::span<double> y, double alpha, double beta,
                          std::vector<char>& written) {
  const std::uint32_t* lanes = typed<std::uint32_t>(e.array("lanes"));
  const std::int64_t start = row_ptr[blocks[b]], n = row_ptr[blocks[b + 1]] - start;
  const std::int64_t rows = blocks[b + 1] - blocks[b];
  std::vector<double> products(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) {
    const auto i = static_cast<std::size_t>(start + k);
    products[static_cast<std::size_t>(k)] =
        static_cast<double>(values[i]) * x[static_cast<std::size_t>(col[i])];
  }
  if (n > p.tile) {
    if (rows != 1)
      throw InternalError(fmt::format("csr_stream: long block {} holds {} rows", b, rows));
    write_row(y, written, b, blocks[b], std::accumulate(products.begin(), products.end(), 0.0),
              alpha, beta);
    return;
  }
  const auto bs = static_cast<std::size_t>(p.block_size);
  std::vector<CsrStreamFormat::Lane> lane(bs);
  for (std::size_t t = 0; t < bs; ++t) lane[t] = CsrStreamFormat::Lane::decode(lanes[b * bs + t]);
  std::vector<double> sums(bs, 0.0);
  std::vector<int> writer(static_cast<std::size_t>(n), -1);  // the warp that left a sum there
  std::vector<char> covered(static_cast<std::size_t>(n), 0);
  for (std::size_t t = 0; t < bs; ++t) {
    const std::int64_t sb = lane[t].start, len = lane[t].length;
    if (sb + len > n && len > 0)
      throw InternalError(fmt::format("csr_stream: block {} lane {} reaches past its tile", b, t));
    for (std::int64_t k = sb; k < sb + len; ++k) {
      if (covered[static_cast<std::size_t>(k)]++)
        throw InternalError(fmt::format("csr_stream: block {} sums product {} twice", b, k));
      sums[t] += products[static_cast<std::size_t>(k)];
    }
  }
  if (std::find(covered.begin(), covered.end(), 0) != covered.end())
    throw InternalError(fmt::format("csr_stream: block {} leaves a product unsummed", b));
  for (std::size_t t = 0; t < bs; ++t) {
    if (!lane[t].head && lane[t].length > 0) {
      products[static_cast<std::size_t>(lane[t].start)] = sums[t];
      writer[static_cast<std::size_t>(lane[t].start)] = static_cast<int>(t / 32);
    }
  }
  for (std::size_t t = 0; t < bs; ++t) {
    if (!lane[t].head) continue;
    double sum = sums[t];
    for (std::int64_t j = 1; j <= lane[t].extra; ++j) {
      const std::int64_t at = lane[t].start + j * lane[t].length;
      if (at >= n || writer[static_cast<std::size_t>(at)] != static_cast<int>(t / 32))
        throw InternalError(fmt::format(
            "csr_stream: block {} lane {} adds a partial sum its warp did not leave", b, t));
      sum += products[static_cast<std::size_t>(at)];
    }
    if (lane[t].row >= rows)
      throw InternalError(
          fmt::format("csr_stream: block {} lane {} writes row {} of {}", b, t, lane[t].row, rows));
    write_row(y, written, b, blocks[b] + lane[t].row, sum, alpha, beta);
  }
}

template <typename Offset, typename Value>
void multiply(const Encoded& e, const CsrStreamParams& p, std::span<const double> x,
              std::span<double> y, double alpha, double beta) {
  const EncodedArray& blocks_arr = e.array("row_blocks");
  const std::int32_t* blocks = typed<std::int32_t>(blocks_arr);
  const Offset* row_ptr = typed<Offset>(e.array("row_ptr"));
  std::vector<std::int32_t> col = decoded_columns(e, blocks, row_ptr);
  std::vector<Value> values =
      stored_values<Value>(e, "values", p.values, static_cast<std::int64_t>(col.size()));
  if (p.sorted) unsort_tiles(e, blocks, row_ptr, col, values);
  // Walk the rows block by block, as the kernel does: a partition that skipped or repeated a
  // row would show here as a row never written or written twice.
  std::vector<char> written(static_cast<std::size_t>(e.nrows), 0);
  const auto nblocks = static_cast<std::size_t>(blocks_arr.count() - 1);
  if (p.split > 0) {
    if (e.array("lanes").count() != static_cast<std::int64_t>(nblocks) * p.block_size)
      throw InternalError("csr_stream: a lane descriptor per thread of each block expected");
    for (std::size_t b = 0; b < nblocks; ++b)
      multiply_split_block(e, p, b, blocks, row_ptr, col, values, x, y, alpha, beta, written);
  }
  for (std::size_t b = 0; p.split == 0 && b < nblocks; ++b) {
    for (std::int64_t r = blocks[b]; r < blocks[b + 1]; ++r) {
      // A row out of range is refused before its offsets are read.
      if (r < 0 || r >= e.nrows) write_row(y, written, b, r, 0.0, alpha, beta);
      double sum = 0;
      for (std::int64_t j = row_ptr[r]; j < static_cast<std::int64_t>(row_ptr[r + 1]); ++j) {
        sum += static_cast<double>(values[static_cast<std::size_t>(j)]) *
               x[static_cast<std::size_t>(col[static_cast<std::size_t>(j)])];
      }
      write_row(y, written, b, r, sum, alpha, beta);
    }
  }
  if (std::find(written.begin(), written.end(), 0) != written.end())
    throw InternalError("csr_stream: the row blocks miss a row");
}

// col_base (a base column per block, or -1 - w for a block whose columns sit at col_wide[w...]),
// col16 (column - base per nonzero; unused slots of wide blocks stay 0) and col_wide.
void encode_narrow_columns(const CsrMatrix& a, const std::vector<std::int32_t>& blocks,
                           std::vector<EncodedArray>& arrays) {
  const std::size_t nblocks = blocks.size() - 1;
  std::vector<std::int32_t> base(nblocks);
  std::vector<std::int64_t> wide_at(nblocks, -1);
  std::int64_t wide_count = 0;
  for (std::size_t b = 0; b < nblocks; ++b) {
    const std::int64_t start = a.row_ptr[static_cast<std::size_t>(blocks[b])];
    const std::int64_t end = a.row_ptr[static_cast<std::size_t>(blocks[b + 1])];
    std::int32_t lo = std::numeric_limits<std::int32_t>::max(), hi = 0;
    for (std::int64_t k = start; k < end; ++k) {
      lo = std::min(lo, a.col_idx[static_cast<std::size_t>(k)]);
      hi = std::max(hi, a.col_idx[static_cast<std::size_t>(k)]);
    }
    if (end == start) lo = 0;
    if (static_cast<std::int64_t>(hi) - lo <= CsrStreamFormat::kNarrowSpan) {
      base[b] = lo;
    } else {
      wide_at[b] = wide_count;
      wide_count += end - start;
      if (wide_count > std::numeric_limits<std::int32_t>::max())
        throw InternalError("csr_stream: too many wide columns for 32-bit positions");
      base[b] = static_cast<std::int32_t>(-1 - wide_at[b]);
    }
  }
  EncodedArray narrow = zero_array<std::uint16_t>("col16", ElemType::u16, a.col_idx.size());
  EncodedArray wide = zero_array<std::int32_t>(
      "col_wide", ElemType::i32, static_cast<std::size_t>(std::max<std::int64_t>(wide_count, 1)));
  std::uint16_t* n16 = typed_mut<std::uint16_t>(narrow);
  std::int32_t* w32 = typed_mut<std::int32_t>(wide);
  parallel_for(static_cast<std::int64_t>(nblocks), 1024, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t b = lo; b < hi; ++b) {
      const auto bi = static_cast<std::size_t>(b);
      const std::int64_t start = a.row_ptr[static_cast<std::size_t>(blocks[bi])];
      const std::int64_t end = a.row_ptr[static_cast<std::size_t>(blocks[bi + 1])];
      for (std::int64_t k = start; k < end; ++k) {
        const std::int32_t c = a.col_idx[static_cast<std::size_t>(k)];
        if (base[bi] >= 0) {
          n16[k] = static_cast<std::uint16_t>(c - base[bi]);
        } else {
          w32[wide_at[bi] + (k - start)] = c;
        }
      }
    }
  });
  arrays.push_back(make_array<std::int32_t>("col_base", ElemType::i32, base));
  arrays.push_back(std::move(narrow));
  arrays.push_back(std::move(wide));
}

// The copy of `a` that CsrStreamParams::sorted encodes: within each block that fits the tile,
// the nonzeros in column order (ties in CSR order), and in `slots` each one's place in the block's
// CSR order. A longer row's block keeps its order (a row's columns are its own order already):
// its slots count up.
CsrMatrix sort_tiles(const CsrMatrix& a, const std::vector<std::int32_t>& blocks, int tile,
                     std::vector<std::uint16_t>& slots) {
  CsrMatrix out;
  out.nrows = a.nrows;
  out.ncols = a.ncols;
  out.row_ptr = a.row_ptr;
  out.col_idx.resize(a.col_idx.size());
  out.values.resize(a.values.size());
  slots.assign(a.col_idx.size(), 0);
  const auto nblocks = static_cast<std::int64_t>(blocks.size()) - 1;
  parallel_for(nblocks, 256, [&](std::int64_t lo, std::int64_t hi) {
    std::vector<std::uint16_t> order;
    for (std::int64_t b = lo; b < hi; ++b) {
      const std::int64_t start = a.row_ptr[static_cast<std::size_t>(blocks[b])];
      const std::int64_t end = a.row_ptr[static_cast<std::size_t>(blocks[b + 1])];
      const std::int64_t n = end - start;
      order.resize(static_cast<std::size_t>(n <= tile ? n : 0));
      std::iota(order.begin(), order.end(), std::uint16_t{0});
      const std::int32_t* col = a.col_idx.data() + start;
      std::stable_sort(order.begin(), order.end(),
                       [&](std::uint16_t i, std::uint16_t j) { return col[i] < col[j]; });
      for (std::int64_t k = 0; k < n; ++k) {
        const std::int64_t from = n <= tile ? order[static_cast<std::size_t>(k)] : k;
        const auto to = static_cast<std::size_t>(start + k);
        out.col_idx[to] = col[from];
        out.values[to] = a.values[static_cast<std::size_t>(start + from)];
        slots[to] = static_cast<std::uint16_t>(n <= tile ? from : k % 65536);
      }
    }
  });
  return out;
}

// The partition's first pass: each group of kGroupRows rows counts its blocks on its own
// (`next(first, end)` is the row after the block that starts at `first` in a group ending before
// `end`), and the counts become each group's first block (ngroups + 1 offsets).
template <typename Next>
std::vector<std::int64_t> group_block_offsets(std::int64_t nrows, const Next& next) {
  constexpr std::int64_t kRows = CsrStreamFormat::kGroupRows;
  const std::int64_t ngroups = (nrows + kRows - 1) / kRows;
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(ngroups) + 1, 0);
  parallel_for(ngroups, 16, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t g = lo; g < hi; ++g) {
      const std::int64_t end = std::min(nrows, (g + 1) * kRows);
      std::int64_t n = 0;
      for (std::int64_t r = g * kRows; r < end; r = next(r, end)) ++n;
      offsets[static_cast<std::size_t>(g) + 1] = n;
    }
  });
  for (std::size_t g = 1; g < offsets.size(); ++g) offsets[g] += offsets[g - 1];
  return offsets;
}

}  // namespace

std::vector<std::int32_t> CsrStreamFormat::row_blocks(const CsrMatrix& a, int tile,
                                                      int block_size) {
  if (a.nrows == 0) return {0, 0};  // no rows: one empty block keeps the launch valid
  // The block that starts at row `first` of the group ending before `end`: a row longer than the
  // tile goes alone; otherwise rows join while the tile holds them, up to block_size rows. The
  // first row that would overflow the tile is found by binary search (row_ptr never decreases).
  auto block_end = [&](std::int64_t first, std::int64_t end) {
    const std::int64_t limit = std::min(end, first + block_size);
    const std::int64_t bound = a.row_ptr[static_cast<std::size_t>(first)] + tile;
    const auto begin = a.row_ptr.begin() + first + 2;  // row_ptr[v + 1] for v = first + 1
    const auto stop = a.row_ptr.begin() + limit + 1;   // ... up to v = limit (excluded)
    if (a.row_ptr[static_cast<std::size_t>(first) + 1] > bound) return first + 1;
    if (begin >= stop) return limit;
    return std::upper_bound(begin, stop, bound) - a.row_ptr.begin() - 1;
  };
  // Groups of kGroupRows rows are cut independently (the GPU builds the same partition with a
  // thread per group: templates/device_csr.cuh): count each group's blocks, then fill.
  const std::int64_t ngroups = (a.nrows + kGroupRows - 1) / kGroupRows;
  const std::vector<std::int64_t> offsets = group_block_offsets(a.nrows, block_end);
  std::vector<std::int32_t> out(static_cast<std::size_t>(offsets.back()) + 1);
  parallel_for(ngroups, 16, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t g = lo; g < hi; ++g) {
      const std::int64_t end = std::min(a.nrows, (g + 1) * kGroupRows);
      auto at = static_cast<std::size_t>(offsets[static_cast<std::size_t>(g)]);
      for (std::int64_t r = g * kGroupRows; r < end; r = block_end(r, end))
        out[at++] = static_cast<std::int32_t>(r);
    }
  });
  out.back() = static_cast<std::int32_t>(a.nrows);
  return out;
}

CsrStreamFormat::Segments CsrStreamFormat::segments(std::int64_t n, int split) {
  if (n <= split) return {static_cast<int>(n), 1};
  auto root = static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(n))));
  std::int64_t length = std::max({static_cast<std::int64_t>(split), root, (n + 31) / 32});
  // An odd length: a row's segments start an odd number of products apart, so that its lanes,
  // stepping through them together, read 32 different banks of shared memory (a length of 16 or
  // 32 put every lane of the row on one bank, in fp64 for either).
  length |= 1;
  return {static_cast<int>(length), static_cast<int>((n + length - 1) / length)};
}

CsrStreamFormat::Lane CsrStreamFormat::Lane::decode(std::uint32_t bits) {
  return {static_cast<int>(bits & 0x7ffu), static_cast<int>((bits >> 11) & 0x7fu),
          ((bits >> 18) & 1u) != 0, static_cast<int>((bits >> 19) & 0x1fu),
          static_cast<int>(bits >> 24)};
}

std::uint32_t CsrStreamFormat::Lane::encode() const {
  return static_cast<std::uint32_t>(start) | static_cast<std::uint32_t>(length) << 11 |
         (head ? 1u : 0u) << 18 | static_cast<std::uint32_t>(extra) << 19 |
         static_cast<std::uint32_t>(row) << 24;
}

std::vector<std::int32_t> CsrStreamFormat::split_row_blocks(const CsrMatrix& a, int tile,
                                                            int block_size, int split,
                                                            std::vector<std::uint32_t>& lanes) {
  if (a.nrows == 0) {
    lanes.assign(static_cast<std::size_t>(block_size), 0);
    return {0, 0};
  }
  auto length_of = [&](std::int64_t r) {
    return a.row_ptr[static_cast<std::size_t>(r) + 1] - a.row_ptr[static_cast<std::size_t>(r)];
  };
  // Walks the block that starts at row `first` of the group ending before `end`, calling
  // place(row, first lane, segments) for each of its rows; returns the row after it. A row's
  // segments take lanes of one warp: where they would cross into the next, they start there.
  auto walk = [&](std::int64_t first, std::int64_t end, auto&& place) {
    if (length_of(first) > tile) return first + 1;  // alone, summed by every thread
    std::int64_t nnz = 0, r = first;
    int lane = 0;
    for (; r < end && r - first < block_size; ++r) {
      const std::int64_t n = length_of(r);
      if (nnz + n > tile) break;
      const Segments seg = segments(n, split);
      int at = lane;
      if ((at & 31) + seg.count > 32) at = (at + 31) & ~31;
      if (at + seg.count > block_size) break;
      place(r, at, seg);
      lane = at + seg.count;
      nnz += n;
    }
    return r;
  };
  const auto none = [](std::int64_t, int, const Segments&) {};
  const std::int64_t ngroups = (a.nrows + kGroupRows - 1) / kGroupRows;
  const std::vector<std::int64_t> offsets = group_block_offsets(
      a.nrows, [&](std::int64_t first, std::int64_t end) { return walk(first, end, none); });
  const auto nblocks = static_cast<std::size_t>(offsets.back());
  std::vector<std::int32_t> out(nblocks + 1);
  lanes.assign(nblocks * static_cast<std::size_t>(block_size), 0);
  parallel_for(ngroups, 16, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t g = lo; g < hi; ++g) {
      const std::int64_t end = std::min(a.nrows, (g + 1) * kGroupRows);
      auto at = static_cast<std::size_t>(offsets[static_cast<std::size_t>(g)]);
      for (std::int64_t r = g * kGroupRows; r < end; ++at) {
        out[at] = static_cast<std::int32_t>(r);
        const std::int64_t start = a.row_ptr[static_cast<std::size_t>(r)];
        std::uint32_t* block = lanes.data() + at * static_cast<std::size_t>(block_size);
        r = walk(r, end, [&](std::int64_t row, int lane, const Segments& seg) {
          const std::int64_t n = length_of(row);
          // An empty row that ends a full tile starts at `tile`, past the 11-bit field: with no
          // products to sum, its segment starts at 0.
          const std::int64_t b = n > 0 ? a.row_ptr[static_cast<std::size_t>(row)] - start : 0;
          for (int j = 0; j < seg.count; ++j) {
            Lane d;
            d.start = static_cast<int>(b + std::int64_t{j} * seg.length);
            d.length = static_cast<int>(
                std::min<std::int64_t>(seg.length, n - std::int64_t{j} * seg.length));
            d.head = j == 0;
            d.extra = j == 0 ? seg.count - 1 : 0;
            d.row = j == 0 ? static_cast<int>(row - out[at]) : 0;
            block[lane + j] = d.encode();
          }
        });
      }
    }
  });
  out.back() = static_cast<std::int32_t>(a.nrows);
  return out;
}

double CsrStreamFormat::estimated_blocks(const Profile& profile, const CsrStreamParams& p) {
  // Rows longer than the tile get a block each; the rest are cut within their groups. Bins above
  // 32 are ranges: their midpoint stands for every row in them (a short row's range lies under
  // the tile, which is a power of two when proposed; a long row's nonzeros are not needed).
  double long_rows = 0, short_rows = 0, short_nnz = 0;
  for (const HistogramBin& bin : profile.row_histogram) {
    const auto count = static_cast<double>(bin.count);
    if (bin.lo > p.tile) {
      long_rows += count;
    } else {
      short_rows += count;
      short_nnz +=
          0.5 * static_cast<double>(bin.lo + std::min<std::int64_t>(bin.hi, p.tile)) * count;
    }
  }
  // Greedy cutting leaves each block on average about a row's worth short of full.
  const double mean = short_rows > 0 ? short_nnz / short_rows : 0;
  const double fill = std::max(0.5, 1.0 - mean / p.tile);
  // Each group of kGroupRows rows is cut alone, by whichever limit binds, and ends on a partial
  // block (half a block more) when it needs more than one.
  const double groups = std::ceil(static_cast<double>(profile.nrows) / kGroupRows);
  const double tiles = groups > 0 ? short_nnz / groups / (p.tile * fill) : 0;
  const double by_rows = groups > 0 ? short_rows / groups / p.block_rows() : 0;
  const double full = std::max(tiles, by_rows);
  const double per_group = full <= 1 ? 1.0 : full + 0.5;
  return std::max(1.0, groups * per_group) + long_rows;
}

namespace {

// The rows of `bin` that share blocks with rows that hold entries: all of them but, in the bin of
// empty rows, those after the last row with an entry (Profile::trailing_empty_rows).
double sharing_rows(const Profile& profile, const HistogramBin& bin) {
  if (bin.hi > 0) return static_cast<double>(bin.count);
  return static_cast<double>(std::max<std::int64_t>(0, bin.count - profile.trailing_empty_rows));
}

double stream_imbalance_afresh(const Profile& profile, const CsrStreamParams& p) {
  // The rows that share blocks: those up to the tile (bins above 32 are ranges, their midpoint
  // standing for every row in them, as in estimated_blocks), less the empty rows after the last
  // row with an entry, which fill blocks of their own.
  double rows = 0, nnz = 0;
  for (const HistogramBin& bin : profile.row_histogram) {
    if (bin.lo > p.tile) continue;
    const double len = 0.5 * static_cast<double>(bin.lo + std::min<std::int64_t>(bin.hi, p.tile));
    const double count = sharing_rows(profile, bin);
    rows += count;
    nnz += len * count;
  }
  if (rows <= 0 || nnz <= 0) return 1.0;
  const double mean = nnz / rows;
  // Rows per block: as many as fill the tile (greedy cutting leaves about a row's worth short),
  // at most block_size.
  const double fill = std::max(0.5, 1.0 - mean / p.tile);
  const int per_block = static_cast<int>(
      std::clamp(std::floor(p.tile * fill / mean), 1.0, static_cast<double>(p.block_rows())));
  int lanes = 32;
  while (lanes > 1 && lanes * per_block > p.block_size) lanes >>= 1;
  // A lane with two rows (more rows than threads) takes both in turn.
  const double turns = per_block > p.block_size ? 2.0 : 1.0;
  auto steps = [&](const HistogramBin& bin) {
    const double len = 0.5 * static_cast<double>(bin.lo + std::min<std::int64_t>(bin.hi, p.tile));
    if (p.split > 0) {
      // A lane a segment: the row's head walks its segment, then adds the others' sums.
      const CsrStreamFormat::Segments seg =
          CsrStreamFormat::segments(static_cast<std::int64_t>(std::ceil(len)), p.split);
      return std::max(1.0, static_cast<double>(seg.length + seg.count - 1));
    }
    return turns * std::max(1.0, std::ceil(len / lanes));
  };
  // E[max of per_block rows] = sum over bins of steps * (F(bin)^n - F(bin-)^n), bins in
  // increasing order (CsrFormat::warp_imbalance's estimate, with the block's rows as the group).
  // F(bin-)^n is the previous counted bin's F^n (the same double: below / rows again).
  double below = 0, longest = 0, mean_steps = 0, f0_pow = std::pow(0.0, per_block);
  for (const HistogramBin& bin : profile.row_histogram) {
    if (bin.lo > p.tile) continue;
    const double count = sharing_rows(profile, bin);
    const double f1_pow = std::pow((below + count) / rows, per_block);
    longest += steps(bin) * (f1_pow - f0_pow);
    f0_pow = f1_pow;
    mean_steps += steps(bin) * count / rows;
    below += count;
  }
  const double stream = static_cast<double>(p.tile) / p.block_size;
  return std::max(1.0, (stream + longest) / (stream + mean_steps));
}

}  // namespace

double CsrStreamFormat::warp_imbalance(const Profile& profile, const CsrStreamParams& p) {
  // The same (tile, block size, rows a lane) is asked for by each column width and value coding:
  // kept for the planning.
  thread_local PlanningMemo<std::tuple<int, int, int, int>, double> kept;
  return kept.get(profile, {p.tile, p.block_size, p.rows_per_lane, p.split},
                  [&] { return stream_imbalance_afresh(profile, p); });
}

double CsrStreamFormat::narrow_share(const Profile& profile, const CsrStreamParams& p) {
  if (profile.ncols - 1 <= kNarrowSpan) return 1.0;
  // Measured by the inspector on aligned 256-row slices: a block (at most 256 rows, not
  // aligned) spans about what the slices it meets span.
  if (profile.narrow_slice_nnz >= 0 && profile.nnz > 0)
    return static_cast<double>(profile.narrow_slice_nnz) / static_cast<double>(profile.nnz);
  if (!profile.square) return 0.0;
  if (2 * profile.bandwidth + p.block_size - 1 <= kNarrowSpan) return 1.0;
  // Otherwise an estimate from the envelope: rows reach on average `left` columns left of the
  // diagonal, so a block's span is typically 2 * left + its rows; the share of blocks that fit
  // falls linearly as that typical span approaches 2^16 (0 from there on).
  const double nonempty = std::max(1.0, static_cast<double>(profile.nrows - profile.empty_rows));
  const double left = static_cast<double>(profile.profile) / nonempty;
  const double span = 2 * left + p.block_size;
  return std::clamp(1.0 - span / static_cast<double>(kNarrowSpan), 0.0, 1.0);
}

Cost CsrStreamFormat::cost(const Profile& profile, const FormatParams& params,
                           Precision precision) const {
  const CsrStreamParams& p = params_of(params);
  const double vb = value_bytes(precision);
  const double ob = p.offsets64 ? 8.0 : 4.0;
  const double blocks = estimated_blocks(profile, p);
  // Narrow columns: 2 bytes a nonzero in the blocks that fit, 4 in the others, plus a base per
  // block.
  double column_bytes = 4.0;
  if (p.narrow_columns) {
    const double share = narrow_share(profile, p);
    column_bytes = 2.0 * share + 4.0 * (1 - share) +
                   4.0 * blocks / std::max(1.0, static_cast<double>(profile.nnz));
  }
  Cost c;
  c.matrix_bytes = static_cast<double>(profile.nrows + 1) * ob + (blocks + 1) * 4.0 +
                   static_cast<double>(profile.nnz) * (column_bytes + (p.sorted ? 2.0 : 0.0) +
                                                       value_code_bytes(p.values, precision)) +
                   value_table_bytes(p.values, profile, precision) +
                   (p.split > 0 ? 4.0 * p.block_size * blocks : 0.0);
  c.x_bytes = static_cast<double>(profile.ncols) * vb;
  c.y_bytes = static_cast<double>(profile.nrows) * vb;
  // Loads have no idle lanes; what is left is the tail of each block's tile.
  const double fill =
      std::min(1.0, static_cast<double>(profile.nnz) / std::max(1.0, blocks * p.tile));
  // Each block's fixed start (its bounds, then its rows' bounds, before any nonzero loads),
  // each row's reduction and each product's trip through shared memory, as bytes of reading:
  // time the kernel spends, not bytes it moves.
  const double work = heuristics::kStreamBlockBytes * (blocks + 1) +
                      heuristics::kStreamRowBytes * static_cast<double>(profile.nrows) +
                      heuristics::kStreamNonzeroBytes * static_cast<double>(profile.nnz);
  c.lane_efficiency = (0.75 + 0.25 * fill) * value_coding_efficiency(p.values, profile, precision) *
                      c.total() / std::max(1.0, c.total() + work);
  // The longest row is walked by one block: row_max / block_size dependent gathers per thread.
  c.serial_seconds =
      std::ceil(static_cast<double>(profile.row_max) / p.block_size) * heuristics::kCsrStepSeconds;
  // The wait at one reference shape: the calibration fits its exponent on the shapes the suite
  // times (256-thread blocks), so it moves csr_stream against the other formats, not between
  // its own shapes, whose order the tile sweeps set (kStreamBlockBytes).
  c.warp_imbalance = warp_imbalance(profile, kImbalanceShape);
  // Split rows shorten the wait by a share of what they shorten it at the candidate's own
  // shape (kSplitWaitShare: the lane descriptors and the partial sums' adds cost back the rest).
  if (p.split > 0) {
    CsrStreamParams whole = p;
    whole.split = 0;
    c.warp_imbalance *=
        std::pow(warp_imbalance(profile, p) / warp_imbalance(profile, whole), kSplitWaitShare);
  }
  // x is charged above as read once, but each row gathers it sector by sector: on scattered
  // rows (graphs, census meshes: 0.9-1.0 sectors per nonzero) a gather per nonzero, on stencils
  // a third to two thirds of that. What a gathered sector costs is the GPU's (its calibration's
  // sector_bytes); without the term the model put csr_stream on graphs at half its measured time,
  // ahead of cuSPARSE, which measured faster there.
  c.gathered_sectors = gathered_x_sectors(profile);
  return c;
}

std::optional<std::string> CsrStreamFormat::cannot_implement(const Profile& profile,
                                                             const FormatParams& params,
                                                             Precision precision) const {
  const CsrStreamParams& p = params_of(params);
  if (p.block_size < 64 || p.block_size > 1024 || p.block_size % 32 != 0)
    return fmt::format("block size {} is not a multiple of 32 in 64..1024", p.block_size);
  if (p.tile < p.block_size || p.tile % p.block_size != 0 || p.tile / p.block_size > 8)
    return fmt::format("tile {} is not 1..8 times the block size {}", p.tile, p.block_size);
  if (p.tile > 4096)
    return fmt::format("tile {} exceeds 4096 nonzeros (32 KiB of shared memory)", p.tile);
  if (p.rows_per_lane != 1 && p.rows_per_lane != 2)
    return fmt::format("{} rows a lane: csr_stream takes 1 or 2", p.rows_per_lane);
  if (p.split != 0) {
    if (p.split < kMinSplit || p.split > kMaxSplit)
      return fmt::format("split {} is not 0 or {}..{} products", p.split, kMinSplit, kMaxSplit);
    if (p.block_size > 256 || p.rows_per_lane != 1 || p.tile > 2048)
      return fmt::format(
          "split rows take blocks of at most 256 threads, one row a lane and tiles of at most "
          "2048 (the lane descriptor's fields), not b={} m={} tile={}",
          p.block_size, p.rows_per_lane, p.tile);
    if (p.values != kValuesPlain && p.values != kValuesUnit)
      return fmt::format(
          "split rows take plain or unit values, not {}: a value table beside the "
          "lane descriptor spills registers at eight blocks a multiprocessor",
          value_coding_tag(p.values));
    if (precision == Precision::f32_acc64)
      return "split rows with fp64 accumulation of fp32 values spill registers at eight blocks a "
             "multiprocessor";
  }
  if (auto why = value_coding_problem(profile, p.values, precision)) return why;
  if (!p.offsets64 && needs_offsets64(profile.nnz))
    return fmt::format("{} nonzeros need 64-bit row offsets", profile.nnz);
  if (p.narrow_columns && p.offsets64)
    return "narrow columns keep 32-bit positions of the wide blocks: not with 64-bit offsets";
  if (profile.nrows >= std::numeric_limits<std::int32_t>::max())
    return fmt::format("{} rows exceed the 32-bit row blocks", profile.nrows);
  return std::nullopt;
}

bool CsrStreamFormat::split_pays(const Profile& profile, const CsrStreamParams& p,
                                 Precision precision) {
  if (precision != Precision::f32 || p.block_size > 256 || p.tile > 2048 || p.rows_per_lane != 1)
    return false;
  // One row a lane: rows per block, as many as fill the tile, above half the threads, counted
  // over the rows that share blocks, empty ones among them included but not those after the last
  // row with an entry (Profile::trailing_empty_rows: an ordering's packed rows). Measured on the
  // H200: split rows gained where tiles hold 140-250 such rows (email-Enron, astro-ph x16M) and
  // 23% on wiki-Vote in the caller's order (160 a tile, a quarter of them empty), but lost 3% on
  // wiki-Vote under RCM (120 a tile, two lanes a row, its empty rows last); ego-Facebook (94 a
  // tile) gained 5%, which the bound leaves out.
  const auto sharing = static_cast<double>(profile.nrows - profile.trailing_empty_rows);
  if (sharing <= 0 || profile.nnz <= 0 ||
      static_cast<double>(p.tile) * sharing / static_cast<double>(profile.nnz) <=
          static_cast<double>(p.block_size) / 2)
    return false;
  CsrStreamParams q = p;
  q.split = kProposedSplit;
  return warp_imbalance(profile, q) < kSplitWait * warp_imbalance(profile, p);
}

bool CsrStreamFormat::split_rows_pay(const Profile& profile, Precision precision) {
  if (best_value_coding(profile, precision) != kValuesUnit) return false;
  for (const auto& [block, tile, rows_per_lane] : kShapes) {
    if (rows_per_lane != 1) continue;
    CsrStreamParams p;
    p.block_size = block;
    p.tile = tile;
    if (split_pays(profile, p, precision)) return true;
  }
  return false;
}

std::vector<Candidate> CsrStreamFormat::propose(const Profile& profile, Precision precision) const {
  std::vector<Candidate> out;
  // Split rows are proposed with unit values only (pattern matrices, whose stream is 2 bytes a
  // nonzero): where values are stored, the descriptors' bytes cost more than the shorter walk
  // saves (Maragal_6 x16M fp32 37.7 -> 39.2 us). They join after the coded twins, coded already.
  const bool unit_values = best_value_coding(profile, precision) == kValuesUnit;
  std::vector<CsrStreamParams> split_candidates;
  // Each shape with 32-bit columns, and with narrow (c16) columns when most blocks' columns
  // span less than 2^16. Narrow columns decide per block, not per nonzero, which column array
  // to read, and measured faster on the H100 wherever they apply.
  for (const bool narrow : {false, true}) {
    for (const auto& [block, tile, rows_per_lane] : kShapes) {
      if (rows_per_lane > 1 && (precision != Precision::f32 || !(profile.row_mean < kShortRowMean)))
        continue;
      CsrStreamParams p;
      p.block_size = block;
      p.tile = tile;
      p.rows_per_lane = rows_per_lane;
      p.offsets64 = needs_offsets64(profile.nnz);
      p.narrow_columns = narrow;
      const double share = narrow ? narrow_share(profile, p) : 0.0;
      if (narrow && (p.offsets64 || share < kMinNarrowShare)) continue;
      if (unit_values && split_pays(profile, p, precision)) {
        CsrStreamParams q = p;
        q.split = kProposedSplit;
        q.values = kValuesUnit;
        split_candidates.push_back(q);
      }
      Candidate c = candidate(profile, p, precision);
      if (c.applicable) {
        const Cost cost_p = this->cost(profile, p, precision);
        c.predicted_bytes = cost_p.total();
        c.reason = fmt::format("about {:.0f} blocks of <= {} nonzeros, model efficiency {:.0f}%",
                               estimated_blocks(profile, p), tile, 100.0 * cost_p.lane_efficiency);
        if (narrow)
          c.reason += fmt::format("; 16-bit columns in about {:.0f}% of blocks", 100.0 * share);
        if (rows_per_lane > 1)
          c.reason +=
              fmt::format("; two rows a lane ({:.1f} nonzeros a row on average)", profile.row_mean);
      }
      out.push_back(std::move(c));
    }
  }
  add_value_coded(out, profile, precision);
  for (const CsrStreamParams& q : split_candidates) {
    Candidate c = candidate(profile, q, precision);
    if (c.applicable) {
      CsrStreamParams whole = q;
      whole.split = 0;
      const Cost cost_q = this->cost(profile, q, precision);
      c.predicted_bytes = cost_q.total();
      c.reason = fmt::format(
          "about {:.0f} blocks of <= {} nonzeros, rows longer than {} split among lanes (a "
          "block's wait {:.1f}x its mean row's, {:.1f}x whole); {}",
          estimated_blocks(profile, q), q.tile, q.split, warp_imbalance(profile, q),
          warp_imbalance(profile, whole), value_coding_summary(kValuesUnit));
      if (q.narrow_columns) c.reason += "; 16-bit columns";
    }
    out.push_back(std::move(c));
  }
  return out;
}

Encoded CsrStreamFormat::encode(const CsrMatrix& a, const FormatParams& params,
                                Precision precision) const {
  const CsrStreamParams& p = params_of(params);
  Encoded e = encoded_for(a, precision);
  std::vector<std::uint32_t> lanes;
  const std::vector<std::int32_t> blocks =
      p.split > 0 ? split_row_blocks(a, p.tile, p.block_size, p.split, lanes)
                  : row_blocks(a, p.tile, p.block_rows());
  e.arrays.push_back(make_array<std::int32_t>("row_blocks", ElemType::i32, blocks));
  e.arrays.push_back(row_offsets_array(a, p.offsets64, name()));
  const std::size_t nnz = static_cast<std::size_t>(a.nnz());
  // Sorted tiles: the columns and values (and their codes) in each tile's column order.
  std::vector<std::uint16_t> slots;
  const CsrMatrix sorted = p.sorted ? sort_tiles(a, blocks, p.tile, slots) : CsrMatrix{};
  const CsrMatrix& m = p.sorted ? sorted : a;
  if (p.narrow_columns) {
    encode_narrow_columns(m, blocks, e.arrays);
  } else {
    e.arrays.push_back(make_array<std::int32_t>("col_idx", ElemType::i32, m.col_idx, nnz));
  }
  e.arrays.push_back(value_array("values", precision, m.values, nnz));
  code_values(e.arrays, "values", p.values, m);
  if (p.sorted) e.arrays.push_back(make_array<std::uint16_t>("slots", ElemType::u16, slots));
  if (p.split > 0) e.arrays.push_back(make_array<std::uint32_t>("lanes", ElemType::u32, lanes));
  return e;
}

void CsrStreamFormat::reference_spmv(const Encoded& e, const FormatParams& params,
                                     std::span<const double> x, std::span<double> y, double alpha,
                                     double beta) const {
  const CsrStreamParams& p = params_of(params);
  if (static_cast<std::int64_t>(x.size()) != e.ncols ||
      static_cast<std::int64_t>(y.size()) != e.nrows)
    throw InputError("reference_spmv", 0, "x or y has the wrong length");
  with_offset_and_value(p.offsets64, e.precision, [&]<typename Offset, typename Value>() {
    multiply<Offset, Value>(e, p, x, y, alpha, beta);
  });
}

std::string CsrStreamFormat::kernel_name(const CsrStreamParams& p, Precision precision) {
  return fmt::format("spmv_csr_stream_b{}_t{}{}{}{}{}{}{}_{}", p.block_size, p.tile,
                     p.rows_per_lane > 1 ? fmt::format("_m{}", p.rows_per_lane) : "",
                     p.offsets64 ? "_o64" : "", p.narrow_columns ? "_c16" : "",
                     p.sorted ? "_srt" : "", p.split > 0 ? fmt::format("_s{}", p.split) : "",
                     value_coding_tag(p.values), codegen::precision_tag(precision));
}

KernelSource CsrStreamFormat::generate(const Encoded& e, const FormatParams& params,
                                       const std::string& banner) const {
  return generate_kernel(params_of(params), e.precision, e.array("row_blocks").count() - 1, banner);
}

KernelSource CsrStreamFormat::generate_kernel(const CsrStreamParams& p, Precision precision,
                                              std::int64_t nblocks, const std::string& banner) {
  KernelSource k = kernel_source(kernel_name(p, precision), {"spmvc/csr_stream.cuh"}, banner);
  k.block = p.block_size;
  k.grid = nblocks;
  const ValueArgs vals = value_args(p.values, "values");
  k.params = {{KernelParam::Kind::array, "row_blocks"}, {KernelParam::Kind::array, "row_ptr"}};
  if (p.narrow_columns) {
    k.params.insert(k.params.end(), {{KernelParam::Kind::array, "col_base"},
                                     {KernelParam::Kind::array, "col16"},
                                     {KernelParam::Kind::array, "col_wide"}});
  } else {
    k.params.push_back({KernelParam::Kind::array, "col_idx"});
  }
  k.params.insert(k.params.end(), vals.params.begin(), vals.params.end());
  if (p.sorted) k.params.push_back({KernelParam::Kind::array, "slots"});
  if (p.split > 0) k.params.push_back({KernelParam::Kind::array, "lanes"});
  k.params.insert(k.params.end(), {{KernelParam::Kind::x, "x"},
                                   {KernelParam::Kind::y, "y"},
                                   {KernelParam::Kind::alpha, "alpha"},
                                   {KernelParam::Kind::beta, "beta"}});

  // The arrays' element types as encode() and the device build make them: this unit is also
  // generated before its arrays exist (generate_kernel from a row-block count).
  const auto array_decl = [&](const std::string& name) {
    if (name == "row_ptr") return codegen::ArrayDecl{p.offsets64 ? ElemType::i64 : ElemType::i32};
    if (name == "col16" || name == "slots") return codegen::ArrayDecl{ElemType::u16};
    if (name == "values") return codegen::ArrayDecl{value_code_type(p.values, precision)};
    if (name == "values_table") return codegen::ArrayDecl{value_elem_type(precision)};
    if (name == "lanes") return codegen::ArrayDecl{ElemType::u32};
    return codegen::ArrayDecl{ElemType::i32};  // row_blocks, col_idx, col_base, col_wide
  };

  const std::string value = codegen::value_type(precision);
  const std::string acc = codegen::accumulate_type(precision);
  const std::string offset = p.offsets64 ? "long long" : "int";
  // fp32 units with 16-bit columns, one row a lane, tiles in CSR order and plain or unit values
  // are compiled at eight 256-thread blocks a multiprocessor and walk long rows eight loads deep:
  // unbounded, the deep loop took them to 40 registers (six blocks) and was slower; bounded,
  // Maragal_6 x16M went 40.3-40.5 -> 38.5-39.0 us on the H200 and the suite's nine other fp32
  // csr_stream picks stayed within run-to-run spread
  // (bench/results/2026-12-03-h200-long-rows/deep-f32.txt). Sorted tiles spill under the bound.
  const bool deep_fp32 = precision == Precision::f32 && p.narrow_columns && p.rows_per_lane == 1 &&
                         p.split == 0 && !p.sorted &&
                         (p.values == kValuesPlain || p.values == kValuesUnit);
  const bool eight_blocks = p.split > 0 || deep_fp32;
  k.source += "#include \"spmvc/csr_stream.cuh\"\n\n";
  k.source += codegen::constants_block({
      {fmt::format("constexpr int kBlockSize = {};", p.block_size), "threads per block"},
      {fmt::format("constexpr int kTile = {};", p.tile),
       "nonzeros a block stages in shared memory"},
      {fmt::format("constexpr int kRowsPerLane = {};", p.rows_per_lane),
       "rows a lane sums when each row has one"},
      {fmt::format("using Offset = {};", offset), "row_ptr element"},
      {fmt::format("using Value = {};", value), "stored values, x and y"},
      {fmt::format("using Acc = {};", acc), "accumulation"},
  });
  k.source += fmt::format(
      R"(
static_assert(sizeof(Offset) == {OB}, "row_ptr was encoded with {OB}-byte offsets");
static_assert(sizeof(Value) == {VB}, "values were encoded with {VB}-byte elements");

{SIG}  spmvc::csr_stream::spmv<kBlockSize, kTile, kRowsPerLane, Offset, Value, Acc{DF}>(
      row_blocks, row_ptr, {CP}, {VP}, x, y, alpha, beta{SP});
}}
)",
      fmt::arg("CP", p.narrow_columns ? "spmvc::csr_stream::NarrowColumns{col_base, col16, "
                                        "col_wide}"
                                      : "spmvc::csr_stream::WideColumns{col_idx}"),
      fmt::arg("VP", vals.pass),
      fmt::arg("SP", std::string(p.sorted      ? ", spmvc::csr_stream::Slotted{slots}"
                                 : p.split > 0 ? ", spmvc::csr_stream::InPlace{}"
                                               : "") +
                         (p.split > 0 ? ", spmvc::csr_stream::SplitRows{lanes}" : "")),
      fmt::arg("DF", deep_fp32 ? ", true" : ""), fmt::arg("OB", p.offsets64 ? 8 : 4),
      fmt::arg("VB", precision == Precision::f64 ? 8 : 4),
      fmt::arg("SIG", codegen::entry_signature(
                          k.kernel_name, k.params, precision, array_decl,
                          eight_blocks ? "kBlockSize, 2048 / kBlockSize" : "kBlockSize")));
  return k;
}

}  // namespace spmvc::formats
