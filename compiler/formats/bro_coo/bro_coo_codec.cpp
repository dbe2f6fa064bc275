#include "formats/bro_coo/bro_coo_codec.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "formats/arrays.hpp"
#include "formats/bro_ell/bro_ell_codec.hpp"
#include "formats/values/values.hpp"
#include "heuristics.hpp"
#include "spmvc/error.hpp"

namespace spmvc::formats::bro {

namespace {

constexpr int kWarp = 32;

// The selected entries in order: (row, position in a's arrays).
struct Entries {
  HostVector<std::int32_t> row;  // every element written by select()
  HostVector<std::int64_t> at;
};

// Row ranges write their own stretches of the entry list.
Entries select(const CsrMatrix& a, std::int64_t skip) {
  const std::vector<std::int64_t> offsets = tail_offsets(a, skip);
  Entries en;
  en.row.resize(static_cast<std::size_t>(offsets.back()));
  en.at.resize(static_cast<std::size_t>(offsets.back()));
  run_ranges(split_rows(a, kRowGrain), [&](std::size_t, std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      auto i = static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]);
      for (std::int64_t j = a.row_ptr[r] + skip; j < a.row_ptr[r + 1]; ++j, ++i) {
        en.row[i] = static_cast<std::int32_t>(r);
        en.at[i] = j;
      }
    }
  });
  return en;
}

// Row of logical entry i (padding repeats the last row).
std::int32_t row_at(const Entries& en, std::int64_t i) {
  const auto n = static_cast<std::int64_t>(en.row.size());
  return en.row[static_cast<std::size_t>(std::min(i, n - 1))];
}

struct IntervalWidths {
  int first = 0, rest = 0;
};

IntervalWidths widths_of(const Entries& en, std::int64_t k, int interval) {
  const int per_lane = interval / kWarp;
  const std::int64_t base = k * interval;
  const std::int32_t base_row = row_at(en, base);
  IntervalWidths w;
  for (int l = 0; l < kWarp; ++l) {
    const std::int64_t first = base + static_cast<std::int64_t>(l) * per_lane;
    w.first =
        std::max(w.first, bit_width(static_cast<std::uint64_t>(row_at(en, first) - base_row)));
    for (int e = 1; e < per_lane; ++e)
      w.rest = std::max(w.rest, bit_width(static_cast<std::uint64_t>(row_at(en, first + e) -
                                                                     row_at(en, first + e - 1))));
  }
  return w;
}

// Intervals in ranges per thread: each interval's widths and symbols in parallel, then their
// running sums in order.
CooSizes sizes(const Entries& en, int interval, int symbol_bits,
               std::vector<IntervalWidths>* widths, std::vector<std::int64_t>* sym_ptr) {
  CooSizes z;
  z.entries = static_cast<std::int64_t>(en.row.size());
  z.intervals = (z.entries + interval - 1) / interval;
  const int per_lane = interval / kWarp;
  std::vector<IntervalWidths> w(static_cast<std::size_t>(z.intervals));
  std::vector<std::int64_t> symbols(static_cast<std::size_t>(z.intervals) + 1, 0);
  const std::vector<Range> ranges = split_range(z.intervals, std::max(1, 4096 / interval));
  const std::vector<std::int64_t> stream_bits =
      map_ranges(ranges, [&](std::int64_t k0, std::int64_t k1) {
        std::int64_t total = 0;
        for (std::int64_t k = k0; k < k1; ++k) {
          const IntervalWidths wk = widths_of(en, k, interval);
          const std::int64_t bits = wk.first + static_cast<std::int64_t>(per_lane - 1) * wk.rest;
          total += bits * kWarp;
          w[static_cast<std::size_t>(k)] = wk;
          symbols[static_cast<std::size_t>(k) + 1] = (bits + symbol_bits - 1) / symbol_bits;
        }
        return total;
      });
  for (const std::int64_t b : stream_bits) z.stream_bits += b;
  std::partial_sum(symbols.begin(), symbols.end(), symbols.begin());
  z.symbols = symbols.back();
  if (widths) *widths = std::move(w);
  if (sym_ptr) *sym_ptr = std::move(symbols);
  return z;
}

}  // namespace

std::int64_t CooSizes::row_index_bytes(int symbol_bits) const {
  return (symbols + 1) * kWarp * (symbol_bits / 8) + 2 * intervals + 4 * intervals +
         8 * (intervals + 1) + 8;
}

CooSizes measure_coo(const CsrMatrix& a, std::int64_t skip, int interval, int symbol_bits) {
  return sizes(select(a, skip), interval, symbol_bits, nullptr, nullptr);
}

