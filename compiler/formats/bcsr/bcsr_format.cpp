#include "formats/bcsr/bcsr_format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>

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

// The stored blocks' products of block row b (and, for a symmetric half, its mirrored blocks',
// each read transposed) into sum.
template <typename Value>
void multiply(const Encoded& e, const BcsrParams& p, std::span<const double> x, std::span<double> y,
              double alpha, double beta) {
  const std::int64_t* ptr = typed<std::int64_t>(e.array("brow_ptr"));
  const std::int32_t* bcol = typed<std::int32_t>(e.array("bcol"));
  const Value* val = typed<Value>(e.array("values"));
  const std::int64_t* mptr = p.symmetric ? typed<std::int64_t>(e.array("mptr")) : nullptr;
  const std::int32_t* mrow = p.symmetric ? typed<std::int32_t>(e.array("mrow")) : nullptr;
  const std::int32_t* mpos = p.symmetric ? typed<std::int32_t>(e.array("mpos")) : nullptr;
  const int r = p.block_rows, c = p.block_cols;
  const std::int64_t nbrows = (e.nrows + r - 1) / r;
  std::vector<double> sum(static_cast<std::size_t>(r));
  auto block = [&](std::int64_t blk, std::int64_t col0, bool transposed) {
    for (int i = 0; i < r; ++i) {
      for (int k = 0; k < c; ++k) {
        const double v =
            static_cast<double>(val[blk * r * c + (transposed ? k * c + i : i * c + k)]);
        // Fill past the last column is zero and x is not read there.
        if (col0 + k < e.ncols)
          sum[static_cast<std::size_t>(i)] += v * x[static_cast<std::size_t>(col0 + k)];
      }
    }
  };
  for (std::int64_t b = 0; b < nbrows; ++b) {
    std::fill(sum.begin(), sum.end(), 0.0);
    for (std::int64_t j = ptr[b]; j < ptr[b + 1]; ++j)
      block(j, static_cast<std::int64_t>(bcol[j]) * c, false);
    if (p.symmetric) {
      for (std::int64_t m = mptr[b]; m < mptr[b + 1]; ++m)
        block(mpos[m], static_cast<std::int64_t>(mrow[m]) * c, true);
    }
    for (int i = 0; i < r; ++i) {
      const std::int64_t row = b * r + i;
      if (row >= e.nrows) break;
      const auto ri = static_cast<std::size_t>(row);
      y[ri] = alpha * sum[static_cast<std::size_t>(i)] + (beta != 0.0 ? beta * y[ri] : 0.0);
    }
  }
}

// The position of block column `bc` in block row `br` of `b`, or -1.
std::int64_t find_block(const blocks::BlockRows& b, std::int64_t br, std::int32_t bc) {
  const auto first = b.col.begin() + b.ptr[static_cast<std::size_t>(br)];
  const auto last = b.col.begin() + b.ptr[static_cast<std::size_t>(br) + 1];
  const auto at = std::lower_bound(first, last, bc);
  return at != last && *at == bc ? at - b.col.begin() : -1;
}

// A symmetric half of `full` (square r x r blocks): the blocks on and below the diagonal, and
// for each block row the mirrors of its blocks above the diagonal. Every block above the
// diagonal must be the transpose of its mirror, or the encoding would lose it.
struct SymmetricHalf {
  blocks::BlockRows lower;
  std::vector<std::int64_t> mptr;
  std::vector<std::int32_t> mrow, mpos;
};

