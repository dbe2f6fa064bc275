#include "formats/bcsr/bcsr_format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/arrays.hpp"
#include "formats/common/block_common.hpp"
#include "spmvc/error.hpp"

namespace spmvc::formats {

namespace {

const BcsrParams& params_of(const FormatParams& params) {
  const auto* p = std::get_if<BcsrParams>(&params);
  if (p == nullptr) throw InternalError("bcsr format given another format's parameters");
  return *p;
}

template <typename Value>
void multiply(const Encoded& e, const BcsrParams& p, std::span<const double> x, std::span<double> y,
              double alpha, double beta) {
  const std::int64_t* ptr = typed<std::int64_t>(e.array("brow_ptr"));
  const std::int32_t* bcol = typed<std::int32_t>(e.array("bcol"));
  const Value* val = typed<Value>(e.array("values"));
  const int r = p.block_rows, c = p.block_cols;
  const std::int64_t nbrows = (e.nrows + r - 1) / r;
  std::vector<double> sum(static_cast<std::size_t>(r));
  for (std::int64_t b = 0; b < nbrows; ++b) {
    std::fill(sum.begin(), sum.end(), 0.0);
    for (std::int64_t j = ptr[b]; j < ptr[b + 1]; ++j) {
      const std::int64_t col0 = static_cast<std::int64_t>(bcol[j]) * c;
      for (int i = 0; i < r; ++i) {
        for (int k = 0; k < c; ++k) {
          const double v = static_cast<double>(val[(j * r + i) * c + k]);
          // Fill past the last column is zero and x is not read there.
          if (col0 + k < e.ncols)
            sum[static_cast<std::size_t>(i)] += v * x[static_cast<std::size_t>(col0 + k)];
        }
      }
    }
    for (int i = 0; i < r; ++i) {
      const std::int64_t row = b * r + i;
      if (row >= e.nrows) break;
      const auto ri = static_cast<std::size_t>(row);
      y[ri] = alpha * sum[static_cast<std::size_t>(i)] + (beta != 0.0 ? beta * y[ri] : 0.0);
    }
  }
}

}  // namespace

int BcsrFormat::threads_for(double blocks_per_row) {
  for (int t = 1; t < 32; t *= 2) {
    if (blocks_per_row / t <= blocks::kStepsPerLane) return t;
  }
  return 32;
}

Cost BcsrFormat::cost(const Profile& profile, const FormatParams& params,
                      Precision precision) const {
  const BcsrParams& p = params_of(params);
  const blocks::ShapeStats s =
      blocks::shape_stats(profile, p.block_rows, p.block_cols, BlockPlacement::aligned);
  const double vb = value_bytes(precision);
  const double nbrows = std::ceil(static_cast<double>(profile.nrows) / p.block_rows);
  Cost c;
  // Every stored value (zero fill included) plus one 4-byte index per block and the block-row
  // offsets: the index saving against csr is 4 bytes per nonzero minus 4 per block.
  c.matrix_bytes = (nbrows + 1) * 8.0 + s.blocks * (4.0 + vb * p.block_rows * p.block_cols);
  c.x_bytes = static_cast<double>(profile.ncols) * vb;
  c.y_bytes = static_cast<double>(profile.nrows) * vb;
  const double m = nbrows > 0 ? s.blocks / nbrows : 0.0;  // mean blocks per block row
  c.lane_efficiency = blocks::group_efficiency(m, p.threads_per_row) *
                      blocks::latency_factor(m / p.threads_per_row);
  // The longest block row: its longest row's nonzeros, packed at the shape's mean fill.
  const double per_block = std::max(1.0, s.fill * p.block_cols);
  const double longest = std::ceil(static_cast<double>(profile.row_max) / per_block);
  c.serial_seconds = std::ceil(longest / p.threads_per_row) * blocks::kStepSeconds;
  return c;
}

std::optional<std::string> BcsrFormat::cannot_implement(const Profile& profile,
                                                        const FormatParams& params,
                                                        Precision) const {
  const BcsrParams& p = params_of(params);
  if (p.block_rows < 1 || p.block_rows > 8 || p.block_cols < 1 || p.block_cols > 8)
    return fmt::format("block shape {}x{} is outside 1..8 x 1..8", p.block_rows, p.block_cols);
  const int t = p.threads_per_row;
  if (t < 1 || t > 32 || (t & (t - 1)) != 0)
    return fmt::format("threads per block row {} is not a power of two in 1..32", t);
  if (p.block_size < 32 || p.block_size > 1024 || p.block_size % 32 != 0)
    return fmt::format("block size {} is not a multiple of 32 in 32..1024", p.block_size);
  const blocks::ShapeStats s =
      blocks::shape_stats(profile, p.block_rows, p.block_cols, BlockPlacement::aligned);
  if (s.measured && s.blocks * p.block_rows * p.block_cols > blocks::kMaxStored)
    return fmt::format("{:.0f} blocks of {}x{} store more than 2^31 entries (fill {:.3f})",
                       s.blocks, p.block_rows, p.block_cols, s.fill);
  const double grid =
      std::ceil(std::ceil(static_cast<double>(profile.nrows) / p.block_rows) * t / p.block_size);
  if (grid > std::numeric_limits<std::int32_t>::max())
    return fmt::format("{} rows need more than 2^31-1 thread blocks", profile.nrows);
  return std::nullopt;
}

std::vector<Candidate> BcsrFormat::propose(const Profile& profile, Precision precision) const {
  // Every aligned shape with enough fill, ranked by predicted matrix bytes; the best few.
  struct Option {
    BcsrParams p;
    double bytes;
    double fill;
  };
  std::vector<Option> options;
  double best_fill = 0;
  int best_r = 1, best_c = 1;
  // The shape storing the fewest bytes among those that do not pay: what a forced format takes.
  std::optional<Option> least_bad;
  for (const BlockShape& b : profile.block_shapes) {
    if (b.placement != BlockPlacement::aligned || b.c > 8 || b.r * b.c < 2) continue;
    if (b.fill() > best_fill) {
      best_fill = b.fill();
      best_r = b.r;
      best_c = b.c;
    }
    BcsrParams p;
    p.block_rows = b.r;
    p.block_cols = b.c;
    const double nbrows = std::ceil(static_cast<double>(profile.nrows) / b.r);
    p.threads_per_row = threads_for(nbrows > 0 ? static_cast<double>(b.blocks) / nbrows : 0);
    const double bytes = cost(profile, p, precision).matrix_bytes;
    if (b.fill() < blocks::kMinProposedFill ||
        bytes > blocks::kMaxBytesVsCsr * blocks::csr_bytes(profile, value_bytes(precision))) {
      if (!least_bad || bytes < least_bad->bytes) least_bad = Option{p, bytes, b.fill()};
      continue;
    }
    options.push_back({p, bytes, b.fill()});
  }
  std::stable_sort(options.begin(), options.end(),
                   [](const Option& a, const Option& b) { return a.bytes < b.bytes; });
  std::vector<Candidate> out;
  for (std::size_t i = 0; i < options.size() && i < blocks::kProposedShapes; ++i) {
    const BcsrParams& p = options[i].p;
    Candidate c = candidate(profile, p, precision);
    if (c.applicable) {
      c.reason =
          fmt::format("{}x{} blocks {:.0f}% full, {:.2f} matrix bytes per nonzero", p.block_rows,
                      p.block_cols, 100.0 * options[i].fill,
                      options[i].bytes / std::max<double>(1.0, static_cast<double>(profile.nnz)));
    }
    out.push_back(std::move(c));
  }
  if (out.empty()) {
    const std::string reason = blocks::no_shape_reason(profile, best_r, best_c, best_fill);
    if (least_bad) {
      const Option& least = *least_bad;
      out.push_back(
          not_paying(profile, least.p, precision,
                     blocks::least_bytes_reason(reason, least.p.block_rows, least.p.block_cols,
                                                least.bytes, profile)));
    } else {
      BcsrParams p;
      p.block_rows = best_r;
      p.block_cols = best_c;
      out.push_back(rejected(p, reason));
    }
  }
  return out;
}

Encoded BcsrFormat::encode(const CsrMatrix& a, const FormatParams& params,
                           Precision precision) const {
  const BcsrParams& p = params_of(params);
  if (p.block_rows < 1 || p.block_rows > 8 || p.block_cols < 1 || p.block_cols > 8)
    throw InternalError("bcsr: block shape outside 1..8");
  const blocks::BlockRows b = blocks::build_block_rows(a, p.block_rows, p.block_cols);
  Encoded e = encoded_for(a, precision);
  e.arrays.push_back(make_array<std::int64_t>("brow_ptr", ElemType::i64, b.ptr));
  e.arrays.push_back(make_array<std::int32_t>("bcol", ElemType::i32, b.col));
  e.arrays.push_back(value_array("values", precision, b.val, b.val.size()));
  return e;
}

void BcsrFormat::reference_spmv(const Encoded& e, const FormatParams& params,
                                std::span<const double> x, std::span<double> y, double alpha,
                                double beta) const {
  const BcsrParams& p = params_of(params);
  if (static_cast<std::int64_t>(x.size()) != e.ncols ||
      static_cast<std::int64_t>(y.size()) != e.nrows)
    throw InputError("reference_spmv", 0, "x or y has the wrong length");
  e.precision == Precision::f64 ? multiply<double>(e, p, x, y, alpha, beta)
                                : multiply<float>(e, p, x, y, alpha, beta);
}

std::string BcsrFormat::kernel_name(const BcsrParams& p, Precision precision, bool col_tail) {
  return fmt::format("spmv_bcsr_r{}_c{}_t{}_b{}{}_{}", p.block_rows, p.block_cols,
                     p.threads_per_row, p.block_size, col_tail ? "_tail" : "",
                     codegen::precision_tag(precision));
}

KernelSource BcsrFormat::generate(const Encoded& e, const FormatParams& params,
                                  const std::string& banner) const {
  const BcsrParams& p = params_of(params);
  const bool col_tail = e.ncols % p.block_cols != 0;
  KernelSource k = kernel_source(kernel_name(p, e.precision, col_tail), {"spmvc/bcsr.cuh"}, banner);
  k.block = p.block_size;
  const std::int64_t nbrows = (e.nrows + p.block_rows - 1) / p.block_rows;
  k.grid =
      std::max<std::int64_t>(1, (nbrows * p.threads_per_row + p.block_size - 1) / p.block_size);
  k.params = {{KernelParam::Kind::rows, "nrows"},
              {KernelParam::Kind::cols, "ncols"},
              {KernelParam::Kind::array, "brow_ptr"},
              {KernelParam::Kind::array, "bcol"},
              {KernelParam::Kind::array, "values"},
              {KernelParam::Kind::x, "x"},
              {KernelParam::Kind::y, "y"},
              {KernelParam::Kind::alpha, "alpha"},
              {KernelParam::Kind::beta, "beta"}};
  k.source += "#include \"spmvc/bcsr.cuh\"\n\n";
  k.source += codegen::constants_block({
      {fmt::format("constexpr int kR = {};", p.block_rows), "r: rows per block"},
      {fmt::format("constexpr int kC = {};", p.block_cols), "c: columns per block"},
      {fmt::format("constexpr int kT = {};", p.threads_per_row), "T: lanes per block row"},
      {fmt::format("constexpr int kBlockSize = {};", p.block_size), "threads per block"},
      {fmt::format("constexpr bool kColTail = {};", col_tail ? "true" : "false"),
       "the last block column runs past ncols"},
      {fmt::format("using Value = {};", codegen::value_type(e.precision)),
       "stored values, x and y"},
      {fmt::format("using Acc = {};", codegen::accumulate_type(e.precision)), "accumulation"},
  });
  k.source += fmt::format(
      R"(
static_assert(sizeof(Value) == {VB}, "values were encoded with {VB}-byte elements");
static_assert(sizeof(long long) == 8 && sizeof(int) == 4, "brow_ptr is i64, bcol is i32");

{SIG}  spmvc::bcsr::spmv<kR, kC, kT, kBlockSize, kColTail, Value, Acc>(nrows, ncols, brow_ptr, bcol,
                                                                  values, x, y, alpha, beta);
}}
)",
      fmt::arg("VB", e.precision == Precision::f64 ? 8 : 4),
      fmt::arg("SIG", codegen::entry_signature(k.kernel_name, k.params, e, "kBlockSize")));
  return k;
}

}  // namespace spmvc::formats