CooSizes encode_coo(const CsrMatrix& a, std::int64_t skip, int interval, int symbol_bits,
                    Precision precision, const std::string& prefix, std::vector<EncodedArray>& out,
                    int values) {
  const Entries en = select(a, skip);
  std::vector<IntervalWidths> w;
  std::vector<std::int64_t> sym_ptr;
  const CooSizes z = sizes(en, interval, symbol_bits, &w, &sym_ptr);
  const int per_lane = interval / kWarp;
  const auto slots = static_cast<std::size_t>(z.intervals * interval);
  std::vector<std::int32_t> row_base(static_cast<std::size_t>(z.intervals));
  std::vector<std::uint8_t> width_table(2 * static_cast<std::size_t>(z.intervals));
  HostVector<std::uint64_t> words =
      zeroed<std::uint64_t>(static_cast<std::size_t>((z.symbols + 1) * kWarp));
  EncodedArray cols = zero_array<std::int32_t>(prefix + "col_idx", ElemType::i32, slots);
  const bool f64 = precision == Precision::f64;
  EncodedArray vals = f64 ? zero_array<double>(prefix + "values", ElemType::f64, slots)
                          : zero_array<float>(prefix + "values", ElemType::f32, slots);
  std::int32_t* col_out = typed_mut<std::int32_t>(cols);
  // Interval k owns its row base, widths, symbols sym_ptr[k]..sym_ptr[k+1] of every lane and
  // slots k·interval.. : interval ranges encode in parallel.
  parallel_for(z.intervals, std::max(1, 4096 / interval), [&](std::int64_t k0, std::int64_t k1) {
    for (std::int64_t k = k0; k < k1; ++k) {
      const std::int64_t base = k * interval;
      const IntervalWidths wk = w[static_cast<std::size_t>(k)];
      row_base[static_cast<std::size_t>(k)] = row_at(en, base);
      width_table[2 * static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(wk.first);
      width_table[2 * static_cast<std::size_t>(k) + 1] = static_cast<std::uint8_t>(wk.rest);
      for (int l = 0; l < kWarp; ++l) {
        std::uint64_t* stream = words.data() + sym_ptr[static_cast<std::size_t>(k)] * kWarp + l;
        const std::int64_t first = base + static_cast<std::int64_t>(l) * per_lane;
        std::int64_t pos = 0;
        put_bits(
            stream, kWarp, symbol_bits, pos, wk.first,
            static_cast<std::uint64_t>(row_at(en, first) - row_base[static_cast<std::size_t>(k)]));
        pos += wk.first;
        for (int e = 0; e < per_lane; ++e) {
          const std::int64_t i = first + e;
          if (e > 0) {
            put_bits(stream, kWarp, symbol_bits, pos, wk.rest,
                     static_cast<std::uint64_t>(row_at(en, i) - row_at(en, i - 1)));
            pos += wk.rest;
          }
          if (i < z.entries) {
            const std::int64_t slot = base + static_cast<std::int64_t>(e) * kWarp + l;
            const std::int64_t at = en.at[static_cast<std::size_t>(i)];
            col_out[slot] = a.col_idx[static_cast<std::size_t>(at)];
            const double v = a.values[static_cast<std::size_t>(at)];
            if (f64) {
              typed_mut<double>(vals)[slot] = v;
            } else {
              typed_mut<float>(vals)[slot] = static_cast<float>(v);
            }
          }
        }
      }
    }
  });
  out.push_back(make_array<std::int64_t>(prefix + "count", ElemType::i64,
                                         std::vector<std::int64_t>{z.entries}));
  out.push_back(make_array<std::int32_t>(prefix + "row_base", ElemType::i32, row_base));
  out.push_back(make_array<std::uint8_t>(prefix + "widths", ElemType::u8, width_table));
  out.push_back(make_array<std::int64_t>(prefix + "sym_ptr", ElemType::i64, sym_ptr));
  const std::span<const std::uint64_t> symbols(words);
  if (symbol_bits == 64) {
    out.push_back(
        make_array<std::uint64_t>(prefix + "symbols", ElemType::u64, symbols, symbols.size()));
  } else {
    out.push_back(
        make_array<std::uint32_t>(prefix + "symbols", ElemType::u32, symbols, symbols.size()));
  }
  out.push_back(std::move(cols));
  out.push_back(std::move(vals));
  code_values(out, prefix + "values", values, a);
  return z;
}

namespace {

template <typename Value>
void accumulate_typed(const Encoded& e, const std::string& prefix, int interval,
                      std::span<const double> x, std::span<double> acc, int values) {
  const int per_lane = interval / kWarp;
  const std::int64_t count = typed<std::int64_t>(e.array(prefix + "count"))[0];
  const EncodedArray& base_arr = e.array(prefix + "row_base");
  const std::int32_t* row_base = typed<std::int32_t>(base_arr);
  const std::uint8_t* widths = typed<std::uint8_t>(e.array(prefix + "widths"));
  const std::int64_t* sym_ptr = typed<std::int64_t>(e.array(prefix + "sym_ptr"));
  const EncodedArray& sym_arr = e.array(prefix + "symbols");
  const bool wide = sym_arr.type == ElemType::u64;
  const EncodedArray& col_arr = e.array(prefix + "col_idx");
  const std::int32_t* cols = typed<std::int32_t>(col_arr);
  const std::vector<Value> stored =
      stored_values<Value>(e, prefix + "values", values, col_arr.count());
  const Value* vals = stored.data();
  const std::int64_t intervals = base_arr.count();
  if (intervals != (count + interval - 1) / interval)
    throw InternalError("bro_coo: interval count disagrees with the entry count");
  for (std::int64_t k = 0; k < intervals; ++k) {
    const int wf = widths[2 * k], wr = widths[2 * k + 1];
    const std::int64_t base = k * interval;
    for (int l = 0; l < kWarp; ++l) {
      const std::int64_t index0 = sym_ptr[k] * kWarp + l;
      std::int64_t pos = 0;
      std::int64_t row = row_base[k] + static_cast<std::int64_t>(get_bits(
                                           sym_arr.bytes.data(), wide, index0, kWarp, 0, wf));
      pos += wf;
      for (int e2 = 0; e2 < per_lane; ++e2) {
        if (e2 > 0) {
          row += static_cast<std::int64_t>(
              get_bits(sym_arr.bytes.data(), wide, index0, kWarp, pos, wr));
          pos += wr;
        }
        if (base + static_cast<std::int64_t>(l) * per_lane + e2 >= count) break;
        const std::int64_t slot = base + static_cast<std::int64_t>(e2) * kWarp + l;
        acc[static_cast<std::size_t>(row)] +=
            static_cast<double>(vals[slot]) * x[static_cast<std::size_t>(cols[slot])];
      }
    }
  }
}

}  // namespace

void accumulate_coo(const Encoded& e, const std::string& prefix, int interval,
                    std::span<const double> x, std::span<double> acc, int values) {
  if (e.precision == Precision::f64) {
    accumulate_typed<double>(e, prefix, interval, x, acc, values);
  } else {
    accumulate_typed<float>(e, prefix, interval, x, acc, values);
  }
}

CooEstimate estimate_coo(const Profile& p, std::int64_t skip, int interval, int symbol_bits,
                         Precision precision, int values) {
  CooEstimate est;
  double rows_with = 0;  // rows holding at least one selected entry
  for (const HistogramBin& bin : p.row_histogram) {
    const double len = 0.5 * static_cast<double>(bin.lo + bin.hi);
    if (len > static_cast<double>(skip)) {
      est.entries += (len - static_cast<double>(skip)) * static_cast<double>(bin.count);
      rows_with += static_cast<double>(bin.count);
    }
  }
  if (est.entries <= 0) return est;
  const double intervals = std::ceil(est.entries / interval);
  const double per_lane = interval / kWarp;
  // Row steps down a lane: 1 between neighbouring rows; the selected rows are on average
  // nrows/rows_with apart. The lanes' first deltas span the rows of an interval.
  const double gap = std::max(1.0, static_cast<double>(p.nrows) / std::max(rows_with, 1.0));
  const double per_row = std::max(est.entries / std::max(rows_with, 1.0), 1e-9);
  const double w_rest = std::min(31.0, std::ceil(std::log2(gap + 1.0)) + (gap > 1.0 ? 1.0 : 0.0));
  const double w_first = std::min(31.0, std::ceil(std::log2(1.0 + interval / per_row * gap)));
  const double lane_bits = w_first + (per_lane - 1) * w_rest;
  const double symbols = std::ceil(lane_bits / symbol_bits);
  const double vb = value_code_bytes(values, precision);
  est.matrix_bytes = intervals * interval * (4.0 + vb) + value_table_bytes(values, p, precision) +
                     (intervals * symbols + 1) * kWarp * (symbol_bits / 8.0) +
                     intervals * (2 + 4 + 8) + 16;
  // One atomic per (lane, row) run: a row's entries split over ceil(len/E) + 1 runs at most.
  est.atomics = rows_with + intervals * kWarp;
  return est;
}

double with_extra_launch(double bytes, double efficiency) {
  const double launch_bytes = heuristics::kLaunchSeconds * heuristics::kDefaultReadBandwidth;
  const double eff = std::max(efficiency, 1e-3);
  return bytes > 0 ? bytes / (bytes / eff + launch_bytes) : eff;
}

std::string check_coo_shape(int interval, int symbol_bits, int block_size) {
  if (interval < kWarp || interval > 8192 || interval % kWarp != 0)
    return fmt::format("interval {} is not a multiple of 32 in 32..8192", interval);
  if (symbol_bits != 32 && symbol_bits != 64)
    return fmt::format("symbol length {} is not 32 or 64 bits", symbol_bits);
  if (block_size < 32 || block_size > 1024 || block_size % 32 != 0)
    return fmt::format("block size {} is not a multiple of 32 in 32..1024", block_size);
  return {};
}

}  // namespace spmvc::formats::bro
