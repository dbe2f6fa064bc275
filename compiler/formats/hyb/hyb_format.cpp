#include "formats/hyb/hyb_format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/arrays.hpp"
#include "formats/ell/ell_format.hpp"
#include "formats/ell/ell_model.hpp"
#include "formats/hyb/hyb_model.hpp"
#include "formats/values/values.hpp"
#include "heuristics.hpp"
#include "spmvc/error.hpp"

namespace spmvc::formats {

namespace {

const HybParams& params_of(const FormatParams& params) {
  const auto* p = std::get_if<HybParams>(&params);
  if (p == nullptr) throw InternalError("hyb format given another format's parameters");
  return *p;
}

const std::string kEll = "ell_";

// Nonzeros the ELL part holds and rows that spill into COO, from the histogram.
struct Split {
  double ell_nnz = 0, coo_nnz = 0, coo_rows = 0;
};

Split split(const Profile& profile, std::int64_t width) {
  Split s;
  const auto k = static_cast<double>(width);
  double counted = 0;
  for (const auto& [len, count] : ell_model::lengths(profile).bins) {
    counted += len * count;
    s.ell_nnz += std::min(len, k) * count;
    if (len > k) {
      s.coo_nnz += (len - k) * count;
      s.coo_rows += count;
    }
  }
  // The histogram's range bins (lengths above 32) stand at their midpoints, which miscounts
  // where lengths crowd one end of a bin: over on power-law graphs (suite v13: Maragal_6 by 20%
  // of nnz, the Kronecker graphs, wiki-Vote and email-Enron by 5-8%), under where rows sit at
  // the top (EX5 by 10%). The difference lies in the long rows, past the split for every width
  // up to 32: the COO part takes it, so the two parts hold the matrix's nnz.
  s.coo_nnz = std::max(0.0, s.coo_nnz + static_cast<double>(profile.nnz) - counted);
  return s;
}

// The COO part's row of every entry, from coo_row or from the narrow layout (coo_base,
// coo_row16, coo_row_wide): what the kernel reads, decoded independently of the encoder.
std::vector<std::int32_t> coo_rows(const Encoded& e, const HybParams& p) {
  const std::int64_t n = e.array("coo_col").count();
  if (!p.narrow_rows) {
    const EncodedArray& a = e.array("coo_row");
    if (a.count() != n) throw InternalError("hyb: a COO row per entry expected");
    const std::int32_t* r = typed<std::int32_t>(a);
    return {r, r + n};
  }
  const EncodedArray& base_arr = e.array("coo_base");
  const std::int32_t* base = typed<std::int32_t>(base_arr);
  const std::uint16_t* narrow = typed<std::uint16_t>(e.array("coo_row16"));
  const EncodedArray& wide_arr = e.array("coo_row_wide");
  const std::int32_t* wide = typed<std::int32_t>(wide_arr);
  if (e.array("coo_row16").count() != std::max<std::int64_t>(n, 1) ||
      base_arr.count() != std::max<std::int64_t>(1, (n + p.coo_interval - 1) / p.coo_interval))
    throw InternalError("hyb: 16-bit COO rows of the wrong size");
  std::vector<std::int32_t> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t w = i / p.coo_interval;
    const std::int32_t b = base[w];
    if (b >= 0) {
      out[static_cast<std::size_t>(i)] = b + narrow[i];
    } else {
      const std::int64_t at = -1 - static_cast<std::int64_t>(b) + (i - w * p.coo_interval);
      if (at >= wide_arr.count()) throw InternalError("hyb: wide COO rows out of range");
      out[static_cast<std::size_t>(i)] = wide[at];
    }
  }
  return out;
}

// coo_base (a base row per interval, or -1 - o for an interval whose rows sit at
// coo_row_wide[o...]), coo_row16 (row - base per entry; the wide intervals' stay 0) and
// coo_row_wide, from the 32-bit rows.
void encode_narrow_rows(const std::int32_t* rows, std::int64_t n, int interval,
                        std::vector<EncodedArray>& arrays) {
  const std::int64_t intervals = std::max<std::int64_t>(1, (n + interval - 1) / interval);
  std::vector<std::int32_t> base(static_cast<std::size_t>(intervals), 0);
  std::int64_t wide_count = 0;
  for (std::int64_t w = 0; w * interval < n; ++w) {
    const std::int64_t first = w * interval, last = std::min(n, first + interval) - 1;
    // Rows are sorted: the interval spans rows[last] - rows[first].
    if (rows[last] - rows[first] <= std::numeric_limits<std::uint16_t>::max()) {
      base[static_cast<std::size_t>(w)] = rows[first];
    } else {
      if (wide_count + (last - first + 1) > std::numeric_limits<std::int32_t>::max())
        throw InternalError("hyb: too many wide COO rows for 32-bit positions");
      base[static_cast<std::size_t>(w)] = static_cast<std::int32_t>(-1 - wide_count);
      wide_count += last - first + 1;
    }
  }
  EncodedArray narrow = zero_array<std::uint16_t>(
      "coo_row16", ElemType::u16, static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
  EncodedArray wide =
      zero_array<std::int32_t>("coo_row_wide", ElemType::i32,
                               static_cast<std::size_t>(std::max<std::int64_t>(wide_count, 1)));
  std::uint16_t* n16 = typed_mut<std::uint16_t>(narrow);
  std::int32_t* w32 = typed_mut<std::int32_t>(wide);
  parallel_for(intervals, 256, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t w = lo; w < hi; ++w) {
      const std::int64_t first = w * interval, end = std::min(n, first + interval);
      const std::int32_t b = base[static_cast<std::size_t>(w)];
      for (std::int64_t i = first; i < end; ++i) {
        if (b >= 0) {
          n16[i] = static_cast<std::uint16_t>(rows[i] - b);
        } else {
          w32[-1 - static_cast<std::int64_t>(b) + (i - first)] = rows[i];
        }
      }
    }
  });
  arrays.push_back(make_array<std::int32_t>("coo_base", ElemType::i32, base));
  arrays.push_back(std::move(narrow));
  arrays.push_back(std::move(wide));
}