SymmetricHalf symmetric_half(const blocks::BlockRows& full) {
  const int r = full.r;
  const auto rr = static_cast<std::size_t>(r) * static_cast<std::size_t>(r);
  SymmetricHalf h;
  h.lower.r = h.lower.c = r;
  h.lower.nbrows = full.nbrows;
  h.lower.ptr.assign(1, 0);
  std::vector<std::int64_t> mirrors(static_cast<std::size_t>(full.nbrows) + 1, 0);
  // The block at block row br, block column bc, against its mirror (bc, br).
  auto refuse = [r](std::int64_t br, std::int64_t bc, std::string_view what) {
    throw InputError(
        "bcsr", 0,
        fmt::format("S=1 (symmetric) but the {}x{} block at rows {}.., columns {}.. {} "
                    "at rows {}.., columns {}..",
                    r, r, br * r, bc * r, what, bc * r, br * r));
  };
  for (std::int64_t br = 0; br < full.nbrows; ++br) {
    for (std::int64_t j = full.ptr[static_cast<std::size_t>(br)];
         j < full.ptr[static_cast<std::size_t>(br) + 1]; ++j) {
      const std::int32_t bc = full.col[static_cast<std::size_t>(j)];
      if (bc > br) {
        const std::int64_t m = find_block(full, bc, static_cast<std::int32_t>(br));
        bool same = m >= 0;
        for (int i = 0; i < r && same; ++i) {
          for (int k = 0; k < r && same; ++k)
            same =
                full.val[static_cast<std::size_t>(j) * rr + static_cast<std::size_t>(i * r + k)] ==
                full.val[static_cast<std::size_t>(m) * rr + static_cast<std::size_t>(k * r + i)];
        }
        if (!same) refuse(br, bc, "differs from the transpose of its mirror");
        continue;
      }
      // A block below the diagonal is read again as its transpose above it: where the matrix
      // has no block there, it may hold only zeros.
      if (bc < br && find_block(full, bc, static_cast<std::int32_t>(br)) < 0) {
        const auto first = full.val.begin() + static_cast<std::ptrdiff_t>(j * rr);
        if (std::any_of(first, first + static_cast<std::ptrdiff_t>(rr),
                        [](double v) { return v != 0.0; }))
          refuse(br, bc, "has no mirror");
      }
      h.lower.col.push_back(bc);
      h.lower.val.insert(h.lower.val.end(), full.val.begin() + static_cast<std::ptrdiff_t>(j * rr),
                         full.val.begin() + static_cast<std::ptrdiff_t>((j + 1) * rr));
      if (bc < br) ++mirrors[static_cast<std::size_t>(bc) + 1];
    }
    h.lower.ptr.push_back(h.lower.blocks());
  }
  for (std::size_t i = 1; i < mirrors.size(); ++i) mirrors[i] += mirrors[i - 1];
  h.mptr = mirrors;
  h.mrow.resize(static_cast<std::size_t>(mirrors.back()));
  h.mpos.resize(h.mrow.size());
  // Block rows ascending: each block row's mirrors come in increasing J.
  for (std::int64_t br = 0; br < h.lower.nbrows; ++br) {
    for (std::int64_t j = h.lower.ptr[static_cast<std::size_t>(br)];
         j < h.lower.ptr[static_cast<std::size_t>(br) + 1]; ++j) {
      const std::int32_t bc = h.lower.col[static_cast<std::size_t>(j)];
      if (bc == br) continue;
      const auto at = static_cast<std::size_t>(mirrors[static_cast<std::size_t>(bc)]++);
      h.mrow[at] = static_cast<std::int32_t>(br);
      h.mpos[at] = static_cast<std::int32_t>(j);
    }
  }
  return h;
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
  if (p.symmetric) {
    // The diagonal blocks (about one per block row) and half the others stored, each of those
    // others mirrored with two 4-byte indices, and the mirrors' offsets.
    const double diagonal = std::min(nbrows, s.blocks);
    const double off = (s.blocks - diagonal) / 2;
    c.matrix_bytes = 2 * (nbrows + 1) * 8.0 +
                     (diagonal + off) * (4.0 + vb * p.block_rows * p.block_cols) + off * 8.0;
  }
  c.x_bytes = static_cast<double>(profile.ncols) * vb;
  c.y_bytes = static_cast<double>(profile.nrows) * vb;
  const double m = nbrows > 0 ? s.blocks / nbrows : 0.0;  // mean blocks per block row
  c.lane_efficiency = blocks::group_efficiency(m, p.threads_per_row) *
                      blocks::latency_factor(m / p.threads_per_row);
  if (p.symmetric)
    c.lane_efficiency *=
        precision == Precision::f64 ? blocks::kMirrorEfficiency64 : blocks::kMirrorEfficiency32;
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
  if (p.symmetric) {
    if (p.block_rows != p.block_cols)
      return fmt::format("S=1 (symmetric) needs square blocks, not {}x{}", p.block_rows,
                         p.block_cols);
    if (!profile.square)
      return fmt::format("S=1 (symmetric) needs a square matrix, not {} x {}", profile.nrows,
                         profile.ncols);
    if (!profile.numerically_symmetric)
      return profile.depth == InspectDepth::rows
                 ? "S=1 needs a matrix equal to its transpose, values compared exactly (rows-depth "
                   "inspection checks it only where at most 64 diagonals hold nonzeros: full "
                   "inspection checks every matrix)"
                 : "S=1 needs a matrix equal to its transpose, values compared exactly";
  }
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
  const auto ranked = blocks::rank_aligned_shapes<BcsrParams>(
      profile, value_bytes(precision),
      [&](const BlockShape& b) {
        BcsrParams p;
        p.block_rows = b.r;
        p.block_cols = b.c;
        const double nbrows = std::ceil(static_cast<double>(profile.nrows) / b.r);
        p.threads_per_row = threads_for(nbrows > 0 ? static_cast<double>(b.blocks) / nbrows : 0);
        return p;
      },
      [&](const BcsrParams& p) { return cost(profile, p, precision).matrix_bytes; });
  std::vector<Candidate> out;
  for (const auto& o : ranked.paying) {
    const BcsrParams& p = o.p;
    Candidate c = candidate(profile, p, precision);
    if (c.applicable) c.reason = o.reason(profile);
    out.push_back(std::move(c));
    // A matrix equal to its transpose also offers the symmetric half of a square shape.
    if (p.block_rows == p.block_cols && profile.numerically_symmetric) {
      BcsrParams half = p;
      half.symmetric = true;
      Candidate h = candidate(profile, half, precision);
      if (h.applicable) {
        h.reason = fmt::format(
            "{}x{} blocks {:.0f}% full, those on and below the diagonal stored (the rest read "
            "mirrored), {:.2f} matrix bytes per nonzero",
            p.block_rows, p.block_cols, 100.0 * o.fill,
            cost(profile, half, precision).matrix_bytes /
                std::max<double>(1.0, static_cast<double>(profile.nnz)));
      }
      out.push_back(std::move(h));
    }
  }
  if (out.empty()) {
    out.push_back(ranked.least_bad ? not_paying(profile, ranked.least_bad->p, precision,
                                                ranked.why_none(profile))
                                   : rejected(ranked.best_shape(), ranked.why_none(profile)));
  }
  return out;
}

