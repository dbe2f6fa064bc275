#include "formats/dia/dia_format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/arrays.hpp"
#include "formats/dia/dia_model.hpp"
#include "formats/ell/ell_model.hpp"
#include "formats/values/values.hpp"
#include "heuristics.hpp"
#include "spmvc/error.hpp"

namespace spmvc::formats {

namespace {

const DiaParams& params_of(const FormatParams& params) {
  const auto* p = std::get_if<DiaParams>(&params);
  if (p == nullptr) throw InternalError("dia format given another format's parameters");
  return *p;
}

// Index of `offset` in the ascending `offsets`, or -1.
int slot_of(const std::vector<std::int32_t>& offsets, std::int64_t offset) {
  const auto at = std::lower_bound(offsets.begin(), offsets.end(), offset);
  return at != offsets.end() && *at == offset ? static_cast<int>(at - offsets.begin()) : -1;
}

template <typename Value>
void fill(const CsrMatrix& a, const std::vector<std::int32_t>& offsets, bool symmetric,
          Value* values) {
  const std::int64_t n = a.nrows;
  // Row r owns entry r of every diagonal: row ranges fill in parallel.
  run_ranges(split_rows(a, kRowGrain), [&](std::size_t, std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
        const std::int64_t o = a.col_idx[static_cast<std::size_t>(k)] - r;
        if (symmetric && o > 0) continue;  // read from its mirror (c, r)
        values[static_cast<std::int64_t>(slot_of(offsets, o)) * n + r] =
            static_cast<Value>(a.values[static_cast<std::size_t>(k)]);
      }
    }
  });
  if (!symmetric) return;
  // Every entry above the diagonal must equal the stored mirror, or the encoding would lose it.
  const std::vector<std::int64_t> bad =
      map_ranges(split_rows(a, kRowGrain), [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t r = r0; r < r1; ++r) {
          for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
            const std::int64_t c = a.col_idx[static_cast<std::size_t>(k)];
            if (c <= r) continue;
            const Value mirror = values[static_cast<std::int64_t>(slot_of(offsets, r - c)) * n + c];
            if (mirror != static_cast<Value>(a.values[static_cast<std::size_t>(k)])) return r;
          }
        }
        return std::int64_t{-1};
      });
  for (const std::int64_t r : bad) {
    if (r >= 0)
      throw InputError("dia", 0,
                       fmt::format("S=1 (symmetric) but row {} holds an entry above the diagonal "
                                   "that differs from its mirror below it",
                                   r));
  }
}

template <typename Value>
void multiply(const Encoded& e, bool symmetric, std::span<const double> x, std::span<double> y,
              double alpha, double beta) {
  const EncodedArray& off_arr = e.array("offsets");
  const std::int32_t* off = typed<std::int32_t>(off_arr);
  const Value* val = typed<Value>(e.array("values"));
  const std::int64_t n = e.nrows, d = off_arr.count();
  if (e.array("values").count() != d * n)
    throw InternalError("dia: the values are not one array of nrows per stored diagonal");
  for (std::int64_t r = 0; r < n; ++r) {
    double sum = 0;
    for (std::int64_t j = 0; j < d; ++j) {
      const std::int64_t c = r + off[j];
      if (c >= 0 && c < e.ncols) sum += static_cast<double>(val[j * n + r]) * x[c];
      const std::int64_t m = r - off[j];  // the row this diagonal mirrors into
      if (symmetric && off[j] < 0 && m < n)
        sum += static_cast<double>(val[j * n + m]) * x[static_cast<std::size_t>(m)];
    }
    const auto i = static_cast<std::size_t>(r);
    y[i] = alpha * sum + (beta != 0.0 ? beta * y[i] : 0.0);
  }
}

}  // namespace

