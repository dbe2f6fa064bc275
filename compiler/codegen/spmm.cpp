// SpMM units over a plan's own encoding (templates/spmm.cuh), the GPU transpose unit
// (templates/transpose.cuh), and their host references.
#include "spmvc/compiler/spmm.hpp"

#include <algorithm>
#include <cstring>
#include <variant>

#include <fmt/format.h>

#include "codegen/codegen.hpp"
#include "formats/ell/ell_format.hpp"
#include "formats/values/values.hpp"
#include "spmvc/error.hpp"

namespace spmvc {

std::string_view to_string(DenseLayout layout) {
  return layout == DenseLayout::row_major ? "row" : "col";
}

DenseLayout parse_dense_layout(std::string_view text) {
  if (text == "row" || text == "row_major") return DenseLayout::row_major;
  if (text == "col" || text == "col_major") return DenseLayout::col_major;
  throw InputError("layout", 0,
                   fmt::format("unknown dense layout '{}' (expected row or col)", text));
}

namespace compiler {

namespace {

// Columns each lane accumulates at most: row-major X is read by the column lanes as contiguous
// runs, so more column lanes cost nothing and keep registers low; column-major X is gathered per
// column whatever the lanes, so fewer column lanes leave more lanes walking nonzeros.
constexpr int kRowMajorPerLane = 4;
constexpr int kColMajorPerLane = 8;
// Nonzeros a nonzero lane walks per row, on average, before another lane joins (each nonzero
// already carries several independent X loads, so fewer lanes per row than the SpMV's).
constexpr double kSpmmNonzerosPerLane = 4.0;
// Bytes of shared memory the long-row partials of csr_stream's SpMM may take (16-bit columns
// instantiate the block twice, and static shared memory stops at 48 KiB).
constexpr std::int64_t kLongRowSharedBytes = 16384;

int pow2_at_least(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

int pow2_at_most(double n) {
  int p = 1;
  while (p * 2 <= n && p < 32) p *= 2;
  return p;
}

bool has_array(const SpmmSubject& s, const std::string& name) {
  return std::any_of(s.arrays.begin(), s.arrays.end(),
                     [&](const auto& a) { return a.first == name; });
}

ElemType array_type(const SpmmSubject& s, const std::string& name) {
  for (const auto& [n, type] : s.arrays) {
    if (n == name) return type;
  }
  throw InternalError("SpMM unit names no encoded array: " + name);
}

void check_k(int k) {
  if (k < 1 || k > kMaxDenseColumns)
    throw InputError("apply_many", 0,
                     fmt::format("k = {} vectors: SpMM takes 1..{}", k, kMaxDenseColumns));
}

std::string shape_tag(int k, DenseLayout layout, const SpmmShape& s) {
  return fmt::format("k{}_{}_c{}_p{}_b{}{}", k, layout == DenseLayout::row_major ? "rm" : "cm",
                     s.column_lanes, s.row_lanes, s.block_size,
                     s.vector > 1 ? fmt::format("_v{}", s.vector) : "");
}

// The inspector's view of the rows that choose_spmm_engine weighs.
void set_row_view(SpmmSubject& s, const Profile& profile) {
  s.row_spread = profile.row_mean > 0 ? profile.row_stddev / profile.row_mean : 0.0;
  s.x_scatter = profile.nnz > 0
                    ? static_cast<double>(profile.x_sectors) / static_cast<double>(profile.nnz)
                    : 0.0;
  s.row_skew = profile.row_mean > 0 ? static_cast<double>(profile.row_max) / profile.row_mean : 0.0;
}

}  // namespace

SpmmChoice choose_spmm_engine(const SpmmSubject& subject, int k, DenseLayout layout,
                              std::string_view mode, bool measure_planner, bool have_csr,
                              std::string_view no_csr) {
  check_k(k);
  if (mode != "auto" && mode != "never" && mode != "always" && mode != "measure")
    throw InputError(
        "spmm_cusparse", 0,
        fmt::format("unknown SpMM engine choice '{}' (auto, never, always, measure)", mode));
  if (mode == "never") return {SpmmEngine::kernel, false, "cuSPARSE not offered (never)"};
  const char* refusal = nullptr;
  if (!have_csr) refusal = "the operator keeps no plain CSR for cusparseSpMM";
  if (subject.precision == Precision::f32_acc64)
    refusal = "cuSPARSE accumulates fp32 data in fp32: not with f32acc64";
  if (refusal != nullptr) {
    if (mode == "always")
      throw InputError("spmm_cusparse", 0,
                       fmt::format("always: {}{}{}", refusal, no_csr.empty() ? "" : ": ", no_csr));
    return {SpmmEngine::kernel, false, refusal};
  }
  const std::string_view alg = spmm_cusparse_algorithm(layout, subject.precision);
  if (mode == "always") return {SpmmEngine::cusparse, false, fmt::format("{} (always)", alg)};
  const std::string rows = fmt::format(
      "{:.1f} nonzeros a row, longest {:.0f}x the mean, spread {:.2f}, x sectors per nonzero "
      "{:.2f}",
      subject.row_mean, subject.row_skew, subject.row_spread, subject.x_scatter);
  const char* cusparse_why = nullptr;
  if (subject.row_skew >= kSpmmHubRowRatio) {
    cusparse_why = "hub rows";
  } else if (layout == DenseLayout::row_major && k >= kSpmmCusparseMinK &&
             subject.precision == Precision::f32 && subject.row_skew >= kSpmmF32SkewRatio) {
    cusparse_why = "fp32 rows skewed";
  }
  SpmmChoice c;
  if (cusparse_why != nullptr) {
    c.engine = SpmmEngine::cusparse;
    c.why = fmt::format("{}: {} ({})", alg, cusparse_why, rows);
  } else {
    c.why = fmt::format("generated unit ({})", rows);
  }
  c.time_both = mode == "measure" || measure_planner;
  return c;
}

const char* spmm_cusparse_algorithm(DenseLayout layout, Precision precision) {
  if (layout == DenseLayout::col_major) return "cusparseSpMM_CSR_ALG1";
  return precision == Precision::f64 ? "cusparseSpMM_CSR_ALG2" : "cusparseSpMM_CSR_ALG3";
}

SpmmSubject spmm_subject(const Plan& plan, const Encoded& encoded, const Profile& profile) {
  SpmmSubject s;
  s.format = plan.format;
  s.params = plan.params;
  s.precision = plan.precision;
  s.nrows = encoded.nrows;
  s.ncols = encoded.ncols;
  s.nnz = encoded.nnz;
  s.row_mean = profile.row_mean;
  for (const EncodedArray& a : encoded.arrays) s.arrays.emplace_back(a.name, a.type);
  if (s.format == "ell" && encoded.nrows > 0) {
    s.ell_width = encoded.array("col_idx").count() / formats::EllFormat::pitch(encoded.nrows);
  }
  if (s.format == "csr_stream") s.row_blocks = encoded.array("row_blocks").count() - 1;
  s.row_map = has_array(s, "row_map");
  s.columns_renumbered = has_array(s, "col_map");
  s.banner = codegen::banner(plan, profile);
  set_row_view(s, profile);
  return s;
}

SpmmSubject spmm_subject_device(const Plan& plan, const Profile& profile, std::int64_t row_blocks) {
  SpmmSubject s;
  s.format = plan.format;
  s.params = plan.params;
  s.precision = plan.precision;
  s.nrows = profile.nrows;
  s.ncols = profile.ncols;
  s.nnz = profile.nnz;
  s.row_mean = profile.row_mean;
  s.row_blocks = row_blocks;
  set_row_view(s, profile);
  const int coding = formats::value_coding_of(plan.params);
  // ell and sell built on the GPU: their own arrays, named and typed as the host encoder's.
  if (const auto* p = std::get_if<EllParams>(&plan.params)) {
    s.ell_width = formats::EllFormat::padded_width(p->width == 0 ? profile.row_max : p->width,
                                                   p->threads_per_row);
    if (p->row_lengths) s.arrays.emplace_back("row_lengths", ElemType::i32);
    s.arrays.emplace_back("col_idx", ElemType::i32);
  } else if (const auto* q = std::get_if<SellParams>(&plan.params)) {
    s.arrays.emplace_back("slice_ptr", ElemType::i64);
    if (q->sigma > 1) s.arrays.emplace_back("perm", ElemType::i32);
    s.arrays.emplace_back("col_idx", ElemType::i32);
  } else {
    s.arrays.emplace_back("row_ptr", ElemType::i32);
    s.arrays.emplace_back("col_idx", ElemType::i32);
  }
  if (coding != formats::kValuesUnit)
    s.arrays.emplace_back("values", formats::value_code_type(coding, plan.precision));
  if (coding == formats::kValuesTable8 || coding == formats::kValuesTable16)
    s.arrays.emplace_back("values_table", formats::value_elem_type(plan.precision));
  if (const auto* p = std::get_if<CsrStreamParams>(&plan.params)) {
    s.arrays.emplace_back("row_blocks", ElemType::i32);
    if (p->narrow_columns) {
      s.arrays.emplace_back("col_base", ElemType::i32);
      s.arrays.emplace_back("col16", ElemType::u16);
      s.arrays.emplace_back("col_wide", ElemType::i32);
    }
  }
  s.banner = codegen::banner(plan, profile);
  return s;
}

std::optional<std::string> spmm_unsupported(const SpmmSubject& s) {
  if (s.format != "csr" && s.format != "csr_stream" && s.format != "ell" && s.format != "sell")
    return fmt::format("format {} has no SpMM kernel (csr, csr_stream, ell and sell have)",
                       s.format);
  if (s.columns_renumbered)
    return "the ordering renumbered the columns (the SpMM kernels read X in the caller's order)";
  if (const auto* p = std::get_if<CsrStreamParams>(&s.params); p != nullptr && p->rows_per_lane > 1)
    return "csr_stream with two rows a lane (m=2): its row blocks hold more rows than the SpMM "
           "kernel's threads";
  if (const auto* p = std::get_if<CsrStreamParams>(&s.params); p != nullptr && p->sorted)
    return "csr_stream with sorted tiles (srt): its columns and values are stored in each tile's "
           "column order, and the SpMM kernel reads them in CSR order";
  return std::nullopt;
}

SpmmShape spmm_shape(const SpmmSubject& s, int k, DenseLayout layout, bool packs) {
  check_k(k);
  const int per_lane = layout == DenseLayout::row_major ? kRowMajorPerLane : kColMajorPerLane;
  int columns = std::min(32, pow2_at_least((k + per_lane - 1) / per_lane));
  SpmmShape shape;
  if (const auto* p = std::get_if<EllParams>(&s.params)) {
    // ell and sell keep their slot lanes: each step's loads stay one contiguous run.
    shape.row_lanes = p->threads_per_row;
    shape.column_lanes = std::min(columns, 32 / shape.row_lanes);
  } else if (const auto* q = std::get_if<SellParams>(&s.params)) {
    shape.row_lanes = q->threads_per_row;
    shape.column_lanes = std::min(columns, 32 / shape.row_lanes);
  } else {
    shape.column_lanes = columns;
    shape.row_lanes =
        std::min(pow2_at_most(s.row_mean / kSpmmNonzerosPerLane), 32 / shape.column_lanes);
  }
  // Mixed precision's bf16 values keep one element per load: with packs, ptxas spilled the
  // csr_stream unit with 16-bit columns at k = 8 (neither kind was timed with bf16 values).
  if (packs && layout == DenseLayout::row_major &&
      formats::value_coding_of(s.params) != formats::kValuesBf16) {
    // Packs of up to 16 bytes, no wider than a lane's share of the columns, dividing k.
    const int per = (k + shape.column_lanes - 1) / shape.column_lanes;
    const int widest = 16 / static_cast<int>(value_bytes(s.precision));
    while (shape.vector * 2 <= std::min(widest, per) && k % (shape.vector * 2) == 0)
      shape.vector *= 2;
  }
  if (const auto* p = std::get_if<CsrStreamParams>(&s.params)) {
    shape.block_size = p->block_size;
    // csr_stream's long rows sum their groups' partials in shared memory: few enough groups.
    const int acc = s.precision == Precision::f32 ? 4 : 8;
    while (static_cast<std::int64_t>(shape.block_size / (shape.column_lanes * shape.row_lanes)) *
                   k * acc >
               kLongRowSharedBytes &&
           shape.column_lanes * shape.row_lanes < 32)
      shape.row_lanes *= 2;
  } else if (const auto* q = std::get_if<EllParams>(&s.params)) {
    shape.block_size = q->block_size;
  } else if (const auto* r = std::get_if<SellParams>(&s.params)) {
    shape.block_size = r->block_size;
  }
  return shape;
}

KernelSource generate_spmm(const SpmmSubject& s, int k, DenseLayout layout, bool packs) {
  check_k(k);
  if (auto why = spmm_unsupported(s)) throw InternalError("no SpMM unit: " + *why);
  const SpmmShape shape = spmm_shape(s, k, layout, packs);
  const int coding = formats::value_coding_of(s.params);
  const std::string prec = codegen::precision_tag(s.precision);
  const std::string vtag = formats::value_coding_tag(coding);
  const bool row_major = layout == DenseLayout::row_major;

  KernelSource src;
  std::vector<KernelParam> format_params;
  std::string call;
  std::vector<std::pair<std::string, std::string>> constants = {
      {fmt::format("constexpr int kK = {};", k), "k: columns of X and Y"},
      {fmt::format("constexpr bool kRowMajor = {};", row_major ? "true" : "false"),
       row_major ? "X and Y row-major: element (i, j) at i*k + j"
                 : "X and Y column-major: element (i, j) at j*n + i"},
      {fmt::format("constexpr int kColumnLanes = {};", shape.column_lanes),
       "lanes that split a row's k columns"},
      {fmt::format("constexpr int kRowLanes = {};", shape.row_lanes),
       "lanes that split a row's nonzeros"},
      {fmt::format("constexpr int kBlockSize = {};", shape.block_size), "threads per block"},
      {fmt::format("constexpr int kVec = {};", shape.vector),
       shape.vector > 1 ? "X and Y columns a lane moves in one load or store"
                        : "one element per load or store"},
  };
  const auto values = formats::value_args(coding, "values");
  const std::int64_t group = shape.column_lanes * shape.row_lanes;
  const std::int64_t row_grid =
      std::max<std::int64_t>(1, (s.nrows * group + shape.block_size - 1) / shape.block_size);
  std::string offset_type = "int";
  if (has_array(s, "row_ptr") && array_type(s, "row_ptr") == ElemType::i64)
    offset_type = "long long";

  if (s.format == "csr") {
    src.kernel_name = fmt::format("spmm_csr_{}{}{}_{}", shape_tag(k, layout, shape),
                                  offset_type == "int" ? "" : "_o64", vtag, prec);
    src.grid = row_grid;
    format_params = {{KernelParam::Kind::array, "row_ptr"}, {KernelParam::Kind::array, "col_idx"}};
    format_params.insert(format_params.end(), values.params.begin(), values.params.end());
    constants.push_back({fmt::format("using Offset = {};", offset_type), "row_ptr element"});
    call = fmt::format(
        "spmvc::spmm::csr<kK, kColumnLanes, kRowLanes, kBlockSize, kRowMajor, kVec, Offset, "
        "Value, Acc>(\n      nrows, ncols, row_ptr, col_idx, {}, x, y, alpha, beta);",
        values.pass);
  } else if (s.format == "csr_stream") {
    const bool narrow = has_array(s, "col16");
    src.kernel_name =
        fmt::format("spmm_csr_stream_{}{}{}{}_{}", shape_tag(k, layout, shape),
                    offset_type == "int" ? "" : "_o64", narrow ? "_c16" : "", vtag, prec);
    src.grid = std::max<std::int64_t>(1, s.row_blocks);
    format_params = {{KernelParam::Kind::array, "row_blocks"},
                     {KernelParam::Kind::array, "row_ptr"}};
    if (narrow) {
      format_params.insert(format_params.end(), {{KernelParam::Kind::array, "col_base"},
                                                 {KernelParam::Kind::array, "col16"},
                                                 {KernelParam::Kind::array, "col_wide"}});
    } else {
      format_params.push_back({KernelParam::Kind::array, "col_idx"});
    }
    format_params.insert(format_params.end(), values.params.begin(), values.params.end());
    constants.push_back({fmt::format("using Offset = {};", offset_type), "row_ptr element"});
    call = fmt::format(
        "spmvc::spmm::csr_stream<kK, kColumnLanes, kRowLanes, kBlockSize, kRowMajor, kVec, "
        "Offset, Value, Acc>(\n      nrows, ncols, row_blocks, row_ptr, {}, {}, x, y, alpha, "
        "beta);",
        narrow ? "spmvc::csr_stream::NarrowColumns{col_base, col16, col_wide}"
               : "spmvc::csr_stream::WideColumns{col_idx}",
        values.pass);
  } else if (s.format == "ell") {
    const auto& p = std::get<EllParams>(s.params);
    src.kernel_name =
        fmt::format("spmm_{}_w{}_t{}_{}{}_{}", p.row_lengths ? "ellr" : "ell", s.ell_width,
                    p.threads_per_row, shape_tag(k, layout, shape), vtag, prec);
    src.grid = row_grid;
    if (p.row_lengths) format_params.push_back({KernelParam::Kind::array, "row_lengths"});
    format_params.push_back({KernelParam::Kind::array, "col_idx"});
    format_params.insert(format_params.end(), values.params.begin(), values.params.end());
    constants.push_back({fmt::format("constexpr int kWidth = {};", s.ell_width),
                         "slots per row as encoded (a multiple of the slot lanes)"});
    constants.push_back(
        {fmt::format("constexpr bool kRowLengths = {};", p.row_lengths ? "true" : "false"),
         p.row_lengths ? "ELL-R: loop to the stored row length" : "plain ELL: stop at column -1"});
    call = fmt::format(
        "spmvc::spmm::ell<kK, kColumnLanes, kWidth, kRowLanes, kBlockSize, kRowLengths, "
        "kRowMajor, kVec, Value, Acc>(\n      nrows, ncols, {}, col_idx, {}, x, y, alpha, beta);",
        p.row_lengths ? "row_lengths" : "nullptr", values.pass);
  } else {  // sell
    const auto& p = std::get<SellParams>(s.params);
    const bool permuted = has_array(s, "perm");
    src.kernel_name =
        fmt::format("spmm_sell_h{}{}_t{}_{}_{}", p.slice_height, permuted ? "_sorted" : "",
                    p.threads_per_row, shape_tag(k, layout, shape), prec);
    src.grid = row_grid;
    format_params.push_back({KernelParam::Kind::array, "slice_ptr"});
    if (permuted) format_params.push_back({KernelParam::Kind::array, "perm"});
    format_params.push_back({KernelParam::Kind::array, "col_idx"});
    format_params.push_back({KernelParam::Kind::array, "values"});
    constants.push_back(
        {fmt::format("constexpr int kSliceHeight = {};", p.slice_height), "C: rows per slice"});
    constants.push_back({fmt::format("constexpr bool kPermuted = {};", permuted ? "true" : "false"),
                         "rows sorted within windows: y written through perm"});
    call = fmt::format(
        "spmvc::spmm::sell<kK, kColumnLanes, kSliceHeight, kRowLanes, kBlockSize, kPermuted, "
        "kRowMajor, kVec, Value, Acc>(\n      nrows, ncols, slice_ptr, {}, col_idx, values, x, y, "
        "alpha, beta);",
        permuted ? "perm" : "nullptr");
  }

  constants.push_back(
      {fmt::format("using Value = {};", codegen::value_type(s.precision)), "values, X and Y"});
  constants.push_back(
      {fmt::format("using Acc = {};", codegen::accumulate_type(s.precision)), "accumulation"});

  src.file_name = src.kernel_name + ".cu";
  src.headers = codegen::template_headers({"spmvc/spmm.cuh"});
  src.options = codegen::base_options();
  src.block = shape.block_size;
  src.params = {{KernelParam::Kind::rows, "nrows"}, {KernelParam::Kind::cols, "ncols"}};
  src.params.insert(src.params.end(), format_params.begin(), format_params.end());
  src.params.insert(src.params.end(), {{KernelParam::Kind::x, "x"},
                                       {KernelParam::Kind::y, "y"},
                                       {KernelParam::Kind::alpha, "alpha"},
                                       {KernelParam::Kind::beta, "beta"}});
  const auto decl = [&](const std::string& name) {
    return codegen::ArrayDecl{array_type(s, name)};
  };

  src.source = s.banner;
  src.source += fmt::format("// SpMM: Y = alpha*A*X + beta*Y, {} columns, {}-major X and Y\n", k,
                            row_major ? "row" : "column");
  if (s.row_map) src.source += "#define SPMVC_ROW_MAP 1  // y rows are written through row_map\n";
  src.source += "#include \"spmvc/spmm.cuh\"\n\n";
  src.source += codegen::constants_block(constants);
  src.source += fmt::format(
      R"(
static_assert(sizeof(Value) == {VB}, "values were encoded with {VB}-byte elements");
static_assert(kColumnLanes * kRowLanes <= 32, "a row's lanes fit in a warp");

{SIG}  {CALL}
}}
)",
      fmt::arg("VB", value_bytes(s.precision)),
      fmt::arg("SIG", codegen::entry_signature(src.kernel_name, src.params, s.precision, decl,
                                               "kBlockSize")),
      fmt::arg("CALL", call));
  return src;
}

