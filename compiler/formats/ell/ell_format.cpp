#include "formats/ell/ell_format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/arrays.hpp"
#include "formats/ell/ell_model.hpp"
#include "formats/values/values.hpp"
#include "heuristics.hpp"
#include "spmvc/error.hpp"

namespace spmvc::formats {

namespace {

const EllParams& params_of(const FormatParams& params) {
  const auto* p = std::get_if<EllParams>(&params);
  if (p == nullptr) throw InternalError("ell format given another format's parameters");
  return *p;
}

bool power_of_two_lanes(int t) { return t >= 1 && t <= 32 && (t & (t - 1)) == 0; }

template <typename Value>
void fill_part(const CsrMatrix& a, std::int64_t width, int t, std::int32_t* lens, std::int32_t* col,
               Value* val) {
  const std::int64_t step = EllFormat::pitch(a.nrows) * t;
  // Rows own their slots: row ranges fill in parallel.
  run_ranges(split_rows(a, kRowGrain), [&](std::size_t, std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t start = a.row_ptr[static_cast<std::size_t>(r)];
      const std::int64_t len = std::min(a.row_length(r), width);
      if (lens != nullptr) lens[r] = static_cast<std::int32_t>(len);
      for (std::int64_t k = 0; k < len; ++k) {
        const std::int64_t pos = (k / t) * step + r * t + k % t;
        col[pos] = a.col_idx[static_cast<std::size_t>(start + k)];
        val[pos] = static_cast<Value>(a.values[static_cast<std::size_t>(start + k)]);
      }
    }
  });
}

template <typename Value>
void multiply_part(const Encoded& e, int t, bool row_lengths, const std::string& prefix,
                   std::span<const double> x, std::span<double> y, double alpha, double beta,
                   int values) {
  const std::int64_t width = ell_part::stored_width(e, prefix);
  const std::int64_t step = EllFormat::pitch(e.nrows) * t;
  const std::int32_t* lens =
      row_lengths ? typed<std::int32_t>(e.array(prefix + "row_lengths")) : nullptr;
  const EncodedArray& col_arr = e.array(prefix + "col_idx");
  const std::int32_t* col = typed<std::int32_t>(col_arr);
  const std::vector<Value> stored =
      stored_values<Value>(e, prefix + "values", values, col_arr.count());
  const Value* val = stored.data();
  for (std::int64_t r = 0; r < e.nrows; ++r) {
    const std::int64_t len = row_lengths ? lens[r] : width;
    if (len > width) throw InternalError("ell: a stored row length exceeds the width");
    double sum = 0;
    for (std::int64_t k = 0; k < len; ++k) {
      const std::int64_t pos = (k / t) * step + r * t + k % t;
      if (col[pos] < 0) {
        if (row_lengths) throw InternalError("ell: padding inside a row's stored length");
        break;  // plain ELL: the row's first -1 ends it
      }
      sum += static_cast<double>(val[pos]) * x[static_cast<std::size_t>(col[pos])];
    }
    const auto i = static_cast<std::size_t>(r);
    y[i] = alpha * sum + (beta != 0.0 ? beta * y[i] : 0.0);
  }
}

}  // namespace

// ---- the ELL part, shared with hyb ----

std::optional<std::string> ell_part::check_mapping(const Profile& profile, int threads_per_row,
                                                   int block_size, int unroll) {
  if (!power_of_two_lanes(threads_per_row))
    return fmt::format("threads per row {} is not a power of two in 1..32", threads_per_row);
  if (block_size < 32 || block_size > 1024 || block_size % 32 != 0)
    return fmt::format("block size {} is not a multiple of 32 in 32..1024", block_size);
  if (unroll < 1 || unroll > 8) return fmt::format("unroll {} is outside 1..8", unroll);
  if (profile.nrows > std::numeric_limits<std::int32_t>::max())
    return fmt::format("{} rows do not fit 32-bit row indices", profile.nrows);
  const double blocks =
      std::ceil(static_cast<double>(profile.nrows) * threads_per_row / block_size);
  if (blocks > std::numeric_limits<std::int32_t>::max())
    return fmt::format("{} rows need more than 2^31-1 blocks at T={}", profile.nrows,
                       threads_per_row);
  return std::nullopt;
}

