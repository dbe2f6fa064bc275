#include "formats/bro_ell/bro_ell_codec.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "formats/arrays.hpp"
#include "formats/model_shortcuts.hpp"
#include "formats/values/values.hpp"
#include "spmvc/error.hpp"

namespace spmvc::formats::bro {

int bit_width(std::uint64_t u) { return static_cast<int>(std::bit_width(u)); }

EllShape shape_of(const BroEllParams& p) {
  return {p.slice_height, p.symbol_bits, p.threads_per_row, p.tables, p.values};
}
EllShape shape_of(const BroHybParams& p) {
  return {p.slice_height, p.symbol_bits, p.threads_per_row, p.tables, p.values};
}

std::int64_t EllSizes::symbol_bytes(int symbol_bits) const {
  return (symbols + pad_rows) * lanes * (symbol_bits / 8);
}

std::int64_t EllSizes::index_bytes(int symbol_bits) const {
  return symbol_bytes(symbol_bits) + columns + 2 * 8 * (nslices + 1);
}

namespace {

// The first min(length, limit) nonzeros of row r: [begin, begin + len).
struct RowPart {
  std::int64_t begin = 0;
  std::int64_t len = 0;
};
RowPart part_of(const CsrMatrix& a, std::int64_t r, std::int64_t limit) {
  if (r >= a.nrows) return {};
  return {a.row_ptr[r], std::min(a.row_length(r), limit)};
}

// Delta of position j (0-based, in the lane's own numbering) of lane t of a row part.
std::uint32_t lane_delta(const CsrMatrix& a, const RowPart& row, int t, int threads, int j) {
  const std::int64_t k = t + static_cast<std::int64_t>(j) * threads;
  const std::int64_t c = a.col_idx[static_cast<std::size_t>(row.begin + k)];
  const std::int64_t prev =
      j == 0 ? -1 : a.col_idx[static_cast<std::size_t>(row.begin + k - threads)];
  return static_cast<std::uint32_t>(c - prev);
}

int lane_length(const RowPart& row, int t, int threads) {
  return row.len > t ? static_cast<int>((row.len - t + threads - 1) / threads) : 0;
}

// Pass 1: numCol and the widths of every slice (before baking), as prefix sums and a table.
struct Tables {
  std::vector<std::int64_t> col_ptr{0};
  std::vector<std::uint8_t> widths;
  std::vector<int> pattern;
};

Tables build_tables(const CsrMatrix& a, std::int64_t limit, const EllShape& shape) {
  const int h = shape.slice_height, T = shape.threads_per_row;
  const std::int64_t nslices = (a.nrows + h - 1) / h;
  Tables tb;
  // Two passes over the slices, each split across the cores: every slice's numCol, then (after
  // their prefix sums place each slice's widths) its widths.
  tb.col_ptr.assign(static_cast<std::size_t>(nslices) + 1, 0);
  parallel_for(nslices, 1024, [&](std::int64_t s0, std::int64_t s1) {
    for (std::int64_t s = s0; s < s1; ++s) {
      std::int64_t longest = 0;
      for (std::int64_t r = s * h; r < std::min(a.nrows, (s + 1) * h); ++r)
        longest = std::max(longest, part_of(a, r, limit).len);
      tb.col_ptr[static_cast<std::size_t>(s) + 1] = (longest + T - 1) / T;
    }
  });
  for (std::int64_t s = 0; s < nslices; ++s)
    tb.col_ptr[static_cast<std::size_t>(s) + 1] += tb.col_ptr[static_cast<std::size_t>(s)];
  tb.widths.assign(static_cast<std::size_t>(tb.col_ptr.back()), 0);
  parallel_for(nslices, 1024, [&](std::int64_t s0, std::int64_t s1) {
    for (std::int64_t s = s0; s < s1; ++s) {
      std::uint8_t* w = tb.widths.data() + tb.col_ptr[static_cast<std::size_t>(s)];
      for (std::int64_t r = s * h; r < std::min(a.nrows, (s + 1) * h); ++r) {
        const RowPart row = part_of(a, r, limit);
        for (int t = 0; t < T; ++t) {
          const int n = lane_length(row, t, T);
          for (int j = 0; j < n; ++j)
            w[j] =
                std::max(w[j], static_cast<std::uint8_t>(bit_width(lane_delta(a, row, t, T, j))));
        }
      }
    }
  });
  if (shape.tables == 2) {
    for (std::int64_t s = 0; s < nslices; ++s) {
      const auto c0 = static_cast<std::size_t>(tb.col_ptr[static_cast<std::size_t>(s)]);
      const auto c1 = static_cast<std::size_t>(tb.col_ptr[static_cast<std::size_t>(s) + 1]);
      if (tb.pattern.size() < c1 - c0) tb.pattern.resize(c1 - c0, 0);
      for (std::size_t j = 0; j < c1 - c0; ++j)
        tb.pattern[j] = std::max(tb.pattern[j], static_cast<int>(tb.widths[c0 + j]));
    }
  }
  if (shape.tables == 2) {
    // One pattern for every slice: slice s keeps its own numCol and takes P's first l_s widths.
    for (std::int64_t s = 0; s < nslices; ++s) {
      const auto s0 = static_cast<std::size_t>(tb.col_ptr[static_cast<std::size_t>(s)]);
      const auto s1 = static_cast<std::size_t>(tb.col_ptr[static_cast<std::size_t>(s) + 1]);
      for (std::size_t i = s0; i < s1; ++i)
        tb.widths[i] = static_cast<std::uint8_t>(tb.pattern[i - s0]);
    }
  }
  return tb;
}

std::int64_t pattern_bits(const std::vector<int>& pattern) {
  std::int64_t bits = 0;
  for (int b : pattern) bits += b;
  return bits;
}

EllSizes sizes_of(const Tables& tb, const EllShape& shape, std::int64_t entries,
                  std::vector<std::int64_t>* sym_ptr) {
  EllSizes z;
  z.nslices = static_cast<std::int64_t>(tb.col_ptr.size()) - 1;
  z.columns = tb.col_ptr.back();
  z.entries = entries;
  z.pattern = tb.pattern;
  z.lanes = shape.lanes();
  const int L = shape.symbol_bits;
  std::int64_t symbols = 0;
  if (sym_ptr) sym_ptr->assign(1, 0);
  for (std::int64_t s = 0; s < z.nslices; ++s) {
    std::int64_t bits = 0;
    for (std::int64_t i = tb.col_ptr[static_cast<std::size_t>(s)];
         i < tb.col_ptr[static_cast<std::size_t>(s) + 1]; ++i)
      bits += tb.widths[static_cast<std::size_t>(i)];
    z.stream_bits += bits * shape.lanes();
    symbols += (bits + L - 1) / L;
    if (sym_ptr) sym_ptr->push_back(symbols);
  }
  z.symbols = symbols;
  const std::int64_t baked_symbols = (pattern_bits(tb.pattern) + L - 1) / L;
  z.pad_rows = shape.tables == 2 ? std::max<std::int64_t>(1, baked_symbols) : 1;
  return z;
}

std::int64_t count_entries(const CsrMatrix& a, std::int64_t limit) {
  std::int64_t n = 0;
  for (std::int64_t r = 0; r < a.nrows; ++r) n += part_of(a, r, limit).len;
  return n;
}

}  // namespace

// Writes the low `bits` bits of d at bit `pos` of a stream of L-bit words, MSB first.
void put_bits(std::uint64_t* words, std::int64_t stride, int L, std::int64_t pos, int bits,
              std::uint64_t d) {
  // A field of no bits writes nothing. Where a stream ends on a symbol boundary, its symbol m
  // is the next slice's or interval's, which another thread may be encoding: even an OR of zero
  // there is a read-modify-write that can undo that thread's store.
  if (bits == 0) return;
  const std::int64_t m = pos / L;
  const int off = static_cast<int>(pos % L);
  const std::uint64_t mask = L == 64 ? ~0ull : (1ull << L) - 1;
  if (off + bits <= L) {
    words[m * stride] |= (d << (L - off - bits)) & mask;
  } else {
    const int low = off + bits - L;
    words[m * stride] |= d >> low;
    words[(m + 1) * stride] |= (d & ((1ull << low) - 1)) << (L - low);
  }
}

std::uint64_t get_bits(const void* words, bool wide, std::int64_t index0, std::int64_t stride,
                       std::int64_t pos, int bits) {
  const int L = wide ? 64 : 32;
  auto word = [&](std::int64_t m) -> std::uint64_t {
    const std::int64_t i = index0 + m * stride;
    return wide ? static_cast<const std::uint64_t*>(words)[i]
                : static_cast<const std::uint32_t*>(words)[i];
  };
  const std::int64_t m = pos / L;
  const int off = static_cast<int>(pos % L);
  if (bits == 0) return 0;
  std::uint64_t out = 0;
  if (off + bits <= L) {
    out = (word(m) >> (L - off - bits)) & ((1ull << bits) - 1);
  } else {
    const int high = L - off, low = bits - high;
    out = (word(m) & ((1ull << high) - 1)) << low;
    out |= word(m + 1) >> (L - low);
  }
  return out;
}

EllSizes measure_ell(const CsrMatrix& a, std::int64_t limit, const EllShape& shape) {
  const Tables tb = build_tables(a, limit, shape);
  return sizes_of(tb, shape, count_entries(a, limit), nullptr);
}

EllSizes encode_ell(const CsrMatrix& a, std::int64_t limit, const EllShape& shape,
                    Precision precision, const std::string& prefix,
                    std::vector<EncodedArray>& out) {
  const int h = shape.slice_height, T = shape.threads_per_row, S = shape.lanes();
  const int L = shape.symbol_bits;
  const Tables tb = build_tables(a, limit, shape);
  std::vector<std::int64_t> sym_ptr;
  const EllSizes z = sizes_of(tb, shape, count_entries(a, limit), &sym_ptr);

  HostVector<std::uint64_t> words =
      zeroed<std::uint64_t>(static_cast<std::size_t>((z.symbols + z.pad_rows) * S));
  const auto slots = static_cast<std::size_t>(z.columns * S);
  const bool f64 = precision == Precision::f64;
  EncodedArray vals = f64 ? zero_array<double>(prefix + "values", ElemType::f64, slots)
                          : zero_array<float>(prefix + "values", ElemType::f32, slots);
  // Slices own disjoint symbols and value slots: split across the cores.
  parallel_for(z.nslices, 1024, [&](std::int64_t s0, std::int64_t s1) {
    for (std::int64_t s = s0; s < s1; ++s) {
      const std::int64_t cbase = tb.col_ptr[static_cast<std::size_t>(s)];
      for (std::int64_t r = s * h; r < std::min(a.nrows, (s + 1) * h); ++r) {
        const RowPart row = part_of(a, r, limit);
        for (int t = 0; t < T; ++t) {
          const std::int64_t v = (r - s * h) * T + t;
          std::uint64_t* stream = words.data() + sym_ptr[static_cast<std::size_t>(s)] * S + v;
          std::int64_t pos = 0;
          const int n = lane_length(row, t, T);
          for (int j = 0; j < n; ++j) {
            const int b = tb.widths[static_cast<std::size_t>(cbase + j)];
            put_bits(stream, S, L, pos, b, lane_delta(a, row, t, T, j));
            pos += b;
            const auto slot = static_cast<std::size_t>((cbase + j) * S + v);
            const double value = a.values[static_cast<std::size_t>(
                row.begin + t + static_cast<std::int64_t>(j) * T)];
            if (f64) {
              typed_mut<double>(vals)[slot] = value;
            } else {
              typed_mut<float>(vals)[slot] = static_cast<float>(value);
            }
          }
        }
      }
    }
  });
  out.push_back(make_array<std::int64_t>(prefix + "col_ptr", ElemType::i64, tb.col_ptr));
  out.push_back(make_array<std::int64_t>(prefix + "sym_ptr", ElemType::i64, sym_ptr));
  out.push_back(make_array<std::uint8_t>(prefix + "widths", ElemType::u8, tb.widths));
  const std::span<const std::uint64_t> symbols(words);
  if (L == 64) {
    out.push_back(
        make_array<std::uint64_t>(prefix + "symbols", ElemType::u64, symbols, symbols.size()));
  } else {
    out.push_back(
        make_array<std::uint32_t>(prefix + "symbols", ElemType::u32, symbols, symbols.size()));
  }
  out.push_back(std::move(vals));
  code_values(out, prefix + "values", shape.values, a);
  return z;
}

namespace {

template <typename Value>
void accumulate_typed(const Encoded& e, const std::string& prefix, const EllShape& shape,
                      std::span<const double> x, std::span<double> acc) {
  const int h = shape.slice_height, T = shape.threads_per_row, S = shape.lanes();
  const EncodedArray& col_arr = e.array(prefix + "col_ptr");
  const std::int64_t* col_ptr = typed<std::int64_t>(col_arr);
  const std::int64_t* sym_ptr = typed<std::int64_t>(e.array(prefix + "sym_ptr"));
  const std::uint8_t* widths = typed<std::uint8_t>(e.array(prefix + "widths"));
  const EncodedArray& sym_arr = e.array(prefix + "symbols");
  const bool wide = sym_arr.type == ElemType::u64;
  if (wide != (shape.symbol_bits == 64))
    throw InternalError("bro_ell: symbol array type disagrees with the parameters");
  const std::int64_t nslices = col_arr.count() - 1;
  const std::vector<Value> stored =
      stored_values<Value>(e, prefix + "values", shape.values, col_ptr[nslices] * S);
  const Value* vals = stored.data();
  if (nslices != (e.nrows + h - 1) / h) throw InternalError("bro_ell: slice count mismatch");
  for (std::int64_t s = 0; s < nslices; ++s) {
    const std::int64_t cbase = col_ptr[s];
    const int ncol = static_cast<int>(col_ptr[s + 1] - cbase);
    for (int v = 0; v < S; ++v) {
      const std::int64_t r = s * h + v / T;
      std::int64_t pos = 0;
      std::int64_t col = -1;
      double sum = 0;
      for (int j = 0; j < ncol; ++j) {
        const int b = widths[cbase + j];
        const std::uint64_t d = get_bits(sym_arr.bytes.data(), wide, sym_ptr[s] * S + v, S, pos, b);
        pos += b;
        if (d == 0) continue;  // padding: the rest of this lane is padding too
        col += static_cast<std::int64_t>(d);
        sum += static_cast<double>(vals[(cbase + j) * S + v]) * x[static_cast<std::size_t>(col)];
      }
      if (r < e.nrows) acc[static_cast<std::size_t>(r)] += sum;
    }
  }
}

}  // namespace

void accumulate_ell(const Encoded& e, const std::string& prefix, const EllShape& shape,
                    std::span<const double> x, std::span<double> acc) {
  if (e.precision == Precision::f64) {
    accumulate_typed<double>(e, prefix, shape, x, acc);
  } else {
    accumulate_typed<float>(e, prefix, shape, x, acc);
  }
}

std::vector<int> baked_pattern(const Encoded& e, const std::string& prefix) {
  const EncodedArray& col_arr = e.array(prefix + "col_ptr");
  const std::int64_t* col_ptr = typed<std::int64_t>(col_arr);
  const std::uint8_t* widths = typed<std::uint8_t>(e.array(prefix + "widths"));
  const std::int64_t nslices = col_arr.count() - 1;
  std::int64_t longest = 0;
  for (std::int64_t s = 0; s < nslices; ++s)
    if (col_ptr[s + 1] - col_ptr[s] > col_ptr[longest + 1] - col_ptr[longest]) longest = s;
  std::vector<int> pattern;
  if (nslices == 0) return pattern;
  for (std::int64_t i = col_ptr[longest]; i < col_ptr[longest + 1]; ++i)
    pattern.push_back(widths[i]);
  for (std::int64_t s = 0; s < nslices; ++s)
    for (std::int64_t i = col_ptr[s]; i < col_ptr[s + 1]; ++i)
      if (widths[i] != pattern[static_cast<std::size_t>(i - col_ptr[s])])
        throw InternalError(fmt::format("bro_ell: slice {} does not follow the baked pattern", s));
  return pattern;
}

// ---------------------------------------------------------------------------------------------
// The model from the profile.

namespace {

// Distribution of row lengths min(len, limit), as (length, probability) over the histogram
// (range bins stand at their midpoint).
std::vector<std::pair<double, double>> length_distribution(const Profile& p, std::int64_t limit) {
  std::vector<std::pair<double, double>> d;
  if (p.nrows <= 0) return d;
  for (const HistogramBin& bin : p.row_histogram) {
    const double len =
        std::min(0.5 * static_cast<double>(bin.lo + bin.hi), static_cast<double>(limit));
    d.emplace_back(len, static_cast<double>(bin.count) / static_cast<double>(p.nrows));
  }
  std::sort(d.begin(), d.end());
  return d;
}

// E[max of k independent draws] of a discrete distribution given as sorted (value, p) pairs.
double expected_max(const std::vector<std::pair<double, double>>& dist, double k) {
  // cdf_prev^k is the previous step's cdf^k.
  double cdf_prev = 0, e = 0, prev_pow = std::pow(0.0, k);
  for (const auto& [value, prob] : dist) {
    const double cdf = std::min(1.0, cdf_prev + prob);
    const double cdf_pow = std::pow(cdf, k);
    e += value * (cdf_pow - prev_pow);
    prev_pow = cdf_pow;
    cdf_prev = cdf;
  }
  return e;
}

std::vector<std::pair<double, double>> bits_distribution(const std::array<std::int64_t, 33>& h,
                                                         int shift) {
  std::int64_t total = 0;
  for (std::int64_t n : h) total += n;
  std::vector<std::pair<double, double>> d;
  if (total == 0) return d;
  for (int b = 0; b <= 32; ++b)
    if (h[static_cast<std::size_t>(b)] > 0)
      d.emplace_back(std::min(31, b + shift), static_cast<double>(h[static_cast<std::size_t>(b)]) /
                                                  static_cast<double>(total));
  std::sort(d.begin(), d.end());
  return d;
}

int log2_ceil(int t) { return t <= 1 ? 0 : bit_width(static_cast<std::uint64_t>(t - 1)); }

using Distribution = std::vector<std::pair<double, double>>;

// The distributions estimate_ell_afresh reads, and their expected maxima, kept for one planning
// (formats::planning's number): the shape searches ask for a few hundred shapes over a handful
// of row-length limits and delta shifts. Outside a planning every call makes its own.
struct EllInputs {
  std::uint64_t number = 0;
  std::unordered_map<std::int64_t, Distribution> lengths;  // by limit
  std::unordered_map<int, Distribution> bits;              // by shift; -1: the first columns
  std::map<std::tuple<int, std::int64_t, double>, double> maxima;  // by (what, limit, draws)
};

EllInputs& ell_inputs(std::uint64_t number) {
  thread_local EllInputs kept;
  if (kept.number != number || number == 0) {
    kept.lengths.clear();
    kept.bits.clear();
    kept.maxima.clear();
    kept.number = number;
  }
  return kept;
}

EllEstimate estimate_ell_afresh(const Profile& p, std::int64_t limit, const EllShape& shape) {
  EllEstimate est;
  const int h = shape.slice_height, T = shape.threads_per_row, S = shape.lanes();
  const double nslices = std::ceil(static_cast<double>(p.nrows) / h);
  EllInputs& in = ell_inputs(planning(p));
  auto kept_dist = [](auto& map, auto key, auto make) -> const Distribution& {
    auto it = map.find(key);
    if (it == map.end()) it = map.emplace(key, make()).first;
    return it->second;
  };
  // expected_max of distribution `what` (0: the lengths at this limit, 1: the first columns' bits,
  // 2 + shift: the deltas' bits at that shift) over k draws.
  auto kept_max = [&](int what, const Distribution& d, double k) {
    const std::tuple<int, std::int64_t, double> key{what, what == 0 ? limit : 0, k};
    auto it = in.maxima.find(key);
    if (it == in.maxima.end()) it = in.maxima.emplace(key, expected_max(d, k)).first;
    return it->second;
  };
  const Distribution& lengths =
      kept_dist(in.lengths, limit, [&] { return length_distribution(p, limit); });
  // Columns per slice. Where the inspector measured this slice height's padding (whole rows
  // only: a split caps rows the measure does not know about), the sum of ceil(longest / T) over
  // slices, taken as longest / T plus half a step. Otherwise the longest row of a slice is the
  // expected maximum of h rows drawn independently (an upper estimate for matrices whose
  // neighbouring rows are alike).
  const auto height = static_cast<unsigned>(h);
  const auto k = static_cast<std::size_t>(std::countr_zero(height));
  double ncol = 0;
  if (limit >= p.row_max && std::has_single_bit(height) && k < p.slice_longest.size() &&
      p.slice_longest[k] > 0) {
    const double per_slice = static_cast<double>(p.slice_longest[k]) / nslices;
    ncol = std::max(1.0, per_slice / T + 0.5 * (T - 1) / T);
  } else {
    const double longest = std::min(kept_max(0, lengths, h), static_cast<double>(p.row_max));
    ncol = std::ceil(longest / T);
  }
  est.max_columns = std::ceil(static_cast<double>(std::min(p.row_max, limit)) / T);
  est.padded_entries = nslices * ncol * S;
  double useful = 0;
  for (const auto& [len, prob] : lengths) useful += len * prob * static_cast<double>(p.nrows);
  est.lane_efficiency = est.padded_entries > 0 ? std::min(1.0, useful / est.padded_entries) : 1.0;

  // Widths: the first position holds c0 + 1 (first_col_bits), the others deltas over T
  // nonzeros (delta_bits, about log2 T bits wider). Per slice the width is the widest of h*T
  // lanes (the expected maximum of independent draws); baked, the widest of all.
  const Distribution& first =
      kept_dist(in.bits, -1, [&] { return bits_distribution(p.first_col_bits, 0); });
  const int shift = log2_ceil(T);
  const Distribution& rest =
      kept_dist(in.bits, shift, [&] { return bits_distribution(p.delta_bits, shift); });
  // Halfway between the mean width (neighbouring rows alike, as in stencils, whose wide deltas
  // sit at the same positions in every row) and the widest of h*T independent lanes (random
  // columns), or of all lanes when baked: the real encodings of both kinds fall between.
  auto mean = [](const std::vector<std::pair<double, double>>& d) {
    double m = 0;
    for (const auto& [v, prob] : d) m += v * prob;
    return m;
  };
  auto widest = [&](int what, const Distribution& d) {
    return shape.tables == 2 ? (d.empty() ? 0.0 : d.back().first) : kept_max(what, d, S);
  };
  const double w0 = 0.5 * (mean(first) + widest(1, first));
  const double wr = rest.empty() ? w0 : 0.5 * (mean(rest) + widest(2 + shift, rest));
  const double bits = ncol > 0 ? std::max(1.0, w0) + (ncol - 1) * std::max(1.0, wr) : 0;
  const double L = shape.symbol_bits;
  // Streams round up to whole symbols: at least ceil(bits/L), and half a symbol on average when
  // the streams' lengths spread over several symbols.
  const double symbols = ncol > 0 ? std::max(std::ceil(bits / L), bits / L + 0.5) : 0;
  if (shape.tables == 2 && est.max_columns > ncol) {
    const double pattern_bits = std::max(1.0, w0) + (est.max_columns - 1) * std::max(1.0, wr);
    const double pattern_symbols = std::ceil(pattern_bits / L);
    est.overread_bytes = nslices * std::max(0.0, pattern_symbols - symbols) * S * (L / 8);
  }
  est.table_bytes = nslices * ncol;
  est.index_bytes = (nslices * symbols + 1) * S * (L / 8) + est.table_bytes + 16.0 * (nslices + 1);
  return est;
}

// An estimate_ell question within one planning (the encoding's value coding does not enter).
struct EllQuestion {
  std::int64_t limit;
  int slice_height, symbol_bits, threads_per_row, tables;
  bool operator==(const EllQuestion&) const = default;
};

struct EllQuestionHash {
  std::size_t operator()(const EllQuestion& q) const {
    std::size_t h = std::hash<std::int64_t>{}(q.limit);
    for (const int v : {q.slice_height, q.symbol_bits, q.threads_per_row, q.tables})
      h = h * 1000003u + std::hash<int>{}(v);
    return h;
  }
};

}  // namespace

EllEstimate estimate_ell(const Profile& p, std::int64_t limit, const EllShape& shape) {
  // bro_ell's and bro_hyb's shape searches, refusals, costs and reasons ask for the same
  // estimates thousands of times in one planning: kept for the planning's length.
  thread_local PlanningMemo<EllQuestion, EllEstimate,
                            std::unordered_map<EllQuestion, EllEstimate, EllQuestionHash>>
      kept;
  const EllQuestion q{limit, shape.slice_height, shape.symbol_bits, shape.threads_per_row,
                      shape.tables};
  return kept.get(p, q, [&] { return estimate_ell_afresh(p, limit, shape); });
}

std::string check_ell_shape(const Profile& p, std::int64_t limit, const EllShape& shape,
                            int block_size, int unroll, bool prefetch) {
  const int T = shape.threads_per_row;
  if (T < 1 || T > 32 || (T & (T - 1)) != 0)
    return fmt::format("threads per row {} is not a power of two in 1..32", T);
  if (shape.slice_height < 1 || shape.slice_height > 1024)
    return fmt::format("slice height {} is outside 1..1024", shape.slice_height);
  if (shape.lanes() % 32 != 0)
    return fmt::format(
        "a slice of h*T = {} lanes is not a whole number of warps (the decode "
        "branch must be uniform across each warp)",
        shape.lanes());
  if (block_size < 32 || block_size > 1024 || block_size % 32 != 0)
    return fmt::format("block size {} is not a multiple of 32 in 32..1024", block_size);
  if (block_size % shape.lanes() != 0)
    return fmt::format("block size {} is not a multiple of the slice's {} lanes", block_size,
                       shape.lanes());
  if (shape.symbol_bits != 32 && shape.symbol_bits != 64)
    return fmt::format("symbol length {} is not 32 or 64 bits", shape.symbol_bits);
  if (unroll != 1 && unroll != 2 && unroll != 4 && unroll != 8)
    return fmt::format("unroll {} is not 1, 2, 4 or 8", unroll);
  if (shape.tables < 0 || shape.tables > 2)
    return fmt::format("tables {} is not 0 (global), 1 (constant) or 2 (baked)", shape.tables);
  if (p.ncols > std::numeric_limits<std::int32_t>::max())
    return fmt::format("{} columns do not fit 32-bit indices", p.ncols);
  const EllEstimate est = estimate_ell(p, limit, shape);
  if (est.padded_entries > static_cast<double>(std::numeric_limits<std::int32_t>::max()))
    return fmt::format("slices pad to about {:.3g} entries (> 2^31)", est.padded_entries);
  const double nslices = std::ceil(static_cast<double>(p.nrows) / shape.slice_height);
  if (shape.tables == 1 && nslices * est.max_columns > kConstantTableBytes)
    return fmt::format(
        "width tables may need up to {:.0f} bytes ({:.0f} slices x {:.0f} columns), more than "
        "the 64 KiB of constant memory",
        nslices * est.max_columns, nslices, est.max_columns);
  if (shape.tables == 2) {
    if (unroll != 1 || prefetch)
      return "baked tables decode on a compile-time schedule: unroll and prefetch do not apply";
    if (est.max_columns > kBakedMaxColumns)
      return fmt::format("a baked pattern of {:.0f} columns is longer than {}", est.max_columns,
                         kBakedMaxColumns);
    // Widest possible pattern: the widest first column, then the widest delta over T nonzeros.
    int w0 = 0, wr = 0;
    for (int b = 0; b <= 32; ++b) {
      if (p.first_col_bits[static_cast<std::size_t>(b)] > 0) w0 = b + 1;  // c0 + 1 may carry
      if (p.delta_bits[static_cast<std::size_t>(b)] > 0) wr = b + log2_ceil(T);
    }
    const int col_bits = bit_width(static_cast<std::uint64_t>(std::max<std::int64_t>(p.ncols, 1)));
    w0 = std::min(w0, col_bits);
    wr = std::min(wr, col_bits);
    const double bound = est.max_columns > 0 ? w0 + (est.max_columns - 1) * wr : 0;
    if (bound > kBakedMaxBits)
      return fmt::format(
          "a baked lane stream may need {:.0f} bits, more than the {} kept in "
          "registers",
          bound, kBakedMaxBits);
  }
  return {};
}

}  // namespace spmvc::formats::bro
