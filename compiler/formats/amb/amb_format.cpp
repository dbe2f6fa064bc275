#include "formats/amb/amb_format.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/arrays.hpp"
#include "formats/csr/csr_model.hpp"
#include "heuristics.hpp"
#include "spmvc/error.hpp"

namespace spmvc::formats {

namespace {

const AmbParams& params_of(const FormatParams& params) {
  const auto* p = std::get_if<AmbParams>(&params);
  if (p == nullptr) throw InternalError("amb format given another format's parameters");
  return *p;
}

constexpr std::int64_t kMaxI32 = std::numeric_limits<std::int32_t>::max();

// Chunk heights the kernel supports: divisors of a 256-thread block, at least a quarter warp.
bool valid_slice_height(int c) { return c == 8 || c == 16 || c == 32 || c == 64 || c == 128; }

std::optional<std::string> check_params(const AmbParams& p) {
  if (p.segment_bits < 1 || p.segment_bits > 16)
    return fmt::format("segment bits {} outside 1..16 (16-bit column offsets)", p.segment_bits);
  if (!valid_slice_height(p.slice_height))
    return fmt::format("chunk height C={} is not 8, 16, 32, 64 or 128", p.slice_height);
  if (p.block_size < 32 || p.block_size > 1024 || p.block_size % 32 != 0)
    return fmt::format("block size {} is not a multiple of 32 in 32..1024", p.block_size);
  if (p.block_size % p.slice_height != 0)
    return fmt::format("block size {} is not a multiple of C={}", p.block_size, p.slice_height);
  if (p.sigma < p.slice_height || p.sigma > 32768 || p.sigma % p.slice_height != 0)
    return fmt::format("sigma {} is not a multiple of C={} in C..32768 (16-bit permutation)",
                       p.sigma, p.slice_height);
  if (p.column_block < 1 || p.column_block > 10)
    return fmt::format("column block b={} outside 1..10", p.column_block);
  if ((1 << p.segment_bits) < p.column_block)
    return fmt::format("segments of {} columns are narrower than a block of {}",
                       1 << p.segment_bits, p.column_block);
  return std::nullopt;
}

// Greedy level-3 blocking of every row; blocks in row-major order, columns increasing.
struct Blocks {
  HostVector<std::int32_t> start;  // absolute first column
  HostVector<double> values;       // b per block
  std::vector<std::int64_t> row_ptr;
};

// Blocks of one row: f(first column, k0, k1) for each, its nonzeros at k0..k1.
template <typename F>
void for_each_block(const CsrMatrix& a, int b, std::int64_t r, F&& f) {
  const std::int64_t last_start = a.ncols - b;  // a block never passes the last column
  std::int64_t k = a.row_ptr[r];
  const std::int64_t end = a.row_ptr[r + 1];
  while (k < end) {
    const std::int64_t s = std::min<std::int64_t>(a.col_idx[k], last_start);
    const std::int64_t k0 = k;
    while (k < end && a.col_idx[k] < s + b) ++k;
    f(s, k0, k);
  }
}

// Row ranges count their rows' blocks, then write them at the running sums: the arrays one pass
// over the rows would build.
Blocks make_blocks(const CsrMatrix& a, int b) {
  Blocks out;
  out.row_ptr.assign(static_cast<std::size_t>(a.nrows) + 1, 0);
  const std::vector<Range> ranges = split_rows(a, kRowGrain);
  run_ranges(ranges, [&](std::size_t, std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      std::int64_t n = 0;
      for_each_block(a, b, r, [&](std::int64_t, std::int64_t, std::int64_t) { ++n; });
      out.row_ptr[static_cast<std::size_t>(r) + 1] = n;
    }
  });
  std::partial_sum(out.row_ptr.begin(), out.row_ptr.end(), out.row_ptr.begin());
  out.start.resize(static_cast<std::size_t>(out.row_ptr.back()));  // every element written below
  out.values = zeroed<double>(out.start.size() * static_cast<std::size_t>(b));
  run_ranges(ranges, [&](std::size_t, std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      auto blk = static_cast<std::size_t>(out.row_ptr[static_cast<std::size_t>(r)]);
      for_each_block(a, b, r, [&](std::int64_t s, std::int64_t k0, std::int64_t k1) {
        out.start[blk] = static_cast<std::int32_t>(s);
        for (std::int64_t k = k0; k < k1; ++k)
          out.values[blk * static_cast<std::size_t>(b) +
                     static_cast<std::size_t>(a.col_idx[k] - s)] = a.values[k];
        ++blk;
      });
    }
  });
  return out;
}

// One row's blocks inside one segment.
struct Pair {
  std::int64_t row;
  std::int32_t segment;
  std::int32_t count;
  std::int64_t first;  // index into Blocks
};

}  // namespace