void DiaFormat::shape_for(const Profile& profile, Precision precision, DiaParams& p) {
  const bool narrow_values = value_bytes(precision) == 4;
  p.interior = narrow_values;
  p.rows_per_thread =
      narrow_values && profile.bandwidth > 0 && profile.bandwidth <= heuristics::kDiaNarrowBand ? 2
                                                                                                : 1;
}

std::int64_t DiaFormat::stored_diagonals(std::int64_t diagonals, bool symmetric) {
  return symmetric ? diagonals / 2 + 1 : diagonals;
}

std::optional<std::string> DiaFormat::cannot_implement(const Profile& profile,
                                                       const FormatParams& params,
                                                       Precision precision) const {
  const DiaParams& p = params_of(params);
  if (p.block_size < 32 || p.block_size > 1024 || p.block_size % 32 != 0)
    return fmt::format("block size {} is not a multiple of 32 in 32..1024", p.block_size);
  if (p.rows_per_thread != 1 && p.rows_per_thread != 2)
    return fmt::format("{} rows a thread: dia takes 1 or 2", p.rows_per_thread);
  if (profile.nrows > std::numeric_limits<std::int32_t>::max() ||
      profile.ncols > std::numeric_limits<std::int32_t>::max())
    return fmt::format("{} x {} does not fit 32-bit rows and columns", profile.nrows,
                       profile.ncols);
  if (profile.diagonals < 0)
    return fmt::format("more than {} diagonals hold nonzeros (dia stores at most {})",
                       kMaxDiagonals, kMaxDiagonals);
  if (profile.diagonals == 0 && profile.nnz > 0)
    return "the profile counts no diagonals (from device arrays they are inspected only for "
           "format auto or dia)";
  // (Both depths, and the GPU's diagonal pass, check the symmetry of a matrix on few diagonals.)
  if (p.symmetric && !profile.numerically_symmetric)
    return "S=1 needs a matrix equal to its transpose, values compared exactly";
  const double slots = static_cast<double>(profile.diagonals) * static_cast<double>(profile.nrows);
  const double limit = heuristics::kDiaMaxPadRatio * static_cast<double>(profile.nnz) +
                       static_cast<double>(heuristics::kDiaPadSlack);
  if (slots > limit)
    return fmt::format(
        "{} diagonals x {} rows pad to {:.0f} entries for {} nonzeros (more than {:.1f}x + {}): "
        "the diagonals are not full",
        profile.diagonals, profile.nrows, slots, profile.nnz, heuristics::kDiaMaxPadRatio,
        heuristics::kDiaPadSlack);
  const double bytes = static_cast<double>(stored_diagonals(profile.diagonals, p.symmetric)) *
                       static_cast<double>(profile.nrows) * value_bytes(precision);
  if (bytes > heuristics::kEllMaxEncodedBytes)
    return fmt::format("the diagonals take {:.1f} GB (limit {:.0f} GB)", bytes / 1e9,
                       heuristics::kEllMaxEncodedBytes / 1e9);
  return std::nullopt;
}

Cost DiaFormat::cost(const Profile& profile, const FormatParams& params,
                     Precision precision) const {
  const DiaParams& p = params_of(params);
  const double vb = value_bytes(precision);
  const auto stored = static_cast<double>(stored_diagonals(profile.diagonals, p.symmetric));
  Cost c;
  c.matrix_bytes = stored * static_cast<double>(profile.nrows) * vb;
  c.x_bytes = static_cast<double>(profile.ncols) * vb;
  c.y_bytes = static_cast<double>(profile.nrows) * vb;
  c.lane_efficiency = p.symmetric ? heuristics::kDiaMirrorEfficiency : 1.0;
  // A thread's row takes one step per stored diagonal (two per mirrored one).
  c.serial_seconds =
      (p.symmetric ? static_cast<double>(profile.diagonals) : stored) * heuristics::kCsrStepSeconds;
  return c;
}

