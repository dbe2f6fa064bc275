#include "formats/blocked/blocked_format.hpp"

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

const BlockedParams& params_of(const FormatParams& params) {
  const auto* p = std::get_if<BlockedParams>(&params);
  if (p == nullptr) throw InternalError("blocked format given another format's parameters");
  return *p;
}

std::optional<std::string> bad_params(const BlockedParams& p) {
  if (p.block_rows < 1 || p.block_rows > 8)
    return fmt::format("block rows {} is outside 1..8", p.block_rows);
  const int a = p.col_align;
  if (a < 1 || a > 32 || (a & (a - 1)) != 0)
    return fmt::format("column alignment {} is not a power of two in 1..32", a);
  if (p.block_cols < a || p.block_cols > 128 || p.block_cols % a != 0)
    return fmt::format("block columns {} is not a multiple of the alignment {} in {}..128",
                       p.block_cols, a, a);
  if (p.block_size < 32 || p.block_size > 1024 || p.block_size % 32 != 0)
    return fmt::format("block size {} is not a multiple of 32 in 32..1024", p.block_size);
  return std::nullopt;
}

template <typename Value>
void multiply(const Encoded& e, const BlockedParams& p, std::span<const double> x,
              std::span<double> y, double alpha, double beta) {
  const std::int64_t* ptr = typed<std::int64_t>(e.array("brow_ptr"));
  const std::int64_t* vptr = typed<std::int64_t>(e.array("brow_val"));
  const std::int32_t* bcol = typed<std::int32_t>(e.array("block_col"));
  const std::uint8_t* blen = typed<std::uint8_t>(e.array("block_len"));
  const Value* val = typed<Value>(e.array("values"));
  const int br = p.block_rows, a = p.col_align;
  const std::int64_t nbrows = (e.nrows + br - 1) / br;
  std::vector<double> sum(static_cast<std::size_t>(br));
  for (std::int64_t b = 0; b < nbrows; ++b) {
    std::fill(sum.begin(), sum.end(), 0.0);
    std::int64_t off = vptr[b];
    for (std::int64_t j = ptr[b]; j < ptr[b + 1]; ++j) {
      for (int i = 0; i < br; ++i) {
        const std::int64_t n = static_cast<std::int64_t>(blen[j * br + i]) * a;
        for (std::int64_t k = 0; k < n; ++k) {
          const std::int64_t col = bcol[j] + k;
          if (col < e.ncols)
            sum[static_cast<std::size_t>(i)] +=
                static_cast<double>(val[off + k]) * x[static_cast<std::size_t>(col)];
        }
        off += n;
      }
    }
    if (off != vptr[b + 1]) throw InternalError("blocked: block lengths disagree with brow_val");
    for (int i = 0; i < br; ++i) {
      const std::int64_t row = b * br + i;
      if (row >= e.nrows) break;
      const auto ri = static_cast<std::size_t>(row);
      y[ri] = alpha * sum[static_cast<std::size_t>(i)] + (beta != 0.0 ? beta * y[ri] : 0.0);
    }
  }
}

}  // namespace

Cost BlockedFormat::cost(const Profile& profile, const FormatParams& params,
                         Precision precision) const {
  const BlockedParams& p = params_of(params);
  const blocks::ShapeStats s = blocks::shape_stats(profile, p.block_rows, p.block_cols,
                                                   BlockPlacement::unaligned, p.col_align);
  const double vb = value_bytes(precision);
  const double nbrows = std::ceil(static_cast<double>(profile.nrows) / p.block_rows);
  Cost c;
  // Stored values with their row padding, plus per block a start column and br length bytes,
  // plus two 8-byte offsets per block row. x: compulsory once (the shared-memory staging is what
  // keeps it near that: each staged x value serves up to br rows).
  c.matrix_bytes = (nbrows + 1) * 16.0 + s.blocks * (4.0 + p.block_rows) + s.stored_padded * vb;
  c.x_bytes = static_cast<double>(profile.ncols) * vb;
  c.y_bytes = static_cast<double>(profile.nrows) * vb;
  // Lanes: a block's stored entries are dealt to 32 lanes; a warp walks its block row's blocks
  // one dependent step (start column -> x staging -> values) after another.
  const double per_block = s.blocks > 0 ? s.stored_padded / s.blocks : 0.0;
  const double lanes = per_block > 0 ? per_block / (32.0 * std::ceil(per_block / 32.0)) : 1.0;
  const double m = nbrows > 0 ? s.blocks / nbrows : 0.0;
  c.lane_efficiency = lanes * blocks::latency_factor(m);
  const double nnz_per_block = std::max(1.0, s.fill * p.block_cols);
  c.serial_seconds =
      std::ceil(static_cast<double>(profile.row_max) / nnz_per_block) * blocks::kStepSeconds;
  return c;
}