AmbLayout build_amb_layout(const CsrMatrix& a, const AmbParams& p) {
  if (auto why = check_params(p)) throw InputError("amb parameters", 0, *why);
  const int b = p.column_block;
  const int c_rows = p.slice_height;
  const std::int64_t sigma = p.sigma;
  if (a.nnz() > 0 && a.ncols < b)
    throw InputError("amb parameters", 0,
                     fmt::format("{} columns are fewer than a block of {}", a.ncols, b));
  const std::int64_t nseg = a.ncols > 0 ? ((a.ncols - 1) >> p.segment_bits) + 1 : 0;
  if (nseg > 65536)
    throw InputError(
        "amb parameters", 0,
        fmt::format("{} segments of 2^{} columns do not fit 16 bits", nseg, p.segment_bits));
  const std::int64_t nwindows = (a.nrows + sigma - 1) / sigma;
  if (nwindows > 65536)
    throw InputError("amb parameters", 0,
                     fmt::format("{} rows make {} windows of sigma={} (more than 2^16)", a.nrows,
                                 nwindows, sigma));

  const Blocks blocks = make_blocks(a, b);

  // Level 1: a row's blocks, split by segment (row-major; segments increase along a row). Row
  // ranges count their pairs, then write them at the running sums.
  const auto segment_of = [&](std::int64_t k) {
    return static_cast<std::int32_t>(blocks.start[static_cast<std::size_t>(k)] >> p.segment_bits);
  };
  std::vector<std::int64_t> pair_ptr(static_cast<std::size_t>(a.nrows) + 1, 0);
  const std::vector<Range> row_ranges = split_rows(a, kRowGrain);
  run_ranges(row_ranges, [&](std::size_t, std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      std::int64_t n = 0;
      for (std::int64_t k = blocks.row_ptr[r]; k < blocks.row_ptr[r + 1]; ++k)
        n += k == blocks.row_ptr[r] || segment_of(k) != segment_of(k - 1);
      pair_ptr[static_cast<std::size_t>(r) + 1] = n;
    }
  });
  std::partial_sum(pair_ptr.begin(), pair_ptr.end(), pair_ptr.begin());
  std::vector<Pair> pairs(static_cast<std::size_t>(pair_ptr.back()));
  run_ranges(row_ranges, [&](std::size_t, std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      auto q = static_cast<std::size_t>(pair_ptr[static_cast<std::size_t>(r)]);
      for (std::int64_t k = blocks.row_ptr[r]; k < blocks.row_ptr[r + 1]; ++k) {
        if (k > blocks.row_ptr[r] && segment_of(k) == segment_of(k - 1)) {
          ++pairs[q - 1].count;
          continue;
        }
        pairs[q++] = {r, segment_of(k), 1, k};
      }
    }
  });
  if (static_cast<std::int64_t>(pairs.size()) > kMaxI32)
    throw InputError("amb parameters", 0, "more than 2^31 row-segment pairs");

  // Pairs by segment, rows increasing within each (a stable counting sort).
  std::vector<std::int64_t> seg_ptr(static_cast<std::size_t>(nseg) + 1, 0);
  for (const Pair& q : pairs) ++seg_ptr[static_cast<std::size_t>(q.segment) + 1];
  std::partial_sum(seg_ptr.begin(), seg_ptr.end(), seg_ptr.begin());
  std::vector<std::int64_t> order(pairs.size());
  {
    std::vector<std::int64_t> next(seg_ptr.begin(), seg_ptr.end() - 1);
    for (std::size_t i = 0; i < pairs.size(); ++i)
      order[static_cast<std::size_t>(next[static_cast<std::size_t>(pairs[i].segment)]++)] =
          static_cast<std::int64_t>(i);
  }

  AmbLayout L;
  AmbLayoutStats& st = L.stats;
  st.nrows = a.nrows;
  st.ncols = a.ncols;
  st.nnz = a.nnz();
  st.blocks = static_cast<std::int64_t>(blocks.start.size());
  st.pairs = static_cast<std::int64_t>(pairs.size());

  // Level 2: within each window of a segment, rows by block count, longest first; ties keep row
  // order. Segments sort their own stretch of `ordered` (segment ranges in parallel), and count
  // their chunks and stored blocks.
  std::vector<const Pair*> ordered(pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i)
    ordered[i] = &pairs[static_cast<std::size_t>(order[i])];
  std::vector<std::int64_t> seg_chunks(static_cast<std::size_t>(nseg) + 1, 0);
  std::vector<std::int64_t> seg_elements(static_cast<std::size_t>(nseg) + 1, 0);
  // Calls f(first row's index in `ordered`, rows) for each chunk of segment seg, in order.
  const auto for_each_chunk = [&](std::int64_t seg, auto&& f) {
    const std::int64_t lo = seg_ptr[static_cast<std::size_t>(seg)];
    const std::int64_t hi = seg_ptr[static_cast<std::size_t>(seg) + 1];
    for (std::int64_t i = lo; i < hi;) {
      const std::int64_t window = ordered[static_cast<std::size_t>(i)]->row / sigma;
      std::int64_t w_end = i;
      while (w_end < hi && ordered[static_cast<std::size_t>(w_end)]->row / sigma == window) ++w_end;
      for (std::int64_t c0 = i; c0 < w_end; c0 += c_rows)
        f(window, c0, static_cast<int>(std::min<std::int64_t>(c_rows, w_end - c0)));
      i = w_end;
    }
  };
  // Segment ranges of about equal pairs.
  std::vector<Range> seg_ranges;
  for (const Range& r : split_range(static_cast<std::int64_t>(pairs.size()), kRowGrain)) {
    const auto seg_at = [&](std::int64_t pair) {
      return static_cast<std::int64_t>(std::lower_bound(seg_ptr.begin(), seg_ptr.end() - 1, pair) -
                                       seg_ptr.begin());
    };
    seg_ranges.push_back({seg_ranges.empty() ? 0 : seg_ranges.back().end,
                          r.end == static_cast<std::int64_t>(pairs.size()) ? nseg : seg_at(r.end)});
  }
  run_ranges(seg_ranges, [&](std::size_t, std::int64_t s0, std::int64_t s1) {
    for (std::int64_t seg = s0; seg < s1; ++seg) {
      const std::int64_t lo = seg_ptr[static_cast<std::size_t>(seg)];
      const std::int64_t hi = seg_ptr[static_cast<std::size_t>(seg) + 1];
      for (std::int64_t i = lo; i < hi;) {
        const std::int64_t window = ordered[static_cast<std::size_t>(i)]->row / sigma;
        std::int64_t w_end = i;
        while (w_end < hi && ordered[static_cast<std::size_t>(w_end)]->row / sigma == window)
          ++w_end;
        std::stable_sort(ordered.begin() + i, ordered.begin() + w_end,
                         [](const Pair* x, const Pair* y) { return x->count > y->count; });
        i = w_end;
      }
      for_each_chunk(seg, [&](std::int64_t, std::int64_t c0, int) {
        const std::int64_t width = ordered[static_cast<std::size_t>(c0)]->count;
        if (width > 0xFFFF)
          throw InputError(
              "amb parameters", 0,
              fmt::format("a row holds {} blocks in one segment (at most 65535)", width));
        ++seg_chunks[static_cast<std::size_t>(seg) + 1];
        seg_elements[static_cast<std::size_t>(seg) + 1] += width * c_rows;
      });
    }
  });
  std::partial_sum(seg_chunks.begin(), seg_chunks.end(), seg_chunks.begin());
  std::partial_sum(seg_elements.begin(), seg_elements.end(), seg_elements.begin());
  const std::int64_t elements = seg_elements.back();
  if (elements > kMaxI32) throw InputError("amb parameters", 0, "more than 2^31 stored blocks");

  // Empty chunks up to whole thread blocks: the kernel runs without a bound check.
  const std::int64_t per_block = p.block_size / c_rows;
  const std::int64_t stored = seg_chunks.back();
  const std::int64_t chunks =
      std::max<std::int64_t>(1, (stored + per_block - 1) / per_block) * per_block;
  const auto chunk_rows = static_cast<std::size_t>(chunks * c_rows);
  L.chunk_len.assign(static_cast<std::size_t>(chunks), 0);
  L.chunk_start.assign(static_cast<std::size_t>(chunks), static_cast<std::int32_t>(elements));
  if (p.deterministic) {
    L.slot.assign(chunk_rows, -1);
  } else {
    L.perm_offset.assign(static_cast<std::size_t>(chunks), 0);
    L.perm.assign(chunk_rows, AmbFormat::kPadRow);
  }
  L.col = zeroed<std::uint16_t>(static_cast<std::size_t>(elements));
  L.values = zeroed<double>(static_cast<std::size_t>(elements * b));

  // Level 3: every chunk written at its segment's offsets, segment ranges in parallel. The x
  // sector counts are per segment (distinct sectors a segment touches, by a stamp holding the
  // last segment that touched each sector of the segment's columns), so they add up by range.
  struct SectorCounts {
    double segment64 = 0, segment32 = 0, row64 = 0, row32 = 0;
    std::int64_t segments = 0, max_width = 0;
  };
  const std::size_t span64 =
      ((std::size_t{1} << p.segment_bits) + static_cast<std::size_t>(b)) / 4 + 2;
  const std::size_t span32 =
      ((std::size_t{1} << p.segment_bits) + static_cast<std::size_t>(b)) / 8 + 2;
  const std::vector<SectorCounts> counts =
      map_ranges(seg_ranges, [&](std::int64_t s0, std::int64_t s1) {
        SectorCounts sc;
        std::vector<std::int64_t> stamp64(span64, -1), stamp32(span32, -1);
        for (std::int64_t seg = s0; seg < s1; ++seg) {
          if (seg_ptr[static_cast<std::size_t>(seg)] < seg_ptr[static_cast<std::size_t>(seg) + 1])
            ++sc.segments;
          const std::int64_t seg_first = seg << p.segment_bits;
          std::int64_t chunk = seg_chunks[static_cast<std::size_t>(seg)];
          std::int64_t e0 = seg_elements[static_cast<std::size_t>(seg)];
          for_each_chunk(seg, [&](std::int64_t window, std::int64_t c0, int n) {
            const std::int64_t width = ordered[static_cast<std::size_t>(c0)]->count;
            sc.max_width = std::max(sc.max_width, width);
            const auto ch = static_cast<std::size_t>(chunk);
            L.chunk_len[ch] = static_cast<std::uint32_t>((seg << 16) | width);
            L.chunk_start[ch] = static_cast<std::int32_t>(e0);
            if (!p.deterministic) L.perm_offset[ch] = static_cast<std::uint16_t>(window);
            for (int r = 0; r < n; ++r) {
              const Pair& q = *ordered[static_cast<std::size_t>(c0 + r)];
              const std::size_t row_slot = ch * static_cast<std::size_t>(c_rows) + r;
              if (p.deterministic) {
                L.slot[row_slot] = static_cast<std::int32_t>(&q - pairs.data());
              } else {
                L.perm[row_slot] = static_cast<std::uint16_t>(q.row - window * sigma);
              }
              std::int64_t prev64 = -1, prev32 = -1;
              for (std::int32_t j = 0; j < q.count; ++j) {
                const std::size_t k = static_cast<std::size_t>(q.first + j);
                const std::int32_t s = blocks.start[k];
                const std::size_t e =
                    static_cast<std::size_t>(e0) + static_cast<std::size_t>(j) * c_rows + r;
                L.col[e] = static_cast<std::uint16_t>(s - seg_first);
                for (int t = 0; t < b; ++t) {
                  L.values[static_cast<std::size_t>(e0) * b +
                           (static_cast<std::size_t>(j) * b + t) * c_rows + r] =
                      blocks.values[k * b + t];
                  const std::int64_t cc = s + t;
                  const auto at64 = static_cast<std::size_t>(cc / 4 - seg_first / 4);
                  const auto at32 = static_cast<std::size_t>(cc / 8 - seg_first / 8);
                  if (stamp64[at64] != seg) {
                    stamp64[at64] = seg;
                    sc.segment64 += 1;
                  }
                  if (stamp32[at32] != seg) {
                    stamp32[at32] = seg;
                    sc.segment32 += 1;
                  }
                  if (cc / 4 != prev64) sc.row64 += 1;
                  if (cc / 8 != prev32) sc.row32 += 1;
                  prev64 = cc / 4;
                  prev32 = cc / 8;
                }
              }
            }
            ++chunk;
            e0 += width * c_rows;
          });
        }
        return sc;
      });
  for (const SectorCounts& sc : counts) {
    st.x_segment_sectors64 += sc.segment64;
    st.x_segment_sectors32 += sc.segment32;
    st.x_row_sectors64 += sc.row64;
    st.x_row_sectors32 += sc.row32;
    st.segments += sc.segments;
    st.max_width = std::max(st.max_width, sc.max_width);
  }
  st.chunks = chunks;
  st.elements = elements;

  if (p.deterministic) {
    L.red_ptr.resize(pair_ptr.size());
    for (std::size_t i = 0; i < pair_ptr.size(); ++i)
      L.red_ptr[i] = static_cast<std::int32_t>(pair_ptr[i]);
  }
  return L;
}

