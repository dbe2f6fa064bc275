#include "formats/bellpack/bellpack_format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/arrays.hpp"
#include "formats/common/block_common.hpp"
#include "spmvc/error.hpp"
#include "spmvc/memory_budget.hpp"

namespace spmvc::formats {

namespace {

const BellpackParams& params_of(const FormatParams& params) {
  const auto* p = std::get_if<BellpackParams>(&params);
  if (p == nullptr) throw InternalError("bellpack format given another format's parameters");
  return *p;
}

template <typename Value>
void multiply(const Encoded& e, const BellpackParams& p, std::span<const double> x,
              std::span<double> y, double alpha, double beta) {
  const std::int64_t* slice_ptr = typed<std::int64_t>(e.array("slice_ptr"));
  const std::int32_t* bcol = typed<std::int32_t>(e.array("bcol"));
  const Value* val = typed<Value>(e.array("values"));
  const std::int32_t* perm = typed<std::int32_t>(e.array("perm"));
  const int r = p.block_rows, c = p.block_cols, h = p.slice_height;
  const std::int64_t nbrows = (e.nrows + r - 1) / r;
  const std::int64_t nslices = (nbrows + h - 1) / h;
  for (std::int64_t s = 0; s < nslices; ++s) {
    const std::int64_t base = slice_ptr[s];
    const std::int64_t width = (slice_ptr[s + 1] - base) / h;
    for (int b = 0; b < h && s * h + b < nbrows; ++b) {
      for (int i = 0; i < r; ++i) {
        double sum = 0;
        for (std::int64_t k = 0; k < width; ++k) {
          const std::int32_t bc = bcol[base + k * h + b];
          if (bc < 0) break;
          for (int j = 0; j < c; ++j) {
            const std::int64_t col = static_cast<std::int64_t>(bc) * c + j;
            if (col >= e.ncols) continue;
            const double v =
                static_cast<double>(val[base * r * c + (k * c + j) * (h * r) + b * r + i]);
            sum += v * x[static_cast<std::size_t>(col)];
          }
        }
        const std::int64_t row = static_cast<std::int64_t>(perm[s * h + b]) * r + i;
        if (row >= e.nrows) continue;
        const auto ri = static_cast<std::size_t>(row);
        y[ri] = alpha * sum + (beta != 0.0 ? beta * y[ri] : 0.0);
      }
    }
  }
}

}  // namespace

Cost BellpackFormat::cost(const Profile& profile, const FormatParams& params,
                          Precision precision) const {
  const BellpackParams& p = params_of(params);
  const blocks::ShapeStats s =
      blocks::shape_stats(profile, p.block_rows, p.block_cols, BlockPlacement::aligned);
  const double vb = value_bytes(precision);
  const double nbrows = std::ceil(static_cast<double>(profile.nrows) / p.block_rows);
  const double nslices = std::ceil(nbrows / p.slice_height);
  // Sorting by block count leaves little padding inside a slice; the model charges none beyond
  // the blocks themselves (a lower bound: Choi's slices are near-uniform after the sort).
  Cost c;
  c.matrix_bytes =
      (nslices + 1) * 8.0 + nbrows * 4.0 + s.blocks * (4.0 + vb * p.block_rows * p.block_cols);
  c.x_bytes = static_cast<double>(profile.ncols) * vb;
  c.y_bytes = static_cast<double>(profile.nrows) * vb;
  const double m = nbrows > 0 ? s.blocks / nbrows : 0.0;  // blocks each thread walks, mean
  c.lane_efficiency = blocks::latency_factor(m, blocks::kSlicedStepsPerLane);
  const double per_block = std::max(1.0, s.fill * p.block_cols);
  c.serial_seconds =
      std::ceil(static_cast<double>(profile.row_max) / per_block) * blocks::kStepSeconds;
  return c;
}

std::optional<std::string> BellpackFormat::cannot_implement(const Profile& profile,
                                                            const FormatParams& params,
                                                            Precision) const {
  const BellpackParams& p = params_of(params);
  if (p.block_rows < 1 || p.block_rows > 8 || p.block_cols < 1 || p.block_cols > 8)
    return fmt::format("block shape {}x{} is outside 1..8 x 1..8", p.block_rows, p.block_cols);
  if (p.slice_height < 1 || p.slice_height > 1024)
    return fmt::format("slice height {} is outside 1..1024", p.slice_height);
  if (p.block_size < 32 || p.block_size > 1024 || p.block_size % 32 != 0)
    return fmt::format("block size {} is not a multiple of 32 in 32..1024", p.block_size);
  const double nbrows = std::ceil(static_cast<double>(profile.nrows) / p.block_rows);
  if (nbrows > std::numeric_limits<std::int32_t>::max())
    return fmt::format("{:.0f} block rows overflow the 32-bit permutation", nbrows);
  const blocks::ShapeStats s =
      blocks::shape_stats(profile, p.block_rows, p.block_cols, BlockPlacement::aligned);
  if (s.measured && s.blocks * p.block_rows * p.block_cols > blocks::kMaxStored)
    return fmt::format("{:.0f} blocks of {}x{} store more than 2^31 entries (fill {:.3f})",
                       s.blocks, p.block_rows, p.block_cols, s.fill);
  // The slice holding the longest row is padded to its block count in every one of its block
  // rows: one row of 10^7 nonzeros makes a slice of 32 block rows store 32x its blocks. The
  // shape statistics count blocks, not this padding, so it is checked on its own.
  const double widest = std::ceil(static_cast<double>(profile.row_max) / p.block_cols);
  const double padded =
      widest * std::min<double>(p.slice_height, nbrows) * p.block_rows * p.block_cols;
  const double padded_bytes = padded * 8.0 + padded / (p.block_rows * p.block_cols) * 4.0;
  if (padded > blocks::kMaxStored || padded_bytes > static_cast<double>(memory_budget()))
    return fmt::format(
        "the longest row ({} nonzeros) pads its slice of {} block rows to {:.0f} stored entries "
        "({:.3g} GB), over the limit of 2^31 entries or the memory budget of {} bytes",
        profile.row_max, p.slice_height, padded, padded_bytes / 1e9, memory_budget());
  const double threads = std::ceil(nbrows / p.slice_height) * p.slice_height * p.block_rows;
  if (std::ceil(threads / p.block_size) > std::numeric_limits<std::int32_t>::max())
    return fmt::format("{} rows need more than 2^31-1 thread blocks", profile.nrows);
  return std::nullopt;
}

std::vector<Candidate> BellpackFormat::propose(const Profile& profile, Precision precision) const {
  const auto ranked = blocks::rank_aligned_shapes<BellpackParams>(
      profile, value_bytes(precision),
      [](const BlockShape& b) {
        BellpackParams p;
        p.block_rows = b.r;
        p.block_cols = b.c;
        return p;
      },
      [&](const BellpackParams& p) { return cost(profile, p, precision).matrix_bytes; });
  std::vector<Candidate> out;
  for (const auto& o : ranked.paying) {
    Candidate c = candidate(profile, o.p, precision);
    if (c.applicable) c.reason = o.reason(profile);
    out.push_back(std::move(c));
  }
  if (out.empty()) {
    out.push_back(ranked.least_bad ? not_paying(profile, ranked.least_bad->p, precision,
                                                ranked.why_none(profile))
                                   : rejected(ranked.best_shape(), ranked.why_none(profile)));
  }
  return out;
}

Encoded BellpackFormat::encode(const CsrMatrix& a, const FormatParams& params,
                               Precision precision) const {
  const BellpackParams& p = params_of(params);
  if (p.block_rows < 1 || p.block_rows > 8 || p.block_cols < 1 || p.block_cols > 8 ||
      p.slice_height < 1)
    throw InternalError("bellpack: parameters out of range");
  const int r = p.block_rows, c = p.block_cols, h = p.slice_height;
  const blocks::BlockRows b = blocks::build_block_rows(a, r, c);
  // Block rows by block count, longest first; stable, so equal counts keep their order.
  std::vector<std::int32_t> perm(static_cast<std::size_t>(b.nbrows));
  std::iota(perm.begin(), perm.end(), 0);
  auto count = [&](std::int32_t br) { return b.ptr[br + 1] - b.ptr[br]; };
  std::stable_sort(perm.begin(), perm.end(),
                   [&](std::int32_t x, std::int32_t y) { return count(x) > count(y); });
  const std::int64_t nslices = (b.nbrows + h - 1) / h;
  std::vector<std::int64_t> slice_ptr(static_cast<std::size_t>(nslices) + 1, 0);
  for (std::int64_t s = 0; s < nslices; ++s) {
    // Sorted longest first: the slice's first block row is its widest.
    const std::int64_t width = count(perm[static_cast<std::size_t>(s * h)]);
    slice_ptr[static_cast<std::size_t>(s) + 1] = slice_ptr[static_cast<std::size_t>(s)] + width * h;
  }
  const std::int64_t slots = slice_ptr.back();
  Encoded e = encoded_for(a, precision);
  std::vector<std::int32_t> bcol(static_cast<std::size_t>(slots), -1);
  std::vector<double> val(static_cast<std::size_t>(slots) * r * c, 0.0);
  for (std::int64_t s = 0; s < nslices; ++s) {
    const std::int64_t base = slice_ptr[static_cast<std::size_t>(s)];
    for (std::int64_t bl = 0; bl < h && s * h + bl < b.nbrows; ++bl) {
      const std::int32_t br = perm[static_cast<std::size_t>(s * h + bl)];
      for (std::int64_t k = 0; k < count(br); ++k) {
        const std::int64_t blk = b.ptr[br] + k;
        bcol[static_cast<std::size_t>(base + k * h + bl)] = b.col[static_cast<std::size_t>(blk)];
        for (int i = 0; i < r; ++i) {
          for (int j = 0; j < c; ++j) {
            val[static_cast<std::size_t>(base * r * c + (k * c + j) * (h * r) + bl * r + i)] =
                b.val[static_cast<std::size_t>((blk * r + i) * c + j)];
          }
        }
      }
    }
  }
  e.arrays.push_back(make_array<std::int64_t>("slice_ptr", ElemType::i64, slice_ptr));
  e.arrays.push_back(make_array<std::int32_t>("bcol", ElemType::i32, bcol));
  e.arrays.push_back(value_array("values", precision, val, val.size()));
  e.arrays.push_back(make_array<std::int32_t>("perm", ElemType::i32, perm));
  return e;
}

void BellpackFormat::reference_spmv(const Encoded& e, const FormatParams& params,
                                    std::span<const double> x, std::span<double> y, double alpha,
                                    double beta) const {
  const BellpackParams& p = params_of(params);
  if (static_cast<std::int64_t>(x.size()) != e.ncols ||
      static_cast<std::int64_t>(y.size()) != e.nrows)
    throw InputError("reference_spmv", 0, "x or y has the wrong length");
  e.precision == Precision::f64 ? multiply<double>(e, p, x, y, alpha, beta)
                                : multiply<float>(e, p, x, y, alpha, beta);
}

std::string BellpackFormat::kernel_name(const BellpackParams& p, Precision precision,
                                        bool col_tail) {
  return fmt::format("spmv_bellpack_r{}_c{}_s{}_b{}{}_{}", p.block_rows, p.block_cols,
                     p.slice_height, p.block_size, col_tail ? "_tail" : "",
                     codegen::precision_tag(precision));
}

KernelSource BellpackFormat::generate(const Encoded& e, const FormatParams& params,
                                      const std::string& banner) const {
  const BellpackParams& p = params_of(params);
  const bool col_tail = e.ncols % p.block_cols != 0;
  KernelSource k =
      kernel_source(kernel_name(p, e.precision, col_tail), {"spmvc/bellpack.cuh"}, banner);
  k.block = p.block_size;
  const std::int64_t nbrows = (e.nrows + p.block_rows - 1) / p.block_rows;
  const std::int64_t threads =
      (nbrows + p.slice_height - 1) / p.slice_height * p.slice_height * p.block_rows;
  k.grid = std::max<std::int64_t>(1, (threads + p.block_size - 1) / p.block_size);
  k.params = {{KernelParam::Kind::rows, "nrows"},
              {KernelParam::Kind::cols, "ncols"},
              {KernelParam::Kind::array, "slice_ptr"},
              {KernelParam::Kind::array, "bcol"},
              {KernelParam::Kind::array, "values"},
              {KernelParam::Kind::array, "perm"},
              {KernelParam::Kind::x, "x"},
              {KernelParam::Kind::y, "y"},
              {KernelParam::Kind::alpha, "alpha"},
              {KernelParam::Kind::beta, "beta"}};
  k.source += "#include \"spmvc/bellpack.cuh\"\n\n";
  k.source += codegen::constants_block({
      {fmt::format("constexpr int kR = {};", p.block_rows), "r: rows per block"},
      {fmt::format("constexpr int kC = {};", p.block_cols), "c: columns per block"},
      {fmt::format("constexpr int kSlice = {};", p.slice_height), "C: block rows per slice"},
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
static_assert(sizeof(long long) == 8 && sizeof(int) == 4, "slice_ptr is i64, bcol and perm i32");

{SIG}  spmvc::bellpack::spmv<kR, kC, kSlice, kBlockSize, kColTail, Value, Acc>(
      nrows, ncols, slice_ptr, bcol, values, perm, x, y, alpha, beta);
}}
)",
      fmt::arg("VB", e.precision == Precision::f64 ? 8 : 4),
      fmt::arg("SIG", codegen::entry_signature(k.kernel_name, k.params, e, "kBlockSize")));
  return k;
}

}  // namespace spmvc::formats