void reference_spmm(const CsrMatrix& a, int k, DenseLayout layout, std::span<const double> x,
                    std::span<double> y, double alpha, double beta) {
  check_k(k);
  const auto ku = static_cast<std::size_t>(k);
  if (x.size() != static_cast<std::size_t>(a.ncols) * ku ||
      y.size() != static_cast<std::size_t>(a.nrows) * ku)
    throw InputError("reference_spmm", 0,
                     fmt::format("X has {} elements (need {} x {}), Y has {} (need {} x {})",
                                 x.size(), a.ncols, k, y.size(), a.nrows, k));
  const bool rm = layout == DenseLayout::row_major;
  const auto nr = static_cast<std::size_t>(a.nrows), nc = static_cast<std::size_t>(a.ncols);
  std::vector<double> sum(ku);
  for (std::size_t r = 0; r < nr; ++r) {
    std::fill(sum.begin(), sum.end(), 0.0);
    for (auto j = a.row_ptr[r]; j < a.row_ptr[r + 1]; ++j) {
      const auto c = static_cast<std::size_t>(a.col_idx[static_cast<std::size_t>(j)]);
      const double v = a.values[static_cast<std::size_t>(j)];
      for (std::size_t q = 0; q < ku; ++q) sum[q] += v * x[rm ? c * ku + q : q * nc + c];
    }
    for (std::size_t q = 0; q < ku; ++q) {
      double& out = y[rm ? r * ku + q : q * nr + r];
      out = alpha * sum[q] + (beta != 0.0 ? beta * out : 0.0);
    }
  }
}