template <typename Value>
void add_coo(const Encoded& e, const HybParams& p, std::span<const double> x, std::span<double> y,
             double alpha) {
  const std::vector<std::int32_t> row_of = coo_rows(e, p);
  const std::int32_t* rows = row_of.data();
  const std::int32_t* cols = typed<std::int32_t>(e.array("coo_col"));
  const auto n = static_cast<std::int64_t>(row_of.size());
  const int values = p.values;
  const std::vector<Value> stored = stored_values<Value>(e, "coo_values", values, n);
  const Value* vals = stored.data();
  // One sum per run of equal rows, added once: what the kernel does within an interval.
  for (std::int64_t i = 0; i < n;) {
    const std::int32_t row = rows[i];
    if (row < 0 || row >= e.nrows) throw InternalError("hyb: COO row out of range");
    if (i > 0 && row < rows[i - 1]) throw InternalError("hyb: COO rows are not sorted");
    double sum = 0;
    for (; i < n && rows[i] == row; ++i)
      sum += static_cast<double>(vals[i]) * x[static_cast<std::size_t>(cols[i])];
    y[static_cast<std::size_t>(row)] += alpha * sum;
  }
}

}  // namespace

double HybFormat::coo_nonzeros(const Profile& profile, std::int64_t width) {
  return split(profile, width).coo_nnz;
}

Cost HybFormat::cost(const Profile& profile, const FormatParams& params,
                     Precision precision) const {
  const HybParams& p = params_of(params);
  const auto k = static_cast<double>(p.width);
  const ell_part::PartCost ell = ell_part::cost(
      profile, [k](double len) { return std::min(len, k); }, p.width, p.threads_per_row,
      p.row_lengths, precision, p.values);
  const Split s = split(profile, p.width);
  const double vb = value_bytes(precision);
  // 16-bit rows: 2 bytes an entry and a base per interval, against 4 (columns take 4 either way).
  const double row_bytes = p.narrow_rows ? 2.0 + 4.0 / p.coo_interval : 4.0;
  const double coo_bytes = s.coo_nnz * (row_bytes + 4.0 + value_code_bytes(p.values, precision));
  const double coo_y = s.coo_rows * vb;  // one atomic read-modify-write per spilled row
  Cost c;
  c.matrix_bytes = ell.matrix_bytes + coo_bytes;
  c.x_bytes = static_cast<double>(profile.ncols) * vb;
  c.y_bytes = static_cast<double>(profile.nrows) * vb + coo_y;
  // The two launches run one after the other, each at its own efficiency: the combined
  // efficiency is the ratio of bytes to their efficiency-weighted sum.
  const double ell_time = (ell.matrix_bytes + c.x_bytes + static_cast<double>(profile.nrows) * vb) /
                          std::max(ell.lane_efficiency, 1e-3);
  const double coo_time = (coo_bytes + coo_y) / heuristics::kCooLaneEfficiency;
  c.lane_efficiency = c.total() / std::max(ell_time + coo_time, 1e-30);
  // The COO launch starts after the ELL one ends: its chain and its launch add to the floor.
  c.serial_seconds = ell.serial_steps * heuristics::kCsrStepSeconds;
  if (s.coo_nnz > 0)
    c.serial_seconds += static_cast<double>(p.coo_interval / 32) * heuristics::kCsrStepSeconds +
                        heuristics::kLaunchSeconds;
  return c;
}