std::optional<std::string> BlockedFormat::cannot_implement(const Profile& profile,
                                                           const FormatParams& params,
                                                           Precision) const {
  const BlockedParams& p = params_of(params);
  if (auto why = bad_params(p)) return why;
  const blocks::ShapeStats s = blocks::shape_stats(profile, p.block_rows, p.block_cols,
                                                   BlockPlacement::unaligned, p.col_align);
  if (s.measured && s.stored_padded > blocks::kMaxStored)
    return fmt::format("{:.0f} stored entries (row-padded fill {:.3f}) exceed 2^31",
                       s.stored_padded, static_cast<double>(profile.nnz) / s.stored_padded);
  const double warps = std::ceil(static_cast<double>(profile.nrows) / p.block_rows);
  if (std::ceil(warps * 32 / p.block_size) > std::numeric_limits<std::int32_t>::max())
    return fmt::format("{} rows need more than 2^31-1 thread blocks", profile.nrows);
  return std::nullopt;
}

std::vector<Candidate> BlockedFormat::propose(const Profile& profile, Precision precision) const {
  struct Option {
    BlockedParams p;
    double bytes;
    double fill;
    bool paper;
  };
  std::vector<Option> options;
  double best_fill = 0;
  const BlockShape* paper = nullptr;
  // The shape storing the fewest bytes among those that do not pay: what a forced format takes.
  std::optional<Option> least_bad;
  for (const BlockShape& b : profile.block_shapes) {
    if (b.placement != BlockPlacement::unaligned || b.c < 16) continue;
    if (b.r == 4 && b.c == 64 && b.col_align == 16) paper = &b;
    if (b.col_align != kHopperAlign) continue;
    best_fill = std::max(best_fill, b.row_padded_fill());
    BlockedParams p;
    p.block_rows = b.r;
    p.block_cols = b.c;
    p.col_align = b.col_align;
    const double bytes = cost(profile, p, precision).matrix_bytes;
    const Option o{p, bytes, b.row_padded_fill(), false};
    if (b.row_padded_fill() < blocks::kMinProposedFill ||
        bytes > blocks::kMaxBytesVsCsr * blocks::csr_bytes(profile, value_bytes(precision))) {
      if (!least_bad || bytes < least_bad->bytes) least_bad = o;
      continue;
    }
    options.push_back(o);
  }
  std::stable_sort(options.begin(), options.end(),
                   [](const Option& a, const Option& b) { return a.bytes < b.bytes; });
  if (options.size() > static_cast<std::size_t>(blocks::kProposedShapes))
    options.resize(blocks::kProposedShapes);
  std::vector<Candidate> out;
  const double nnz = std::max<double>(1.0, static_cast<double>(profile.nnz));
  if (paper != nullptr) {
    // The paper's fixed choice (br=4, bc=64, half-warp alignment), kept for comparison.
    BlockedParams p;
    p.block_rows = 4;
    p.block_cols = 64;
    p.col_align = 16;
    const double fill = paper->row_padded_fill();
    Candidate c =
        fill < blocks::kMinProposedFill
            ? not_paying(
                  profile, p, precision,
                  fmt::format("the paper's 4x64 blocks (A=16) are only {:.0f}% full", 100.0 * fill))
            : candidate(profile, p, precision);
    if (c.applicable)
      c.reason = fmt::format("the paper's 4x64 blocks (A=16), {:.0f}% of stored entries nonzero",
                             100.0 * fill);
    options.insert(options.begin(), {p, 0, fill, true});
    out.push_back(std::move(c));
  }
  for (const Option& o : options) {
    if (o.paper) continue;
    Candidate c = candidate(profile, o.p, precision);
    if (c.applicable) {
      c.reason = fmt::format(
          "{}x{} blocks (A={}), {:.0f}% of stored entries nonzero, {:.2f} "
          "matrix bytes per nonzero",
          o.p.block_rows, o.p.block_cols, o.p.col_align, 100.0 * o.fill, o.bytes / nnz);
    }
    out.push_back(std::move(c));
  }
  if (out.size() == (paper != nullptr ? 1u : 0u)) {
    const std::string reason = fmt::format(
        "no br x bc shape (A={}) stores fewer bytes than csr (best fill with rows padded: "
        "{:.3f})",
        kHopperAlign, best_fill);
    if (least_bad) {
      out.push_back(not_paying(
          profile, least_bad->p, precision,
          fmt::format("{}; {}x{} stores {:.2f} matrix bytes per nonzero", reason,
                      least_bad->p.block_rows, least_bad->p.block_cols, least_bad->bytes / nnz)));
    } else {
      BlockedParams p;
      p.col_align = kHopperAlign;
      out.push_back(rejected(
          p, profile.block_shapes.empty() ? std::string("no block shapes inspected") : reason));
    }
  }
  return out;
}