std::vector<Candidate> DiaFormat::propose(const Profile& profile, Precision precision) const {
  std::vector<Candidate> out;
  for (const bool symmetric : {false, true}) {
    DiaParams p;
    p.symmetric = symmetric;
    shape_for(profile, precision, p);
    Candidate c = candidate(profile, p, precision);
    if (c.applicable) {
      const Cost k = cost(profile, p, precision);
      c.predicted_bytes = k.total();
      const double nnz = std::max<double>(1.0, static_cast<double>(profile.nnz));
      c.reason = fmt::format(
          "{} diagonals{}, {:.2f} entries stored per nonzero, {:.1f} matrix bytes per nonzero "
          "(no indices)",
          profile.diagonals, symmetric ? ", the lower half and the main one stored" : "",
          static_cast<double>(stored_diagonals(profile.diagonals, symmetric)) *
              static_cast<double>(profile.nrows) / nnz,
          k.matrix_bytes / nnz);
      c.reason += p.rows_per_thread > 1
                      ? fmt::format("; two rows a thread (every nonzero within {} of the diagonal)",
                                    heuristics::kDiaNarrowBand)
                      : "";
      c.reason += p.interior ? "; interior tiles untested (4-byte values)"
                             : "; every row tested (8-byte values)";
    }
    out.push_back(std::move(c));
  }
  return out;
}

Encoded DiaFormat::encode(const CsrMatrix& a, const FormatParams& params,
                          Precision precision) const {
  const DiaParams& p = params_of(params);
  if (p.symmetric && a.nrows != a.ncols)
    throw InputError(
        "dia", 0,
        fmt::format("S=1 (symmetric) needs a square matrix, not {} x {}", a.nrows, a.ncols));
  const std::optional<std::vector<std::int64_t>> diagonals = occupied_diagonals(a);
  if (!diagonals)
    throw InputError("dia", 0,
                     fmt::format("more than {} diagonals hold nonzeros: dia stores at most {}",
                                 kMaxDiagonals, kMaxDiagonals));
  std::vector<std::int32_t> occupied;
  for (const std::int64_t o : *diagonals) occupied.push_back(static_cast<std::int32_t>(o));
  const std::vector<std::int32_t> offsets = stored_offsets(occupied, p.symmetric);
  Encoded e = encoded_for(a, precision);
  const auto count = offsets.size() * static_cast<std::size_t>(a.nrows);
  EncodedArray values;
  if (precision == Precision::f64) {
    values = zero_array<double>("values", ElemType::f64, count);
    fill(a, offsets, p.symmetric, typed_mut<double>(values));
  } else {
    values = zero_array<float>("values", ElemType::f32, count);
    fill(a, offsets, p.symmetric, typed_mut<float>(values));
  }
  EncodedArray off = uninitialized_array<std::int32_t>("offsets", ElemType::i32, offsets.size());
  std::copy(offsets.begin(), offsets.end(), typed_mut<std::int32_t>(off));
  e.arrays.push_back(std::move(off));
  e.arrays.push_back(std::move(values));
  return e;
}

void DiaFormat::reference_spmv(const Encoded& e, const FormatParams& params,
                               std::span<const double> x, std::span<double> y, double alpha,
                               double beta) const {
  const DiaParams& p = params_of(params);
  if (static_cast<std::int64_t>(x.size()) != e.ncols ||
      static_cast<std::int64_t>(y.size()) != e.nrows)
    throw InputError("reference_spmv", 0, "x or y has the wrong length");
  if (e.precision == Precision::f64) {
    multiply<double>(e, p.symmetric, x, y, alpha, beta);
  } else {
    multiply<float>(e, p.symmetric, x, y, alpha, beta);
  }
}

std::vector<std::int32_t> DiaFormat::stored_offsets(const std::vector<std::int32_t>& occupied,
                                                    bool symmetric) {
  std::vector<std::int32_t> offsets;
  // Symmetric: the lower diagonals, and the mirror of every upper one (its entries' twins).
  for (const std::int32_t o : occupied) offsets.push_back(symmetric ? -std::abs(o) : o);
  if (symmetric) offsets.push_back(0);  // the main diagonal, even when it holds no nonzero
  std::sort(offsets.begin(), offsets.end());
  offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
  return offsets;
}

