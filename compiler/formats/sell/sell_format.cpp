#include "formats/sell/sell_format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/arrays.hpp"
#include "formats/ell/ell_format.hpp"
#include "formats/ell/ell_model.hpp"
#include "formats/sell/sell_model.hpp"
#include "formats/values/values.hpp"
#include "heuristics.hpp"
#include "spmvc/error.hpp"
#include "spmvc/memory_budget.hpp"

namespace spmvc::formats {

namespace {

const SellParams& params_of(const FormatParams& params) {
  const auto* p = std::get_if<SellParams>(&params);
  if (p == nullptr) throw InternalError("sell format given another format's parameters");
  return *p;
}

bool permuted(const SellParams& p) { return p.sigma > 1; }

template <typename Value>
void fill(const CsrMatrix& a, const SellParams& p, const std::vector<std::int32_t>& perm,
          const std::vector<std::int64_t>& slice_ptr, std::int32_t* col, Value* val) {
  const int c = p.slice_height, t = p.threads_per_row;
  // Each row owns its slots: slice ranges fill in parallel, each at least kRowGrain slots.
  const auto slices = static_cast<std::int64_t>(slice_ptr.size()) - 1;
  const std::int64_t slots_per_slice = slice_ptr.back() / std::max<std::int64_t>(slices, 1);
  const std::int64_t grain = kRowGrain / std::max<std::int64_t>(slots_per_slice, 1);
  run_ranges(split_range(slices, grain), [&](std::size_t, std::int64_t s0, std::int64_t s1) {
    for (std::int64_t i = s0 * c; i < std::min(a.nrows, s1 * c); ++i) {
      const std::int64_t r = perm[static_cast<std::size_t>(i)];
      const std::int64_t base = slice_ptr[static_cast<std::size_t>(i / c)] + (i % c) * t;
      const std::int64_t start = a.row_ptr[static_cast<std::size_t>(r)];
      for (std::int64_t k = 0; k < a.row_length(r); ++k) {
        const std::int64_t pos = base + (k / t) * c * t + k % t;
        col[pos] = a.col_idx[static_cast<std::size_t>(start + k)];
        val[pos] = static_cast<Value>(a.values[static_cast<std::size_t>(start + k)]);
      }
    }
  });
}

template <typename Value>
void multiply(const Encoded& e, const SellParams& p, std::span<const double> x, std::span<double> y,
              double alpha, double beta) {
  const int c = p.slice_height, t = p.threads_per_row;
  const std::int64_t* slice_ptr = typed<std::int64_t>(e.array("slice_ptr"));
  const std::int32_t* perm = permuted(p) ? typed<std::int32_t>(e.array("perm")) : nullptr;
  const std::int32_t* col = typed<std::int32_t>(e.array("col_idx"));
  const Value* val = typed<Value>(e.array("values"));
  for (std::int64_t i = 0; i < e.nrows; ++i) {
    const std::int64_t s = i / c;
    const std::int64_t width = (slice_ptr[s + 1] - slice_ptr[s]) / c;
    const std::int64_t base = slice_ptr[s] + (i % c) * t;
    double sum = 0;
    for (std::int64_t k = 0; k < width; ++k) {
      const std::int64_t pos = base + (k / t) * c * t + k % t;
      if (col[pos] < 0) break;  // the row's first -1 ends it
      sum += static_cast<double>(val[pos]) * x[static_cast<std::size_t>(col[pos])];
    }
    const auto row = static_cast<std::size_t>(perm != nullptr ? perm[i] : i);
    y[row] = alpha * sum + (beta != 0.0 ? beta * y[row] : 0.0);
  }
}

}  // namespace

double SellFormat::stored_per_row(const Profile& profile, const SellParams& p) {
  return ell_model::padded_per_row(ell_model::lengths(profile), p.sigma, p.slice_height,
                                   p.threads_per_row);
}

double SellFormat::y_write_bytes(const Profile& profile, const SellParams& p, Precision precision) {
  const double vb = value_bytes(precision);
  const double rows = static_cast<double>(profile.nrows);
  if (!permuted(p)) return rows * vb;
  // The stable sort gathers each length class of a window together in its original order: a
  // warp's 32 consecutive writes then step through y with a gap of rows / class_rows, touching
  // a 32-byte sector per row once the gap passes 32 / vb. The other classes of the same window
  // fill the rest of those sectors soon after, so L2 merges most of them before DRAM sees them;
  // what is charged is the extra sectors at heuristics::kSellScatteredSectorCost of a DRAM byte.
  // Histogram range bins count as one class (they overstate the locality of the long-row tail,
  // which holds few rows).
  constexpr double kSectorBytes = 32;
  double scattered = 0;
  for (const HistogramBin& bin : profile.row_histogram) {
    const auto count = static_cast<double>(bin.count);
    if (count > 0) scattered += count * std::min(kSectorBytes, vb * rows / count);
  }
  return rows * vb + (scattered - rows * vb) * heuristics::kSellScatteredSectorCost;
}

Cost SellFormat::cost(const Profile& profile, const FormatParams& params,
                      Precision precision) const {
  namespace m = ell_model;
  const SellParams& p = params_of(params);
  const int t = p.threads_per_row;
  const double vb = value_bytes(precision);
  const double rows = static_cast<double>(profile.nrows);
  const m::Lengths lengths = m::lengths(profile);
  // Lanes read one slot past a row shorter than its slice to find the -1; slices are at most as
  // wide as the longest row.
  const auto longest = static_cast<double>(EllFormat::padded_width(profile.row_max, t));
  const m::Lengths walked = m::map(lengths, [&](double len) { return std::min(len + 1, longest); });
  const double stored = stored_per_row(profile, p);
  const double cols = std::min(stored, m::fetched_per_row(walked, 4, t, p.sigma));
  const double vals =
      std::min(stored, m::fetched_per_row(lengths, static_cast<int>(vb), t, p.sigma));
  const double slices = std::ceil(rows / p.slice_height);
  Cost c;
  c.matrix_bytes = rows * (cols * 4.0 + vals * vb) + (slices + 1) * 8.0;
  if (permuted(p)) c.matrix_bytes += rows * 4.0;
  c.x_bytes = static_cast<double>(profile.ncols) * vb;
  c.y_bytes = y_write_bytes(profile, p, precision);
  // A warp's lanes run until its longest row is done (at least one step, to write y).
  const double issued = m::padded_per_row(walked, p.sigma, 32 / t, t, t);
  const double useful = lengths.mean();
  c.lane_efficiency = (issued > 0 ? std::min(1.0, useful / issued) : 1.0) *
                      m::latency_factor(useful / t, precision);
  c.serial_seconds = std::ceil(longest / t) * heuristics::kCsrStepSeconds;
  return c;
}

std::optional<std::string> SellFormat::cannot_implement(const Profile& profile,
                                                        const FormatParams& params,
                                                        Precision precision) const {
  const SellParams& p = params_of(params);
  if (auto why = ell_part::check_mapping(profile, p.threads_per_row, p.block_size, 1)) return why;
  const int c = p.slice_height;
  if (c < 1 || c > 256 || (c & (c - 1)) != 0)
    return fmt::format("slice height {} is not a power of two in 1..256", c);
  if (p.sigma < 1) return fmt::format("sigma {} is not positive", p.sigma);
  if (p.sigma != 1 && p.sigma % c != 0)
    return fmt::format("sigma {} is neither 1 nor a multiple of the slice height {}", p.sigma, c);
  const double bytes = stored_per_row(profile, p) * static_cast<double>(profile.nrows) *
                       (4.0 + value_bytes(precision));
  if (bytes > heuristics::kEllMaxEncodedBytes)
    return fmt::format("SELL-{}-{} would take about {:.1f} GB (limit {:.0f} GB)", c, p.sigma,
                       bytes / 1e9, heuristics::kEllMaxEncodedBytes / 1e9);
  // The host builds the padded arrays before anything is uploaded: one long row pads its whole
  // slice (a row of 10^7 nonzeros, 32 rows of 10^7 slots).
  if (bytes > static_cast<double>(memory_budget()))
    return fmt::format(
        "SELL-{}-{} pads to about {:.2f} GB (longest row {} nonzeros), over the memory budget of "
        "{} bytes",
        c, p.sigma, bytes / 1e9, profile.row_max, memory_budget());
  return std::nullopt;
}

std::vector<Candidate> SellFormat::propose(const Profile& profile, Precision precision) const {
  const int chosen = ell_model::threads_per_row_for(profile.row_mean, precision);
  std::vector<int> lanes = {chosen};
  if (chosen != 1) lanes.insert(lanes.begin(), 1);
  std::vector<Candidate> out;
  for (int sigma : {1, heuristics::kSellProposedSigma}) {
    for (int t : lanes) {
      SellParams p;
      p.sigma = sigma;
      p.threads_per_row = t;
      Candidate c = candidate(profile, p, precision);
      if (c.applicable) {
        const Cost k = cost(profile, p, precision);
        c.predicted_bytes = k.total();
        c.reason = fmt::format(
            "{:.2f} slots stored per nonzero (estimated), {:.1f} matrix bytes per nonzero, model "
            "efficiency {:.0f}%",
            stored_per_row(profile, p) / std::max(profile.row_mean, 1e-9),
            k.matrix_bytes / std::max<double>(1.0, static_cast<double>(profile.nnz)),
            100.0 * k.lane_efficiency);
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

Encoded SellFormat::encode(const CsrMatrix& a, const FormatParams& params,
                           Precision precision) const {
  const SellParams& p = params_of(params);
  const int c = p.slice_height, t = p.threads_per_row;
  if (a.nrows > std::numeric_limits<std::int32_t>::max())
    throw InternalError("sell: rows do not fit the 32-bit permutation");
  const auto rows = static_cast<std::size_t>(a.nrows);

  // Sorted order: decreasing length within each window, equal lengths in their original order.
  std::vector<std::int32_t> perm(rows);
  std::iota(perm.begin(), perm.end(), 0);
  if (permuted(p)) {
    // Windows sort independently: window ranges on the host threads.
    const std::int64_t window = p.sigma;
    const std::int64_t windows = (a.nrows + window - 1) / window;
    parallel_for(
        windows, std::max<std::int64_t>(1, kRowGrain / window),
        [&](std::int64_t w0, std::int64_t w1) {
          for (std::int64_t w = w0; w < w1; ++w) {
            std::stable_sort(
                perm.begin() + w * window, perm.begin() + std::min(a.nrows, (w + 1) * window),
                [&](std::int32_t i, std::int32_t j) { return a.row_length(i) > a.row_length(j); });
          }
        });
  }
  const std::size_t slices = (rows + static_cast<std::size_t>(c) - 1) / static_cast<std::size_t>(c);
  // Each slice's stored width, in parallel; then their running sum.
  std::vector<std::int64_t> slice_ptr(slices + 1, 0);
  parallel_for(static_cast<std::int64_t>(slices), std::max<std::int64_t>(1, kRowGrain / c),
               [&](std::int64_t s0, std::int64_t s1) {
                 for (std::int64_t s = s0; s < s1; ++s) {
                   std::int64_t longest = 0;
                   for (std::int64_t i = s * c; i < std::min(a.nrows, (s + 1) * c); ++i)
                     longest = std::max(longest, a.row_length(perm[static_cast<std::size_t>(i)]));
                   slice_ptr[static_cast<std::size_t>(s) + 1] =
                       EllFormat::padded_width(longest, t) * c;
                 }
               });
  std::partial_sum(slice_ptr.begin(), slice_ptr.end(), slice_ptr.begin());
  const auto slots = static_cast<std::size_t>(slice_ptr[slices]);

  Encoded e = encoded_for(a, precision);
  e.arrays.push_back(make_array<std::int64_t>("slice_ptr", ElemType::i64, slice_ptr));
  if (permuted(p)) e.arrays.push_back(make_array<std::int32_t>("perm", ElemType::i32, perm));
  EncodedArray col = uninitialized_array<std::int32_t>("col_idx", ElemType::i32, slots);
  parallel_fill(typed_mut<std::int32_t>(col), static_cast<std::int64_t>(slots),
                std::int32_t{-1});  // the padding sentinel
  EncodedArray val;
  if (precision == Precision::f64) {
    val = zero_array<double>("values", ElemType::f64, slots);
    fill(a, p, perm, slice_ptr, typed_mut<std::int32_t>(col), typed_mut<double>(val));
  } else {
    val = zero_array<float>("values", ElemType::f32, slots);
    fill(a, p, perm, slice_ptr, typed_mut<std::int32_t>(col), typed_mut<float>(val));
  }
  e.arrays.push_back(std::move(col));
  e.arrays.push_back(std::move(val));
  return e;
}

void SellFormat::reference_spmv(const Encoded& e, const FormatParams& params,
                                std::span<const double> x, std::span<double> y, double alpha,
                                double beta) const {
  const SellParams& p = params_of(params);
  if (static_cast<std::int64_t>(x.size()) != e.ncols ||
      static_cast<std::int64_t>(y.size()) != e.nrows)
    throw InputError("reference_spmv", 0, "x or y has the wrong length");
  if (e.precision == Precision::f64) {
    multiply<double>(e, p, x, y, alpha, beta);
  } else {
    multiply<float>(e, p, x, y, alpha, beta);
  }
}

std::string SellFormat::kernel_name(const SellParams& p, Precision precision) {
  return fmt::format("spmv_sell_c{}_s{}_t{}_b{}_{}", p.slice_height, p.sigma, p.threads_per_row,
                     p.block_size, codegen::precision_tag(precision));
}

KernelSource SellFormat::generate(const Encoded& e, const FormatParams& params,
                                  const std::string& banner) const {
  return generate_kernel(params_of(params), e.precision, e.nrows, banner);
}

KernelSource SellFormat::generate_kernel(const SellParams& p, Precision precision,
                                         std::int64_t nrows, const std::string& banner) {
  KernelSource k = kernel_source(kernel_name(p, precision), {"spmvc/sell.cuh"}, banner);
  k.block = p.block_size;
  k.grid = std::max<std::int64_t>(1, (nrows * p.threads_per_row + p.block_size - 1) / p.block_size);
  k.params.push_back({KernelParam::Kind::rows, "nrows"});
  k.params.push_back({KernelParam::Kind::array, "slice_ptr"});
  if (permuted(p)) k.params.push_back({KernelParam::Kind::array, "perm"});
  k.params.push_back({KernelParam::Kind::array, "col_idx"});
  k.params.push_back({KernelParam::Kind::array, "values"});
  k.params.push_back({KernelParam::Kind::x, "x"});
  k.params.push_back({KernelParam::Kind::y, "y"});
  k.params.push_back({KernelParam::Kind::alpha, "alpha"});
  k.params.push_back({KernelParam::Kind::beta, "beta"});

  k.source += "#include \"spmvc/sell.cuh\"\n\n";
  k.source += codegen::constants_block({
      {fmt::format("constexpr int kSliceHeight = {};", p.slice_height), "C: rows per slice"},
      {fmt::format("constexpr int kThreadsPerRow = {};", p.threads_per_row),
       "T: lanes that share one row"},
      {fmt::format("constexpr int kBlockSize = {};", p.block_size), "threads per block"},
      {fmt::format("constexpr bool kPermuted = {};", permuted(p) ? "true" : "false"),
       permuted(p) ? fmt::format("rows sorted within windows of sigma = {}: y[perm[i]]", p.sigma)
                   : std::string("sigma = 1: rows in their own order, no perm array")},
      {fmt::format("using Value = {};", codegen::value_type(precision)), "stored values, x and y"},
      {fmt::format("using Acc = {};", codegen::accumulate_type(precision)), "accumulation"},
  });
  k.source += fmt::format(
      R"(
static_assert(sizeof(Value) == {VB}, "values were encoded with {VB}-byte elements");
static_assert(sizeof(long long) == 8, "slice_ptr was encoded with 8-byte offsets");
static_assert(sizeof(int) == 4, "col_idx{PA} was encoded with 4-byte indices");

{SIG}  spmvc::sell::spmv<kSliceHeight, kThreadsPerRow, kBlockSize, kPermuted, Value, Acc>(
      nrows, slice_ptr, {PN}, col_idx, values, x, y, alpha, beta);
}}
)",
      fmt::arg("VB", precision == Precision::f64 ? 8 : 4),
      fmt::arg("SIG", codegen::entry_signature(
                          k.kernel_name, k.params, precision,
                          [&](const std::string& name) {
                            if (name == "slice_ptr") return codegen::ArrayDecl{ElemType::i64};
                            if (name == "values")
                              return codegen::ArrayDecl{formats::value_elem_type(precision)};
                            return codegen::ArrayDecl{ElemType::i32};  // perm, col_idx
                          },
                          "kBlockSize")),
      fmt::arg("PA", permuted(p) ? " and perm" : ""),
      fmt::arg("PN", permuted(p) ? "perm" : "nullptr"));
  return k;
}

}  // namespace spmvc::formats