AmbLayoutStats amb_layout_stats(const CsrMatrix& a, const AmbParams& params) {
  const AmbLayout L = build_amb_layout(a, params);
  AmbLayoutStats st = L.stats;
  // Distinct sectors each chunk's results go to (y rows, or partial slots when deterministic):
  // the traffic of its atomics or partial writes (amb_traffic.cpp).
  const auto c_rows = static_cast<std::size_t>(params.slice_height);
  const std::size_t nchunks = L.chunk_len.size();
  std::vector<std::int64_t> targets;
  for (std::size_t ch = 0; ch < nchunks; ++ch) {
    targets.clear();
    for (std::size_t r = 0; r < c_rows; ++r) {
      if (params.deterministic) {
        if (L.slot[ch * c_rows + r] >= 0) targets.push_back(L.slot[ch * c_rows + r]);
      } else if (L.perm[ch * c_rows + r] != 0xFFFF) {
        targets.push_back(static_cast<std::int64_t>(L.perm_offset[ch]) * params.sigma +
                          L.perm[ch * c_rows + r]);
      }
    }
    std::sort(targets.begin(), targets.end());
    std::int64_t last64 = -1, last32 = -1;
    for (const std::int64_t t : targets) {
      if (t / 4 != last64) ++st.y_sectors64;
      if (t / 8 != last32) ++st.y_sectors32;
      last64 = t / 4;
      last32 = t / 8;
    }
  }
  return st;
}