std::optional<std::string> HybFormat::cannot_implement(const Profile& profile,
                                                       const FormatParams& params,
                                                       Precision precision) const {
  const HybParams& p = params_of(params);
  if (auto why = ell_part::check_mapping(profile, p.threads_per_row, p.block_size, 1)) return why;
  if (p.coo_interval < 32 || p.coo_interval > 65536 || p.coo_interval % 32 != 0)
    return fmt::format("COO interval {} is not a multiple of 32 in 32..65536", p.coo_interval);
  if (p.width < 0) return fmt::format("width {} is negative", p.width);
  if (auto why = value_coding_problem(profile, p.values, precision)) return why;
  const Split s = split(profile, p.width);
  return ell_part::check_size(profile, p.width, p.threads_per_row,
                              static_cast<std::int64_t>(std::llround(s.ell_nnz)), precision);
}

std::vector<Candidate> HybFormat::propose(const Profile& profile, Precision precision) const {
  const std::int64_t bell_garland = hyb_split_width(profile);
  // On matrices with fewer rows than the split's threshold, the split keeps every row in ELL;
  // where that pads past the ELL limit, the widest width within it is taken instead.
  const auto capped = [&](std::int64_t width, int t) {
    width = std::min<std::int64_t>(width, std::numeric_limits<std::int32_t>::max());
    while (width > 0 &&
           ell_part::check_size(profile, width, t, std::llround(split(profile, width).ell_nnz),
                                precision))
      --width;
    return static_cast<int>(width);
  };
  const int width = capped(bell_garland, 1);
  const Split s = split(profile, width);
  const double ell_mean = profile.nrows > 0 ? s.ell_nnz / static_cast<double>(profile.nrows) : 0;
  const int chosen = ell_model::threads_per_row_for(ell_mean, precision);
  std::vector<HybParams> sets;
  for (int t : {1, chosen}) {
    if (t == 1 && !sets.empty()) continue;  // chosen was 1 as well
    HybParams p;
    p.width = capped(width, t);
    p.threads_per_row = t;
    sets.push_back(p);
  }
  HybParams r = sets.back();
  r.row_lengths = true;
  sets.push_back(r);

  std::vector<Candidate> out;
  for (const HybParams& p : sets) {
    Candidate c = candidate(profile, p, precision);
    if (c.applicable) {
      const Cost k = cost(profile, p, precision);
      const Split ps = split(profile, p.width);
      c.predicted_bytes = k.total();
      c.reason = fmt::format(
          "{} K={}: {:.0f}% of nonzeros in ELL, {:.0f} in COO from {:.0f} rows, model "
          "efficiency {:.0f}%",
          p.width == bell_garland
              ? "Bell-Garland split"
              : fmt::format("Bell-Garland split {} capped by ELL padding at", bell_garland),
          p.width, 100.0 * ps.ell_nnz / std::max<double>(1.0, static_cast<double>(profile.nnz)),
          ps.coo_nnz, ps.coo_rows, 100.0 * k.lane_efficiency);
    }
    out.push_back(std::move(c));
  }
  add_value_coded(out, profile, precision);
  return out;
}