CsrMatrix transpose(const CsrMatrix& a) {
  CsrMatrix t;
  t.nrows = a.ncols;
  t.ncols = a.nrows;
  t.row_ptr.assign(static_cast<std::size_t>(a.ncols) + 1, 0);
  for (const std::int32_t c : a.col_idx) ++t.row_ptr[static_cast<std::size_t>(c) + 1];
  for (std::size_t i = 1; i < t.row_ptr.size(); ++i) t.row_ptr[i] += t.row_ptr[i - 1];
  t.col_idx.resize(a.col_idx.size());
  t.values.resize(a.values.size());
  std::vector<std::int64_t> next(t.row_ptr.begin(), t.row_ptr.end() - 1);
  // Rows of A in order: each row of A^T receives its columns in increasing order.
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    for (auto j = a.row_ptr[static_cast<std::size_t>(r)];
         j < a.row_ptr[static_cast<std::size_t>(r) + 1]; ++j) {
      const auto c = static_cast<std::size_t>(a.col_idx[static_cast<std::size_t>(j)]);
      const auto at = static_cast<std::size_t>(next[c]++);
      t.col_idx[at] = static_cast<std::int32_t>(r);
      t.values[at] = a.values[static_cast<std::size_t>(j)];
    }
  }
  return t;
}