TrafficEstimate amb_traffic(const CsrMatrix& a, const AmbParams& params, Precision precision) {
  return amb_traffic(amb_layout_stats(a, params), params, precision);
}

// ---------------------------------------------------------------------------------------------

Cost AmbFormat::cost_of(const TrafficEstimate& t, Precision precision) {
  Cost c;
  c.matrix_bytes = t.matrix();
  c.x_bytes = t.x;
  c.y_bytes = t.y();
  // The csr sweeps' dependent steps per lane (heuristics.hpp) stand for AMB's steps too: one
  // step is a 16-bit column load followed by b value loads and b gathers of contiguous x.
  const double per_lane = precision == Precision::f64 ? heuristics::kCsrNonzerosPerLaneF64
                                                      : heuristics::kCsrNonzerosPerLaneF32;
  const double latency = std::min(1.0, per_lane / std::max(t.steps_per_lane, 1e-9));
  c.lane_efficiency = std::clamp(t.busy_lanes, 1e-3, 1.0) * latency;
  // Extra launches (the beta pass or the reduction) are a floor under small matrices' time; the
  // longest chunk row is the longest chain of dependent steps.
  c.serial_seconds =
      (t.launches - 1) * heuristics::kLaunchSeconds + t.max_steps * heuristics::kCsrStepSeconds;
  return c;
}