Encoded BlockedFormat::encode(const CsrMatrix& a, const FormatParams& params,
                              Precision precision) const {
  const BlockedParams& p = params_of(params);
  if (auto why = bad_params(p)) throw InternalError("blocked: " + *why);
  const int br = p.block_rows, bc = p.block_cols, al = p.col_align;
  const std::int64_t nbrows = (a.nrows + br - 1) / br;
  std::vector<std::int64_t> brow_ptr{0}, brow_val{0};
  std::vector<std::int32_t> block_col;
  std::vector<std::uint8_t> block_len;
  std::vector<double> values;
  std::vector<std::int32_t> u;
  std::vector<std::int64_t> cursor(static_cast<std::size_t>(br));
  for (std::int64_t b = 0; b < nbrows; ++b) {
    const std::int64_t r0 = b * br, r1 = std::min(r0 + br, a.nrows);
    u.assign(a.col_idx.begin() + a.row_ptr[r0], a.col_idx.begin() + a.row_ptr[r1]);
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
    for (std::int64_t i = 0; i < br; ++i)
      cursor[static_cast<std::size_t>(i)] = r0 + i < r1 ? a.row_ptr[r0 + i] : 0;
    // Greedy placement: each block starts at the first uncovered column, rounded down to A.
    for (std::size_t i = 0; i < u.size();) {
      const std::int64_t start = u[i] / al * al;
      const std::int64_t stop = start + bc;
      while (i < u.size() && u[i] < stop) ++i;
      block_col.push_back(static_cast<std::int32_t>(start));
      for (std::int64_t row = r0; row < r0 + br; ++row) {
        std::int64_t len = 0;  // in units of A
        if (row < r1) {
          std::int64_t& k = cursor[static_cast<std::size_t>(row - r0)];
          const std::int64_t first = k;
          while (k < a.row_ptr[row + 1] && a.col_idx[k] < stop) ++k;
          if (k > first) {
            len = (a.col_idx[k - 1] - start + al) / al;
            const std::size_t base = values.size();
            values.resize(base + static_cast<std::size_t>(len * al), 0.0);
            for (std::int64_t q = first; q < k; ++q)
              values[base + static_cast<std::size_t>(a.col_idx[q] - start)] = a.values[q];
          }
        }
        block_len.push_back(static_cast<std::uint8_t>(len));
      }
    }
    brow_ptr.push_back(static_cast<std::int64_t>(block_col.size()));
    brow_val.push_back(static_cast<std::int64_t>(values.size()));
  }
  Encoded e = encoded_for(a, precision);
  e.arrays.push_back(make_array<std::int64_t>("brow_ptr", ElemType::i64, brow_ptr));
  e.arrays.push_back(make_array<std::int64_t>("brow_val", ElemType::i64, brow_val));
  e.arrays.push_back(make_array<std::int32_t>("block_col", ElemType::i32, block_col));
  e.arrays.push_back(make_array<std::uint8_t>("block_len", ElemType::u8, block_len));
  e.arrays.push_back(value_array("values", precision, values, values.size()));
  return e;
}

