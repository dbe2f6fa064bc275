#include "formats/cci/cci_format.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/arrays.hpp"
#include "formats/csr/csr_format.hpp"
#include "formats/model_shortcuts.hpp"
#include "heuristics.hpp"
#include "spmvc/error.hpp"

namespace spmvc::formats {

namespace {

const CciParams& params_of(const FormatParams& params) {
  const auto* p = std::get_if<CciParams>(&params);
  if (p == nullptr) throw InternalError("cci format given another format's parameters");
  return *p;
}

constexpr int kThreadsPerRowChoices[] = {1, 2, 4, 8, 16, 32};
constexpr std::int64_t kMaxI32 = std::numeric_limits<std::int32_t>::max();

/// Share of the bandwidth-bound time CCI's decode is assumed to keep (the shift/mask/table work
/// per nonzero competes with the loads for issue slots). Not yet measured on Hopper: the paper's
/// GTX 570 lost 10-50% to CUSPARSE on matrices whose columns compress under 75%.
constexpr double kCciDecodeEfficiency = 0.9;

int bits_needed(std::uint64_t v) { return 64 - std::countl_zero(v); }

// Opcode-length shapes of complete prefix codes with opcodes of at most 3 bits.
const std::vector<std::vector<int>>& shapes() {
  static const std::vector<std::vector<int>> kShapes = {{0},
                                                        {1, 1},
                                                        {1, 2, 2},
                                                        {2, 2, 2, 2},
                                                        {1, 2, 3, 3},
                                                        {1, 3, 3, 3, 3},
                                                        {2, 2, 2, 3, 3},
                                                        {2, 2, 3, 3, 3, 3},
                                                        {2, 3, 3, 3, 3, 3, 3},
                                                        {3, 3, 3, 3, 3, 3, 3, 3}};
  return kShapes;
}

unsigned reverse_bits(unsigned v, int len) {
  unsigned out = 0;
  for (int i = 0; i < len; ++i) out |= ((v >> i) & 1u) << (len - 1 - i);
  return out;
}

// Canonical prefix code for `lens` (in class order): opcodes read first bit in bit 0.
std::vector<CciClass> canonical(const std::vector<int>& lens, const std::vector<int>& widths) {
  std::vector<std::size_t> order(lens.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return lens[a] < lens[b]; });
  std::vector<CciClass> out(lens.size());
  unsigned code = 0;
  int prev = lens[order[0]];
  for (std::size_t i : order) {
    code <<= (lens[i] - prev);
    prev = lens[i];
    out[i] = {lens[i], reverse_bits(code, lens[i]), widths[i]};
    ++code;
  }
  return out;
}

// Visits every code the encoder writes for rows r0..r1, in stream order per slice:
// f(row, slice, immediate).
template <typename F>
void for_each_code(const CsrMatrix& a, int t, std::int64_t r0, std::int64_t r1, F&& f) {
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int64_t beg = a.row_ptr[r], end = a.row_ptr[r + 1];
    if (beg == end) continue;
    const std::int64_t first = a.col_idx[beg];
    for (int s = 0; s < t && beg + s < end; ++s) {
      std::int64_t prev = s == 0 ? -t : first + s - t;
      for (std::int64_t i = beg + s; i < end; i += t) {
        const std::int64_t c = a.col_idx[i];
        f(r, s, static_cast<std::uint64_t>(c - prev - t));
        prev = c;
      }
    }
  }
}