double AmbFormat::predict_seconds(const Cost& cost) {
  const double efficiency = std::max(cost.lane_efficiency, 1e-3);
  return heuristics::kLaunchSeconds +
         std::max(cost.total() / (heuristics::kDefaultReadBandwidth * efficiency),
                  cost.serial_seconds);
}

std::optional<std::string> AmbFormat::nondeterminism(const FormatParams& params) const {
  if (params_of(params).deterministic) return std::nullopt;
  return "each column segment adds its rows' sums to y with floating-point atomics (det=1 "
         "reduces them in a fixed order)";
}

Cost AmbFormat::cost(const Profile& profile, const FormatParams& params,
                     Precision precision) const {
  const AmbParams& p = params_of(params);
  return cost_of(amb_traffic(profile, p, precision), precision);
}

std::optional<std::string> AmbFormat::cannot_implement(const Profile& profile,
                                                       const FormatParams& params,
                                                       Precision) const {
  const AmbParams& p = params_of(params);
  if (auto why = check_params(p)) return why;
  if (profile.nnz > 0 && profile.ncols < p.column_block)
    return fmt::format("{} columns are fewer than a block of {}", profile.ncols, p.column_block);
  const std::int64_t nseg = profile.ncols > 0 ? ((profile.ncols - 1) >> p.segment_bits) + 1 : 0;
  if (nseg > 65536)
    return fmt::format("{} columns make {} segments of 2^{} (the segment index has 16 bits)",
                       profile.ncols, nseg, p.segment_bits);
  const std::int64_t nwindows = (profile.nrows + p.sigma - 1) / p.sigma;
  if (nwindows > 65536)
    return fmt::format("{} rows make {} windows of sigma={} (the permutation offset has 16 bits)",
                       profile.nrows, nwindows, p.sigma);
  if (p.segment_bits == 16 && profile.row_max > 0xFFFF)
    return fmt::format(
        "a row of {} nonzeros may hold 2^16 blocks in one segment (chunk widths "
        "have 16 bits)",
        profile.row_max);
  // Zero fill can at most multiply the stored blocks by C (a chunk of one long row).
  const double bound = static_cast<double>(profile.nnz) * p.column_block;
  if (bound > static_cast<double>(kMaxI32))
    return fmt::format("{} nonzeros in blocks of {} may pass 2^31 stored values", profile.nnz,
                       p.column_block);
  return std::nullopt;
}