Encoded BcsrFormat::encode(const CsrMatrix& a, const FormatParams& params,
                           Precision precision) const {
  const BcsrParams& p = params_of(params);
  if (p.block_rows < 1 || p.block_rows > 8 || p.block_cols < 1 || p.block_cols > 8)
    throw InternalError("bcsr: block shape outside 1..8");
  if (p.symmetric && (p.block_rows != p.block_cols || a.nrows != a.ncols))
    throw InputError("bcsr", 0,
                     fmt::format("S=1 (symmetric) needs square blocks and a square matrix, not "
                                 "{}x{} blocks of a {} x {} matrix",
                                 p.block_rows, p.block_cols, a.nrows, a.ncols));
  const blocks::BlockRows full = blocks::build_block_rows(a, p.block_rows, p.block_cols);
  Encoded e = encoded_for(a, precision);
  if (!p.symmetric) {
    e.arrays.push_back(make_array<std::int64_t>("brow_ptr", ElemType::i64, full.ptr));
    e.arrays.push_back(make_array<std::int32_t>("bcol", ElemType::i32, full.col));
    e.arrays.push_back(value_array("values", precision, full.val, full.val.size()));
    return e;
  }
  const SymmetricHalf h = symmetric_half(full);
  e.arrays.push_back(make_array<std::int64_t>("brow_ptr", ElemType::i64, h.lower.ptr));
  e.arrays.push_back(make_array<std::int32_t>("bcol", ElemType::i32, h.lower.col));
  e.arrays.push_back(value_array("values", precision, h.lower.val, h.lower.val.size()));
  e.arrays.push_back(make_array<std::int64_t>("mptr", ElemType::i64, h.mptr));
  e.arrays.push_back(make_array<std::int32_t>("mrow", ElemType::i32, h.mrow));
  e.arrays.push_back(make_array<std::int32_t>("mpos", ElemType::i32, h.mpos));
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
  return fmt::format("spmv_{}_r{}_c{}_t{}_b{}{}_{}", p.symmetric ? "bcsrsym" : "bcsr", p.block_rows,
                     p.block_cols, p.threads_per_row, p.block_size, col_tail ? "_tail" : "",
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
              {KernelParam::Kind::array, "values"}};
  if (p.symmetric) {
    k.params.push_back({KernelParam::Kind::array, "mptr"});
    k.params.push_back({KernelParam::Kind::array, "mrow"});
    k.params.push_back({KernelParam::Kind::array, "mpos"});
  }
  k.params.push_back({KernelParam::Kind::x, "x"});
  k.params.push_back({KernelParam::Kind::y, "y"});
  k.params.push_back({KernelParam::Kind::alpha, "alpha"});
  k.params.push_back({KernelParam::Kind::beta, "beta"});
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
  if (p.symmetric) {
    k.source += fmt::format(
        R"(
static_assert(sizeof(Value) == {VB}, "values were encoded with {VB}-byte elements");
static_assert(sizeof(long long) == 8 && sizeof(int) == 4,
              "brow_ptr and mptr are i64, bcol, mrow and mpos i32");

{SIG}  spmvc::bcsr::spmv_symmetric<kR, kC, kT, kBlockSize, kColTail, Value, Acc>(
      nrows, ncols, brow_ptr, bcol, values, mptr, mrow, mpos, x, y, alpha, beta);
}}
)",
        fmt::arg("VB", e.precision == Precision::f64 ? 8 : 4),
        fmt::arg("SIG", codegen::entry_signature(k.kernel_name, k.params, e, "kBlockSize")));
    return k;
  }
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