std::optional<std::string> ell_part::check_size(const Profile& profile, std::int64_t width,
                                                int threads_per_row, std::int64_t stored_nnz,
                                                Precision precision) {
  if (width < 0) return fmt::format("ELL width {} is negative", width);
  if (width > std::numeric_limits<std::int32_t>::max())
    return fmt::format("ELL width {} does not fit a 32-bit row length", width);
  const double slots = static_cast<double>(EllFormat::padded_width(width, threads_per_row)) *
                       static_cast<double>(EllFormat::pitch(profile.nrows));
  const double limit = heuristics::kEllMaxPadRatio * static_cast<double>(stored_nnz) +
                       static_cast<double>(heuristics::kEllPadSlack);
  if (slots > limit)
    return fmt::format(
        "ELL width {} x {} rows pads to {:.0f} slots for {} nonzeros (more than {:.0f}x + {}): "
        "row lengths vary too much (mean {:.1f}, longest {})",
        width, profile.nrows, slots, stored_nnz, heuristics::kEllMaxPadRatio,
        heuristics::kEllPadSlack, profile.row_mean, profile.row_max);
  const double bytes = slots * (4.0 + value_bytes(precision));
  if (bytes > heuristics::kEllMaxEncodedBytes)
    return fmt::format("ELL width {} x {} rows takes {:.1f} GB (limit {:.0f} GB)", width,
                       profile.nrows, bytes / 1e9, heuristics::kEllMaxEncodedBytes / 1e9);
  return std::nullopt;
}

void ell_part::encode(const CsrMatrix& a, std::int64_t width, int threads_per_row, bool row_lengths,
                      Precision precision, const std::string& prefix, Encoded& e, int values) {
  const auto slots = static_cast<std::size_t>(EllFormat::padded_width(width, threads_per_row) *
                                              EllFormat::pitch(a.nrows));
  EncodedArray lens = zero_array<std::int32_t>(prefix + "row_lengths", ElemType::i32,
                                               row_lengths ? static_cast<std::size_t>(a.nrows) : 0);
  EncodedArray col = uninitialized_array<std::int32_t>(prefix + "col_idx", ElemType::i32, slots);
  parallel_fill(typed_mut<std::int32_t>(col), static_cast<std::int64_t>(slots),
                std::int32_t{-1});  // the padding sentinel
  std::int32_t* lens_out = row_lengths ? typed_mut<std::int32_t>(lens) : nullptr;
  EncodedArray val;
  if (precision == Precision::f64) {
    val = zero_array<double>(prefix + "values", ElemType::f64, slots);
    fill_part(a, width, threads_per_row, lens_out, typed_mut<std::int32_t>(col),
              typed_mut<double>(val));
  } else {
    val = zero_array<float>(prefix + "values", ElemType::f32, slots);
    fill_part(a, width, threads_per_row, lens_out, typed_mut<std::int32_t>(col),
              typed_mut<float>(val));
  }
  if (row_lengths) e.arrays.push_back(std::move(lens));
  e.arrays.push_back(std::move(col));
  e.arrays.push_back(std::move(val));
  code_values(e.arrays, prefix + "values", values, a);
}

codegen::ArrayDecl ell_part::array_decl(const std::string& name, int values, Precision precision) {
  if (name.ends_with("values")) return {value_code_type(values, precision)};
  if (name.ends_with("values_table")) return {value_elem_type(precision)};
  return {ElemType::i32};  // row lengths, columns, COO rows
}

std::int64_t ell_part::stored_width(const Encoded& e, const std::string& prefix) {
  const std::int64_t pitch = EllFormat::pitch(e.nrows);
  const std::int64_t slots = e.array(prefix + "col_idx").count();
  if (pitch == 0) return 0;
  if (slots % pitch != 0) throw InternalError("ell: slot count is not a multiple of the pitch");
  return slots / pitch;
}

void ell_part::multiply(const Encoded& e, int threads_per_row, bool row_lengths,
                        const std::string& prefix, std::span<const double> x, std::span<double> y,
                        double alpha, double beta, int values) {
  if (static_cast<std::int64_t>(x.size()) != e.ncols ||
      static_cast<std::int64_t>(y.size()) != e.nrows)
    throw InputError("reference_spmv", 0, "x or y has the wrong length");
  if (e.precision == Precision::f64) {
    multiply_part<double>(e, threads_per_row, row_lengths, prefix, x, y, alpha, beta, values);
  } else {
    multiply_part<float>(e, threads_per_row, row_lengths, prefix, x, y, alpha, beta, values);
  }
}