AmbParams AmbFormat::choose(const Profile& profile, Precision precision, bool deterministic) {
  AmbParams best;
  best.deterministic = deterministic;
  double best_bytes = std::numeric_limits<double>::infinity();
  // The row layout depends on the column block alone: laid out once per width, not per set.
  std::array<double, 11> blocks{};
  for (int b = 1; b <= 10; ++b)
    blocks[static_cast<std::size_t>(b)] = amb_estimated_blocks(profile, b);
  // So does the unsorted chunks' padding on the chunk height alone.
  std::array<double, 3> padding{};
  constexpr std::array<int, 3> kHeights = {32, 16, 64};
  for (std::size_t i = 0; i < kHeights.size(); ++i)
    padding[i] = amb_unsorted_padding(profile, kHeights[i]);
  // C = 32 (one warp per chunk, the paper's choice) is tried first and kept on ties.
  for (std::size_t h = 0; h < kHeights.size(); ++h) {
    const int c_rows = kHeights[h];
    for (int seg_bits : {16, 15, 14, 13, 12}) {
      for (int b = 1; b <= 10; ++b) {
        AmbParams p;
        p.segment_bits = seg_bits;
        p.slice_height = c_rows;
        p.column_block = b;
        p.deterministic = deterministic;
        // The widest window the 16-bit offsets allow: the least zero fill.
        p.sigma = 32768 / c_rows * c_rows;
        if (check_params(p)) continue;
        if (profile.nnz > 0 && profile.ncols < b) continue;
        // The paper's criterion: least total memory traffic (index saving against zero fill,
        // metadata against x locality). The time model ranks AMB against other formats.
        const double bytes =
            amb_traffic(
                amb_layout_estimate(profile, p, blocks[static_cast<std::size_t>(b)], padding[h]), p,
                precision)
                .total();
        if (bytes < best_bytes * (1 - 1e-9)) {
          best_bytes = bytes;
          best = p;
        }
      }
    }
  }
  return best;
}

std::vector<Candidate> AmbFormat::propose(const Profile& profile, Precision precision) const {
  std::vector<AmbParams> sets;
  const AmbParams best = choose(profile, precision, false);
  sets.push_back(best);
  AmbParams det = best;
  det.deterministic = true;
  sets.push_back(det);
  if (best.column_block != 1) {
    AmbParams unblocked = best;
    unblocked.column_block = 1;
    sets.push_back(unblocked);
  }
  AmbParams paper;  // the slides' configuration: W = 2^16, C = 32, sigma = 2^15
  paper.column_block = best.column_block;
  if (paper.segment_bits != best.segment_bits || paper.slice_height != best.slice_height)
    sets.push_back(paper);

  std::vector<Candidate> out;
  for (const AmbParams& p : sets) {
    Candidate c = candidate(profile, p, precision);
    if (c.applicable) {
      const TrafficEstimate t = amb_traffic(profile, p, precision);
      c.predicted_bytes = t.total();
      c.reason = fmt::format(
          "traffic model: {:.2f} B/nnz ({:.2f} matrix, {:.2f} x, {:.2f} y); {:.2f} blocks per "
          "lane{}",
          t.total() / std::max<double>(1.0, static_cast<double>(profile.nnz)),
          t.matrix() / std::max<double>(1.0, static_cast<double>(profile.nnz)),
          t.x / std::max<double>(1.0, static_cast<double>(profile.nnz)),
          t.y() / std::max<double>(1.0, static_cast<double>(profile.nnz)), t.steps_per_lane,
          p.deterministic ? ", deterministic" : "");
    }
    out.push_back(std::move(c));
  }
  return out;
}

Encoded AmbFormat::encode(const CsrMatrix& a, const FormatParams& params,
                          Precision precision) const {
  const AmbParams& p = params_of(params);
  AmbLayout L = build_amb_layout(a, p);
  Encoded e = encoded_for(a, precision);
  e.arrays.push_back(make_array<std::uint32_t>("chunk_len", ElemType::u32, L.chunk_len));
  e.arrays.push_back(make_array<std::int32_t>("chunk_start", ElemType::i32, L.chunk_start));
  if (p.deterministic) {
    e.arrays.push_back(make_array<std::int32_t>("slot", ElemType::i32, L.slot));
  } else {
    e.arrays.push_back(make_array<std::uint16_t>("perm", ElemType::u16, L.perm));
    e.arrays.push_back(make_array<std::uint16_t>("perm_offset", ElemType::u16, L.perm_offset));
  }
  e.arrays.push_back(make_array<std::uint16_t>(
      "col", ElemType::u16, std::span<const std::uint16_t>(L.col), L.col.size()));
  e.arrays.push_back(value_array("values", precision, L.values, L.values.size()));
  if (p.deterministic) {
    e.arrays.push_back(make_array<std::int32_t>("red_ptr", ElemType::i32, L.red_ptr));
    const std::size_t pairs = static_cast<std::size_t>(L.stats.pairs);
    EncodedArray partial = precision == Precision::f32
                               ? zero_array<float>("partial", ElemType::f32, pairs)
                               : zero_array<double>("partial", ElemType::f64, pairs);
    partial.scratch = true;
    e.arrays.push_back(std::move(partial));
  }
  return e;
}