std::string DiaFormat::kernel_name(const DiaParams& p, std::int64_t stored, Precision precision) {
  return fmt::format("spmv_{}_d{}_b{}_r{}{}_{}", p.symmetric ? "diasym" : "dia", stored,
                     p.block_size, p.rows_per_thread, p.interior ? "i" : "",
                     codegen::precision_tag(precision));
}

KernelSource DiaFormat::generate(const Encoded& e, const FormatParams& params,
                                 const std::string& banner) const {
  const EncodedArray& off_arr = e.array("offsets");
  const std::int32_t* off = typed<std::int32_t>(off_arr);
  return generate_kernel(params_of(params), e.precision, e.nrows,
                         std::vector<std::int32_t>(off, off + off_arr.count()), banner);
}

KernelSource DiaFormat::generate_kernel(const DiaParams& p, Precision precision, std::int64_t nrows,
                                        const std::vector<std::int32_t>& offsets,
                                        const std::string& banner) {
  KernelSource k =
      kernel_source(kernel_name(p, static_cast<std::int64_t>(offsets.size()), precision),
                    {"spmvc/dia.cuh"}, banner);
  k.block = p.block_size;
  const std::int64_t tile = std::int64_t{p.block_size} * p.rows_per_thread;
  k.grid = std::max<std::int64_t>(1, (nrows + tile - 1) / tile);
  k.params.push_back({KernelParam::Kind::rows, "nrows"});
  k.params.push_back({KernelParam::Kind::cols, "ncols"});
  k.params.push_back({KernelParam::Kind::array, "values"});
  k.params.push_back({KernelParam::Kind::x, "x"});
  k.params.push_back({KernelParam::Kind::y, "y"});
  k.params.push_back({KernelParam::Kind::alpha, "alpha"});
  k.params.push_back({KernelParam::Kind::beta, "beta"});

  k.source += "#include \"spmvc/dia.cuh\"\n\n";
  k.source += codegen::constants_block({
      {fmt::format("constexpr int kBlockSize = {};", p.block_size), "threads per block"},
      {fmt::format("constexpr int kRowsPerThread = {};", p.rows_per_thread),
       "rows each thread sums, kBlockSize apart"},
      {fmt::format("constexpr bool kInterior = {};", p.interior ? "true" : "false"),
       p.interior ? "tiles inside the matrix skip the bounds tests" : "every row tests its bounds"},
      {fmt::format("constexpr bool kSymmetric = {};", p.symmetric ? "true" : "false"),
       p.symmetric ? "lower diagonals stored, the upper ones read mirrored"
                   : "every occupied diagonal stored"},
      {fmt::format("using Value = {};", codegen::value_type(precision)), "stored values, x and y"},
      {fmt::format("using Acc = {};", codegen::accumulate_type(precision)), "accumulation"},
      {fmt::format("using Diagonals = spmvc::dia::Offsets<{}>;", fmt::join(offsets, ", ")),
       fmt::format("the {} stored diagonals' offsets (column - row)", offsets.size())},
  });
  k.source += fmt::format(
      R"(
static_assert(sizeof(Value) == {VB}, "values were encoded with {VB}-byte elements");

{SIG}  spmvc::dia::spmv<kBlockSize, kRowsPerThread, kInterior, kSymmetric, Value, Acc>(
      Diagonals{{}}, nrows, ncols, values, x, y, alpha, beta);
}}
)",
      fmt::arg("SIG", codegen::entry_signature(
                          k.kernel_name, k.params, precision,
                          [&](const std::string&) {
                            return codegen::ArrayDecl{value_elem_type(precision)};
                          },
                          "kBlockSize")),
      fmt::arg("VB", precision == Precision::f64 ? 8 : 4));
  return k;
}

}  // namespace spmvc::formats