ell_part::PartCost ell_part::cost(const Profile& profile,
                                  const std::function<double(double)>& row_length,
                                  std::int64_t width, int threads_per_row, bool row_lengths,
                                  Precision precision, int values) {
  namespace m = ell_model;
  const int t = threads_per_row;
  const double vb = value_code_bytes(values, precision);
  const double width_padded = static_cast<double>(EllFormat::padded_width(width, t));
  const m::Lengths stored = m::map(m::lengths(profile), row_length);
  // Slots each lane's loop visits: up to the row length (ELL-R), or one further to find the -1
  // (plain ELL, unless the row fills its width).
  const m::Lengths walked =
      row_lengths ? stored
                  : m::map(stored, [&](double len) { return std::min(len + 1, width_padded); });
  const double rows = static_cast<double>(profile.nrows);
  PartCost c;
  c.matrix_bytes =
      rows * m::fetched_per_row(walked, 4, t) * 4.0 + value_table_bytes(values, profile, precision);
  if (vb > 0) c.matrix_bytes += rows * m::fetched_per_row(stored, static_cast<int>(vb), t) * vb;
  if (row_lengths) c.matrix_bytes += rows * 4.0;
  // A warp's lanes run until its longest row is done (at least one step, to write y).
  const double issued = m::padded_per_row(walked, 1, 32 / t, t, t);
  const double useful = stored.mean();
  c.lane_efficiency = (issued > 0 ? std::min(1.0, useful / issued) : 1.0) *
                      m::latency_factor(useful / t, precision) *
                      value_coding_efficiency(values, profile, precision);
  c.serial_steps = std::ceil(width_padded / t);
  return c;
}

// ---- the ell format ----

std::int64_t EllFormat::pitch(std::int64_t nrows) {
  return (nrows + kPitchAlign - 1) / kPitchAlign * kPitchAlign;
}

std::int64_t EllFormat::padded_width(std::int64_t width, int threads_per_row) {
  return (width + threads_per_row - 1) / threads_per_row * threads_per_row;
}

std::int64_t EllFormat::width_for(const Profile& profile, const EllParams& p) {
  return p.width == 0 ? profile.row_max : p.width;
}

Cost EllFormat::cost(const Profile& profile, const FormatParams& params,
                     Precision precision) const {
  const EllParams& p = params_of(params);
  const ell_part::PartCost part = ell_part::cost(
      profile, [](double len) { return len; }, width_for(profile, p), p.threads_per_row,
      p.row_lengths, precision, p.values);
  const double vb = value_bytes(precision);
  Cost c;
  c.matrix_bytes = part.matrix_bytes;
  c.x_bytes = static_cast<double>(profile.ncols) * vb;
  c.y_bytes = static_cast<double>(profile.nrows) * vb;
  c.lane_efficiency = part.lane_efficiency;
  c.serial_seconds = part.serial_steps * heuristics::kCsrStepSeconds;
  return c;
}

std::optional<std::string> EllFormat::cannot_implement(const Profile& profile,
                                                       const FormatParams& params,
                                                       Precision precision) const {
  const EllParams& p = params_of(params);
  if (auto why = ell_part::check_mapping(profile, p.threads_per_row, p.block_size, p.unroll))
    return why;
  if (p.width < 0) return fmt::format("width {} is negative", p.width);
  if (p.width != 0 && p.width < profile.row_max)
    return fmt::format(
        "width {} is less than the longest row ({}): ELL stores every nonzero (hyb splits long "
        "rows off)",
        p.width, profile.row_max);
  if (auto why = value_coding_problem(profile, p.values, precision)) return why;
  return ell_part::check_size(profile, width_for(profile, p), p.threads_per_row, profile.nnz,
                              precision);
}

std::vector<Candidate> EllFormat::propose(const Profile& profile, Precision precision) const {
  // The paper's one lane per row, and the heuristic's T with its half (the model's latency and
  // idle-lane penalties pull opposite ways near the threshold).
  const int chosen = ell_model::threads_per_row_for(profile.row_mean, precision);
  std::vector<int> lanes = {1};
  for (int t : {chosen / 2, chosen}) {
    if (t > lanes.back()) lanes.push_back(t);
  }
  std::vector<Candidate> out;
  for (int t : lanes) {
    for (bool r : {true, false}) {
      EllParams p;
      p.width = static_cast<int>(
          std::min<std::int64_t>(profile.row_max, std::numeric_limits<std::int32_t>::max()));
      p.threads_per_row = t;
      p.row_lengths = r;
      Candidate c = candidate(profile, p, precision);
      if (c.applicable) {
        const Cost k = cost(profile, p, precision);
        const double slots = static_cast<double>(padded_width(p.width, t)) *
                             static_cast<double>(pitch(profile.nrows));
        c.predicted_bytes = k.total();
        c.reason = fmt::format(
            "{}, {:.2f} slots stored per nonzero, {:.1f} matrix bytes per nonzero, model "
            "efficiency {:.0f}%",
            r ? "ELL-R" : "ELL with -1 sentinels",
            slots / std::max<double>(1.0, static_cast<double>(profile.nnz)),
            k.matrix_bytes / std::max<double>(1.0, static_cast<double>(profile.nnz)),
            100.0 * k.lane_efficiency);
      }
      out.push_back(std::move(c));
    }
  }
  add_value_coded(out, profile, precision);
  return out;
}