Encoded HybFormat::encode(const CsrMatrix& a, const FormatParams& params,
                          Precision precision) const {
  const HybParams& p = params_of(params);
  if (p.width < 0) throw InternalError("hyb: negative width");
  Encoded e = encoded_for(a, precision);
  ell_part::encode(a, p.width, p.threads_per_row, p.row_lengths, precision, kEll, e, p.values);

  // The COO part: each row's entries past the width, rows in order; row ranges write their own
  // stretches of the arrays.
  const std::vector<std::int64_t> at = tail_offsets(a, p.width);
  const auto n = static_cast<std::size_t>(at.back());
  // Every element is written below.
  EncodedArray rows = uninitialized_array<std::int32_t>("coo_row", ElemType::i32, n);
  EncodedArray cols = uninitialized_array<std::int32_t>("coo_col", ElemType::i32, n);
  const bool f64 = precision == Precision::f64;
  EncodedArray vals = f64 ? uninitialized_array<double>("coo_values", ElemType::f64, n)
                          : uninitialized_array<float>("coo_values", ElemType::f32, n);
  std::int32_t* row_out = typed_mut<std::int32_t>(rows);
  std::int32_t* col_out = typed_mut<std::int32_t>(cols);
  run_ranges(split_rows(a, kRowGrain), [&](std::size_t, std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      std::int64_t k = at[static_cast<std::size_t>(r)];
      for (std::int64_t j = a.row_ptr[static_cast<std::size_t>(r)] + p.width;
           j < a.row_ptr[static_cast<std::size_t>(r + 1)]; ++j, ++k) {
        row_out[k] = static_cast<std::int32_t>(r);
        col_out[k] = a.col_idx[static_cast<std::size_t>(j)];
        const double v = a.values[static_cast<std::size_t>(j)];
        if (f64) {
          typed_mut<double>(vals)[k] = v;
        } else {
          typed_mut<float>(vals)[k] = static_cast<float>(v);
        }
      }
    }
  });
  if (p.narrow_rows) {
    encode_narrow_rows(row_out, static_cast<std::int64_t>(n), p.coo_interval, e.arrays);
  } else {
    e.arrays.push_back(std::move(rows));
  }
  e.arrays.push_back(std::move(cols));
  e.arrays.push_back(std::move(vals));
  code_values(e.arrays, "coo_values", p.values, a);
  return e;
}

void HybFormat::reference_spmv(const Encoded& e, const FormatParams& params,
                               std::span<const double> x, std::span<double> y, double alpha,
                               double beta) const {
  const HybParams& p = params_of(params);
  ell_part::multiply(e, p.threads_per_row, p.row_lengths, kEll, x, y, alpha, beta, p.values);
  if (e.precision == Precision::f64) {
    add_coo<double>(e, p, x, y, alpha);
  } else {
    add_coo<float>(e, p, x, y, alpha);
  }
}

std::string HybFormat::kernel_name(const HybParams& p, std::int64_t padded_width,
                                   Precision precision) {
  return fmt::format("spmv_hyb_k{}_t{}_b{}_i{}{}{}{}_{}", padded_width, p.threads_per_row,
                     p.block_size, p.coo_interval, p.row_lengths ? "_r" : "",
                     p.narrow_rows ? "_r16" : "", value_coding_tag(p.values),
                     codegen::precision_tag(precision));
}

KernelSource HybFormat::generate(const Encoded& e, const FormatParams& params,
                                 const std::string& banner) const {
  return generate_kernel(params_of(params), e.precision, e.nrows, ell_part::stored_width(e, kEll),
                         e.array("coo_col").count(), banner, codegen::splits_x(e));
}