namespace {

template <typename Value>
void amb_multiply(const Encoded& e, const AmbParams& p, std::span<const double> x,
                  std::span<double> y, double alpha, double beta) {
  const auto& len_a = e.array("chunk_len");
  const std::uint32_t* chunk_len = typed<std::uint32_t>(len_a);
  const std::int32_t* chunk_start = typed<std::int32_t>(e.array("chunk_start"));
  const std::uint16_t* col = typed<std::uint16_t>(e.array("col"));
  const Value* values = typed<Value>(e.array("values"));
  const int c_rows = p.slice_height;
  const int b = p.column_block;
  const std::int64_t nc = len_a.count();
  // The partial sum of every chunk row, as the kernel forms it.
  auto chunk_row_sum = [&](std::int64_t chunk, int r) {
    const std::uint32_t cl = chunk_len[chunk];
    const std::int64_t width = cl & 0xFFFF;
    const std::int64_t base = static_cast<std::int64_t>(cl >> 16) << p.segment_bits;
    const std::int64_t start = chunk_start[chunk];
    double sum = 0;
    for (std::int64_t j = 0; j < width; ++j) {
      const std::int64_t c = base + col[start + j * c_rows + r];
      for (int t = 0; t < b; ++t) {
        const double v = static_cast<double>(values[start * b + (j * b + t) * c_rows + r]);
        if (c + t >= e.ncols) throw InternalError("amb: a block passes the last column");
        sum += v * x[static_cast<std::size_t>(c + t)];
      }
    }
    return sum;
  };
  if (p.deterministic) {
    const std::int32_t* slot = typed<std::int32_t>(e.array("slot"));
    const std::int32_t* red_ptr = typed<std::int32_t>(e.array("red_ptr"));
    std::vector<double> partial(static_cast<std::size_t>(e.array("partial").count()), 0.0);
    for (std::int64_t ch = 0; ch < nc; ++ch)
      for (int r = 0; r < c_rows; ++r) {
        const std::int32_t s = slot[ch * c_rows + r];
        if (s >= 0) partial[static_cast<std::size_t>(s)] = chunk_row_sum(ch, r);
      }
    for (std::int64_t row = 0; row < e.nrows; ++row) {
      double sum = 0;
      for (std::int32_t k = red_ptr[row]; k < red_ptr[row + 1]; ++k)
        sum += partial[static_cast<std::size_t>(k)];
      const auto i = static_cast<std::size_t>(row);
      y[i] = alpha * sum + (beta != 0.0 ? beta * y[i] : 0.0);
    }
    return;
  }
  const std::uint16_t* perm = typed<std::uint16_t>(e.array("perm"));
  const std::uint16_t* perm_offset = typed<std::uint16_t>(e.array("perm_offset"));
  for (double& v : y) v = beta != 0.0 ? beta * v : 0.0;
  for (std::int64_t ch = 0; ch < nc; ++ch)
    for (int r = 0; r < c_rows; ++r) {
      const std::uint16_t pr = perm[ch * c_rows + r];
      if (pr == AmbFormat::kPadRow) continue;
      const std::int64_t row = static_cast<std::int64_t>(perm_offset[ch]) * p.sigma + pr;
      y[static_cast<std::size_t>(row)] += alpha * chunk_row_sum(ch, r);
    }
}

}  // namespace

void AmbFormat::reference_spmv(const Encoded& e, const FormatParams& params,
                               std::span<const double> x, std::span<double> y, double alpha,
                               double beta) const {
  const AmbParams& p = params_of(params);
  if (static_cast<std::int64_t>(x.size()) != e.ncols ||
      static_cast<std::int64_t>(y.size()) != e.nrows)
    throw InputError("reference_spmv", 0, "x or y has the wrong length");
  if (e.precision == Precision::f64) {
    amb_multiply<double>(e, p, x, y, alpha, beta);
  } else {
    amb_multiply<float>(e, p, x, y, alpha, beta);
  }
}

std::string AmbFormat::kernel_name(const AmbParams& p, Precision precision) {
  return fmt::format("spmv_amb_seg{}_c{}_s{}_cb{}_b{}{}_{}", p.segment_bits, p.slice_height,
                     p.sigma, p.column_block, p.block_size, p.deterministic ? "_det" : "",
                     codegen::precision_tag(precision));
}