Encoded EllFormat::encode(const CsrMatrix& a, const FormatParams& params,
                          Precision precision) const {
  const EllParams& p = params_of(params);
  std::int64_t longest = 0;
  for (std::int64_t r = 0; r < a.nrows; ++r) longest = std::max(longest, a.row_length(r));
  const std::int64_t width = p.width == 0 ? longest : p.width;
  if (width < longest)
    throw InternalError(
        fmt::format("ell: width {} is less than the longest row {}", width, longest));
  Encoded e = encoded_for(a, precision);
  ell_part::encode(a, width, p.threads_per_row, p.row_lengths, precision, "", e, p.values);
  return e;
}

void EllFormat::reference_spmv(const Encoded& e, const FormatParams& params,
                               std::span<const double> x, std::span<double> y, double alpha,
                               double beta) const {
  const EllParams& p = params_of(params);
  ell_part::multiply(e, p.threads_per_row, p.row_lengths, "", x, y, alpha, beta, p.values);
}

std::string EllFormat::kernel_name(const EllParams& p, std::int64_t padded_width,
                                   Precision precision) {
  return fmt::format("spmv_{}_k{}_t{}_b{}_u{}{}_{}", p.row_lengths ? "ellr" : "ell", padded_width,
                     p.threads_per_row, p.block_size, p.unroll, value_coding_tag(p.values),
                     codegen::precision_tag(precision));
}

KernelSource EllFormat::generate(const Encoded& e, const FormatParams& params,
                                 const std::string& banner) const {
  return generate_kernel(params_of(params), e.precision, e.nrows, ell_part::stored_width(e, ""),
                         banner);
}

KernelSource EllFormat::generate_kernel(const EllParams& p, Precision precision, std::int64_t nrows,
                                        std::int64_t width, const std::string& banner) {
  KernelSource k = kernel_source(kernel_name(p, width, precision), {"spmvc/ell.cuh"}, banner);
  k.block = p.block_size;
  k.grid = std::max<std::int64_t>(1, (nrows * p.threads_per_row + p.block_size - 1) / p.block_size);
  k.params.push_back({KernelParam::Kind::rows, "nrows"});
  if (p.row_lengths) k.params.push_back({KernelParam::Kind::array, "row_lengths"});
  k.params.push_back({KernelParam::Kind::array, "col_idx"});
  const ValueArgs vals = value_args(p.values, "values");
  k.params.insert(k.params.end(), vals.params.begin(), vals.params.end());
  k.params.push_back({KernelParam::Kind::x, "x"});
  k.params.push_back({KernelParam::Kind::y, "y"});
  k.params.push_back({KernelParam::Kind::alpha, "alpha"});
  k.params.push_back({KernelParam::Kind::beta, "beta"});

  k.source += "#include \"spmvc/ell.cuh\"\n\n";
  k.source += codegen::constants_block({
      {fmt::format("constexpr int kWidth = {};", width),
       "K: slots per row (the longest row, rounded up to T)"},
      {fmt::format("constexpr int kThreadsPerRow = {};", p.threads_per_row),
       "T: lanes that share one row"},
      {fmt::format("constexpr int kBlockSize = {};", p.block_size), "threads per block"},
      {fmt::format("constexpr int kUnroll = {};", p.unroll),
       "slots each lane loads before its x gathers"},
      {fmt::format("constexpr bool kRowLengths = {};", p.row_lengths ? "true" : "false"),
       p.row_lengths ? "ELL-R: loop to the stored row length" : "plain ELL: stop at column -1"},
      {fmt::format("using Value = {};", codegen::value_type(precision)), "stored values, x and y"},
      {fmt::format("using Acc = {};", codegen::accumulate_type(precision)), "accumulation"},
  });
  k.source += fmt::format(
      R"(
static_assert(sizeof(Value) == {VB}, "values were encoded with {VB}-byte elements");
static_assert(sizeof(int) == 4, "col_idx was encoded with 4-byte indices");
static_assert(spmvc::ell::kEllPitchAlign == {PITCH}, "slots were laid out with a pitch of nrows rounded up to {PITCH}");
static_assert(kWidth % kThreadsPerRow == 0, "the encoded width is a multiple of T");

{SIG}  spmvc::ell::spmv<kWidth, kThreadsPerRow, kBlockSize, kUnroll, kRowLengths, Value, Acc>(
      nrows, {LA}, col_idx, {VP}, x, y, alpha, beta);
}}
)",
      fmt::arg("SIG", codegen::entry_signature(
                          k.kernel_name, k.params, precision,
                          [&](const std::string& name) {
                            return ell_part::array_decl(name, p.values, precision);
                          },
                          "kBlockSize")),
      fmt::arg("VP", vals.pass), fmt::arg("VB", precision == Precision::f64 ? 8 : 4),
      fmt::arg("PITCH", kPitchAlign), fmt::arg("LA", p.row_lengths ? "row_lengths" : "nullptr"));
  return k;
}

}  // namespace spmvc::formats