KernelSource HybFormat::generate_kernel(const HybParams& p, Precision precision, std::int64_t nrows,
                                        std::int64_t width, std::int64_t coo,
                                        const std::string& banner, bool split_x) {
  const auto array_decl = [&](const std::string& name) {
    if (name == "coo_row16") return codegen::ArrayDecl{ElemType::u16};
    if (name == "x_hub")
      return codegen::ArrayDecl{precision == Precision::f64 ? ElemType::f64 : ElemType::f32};
    return ell_part::array_decl(name, p.values, precision);
  };
  const codegen::XArgs xs = codegen::x_args(split_x);
  KernelSource k = kernel_source(kernel_name(p, width, precision) + xs.name_suffix,
                                 {"spmvc/coo.cuh", "spmvc/ell.cuh"}, banner);
  k.block = p.block_size;
  k.grid = std::max<std::int64_t>(1, (nrows * p.threads_per_row + p.block_size - 1) / p.block_size);
  k.params.push_back({KernelParam::Kind::rows, "nrows"});
  if (p.row_lengths) k.params.push_back({KernelParam::Kind::array, "ell_row_lengths"});
  k.params.push_back({KernelParam::Kind::array, "ell_col_idx"});
  const ValueArgs ell_vals = value_args(p.values, "ell_values");
  const ValueArgs coo_vals = value_args(p.values, "coo_values");
  k.params.insert(k.params.end(), ell_vals.params.begin(), ell_vals.params.end());
  k.params.insert(k.params.end(), xs.params.begin(), xs.params.end());
  k.params.push_back({KernelParam::Kind::y, "y"});
  k.params.push_back({KernelParam::Kind::alpha, "alpha"});
  k.params.push_back({KernelParam::Kind::beta, "beta"});
  // The COO entry point is in every unit; it is launched only when the COO part has entries.
  KernelLaunch post;
  post.entry = k.kernel_name + "_coo";
  if (p.narrow_rows) {
    post.params = {{KernelParam::Kind::array, "coo_base"},
                   {KernelParam::Kind::array, "coo_row16"},
                   {KernelParam::Kind::array, "coo_row_wide"}};
  } else {
    post.params = {{KernelParam::Kind::array, "coo_row"}};
  }
  post.params.push_back({KernelParam::Kind::array, "coo_col"});
  post.params.insert(post.params.end(), coo_vals.params.begin(), coo_vals.params.end());
  post.params.insert(post.params.end(), xs.params.begin(), xs.params.end());
  post.params.insert(post.params.end(),
                     {{KernelParam::Kind::y, "y"}, {KernelParam::Kind::alpha, "alpha"}});
  const std::int64_t warps = (coo + p.coo_interval - 1) / p.coo_interval;
  const std::int64_t warps_per_block = p.block_size / 32;
  post.grid = (warps + warps_per_block - 1) / warps_per_block;
  post.block = p.block_size;
  const std::string coo_signature =
      codegen::entry_signature(post.entry, post.params, precision, array_decl, "kBlockSize");
  if (coo > 0) k.post_launches.push_back(std::move(post));

  k.source += "#include \"spmvc/coo.cuh\"\n#include \"spmvc/ell.cuh\"\n\n";
  k.source += codegen::constants_block({
      {fmt::format("constexpr int kWidth = {};", width),
       "K: slots per row of the ELL part (Bell-Garland split, rounded up to T)"},
      {fmt::format("constexpr int kThreadsPerRow = {};", p.threads_per_row),
       "T: lanes that share one row of the ELL part"},
      {fmt::format("constexpr int kBlockSize = {};", p.block_size), "threads per block"},
      {"constexpr int kUnroll = 1;", "slots each lane loads before its x gathers"},
      {fmt::format("constexpr bool kRowLengths = {};", p.row_lengths ? "true" : "false"),
       p.row_lengths ? "ELL-R part: loop to the stored row length"
                     : "plain ELL part: stop at column -1"},
      {fmt::format("constexpr int kInterval = {};", p.coo_interval),
       p.narrow_rows ? "COO entries per warp, and per base row of the 16-bit rows"
                     : "COO entries per warp"},
      {fmt::format("constexpr long long kCooEntries = {};", coo),
       "nonzeros in the COO part (past column K of their row)"},
      {fmt::format("using Value = {};", codegen::value_type(precision)), "stored values, x and y"},
      {fmt::format("using Acc = {};", codegen::accumulate_type(precision)), "accumulation"},
  });
  k.source += fmt::format(
      R"(
static_assert(sizeof(Value) == {VB}, "values were encoded with {VB}-byte elements");
static_assert(sizeof(int) == 4, "column and COO row indices were encoded with 4-byte integers");
static_assert(spmvc::ell::kEllPitchAlign == {PITCH}, "ELL slots were laid out with a pitch of nrows rounded up to {PITCH}");
static_assert(kWidth % kThreadsPerRow == 0, "the encoded width is a multiple of T");

// Launch 1: y = alpha * A_ell * x + beta * y on every row.
{SIG}  spmvc::ell::spmv<kWidth, kThreadsPerRow, kBlockSize, kUnroll, kRowLengths, Value, Acc>(
      nrows, {LA}, ell_col_idx, {EVP}, {X}, y, alpha, beta);
}}

// Launch 2 (when kCooEntries > 0): y += alpha * A_coo * x.
{CSIG}  spmvc::coo::spmv_add<kInterval, kBlockSize, Value, Acc>(
      kCooEntries, {CRP}, coo_col, {CVP}, {X}, y, alpha);
}}
)",
      fmt::arg("EVP", ell_vals.pass), fmt::arg("CVP", coo_vals.pass), fmt::arg("X", xs.pass),
      fmt::arg("VB", precision == Precision::f64 ? 8 : 4),
      fmt::arg("PITCH", EllFormat::kPitchAlign),
      fmt::arg("SIG", codegen::entry_signature(k.kernel_name, k.params, precision, array_decl,
                                               "kBlockSize")),
      fmt::arg("CSIG", coo_signature),
      fmt::arg("CRP", p.narrow_rows ? "spmvc::coo::NarrowRows{coo_base, coo_row16, coo_row_wide}"
                                    : "spmvc::coo::WideRows{coo_row}"),
      fmt::arg("LA", p.row_lengths ? "ell_row_lengths" : "nullptr"));
  return k;
}

}  // namespace spmvc::formats