KernelSource transpose_source() {
  KernelSource k;
  k.kernel_name = kTransposeCountEntry;
  k.file_name = "spmvc_transpose.cu";
  k.headers = codegen::template_headers({"spmvc/transpose.cuh"});
  k.options = codegen::base_options();
  k.block = kTransposeBlock;
  k.source =
      fmt::format(R"(// Generated by spmvc: A^T's CSR arrays built on the GPU from A's.
#include "spmvc/transpose.cuh"

namespace {{
constexpr int kBlock = {B};  // threads per block of every entry point
}}  // namespace

extern "C" __global__ void __launch_bounds__(kBlock)
    {COUNT}(long long nnz, const int* __restrict__ col_idx, int* __restrict__ counts) {{
  spmvc::transpose::count(nnz, col_idx, counts);
}}

extern "C" __global__ void __launch_bounds__(kBlock)
    {F64}(long long nrows, const int* __restrict__ row_ptr,
        const int* __restrict__ col_idx, const double* __restrict__ values,
        int* __restrict__ next, int* __restrict__ t_col, double* __restrict__ t_values) {{
  spmvc::transpose::fill(nrows, row_ptr, col_idx, values, next, t_col, t_values);
}}

extern "C" __global__ void __launch_bounds__(kBlock)
    {F32}(long long nrows, const int* __restrict__ row_ptr,
        const int* __restrict__ col_idx, const float* __restrict__ values,
        int* __restrict__ next, int* __restrict__ t_col, float* __restrict__ t_values) {{
  spmvc::transpose::fill(nrows, row_ptr, col_idx, values, next, t_col, t_values);
}}
)",
                  fmt::arg("B", kTransposeBlock), fmt::arg("COUNT", kTransposeCountEntry),
                  fmt::arg("F64", kTransposeFillF64Entry), fmt::arg("F32", kTransposeFillF32Entry));
  return k;
}

}  // namespace compiler
}  // namespace spmvc