KernelSource AmbFormat::generate(const Encoded& e, const FormatParams& params,
                                 const std::string& banner) const {
  const AmbParams& p = params_of(params);
  using K = KernelParam::Kind;
  KernelSource k = kernel_source(kernel_name(p, e.precision), {"spmvc/amb.cuh"}, banner);
  k.block = p.block_size;
  const std::int64_t chunks = e.array("chunk_len").count();
  k.grid = chunks * p.slice_height / p.block_size;  // chunks are padded to whole blocks
  const std::string tag = fmt::format("seg{}_c{}_s{}_cb{}_b{}", p.segment_bits, p.slice_height,
                                      p.sigma, p.column_block, p.block_size);
  const std::string prec = codegen::precision_tag(e.precision);
  const std::int64_t row_grid = std::max<std::int64_t>(1, (e.nrows + 255) / 256);
  const std::string side_name = p.deterministic ? fmt::format("spmv_amb_reduce_{}_{}", tag, prec)
                                                : fmt::format("spmv_amb_scale_y_{}_{}", tag, prec);
  if (p.deterministic) {
    k.params = {{K::array, "chunk_len"}, {K::array, "chunk_start"}, {K::array, "slot"},
                {K::array, "col"},       {K::array, "values"},      {K::x, "x"},
                {K::array, "partial"}};
    k.post_launches.push_back({side_name,
                               {{K::rows, "nrows"},
                                {K::array, "red_ptr"},
                                {K::array, "partial"},
                                {K::y, "y"},
                                {K::alpha, "alpha"},
                                {K::beta, "beta"}},
                               row_grid,
                               256,
                               0});
  } else {
    k.params = {{K::array, "chunk_len"},
                {K::array, "chunk_start"},
                {K::array, "perm"},
                {K::array, "perm_offset"},
                {K::array, "col"},
                {K::array, "values"},
                {K::x, "x"},
                {K::y, "y"},
                {K::alpha, "alpha"}};
    k.pre_launches.push_back(
        {side_name, {{K::rows, "nrows"}, {K::y, "y"}, {K::beta, "beta"}}, row_grid, 256, 0});
  }

  const std::string main_signature =
      codegen::entry_signature(k.kernel_name, k.params, e, "kBlockSize");
  const KernelLaunch& side = p.deterministic ? k.post_launches.front() : k.pre_launches.front();
  const std::string side_signature = codegen::entry_signature(side.entry, side.params, e, "256");

  const std::string value = codegen::value_type(e.precision);
  const std::string acc = codegen::accumulate_type(e.precision);
  k.source += "#include \"spmvc/amb.cuh\"\n\n";
  k.source += codegen::constants_block({
      {fmt::format("constexpr int kSegmentBits = {};", p.segment_bits),
       "column segments of 2^kSegmentBits columns"},
      {fmt::format("constexpr int kChunkRows = {};", p.slice_height),
       "C: rows per chunk, one thread each"},
      {fmt::format("constexpr int kSigma = {};", p.sigma), "rows per sorting window"},
      {fmt::format("constexpr int kColumnBlock = {};", p.column_block),
       "b: contiguous columns per block"},
      {fmt::format("constexpr int kBlockSize = {};", p.block_size), "threads per block"},
      {fmt::format("using Value = {};", value), "stored values, x and y"},
      {fmt::format("using Acc = {};", acc), "accumulation"},
  });
  const std::string checks = fmt::format(
      R"(
static_assert(sizeof(Value) == {VB}, "values were encoded with {VB}-byte elements");
static_assert(kBlockSize % kChunkRows == 0, "chunks were padded to whole blocks of {PB} chunks");
static_assert(spmvc::amb::kPadRow == 0x{PAD:X}, "padding rows were marked 0x{PAD:X}");
)",
      fmt::arg("VB", e.precision == Precision::f64 ? 8 : 4),
      fmt::arg("PB", p.block_size / p.slice_height), fmt::arg("PAD", kPadRow));
  k.source += checks;
  if (p.deterministic) {
    k.source += fmt::format(R"(
{NSIG}  spmvc::amb::spmv_partial<kSegmentBits, kChunkRows, kColumnBlock, kBlockSize, Value, Acc>(
      chunk_len, chunk_start, slot, col, values, x, partial);
}}

{RSIG}  spmvc::amb::reduce<256, Value, Acc>(nrows, red_ptr, partial, y, alpha, beta);
}}
)",
                            fmt::arg("NSIG", main_signature), fmt::arg("RSIG", side_signature));
  } else {
    k.source += fmt::format(R"(
{SSIG}  spmvc::amb::scale_y<256, Value, Acc>(nrows, y, beta);
}}

{NSIG}  spmvc::amb::spmv_atomic<kSegmentBits, kChunkRows, kSigma, kColumnBlock, kBlockSize, Value,
                          Acc>(chunk_len, chunk_start, perm, perm_offset, col, values, x, y,
                               alpha);
}}
)",
                            fmt::arg("NSIG", main_signature), fmt::arg("SSIG", side_signature));
  }
  return k;
}

}  // namespace spmvc::formats