void BlockedFormat::reference_spmv(const Encoded& e, const FormatParams& params,
                                   std::span<const double> x, std::span<double> y, double alpha,
                                   double beta) const {
  const BlockedParams& p = params_of(params);
  if (static_cast<std::int64_t>(x.size()) != e.ncols ||
      static_cast<std::int64_t>(y.size()) != e.nrows)
    throw InputError("reference_spmv", 0, "x or y has the wrong length");
  e.precision == Precision::f64 ? multiply<double>(e, p, x, y, alpha, beta)
                                : multiply<float>(e, p, x, y, alpha, beta);
}

std::string BlockedFormat::kernel_name(const BlockedParams& p, Precision precision) {
  return fmt::format("spmv_blocked_br{}_bc{}_a{}_b{}_{}", p.block_rows, p.block_cols, p.col_align,
                     p.block_size, codegen::precision_tag(precision));
}

KernelSource BlockedFormat::generate(const Encoded& e, const FormatParams& params,
                                     const std::string& banner) const {
  const BlockedParams& p = params_of(params);
  KernelSource k = kernel_source(kernel_name(p, e.precision), {"spmvc/blocked.cuh"}, banner);
  k.block = p.block_size;
  const std::int64_t nbrows = (e.nrows + p.block_rows - 1) / p.block_rows;
  const std::int64_t warps_per_block = p.block_size / 32;
  k.grid = std::max<std::int64_t>(1, (nbrows + warps_per_block - 1) / warps_per_block);
  // xs[warps][bc] is static shared memory in the template: nothing to pass at launch.
  k.params = {{KernelParam::Kind::rows, "nrows"},
              {KernelParam::Kind::cols, "ncols"},
              {KernelParam::Kind::array, "brow_ptr"},
              {KernelParam::Kind::array, "brow_val"},
              {KernelParam::Kind::array, "block_col"},
              {KernelParam::Kind::array, "block_len"},
              {KernelParam::Kind::array, "values"},
              {KernelParam::Kind::x, "x"},
              {KernelParam::Kind::y, "y"},
              {KernelParam::Kind::alpha, "alpha"},
              {KernelParam::Kind::beta, "beta"}};
  k.source += "#include \"spmvc/blocked.cuh\"\n\n";
  k.source += codegen::constants_block({
      {fmt::format("constexpr int kBR = {};", p.block_rows), "br: rows per block"},
      {fmt::format("constexpr int kBC = {};", p.block_cols), "bc: columns per block"},
      {fmt::format("constexpr int kAlign = {};", p.col_align),
       "A: start-column alignment and row padding"},
      {fmt::format("constexpr int kBlockSize = {};", p.block_size),
       "threads per block (one warp per block row)"},
      {fmt::format("using Value = {};", codegen::value_type(e.precision)),
       "stored values, x and y"},
      {fmt::format("using Acc = {};", codegen::accumulate_type(e.precision)), "accumulation"},
  });
  k.source += fmt::format(
      R"(
static_assert(sizeof(Value) == {VB}, "values were encoded with {VB}-byte elements");
static_assert(sizeof(long long) == 8 && sizeof(int) == 4, "offsets are i64, block_col is i32");
static_assert(kBC / kAlign <= 255, "block_len holds lengths in units of kAlign in one byte");

{SIG}  spmvc::blocked::spmv<kBR, kBC, kAlign, kBlockSize, Value, Acc>(
      nrows, ncols, brow_ptr, brow_val, block_col, block_len, values, x, y, alpha, beta);
}}
)",
      fmt::arg("VB", e.precision == Precision::f64 ? 8 : 4),
      fmt::arg("SIG", codegen::entry_signature(k.kernel_name, k.params, e, "kBlockSize")));
  return k;
}

}  // namespace spmvc::formats