struct BitWriter {
  std::vector<std::uint32_t> words;
  std::uint64_t acc = 0;
  int nbits = 0;
  void put(std::uint64_t value, int len) {
    acc |= value << nbits;
    nbits += len;
    while (nbits >= 32) {
      words.push_back(static_cast<std::uint32_t>(acc));
      acc >>= 32;
      nbits -= 32;
    }
  }
  void finish() {
    if (nbits > 0) words.push_back(static_cast<std::uint32_t>(acc));
    acc = 0;
    nbits = 0;
  }
  void clear() {
    words.clear();
    acc = 0;
    nbits = 0;
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// The table.

CciTable CciTable::from_classes(std::vector<CciClass> classes) {
  CciTable t;
  t.classes = std::move(classes);
  for (unsigned idx = 0; idx < 8; ++idx) {
    int matches = 0;
    for (const CciClass& c : t.classes) {
      if (c.opcode_len < 0 || c.opcode_len > 3 || c.imm_bits < 0 || c.opcode_len + c.imm_bits > 32)
        throw InternalError(fmt::format("cci: class of {} + {} bits", c.opcode_len, c.imm_bits));
      if ((idx & ((1u << c.opcode_len) - 1)) == c.opcode) {
        ++matches;
        t.op_len[idx] = static_cast<std::uint8_t>(c.opcode_len);
        t.imm_bits[idx] = static_cast<std::uint8_t>(c.imm_bits);
      }
    }
    if (matches != 1) throw InternalError("cci: opcodes are not a complete prefix code");
  }
  return t;
}

int CciTable::class_for(int bits) const {
  int best = -1;
  for (std::size_t i = 0; i < classes.size(); ++i) {
    const CciClass& c = classes[i];
    if (c.imm_bits < bits) continue;
    if (best < 0 ||
        c.opcode_len + c.imm_bits < classes[static_cast<std::size_t>(best)].opcode_len +
                                        classes[static_cast<std::size_t>(best)].imm_bits)
      best = static_cast<int>(i);
  }
  return best;
}

int CciTable::code_bits(int bits) const {
  const int i = class_for(bits);
  return i < 0 ? -1
               : classes[static_cast<std::size_t>(i)].opcode_len +
                     classes[static_cast<std::size_t>(i)].imm_bits;
}

int CciTable::max_imm_bits() const {
  int m = 0;
  for (const CciClass& c : classes) m = std::max(m, c.imm_bits);
  return m;
}

CciTable cci_paper_table() {
  // Figure 1, read from the low bits: 0 = short jump (here: delta = T), 001, 011, 101, 111.
  return CciTable::from_classes({{1, 0u, 0}, {3, 1u, 5}, {3, 3u, 15}, {3, 5u, 20}, {3, 7u, 29}});
}

namespace {

CciTable search_table(const std::array<std::int64_t, 33>& hist, bool bounded);

}  // namespace

CciTable cci_choose_table(const std::array<std::int64_t, 33>& hist) {
  if (!model_shortcuts()) return search_table(hist, false);
  // propose() and cost() ask for the same histograms, so the answers are kept.
  static std::mutex mutex;
  static std::map<std::array<std::int64_t, 33>, CciTable> known;
  {
    std::lock_guard lock(mutex);
    if (auto it = known.find(hist); it != known.end()) return it->second;
  }
  CciTable table = search_table(hist, true);
  std::lock_guard lock(mutex);
  if (known.size() > 256) known.clear();
  known.emplace(hist, table);
  return table;
}

CciTable cci_search_table_unbounded(const std::array<std::int64_t, 33>& hist) {
  return search_table(hist, false);
}

namespace {

CciTable search_table(const std::array<std::int64_t, 33>& hist, bool bounded) {
  // A table is a partition of the present widths into classes (each class is named by its
  // widest width, the widest class by the largest present width) and an opcode length per class
  // from one of shapes(). A dynamic programme over the classes in rising width, whose state is
  // how many opcodes of each length are used, finds the cheapest: it visits every partition and
  // every assignment of lengths to classes (not only shortest-to-most-frequent, so a long opcode
  // may go to a narrow class when a wide one would pass 32 bits) in P^2 x (states) steps per
  // shape, where P is the number of present widths.
  //
  // `bounded` skips partial tables that cannot win. The codes still to cover cost at least the
  // fewest immediate bits they take in as many classes as the state has opcodes left (`cover`,
  // one small DP over the widths that every shape shares) plus the shortest opcode left each. A
  // cell on a path whose total is at most the limit passes the test (its remaining codes cost
  // at least the bound), and so does every cell that ties with it, so the table found, ties
  // included, is the unbounded search's. The costs are integers, held exactly in doubles.
  std::vector<int> widths;
  for (int b = 0; b <= 32; ++b)
    if (hist[static_cast<std::size_t>(b)] > 0) widths.push_back(b);
  if (widths.empty()) return cci_paper_table();
  const int np = static_cast<int>(widths.size());
  // cum[b] = codes needing <= b bits.
  std::array<double, 34> cum{};
  for (int b = 0; b <= 32; ++b)
    cum[static_cast<std::size_t>(b) + 1] =
        cum[static_cast<std::size_t>(b)] + static_cast<double>(hist[static_cast<std::size_t>(b)]);
  auto below = [&](int j) {
    return j < 0 ? 0.0 : cum[static_cast<std::size_t>(widths[static_cast<std::size_t>(j)]) + 1];
  };
  // rest_freq[i + 1]: the codes wider than widths[i] (all of them for i = -1); cover[(i + 1) * 9
  // + r]: the fewest bits their immediates take in at most r classes (each class as wide as its
  // widest width), opcodes left out; infinite where r = 0 leaves codes uncovered.
  constexpr int kMaxClasses = 8;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> rest_freq(static_cast<std::size_t>(np) + 1);
  std::vector<double> cover((static_cast<std::size_t>(np) + 1) * (kMaxClasses + 1), kInf);
  const auto cover_at = [&](int i, int r) -> double& {
    return cover[static_cast<std::size_t>((i + 1) * (kMaxClasses + 1) + r)];
  };
  for (int i = np - 1; i >= -1; --i) {
    rest_freq[static_cast<std::size_t>(i + 1)] = cum[33] - below(i);
    for (int r = 0; r <= kMaxClasses; ++r) {
      if (i == np - 1) {
        cover_at(i, r) = 0;
        continue;
      }
      if (r == 0) continue;
      double least = kInf;
      for (int j = i + 1; j < np; ++j)
        least = std::min(least, (below(j) - below(i)) * widths[static_cast<std::size_t>(j)] +
                                    cover_at(j, r - 1));
      cover_at(i, r) = least;
    }
  }

  struct Cell {
    double cost = std::numeric_limits<double>::infinity();
    int prev = -1, prev_state = 0, len = 0;
  };
  struct Solved {
    std::vector<Cell> dp;  // dp[j * nstates + s]: the cheapest classes covering widths[0..j],
                           // the last ending at j, with the opcodes of state s used
    int nstates = 1;
    double cost = kInf;  // of the full state at the last width
  };
  // One shape's DP; cells whose cost plus the bound on the rest exceeds `limit` are not
  // extended (kInf: none is skipped).
  const auto solve = [&](const std::vector<int>& shape, double limit) {
    // The shape's distinct lengths and how many opcodes each has; a state counts the opcodes
    // used per length, in mixed radix.
    std::vector<int> lens, counts, radix;
    for (int l : shape) {
      if (lens.empty() || lens.back() != l) {
        lens.push_back(l);
        counts.push_back(0);
      }
      ++counts.back();
    }
    int nstates = 1;
    for (int c : counts) {
      radix.push_back(nstates);
      nstates *= c + 1;
    }
    const auto used = [&](int state, std::size_t k) { return state / radix[k] % (counts[k] + 1); };
    // How many opcodes a state leaves, and the shortest (lens rise; 0 when it leaves none).
    std::vector<int> shortest_left(static_cast<std::size_t>(nstates), 0);
    std::vector<int> left(static_cast<std::size_t>(nstates), 0);
    for (int st = 0; st < nstates; ++st) {
      for (std::size_t k = lens.size(); k-- > 0;) {
        const int n = counts[k] - used(st, k);
        left[static_cast<std::size_t>(st)] += n;
        if (n > 0) shortest_left[static_cast<std::size_t>(st)] = lens[k];
      }
    }
    Solved out;
    out.nstates = nstates;
    out.dp.assign(static_cast<std::size_t>(np * nstates), Cell{});
    // Each finished cell extends to every later width: a cell (j, t) meets its candidates in
    // the order (i, s, k) rising, so the first cheapest is kept.
    for (int i = -1; i < np - 1; ++i) {
      for (int st = 0; st < nstates; ++st) {
        const double base = i < 0 ? (st == 0 ? 0.0 : kInf)
                                  : out.dp[static_cast<std::size_t>(i * nstates + st)].cost;
        if (!std::isfinite(base)) continue;
        const auto at = static_cast<std::size_t>(st);
        if (base + cover_at(i, left[at]) +
                rest_freq[static_cast<std::size_t>(i + 1)] * shortest_left[at] >
            limit)
          continue;
        // The lengths this state still has an opcode of (at most 3).
        std::array<std::size_t, 3> open{};
        std::size_t nopen = 0;
        for (std::size_t k = 0; k < lens.size(); ++k)
          if (used(st, k) < counts[k]) open[nopen++] = k;
        const double below_i = below(i);
        for (int j = i + 1; j < np; ++j) {
          const int w = widths[static_cast<std::size_t>(j)];
          const double freq = below(j) - below_i;
          for (std::size_t o = 0; o < nopen; ++o) {
            const std::size_t k = open[o];
            if (lens[k] + w > 32) continue;
            const int t = st + radix[k];
            Cell& c = out.dp[static_cast<std::size_t>(j * nstates + t)];
            const double cost = base + freq * (lens[k] + w);
            if (cost < c.cost) c = {cost, i, st, lens[k]};
          }
        }
      }
    }
    out.cost = out.dp[static_cast<std::size_t>((np - 1) * nstates + nstates - 1)].cost;
    return out;
  };

  // The first shape of least cost wins. Bounded, the shapes run from the most opcodes down (the
  // cheap tables are usually there), each skipping cells that cannot come within the cheapest
  // table found so far: a shape whose optimum is at most that limit is solved exactly, ties
  // included, and any other ends above its optimum, above the limit, so it cannot win.
  const std::vector<std::vector<int>>& all = shapes();
  std::vector<Solved> solved(all.size());
  double limit = kInf;
  for (std::size_t n = all.size(); n-- > 0;) {
    const std::size_t at = bounded ? n : all.size() - 1 - n;
    solved[at] = solve(all[at], bounded ? limit : kInf);
    limit = std::min(limit, solved[at].cost);
  }
  const Solved* best = nullptr;
  for (const Solved& sv : solved)
    if (std::isfinite(sv.cost) && (best == nullptr || sv.cost < best->cost)) best = &sv;
  std::vector<int> best_lens, best_widths;
  if (best != nullptr) {
    for (int j = np - 1, st = best->nstates - 1; j >= 0;) {
      const Cell& c = best->dp[static_cast<std::size_t>(j * best->nstates + st)];
      best_lens.insert(best_lens.begin(), c.len);
      best_widths.insert(best_widths.begin(), widths[static_cast<std::size_t>(j)]);
      st = c.prev_state;
      j = c.prev;
    }
  }
  if (best_lens.empty()) throw InternalError("cci: no table codes the histogram");
  return CciTable::from_classes(canonical(best_lens, best_widths));
}

}  // namespace

std::array<std::int64_t, 33> cci_code_histogram(const CsrMatrix& a, int threads_per_row) {
  // Row ranges count on their own; the counts add up the same for any split.
  using Hist = std::array<std::int64_t, 33>;
  Hist hist{};
  for (const Hist& part :
       map_ranges(split_rows(a, kRowGrain), [&](std::int64_t r0, std::int64_t r1) {
         Hist h{};
         for_each_code(a, threads_per_row, r0, r1, [&](std::int64_t, int, std::uint64_t imm) {
           ++h[static_cast<std::size_t>(std::min(32, bits_needed(imm)))];
         });
         return h;
       })) {
    for (std::size_t b = 0; b < hist.size(); ++b) hist[b] += part[b];
  }
  return hist;
}

CciTable CciFormat::table_of(const Encoded& e) {
  const EncodedArray& a = e.array("decode_table");
  if (a.count() != 16) throw InternalError("cci: decode_table has the wrong size");
  const std::uint8_t* t = typed<std::uint8_t>(a);
  // Rebuild the classes from the expanded table: entry i belongs to the opcode of its low
  // op_len bits.
  std::vector<CciClass> classes;
  for (unsigned idx = 0; idx < 8; ++idx) {
    const int len = t[idx];
    const unsigned opcode = idx & ((1u << len) - 1);
    const bool seen = std::any_of(classes.begin(), classes.end(), [&](const CciClass& c) {
      return c.opcode_len == len && c.opcode == opcode;
    });
    if (!seen) classes.push_back({len, opcode, t[8 + idx]});
  }
  return CciTable::from_classes(std::move(classes));
}

CciSpace cci_space(const Encoded& e) {
  CciSpace s;
  const EncodedArray& codes = e.array("codes");
  const EncodedArray& cstart = e.array("cstart");
  // cstart's last entry is where the streams end and the spare tail begins.
  const std::int32_t* cs = typed<std::int32_t>(cstart);
  const std::int64_t used = cstart.count() > 0 ? cs[cstart.count() - 1] : 0;
  s.csr_column_bytes = 4.0 * static_cast<double>(e.nnz);
  s.code_bytes = 4.0 * static_cast<double>(std::min(used, codes.count()));
  s.cstart_bytes = static_cast<double>(cstart.bytes.size());
  if (s.csr_column_bytes > 0) {
    s.saved_codes_only = 1 - s.code_bytes / s.csr_column_bytes;
    s.saved_with_starts = 1 - (s.code_bytes + s.cstart_bytes) / s.csr_column_bytes;
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// The format.

std::optional<std::string> CciFormat::cannot_implement(const Profile& profile,
                                                       const FormatParams& params,
                                                       Precision) const {
  const CciParams& p = params_of(params);
  const int t = p.threads_per_row;
  if (t < 1 || t > 32 || (t & (t - 1)) != 0)
    return fmt::format("threads per row {} is not a power of two in 1..32", t);
  if (p.block_size < 32 || p.block_size > 1024 || p.block_size % 32 != 0)
    return fmt::format("block size {} is not a multiple of 32 in 32..1024", p.block_size);
  if (profile.nnz > kMaxI32) return fmt::format("{} nonzeros need 64-bit row offsets", profile.nnz);
  // Worst case: every code 32 bits, plus one word of padding per slice.
  const double words =
      static_cast<double>(profile.nnz) + static_cast<double>(profile.nrows) * t * 2.0 + t;
  if (words > static_cast<double>(kMaxI32))
    return fmt::format("{} nonzeros at T={} may need more than 2^31 code words", profile.nnz, t);
  if (static_cast<double>(profile.nrows) * t > static_cast<double>(kMaxI32))
    return fmt::format("{} rows need more than 2^31 threads at T={}", profile.nrows, t);
  // The widest immediate: the first column (up to ncols - 1) or a jump of up to ncols.
  if (p.paper_table && profile.ncols > (std::int64_t{1} << 29))
    return fmt::format("{} columns exceed the paper table's 29-bit jumps", profile.ncols);
  return std::nullopt;
}

double CciFormat::estimated_code_bits(const Profile& profile, const CciParams& p) {
  const int t = p.threads_per_row;
  const int log2t = std::countr_zero(static_cast<unsigned>(t));
  std::array<std::int64_t, 33> est{};
  // Codes that start a slice: one absolute (the first column), min(len, T) - 1 short offsets.
  std::int64_t starts = 0, first_codes = 0;
  for (const HistogramBin& bin : profile.row_histogram) {
    const double len = 0.5 * static_cast<double>(bin.lo + bin.hi);
    if (len <= 0) continue;
    starts += static_cast<std::int64_t>(std::min<double>(len, t) * static_cast<double>(bin.count));
    first_codes += bin.count;
  }
  for (int b = 0; b <= 32; ++b) est[static_cast<std::size_t>(b)] += profile.first_col_bits[b];
  est[static_cast<std::size_t>(std::min(32, log2t + 1))] +=
      std::max<std::int64_t>(0, starts - first_codes);
  // The rest are jumps between nonzeros T apart. Deltas of one (adjacent columns) stay within a
  // stride with probability a^T; otherwise a bucket-k delta grows to about k + log2(T) bits.
  double total = 0;
  for (int k = 1; k <= 32; ++k) total += static_cast<double>(profile.delta_bits[k]);
  const double jumps = std::max(0.0, static_cast<double>(profile.nnz - starts));
  if (total > 0 && jumps > 0) {
    const double a = static_cast<double>(profile.delta_bits[1]) / total;
    const double stride = t == 1 ? a : std::pow(a, t);
    est[0] += static_cast<std::int64_t>(std::llround(jumps * stride));
    const double rest_scale =
        (1 - stride) * jumps /
        std::max(1.0, total - (t == 1 ? static_cast<double>(profile.delta_bits[1]) : 0.0));
    for (int k = 1; k <= 32; ++k) {
      if (t == 1 && k == 1) continue;
      const int b = std::min(32, (k == 1 ? 1 : k) + log2t);
      est[static_cast<std::size_t>(b)] += static_cast<std::int64_t>(
          std::llround(static_cast<double>(profile.delta_bits[k]) * rest_scale));
    }
  }
  const CciTable table = p.paper_table ? cci_paper_table() : cci_choose_table(est);
  double bits = 0;
  for (int b = 0; b <= 32; ++b) {
    const int cb = table.code_bits(b);
    bits += static_cast<double>(est[static_cast<std::size_t>(b)]) * (cb < 0 ? 35 : cb);
  }
  return bits;
}

Cost CciFormat::cost(const Profile& profile, const FormatParams& params,
                     Precision precision) const {
  const CciParams& p = params_of(params);
  const int t = p.threads_per_row;
  const double vb = value_bytes(precision);
  const double nonempty = static_cast<double>(profile.nrows - profile.empty_rows);
  // Each slice stream ends in a partly filled word; interleaving pads every slice of a row to
  // the longest (about three quarters of a word each, as slices of a row differ little).
  const double pad_words = nonempty * t * (p.interleaved ? 0.75 : 0.5);
  const double words = estimated_code_bits(profile, p) / 32 + pad_words + t;
  const double starts = p.interleaved ? static_cast<double>(profile.nrows + 1)
                                      : static_cast<double>(profile.nrows) * t + 1;
  Cost c;
  c.matrix_bytes = static_cast<double>(profile.nrows + 1) * 4 + starts * 4 + words * 4 +
                   static_cast<double>(profile.nnz) * vb;
  c.x_bytes = static_cast<double>(profile.ncols) * vb;
  c.y_bytes = static_cast<double>(profile.nrows) * vb;
  const double per_lane = profile.row_mean / t;
  const double latency =
      std::min(1.0, CsrFormat::nonzeros_per_lane(precision) / std::max(per_lane, 1e-9));
  c.lane_efficiency = CsrFormat::lane_efficiency(profile, t) * latency * kCciDecodeEfficiency;
  c.serial_seconds =
      std::ceil(static_cast<double>(profile.row_max) / t) * heuristics::kCsrStepSeconds;
  return c;
}

std::vector<Candidate> CciFormat::propose(const Profile& profile, Precision precision) const {
  std::vector<CciParams> sets;
  for (int t : kThreadsPerRowChoices) {
    CciParams p;
    p.threads_per_row = t;
    sets.push_back(p);
  }
  CciParams paper;  // the appendix: 8 slices, the fixed table, a code start per slice
  paper.threads_per_row = 8;
  paper.paper_table = true;
  paper.interleaved = false;
  sets.push_back(paper);
  // The code-table search (cci_choose_table) is most of the planner's time on a wide delta
  // histogram: the sets' tables are found side by side on the host threads first (each is
  // cached), so the loop below only looks them up. An error here is left to that loop, which
  // meets it only for the sets it estimates (the applicable ones), as before.
  parallel_for(static_cast<std::int64_t>(sets.size()), 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      try {
        (void)estimated_code_bits(profile, sets[static_cast<std::size_t>(i)]);
      } catch (const Error&) {
      }
    }
  });
  std::vector<Candidate> out;
  const double nnz = std::max<double>(1.0, static_cast<double>(profile.nnz));
  for (const CciParams& p : sets) {
    Candidate c = candidate(profile, p, precision);
    if (c.applicable) {
      const Cost k = cost(profile, p, precision);
      c.predicted_bytes = k.total();
      c.reason = fmt::format("{:.1f} code bits per nonzero (estimated), model efficiency {:.0f}%",
                             estimated_code_bits(profile, p) / nnz, 100 * k.lane_efficiency);
    }
    out.push_back(std::move(c));
  }
  return out;
}

Encoded CciFormat::encode(const CsrMatrix& a, const FormatParams& params,
                          Precision precision) const {
  const CciParams& p = params_of(params);
  const int t = p.threads_per_row;
  if (a.nnz() > kMaxI32) throw InputError("cci parameters", 0, "more than 2^31 nonzeros");
  const CciTable table =
      p.paper_table ? cci_paper_table() : cci_choose_table(cci_code_histogram(a, t));
  // Class per immediate width, and its code.
  std::array<int, 33> cls{};
  for (int b = 0; b <= 32; ++b) cls[static_cast<std::size_t>(b)] = table.class_for(b);

  auto put = [&](std::uint64_t imm, BitWriter& w) {
    const int b = std::min(32, bits_needed(imm));
    const int ci = cls[static_cast<std::size_t>(b)];
    if (ci < 0)
      throw InputError("cci parameters", 0,
                       fmt::format("a column jump of {} bits exceeds the table's widest class", b));
    const CciClass& c = table.classes[static_cast<std::size_t>(ci)];
    w.put(c.opcode | (imm << c.opcode_len), c.opcode_len + c.imm_bits);
  };
  auto check_size = [&](std::size_t words) {
    if (words + static_cast<std::size_t>(t) > static_cast<std::size_t>(kMaxI32))
      throw InputError("cci parameters", 0, "more than 2^31 code words");
  };
  // Row ranges code into streams of their own (cstart relative to the range's first word),
  // which are then laid end to end in row order: the words one pass over the rows would write.
  struct Part {
    std::vector<std::int32_t> cstart;
    std::vector<std::uint32_t> codes;
  };
  const std::vector<Range> ranges = split_rows(a, kRowGrain);
  const std::vector<Part> parts = map_ranges(ranges, [&](std::int64_t r0, std::int64_t r1) {
    Part part;
    std::vector<std::uint32_t>& codes = part.codes;
    part.cstart.reserve(static_cast<std::size_t>(p.interleaved ? r1 - r0 : (r1 - r0) * t));
    std::vector<BitWriter> slices(static_cast<std::size_t>(t));
    for (std::int64_t r = r0; r < r1; ++r) {
      for (BitWriter& w : slices) w.clear();
      const std::int64_t beg = a.row_ptr[r], end = a.row_ptr[r + 1];
      if (beg < end) {
        const std::int64_t first = a.col_idx[beg];
        for (int s = 0; s < t && beg + s < end; ++s) {
          std::int64_t prev = s == 0 ? -t : first + s - t;
          BitWriter& w = slices[static_cast<std::size_t>(s)];
          for (std::int64_t i = beg + s; i < end; i += t) {
            put(static_cast<std::uint64_t>(a.col_idx[i] - prev - t), w);
            prev = a.col_idx[i];
          }
          w.finish();
        }
      }
      if (p.interleaved) {
        std::size_t longest = 0;
        for (const BitWriter& w : slices) longest = std::max(longest, w.words.size());
        check_size(codes.size() + longest * static_cast<std::size_t>(t));
        part.cstart.push_back(static_cast<std::int32_t>(codes.size()));
        for (std::size_t k = 0; k < longest; ++k)
          for (const BitWriter& w : slices) codes.push_back(k < w.words.size() ? w.words[k] : 0u);
      } else {
        for (const BitWriter& w : slices) {
          check_size(codes.size() + w.words.size());
          part.cstart.push_back(static_cast<std::int32_t>(codes.size()));
          codes.insert(codes.end(), w.words.begin(), w.words.end());
        }
      }
    }
    return part;
  });
  std::vector<std::size_t> word_at(parts.size() + 1, 0), start_at(parts.size() + 1, 0);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    word_at[i + 1] = word_at[i] + parts[i].codes.size();
    start_at[i + 1] = start_at[i] + parts[i].cstart.size();
  }
  check_size(word_at.back());
  EncodedArray cstart = zero_array<std::int32_t>("cstart", ElemType::i32, start_at.back() + 1);
  // A lane may read one word on: t zero words after the last.
  EncodedArray codes = zero_array<std::uint32_t>("codes", ElemType::u32,
                                                 word_at.back() + static_cast<std::size_t>(t));
  std::int32_t* cstart_out = typed_mut<std::int32_t>(cstart);
  std::uint32_t* codes_out = typed_mut<std::uint32_t>(codes);
  run_ranges(ranges, [&](std::size_t i, std::int64_t, std::int64_t) {
    std::copy(parts[i].codes.begin(), parts[i].codes.end(), codes_out + word_at[i]);
    for (std::size_t k = 0; k < parts[i].cstart.size(); ++k)
      cstart_out[start_at[i] + k] =
          parts[i].cstart[k] + static_cast<std::int32_t>(word_at[i]);  // < 2^31: checked above
  });
  cstart_out[start_at.back()] = static_cast<std::int32_t>(word_at.back());

  std::vector<std::uint8_t> decode(16);
  for (int i = 0; i < 8; ++i) {
    decode[static_cast<std::size_t>(i)] = table.op_len[static_cast<std::size_t>(i)];
    decode[static_cast<std::size_t>(8 + i)] = table.imm_bits[static_cast<std::size_t>(i)];
  }

  Encoded e = encoded_for(a, precision);
  e.arrays.push_back(make_array<std::int32_t>("row_ptr", ElemType::i32, a.row_ptr));
  e.arrays.push_back(std::move(cstart));
  e.arrays.push_back(std::move(codes));
  e.arrays.push_back(value_array("values", precision, a.values, a.values.size()));
  e.arrays.push_back(make_array<std::uint8_t>("decode_table", ElemType::u8, decode));
  return e;
}

namespace {

template <typename Value>
void cci_multiply(const Encoded& e, const CciParams& p, const CciTable& table,
                  std::span<const double> x, std::span<double> y, double alpha, double beta) {
  const int t = p.threads_per_row;
  const std::int32_t* row_ptr = typed<std::int32_t>(e.array("row_ptr"));
  const std::int32_t* cstart = typed<std::int32_t>(e.array("cstart"));
  const EncodedArray& codes_a = e.array("codes");
  const std::uint32_t* codes = typed<std::uint32_t>(codes_a);
  const Value* values = typed<Value>(e.array("values"));
  const std::int64_t nwords = codes_a.count();
  for (std::int64_t r = 0; r < e.nrows; ++r) {
    const std::int64_t beg = row_ptr[r], end = row_ptr[r + 1];
    double sum = 0;
    std::int64_t first = 0;
    for (int s = 0; s < t; ++s) {
      // The lane's decoder, exactly as templates/cci.cuh runs it.
      std::int64_t w = p.interleaved ? static_cast<std::int64_t>(cstart[r]) + s
                                     : static_cast<std::int64_t>(cstart[r * t + s]);
      const std::int64_t stride = p.interleaved ? t : 1;
      std::uint64_t m = 0;
      int mbits = 0;
      std::int64_t col = s == 0 ? -t : first + s - t;
      for (std::int64_t i = beg + s; i < end; i += t) {
        if (mbits < 32) {
          if (w < 0 || w >= nwords) throw InternalError("cci: code read past the array");
          m |= static_cast<std::uint64_t>(codes[w]) << mbits;
          w += stride;
          mbits += 32;
        }
        const unsigned idx = static_cast<unsigned>(m & 7u);
        const int len = table.op_len[idx];
        const int k = table.imm_bits[idx];
        const std::uint64_t imm = (m >> len) & ((std::uint64_t{1} << k) - 1);
        m >>= (len + k);
        mbits -= len + k;
        col += t + static_cast<std::int64_t>(imm);
        if (i == beg) first = col;
        if (col < 0 || col >= e.ncols) throw InternalError("cci: decoded column out of range");
        sum += static_cast<double>(values[i]) * x[static_cast<std::size_t>(col)];
      }
    }
    const auto i = static_cast<std::size_t>(r);
    y[i] = alpha * sum + (beta != 0.0 ? beta * y[i] : 0.0);
  }
}

std::string table_tag(const CciParams& p, const CciTable& table) {
  if (p.paper_table) return "paper";
  std::vector<CciClass> classes = table.classes;
  std::stable_sort(classes.begin(), classes.end(),
                   [](const CciClass& a, const CciClass& b) { return a.imm_bits < b.imm_bits; });
  std::string tag = "c";
  for (std::size_t i = 0; i < classes.size(); ++i)
    tag += fmt::format("{}{}x{}", i == 0 ? "" : "_", classes[i].opcode_len, classes[i].imm_bits);
  return tag;
}

}  // namespace

void CciFormat::reference_spmv(const Encoded& e, const FormatParams& params,
                               std::span<const double> x, std::span<double> y, double alpha,
                               double beta) const {
  const CciParams& p = params_of(params);
  if (static_cast<std::int64_t>(x.size()) != e.ncols ||
      static_cast<std::int64_t>(y.size()) != e.nrows)
    throw InputError("reference_spmv", 0, "x or y has the wrong length");
  const CciTable table = table_of(e);
  if (e.precision == Precision::f64) {
    cci_multiply<double>(e, p, table, x, y, alpha, beta);
  } else {
    cci_multiply<float>(e, p, table, x, y, alpha, beta);
  }
}

std::string CciFormat::kernel_name(const CciParams& p, const CciTable& table, Precision precision) {
  return fmt::format("spmv_cci_t{}_b{}{}_{}_{}", p.threads_per_row, p.block_size,
                     p.interleaved ? "" : "_slices", table_tag(p, table),
                     codegen::precision_tag(precision));
}

KernelSource CciFormat::generate(const Encoded& e, const FormatParams& params,
                                 const std::string& banner) const {
  const CciParams& p = params_of(params);
  const CciTable table = table_of(e);
  KernelSource k = kernel_source(kernel_name(p, table, e.precision), {"spmvc/cci.cuh"}, banner);
  k.block = p.block_size;
  k.grid = (e.nrows * p.threads_per_row + p.block_size - 1) / p.block_size;
  if (k.grid == 0) k.grid = 1;
  using K = KernelParam::Kind;
  k.params = {{K::rows, "nrows"},  {K::array, "row_ptr"}, {K::array, "cstart"},
              {K::array, "codes"}, {K::array, "values"},  {K::x, "x"},
              {K::y, "y"},         {K::alpha, "alpha"},   {K::beta, "beta"}};

  std::string rows;
  for (int i = 0; i < 8; ++i) {
    const int len = table.op_len[static_cast<std::size_t>(i)];
    rows += fmt::format(
        "    {{{}, {}}},  // {:03b}: opcode {:0{}b} ({} bit{}), {} immediate bits\n", len,
        table.imm_bits[static_cast<std::size_t>(i)], i, i & ((1 << len) - 1), std::max(len, 1), len,
        len == 1 ? "" : "s", table.imm_bits[static_cast<std::size_t>(i)]);
  }
  const std::string value = codegen::value_type(e.precision);
  const std::string acc = codegen::accumulate_type(e.precision);
  k.source += "#include \"spmvc/cci.cuh\"\n\n";
  k.source += fmt::format(
      "// Decode table ({}), indexed by the code buffer's low 3 bits (opcode bits as read, first "
      "bit lowest);\n// each entry: opcode bits, immediate bits. delta = T + immediate.\n"
      "namespace {{\nconstexpr spmvc::cci::Entry kDecodeTable[8] = {{\n{}}};\n}}  // namespace\n\n",
      p.paper_table ? "the paper's Figure 1" : "chosen for this matrix", rows);
  k.source += codegen::constants_block({
      {fmt::format("constexpr int kThreadsPerRow = {};", p.threads_per_row),
       "T: slices (lanes) per row"},
      {fmt::format("constexpr int kBlockSize = {};", p.block_size), "threads per block"},
      {fmt::format("constexpr bool kInterleaved = {};", p.interleaved ? "true" : "false"),
       "slice streams interleaved word by word"},
      {"constexpr unsigned long long kOpLen = spmvc::cci::pack_op_len(kDecodeTable);",
       "opcode bits, 8 per entry"},
      {"constexpr unsigned long long kImmBits = spmvc::cci::pack_imm_bits(kDecodeTable);",
       "immediate bits, 8 per entry"},
      {fmt::format("using Value = {};", value), "stored values, x and y"},
      {fmt::format("using Acc = {};", acc), "accumulation"},
  });
  k.source += fmt::format(
      R"(
static_assert(sizeof(Value) == {VB}, "values were encoded with {VB}-byte elements");
static_assert(spmvc::cci::valid_table(kDecodeTable), "codes are at most 32 bits");

{SIG}  spmvc::cci::spmv<kThreadsPerRow, kBlockSize, kInterleaved, kOpLen, kImmBits, Value, Acc>(
      nrows, row_ptr, cstart, codes, values, x, y, alpha, beta);
}}
)",
      fmt::arg("VB", e.precision == Precision::f64 ? 8 : 4),
      fmt::arg("SIG", codegen::entry_signature(k.kernel_name, k.params, e, "kBlockSize")));
  return k;
}

}  // namespace spmvc::formats
