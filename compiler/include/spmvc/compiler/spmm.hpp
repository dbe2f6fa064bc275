// SpMM and the transposed multiply on the host side: the SpMM translation unit over a plan's
// own encoding (templates/spmm.cuh), the unit that transposes a CSR matrix on the GPU
// (templates/transpose.cuh), and the host references both are checked against.
//
// Host C++ only: the runtime compiles these units and launches them (runtime/operations.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spmvc/dense.hpp"
#include "spmvc/kernel.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"

namespace spmvc::compiler {

/// What SpMM codegen needs to know of a compiled plan: its format, parameters and sizes and the
/// names and element types of its encoded arrays. Holds no matrix data, so an operator keeps it
/// and generates the SpMM unit for a k when a multiply first asks for it.
struct SpmmSubject {
  std::string format;
  FormatParams params;
  Precision precision = Precision::f64;
  std::int64_t nrows = 0, ncols = 0, nnz = 0;
  double row_mean = 0;
  /// The encoded arrays, in encoding order.
  std::vector<std::pair<std::string, ElemType>> arrays;
  std::int64_t ell_width = 0;   ///< ell: slots per row as encoded
  std::int64_t row_blocks = 0;  ///< csr_stream: row blocks (its grid)
  bool row_map = false;         ///< rows reordered: y written through the row map
  bool columns_renumbered = false;
  /// The inspector's view of the rows, for the choice of engine: row length standard deviation
  /// over the mean, and x sectors per nonzero (Profile::x_sectors / nnz: 0.25 when each row reads
  /// x in runs, 1 when every nonzero reads its own sector; 0 when not measured).
  double row_spread = 0;
  double x_scatter = 0;
  /// The longest row over the mean (Profile::row_max / row_mean; 0 when unknown).
  double row_skew = 0;
  /// The plan's banner (codegen::banner), repeated at the top of the SpMM unit.
  std::string banner;
};

/// The subject of `plan` over `encoded` (the host pipeline's build).
SpmmSubject spmm_subject(const Plan& plan, const Encoded& encoded, const Profile& profile);
/// The subject of a plan built from device arrays (compile(DeviceCsr): csr or csr_stream on the
/// caller's 32-bit row_ptr and col_idx, or ell and sell on the GPU build's arrays, named as the
/// host encoder names them) with `row_blocks` csr_stream row blocks.
SpmmSubject spmm_subject_device(const Plan& plan, const Profile& profile, std::int64_t row_blocks);

/// Why the subject's encoding has no SpMM kernel ("format hyb has no SpMM kernel", "columns
/// renumbered by the ordering"), or nullopt when generate_spmm applies.
std::optional<std::string> spmm_unsupported(const SpmmSubject& subject);

/// How the SpMM kernel splits a row's group of lanes: column lanes (each accumulates every
/// column_lanes-th column) times nonzero lanes (each walks every row_lanes-th nonzero).
/// Row-major units move each lane's columns in packs of `vector` consecutive elements (one 8- or
/// 16-byte load or store; 1 for column-major, and where k has no such divisor).
struct SpmmShape {
  int column_lanes = 1;
  int row_lanes = 1;
  int block_size = 256;
  int vector = 1;
};
/// The shape for `k` columns in `layout` (k in 1..kMaxDenseColumns); `packs` false keeps one
/// element per load (for X or Y not aligned to the packs: spmm_pack_bytes).
SpmmShape spmm_shape(const SpmmSubject& subject, int k, DenseLayout layout, bool packs = true);
/// The alignment in bytes a unit of `shape` needs of X and Y (one element's size where it moves
/// single elements).
inline int spmm_pack_bytes(const SpmmShape& shape, Precision precision) {
  return shape.vector * value_bytes(precision);
}

/// What runs apply_many for one (k, layout): the generated unit, or cusparseSpMM on the
/// operator's plain CSR.
enum class SpmmEngine { kernel, cusparse };
struct SpmmChoice {
  SpmmEngine engine = SpmmEngine::kernel;
  /// Time both on the GPU at the first call and keep the faster (`engine` is the model's pick).
  bool time_both = false;
  std::string why;
};
/// Where the model takes cusparseSpMM over any generated unit (fitted on the H200 over suite v13
/// with the packed units, bench/results/2026-11-28-h200-spmm-packs: k = 32 row-major with both
/// engines timed on every entry, spmm-k32-row-measure.json, scripts/model/spmm-engine-eval.py;
/// and k = 8 row-major, spmm-k8-row-auto.json):
/// - hub rows, at any k and in either layout: the longest row at least kSpmmHubRowRatio times the
///   mean (Kronecker graphs: one row group walks thousands of nonzeros while the others idle;
///   3-9x slower than cuSPARSE at k = 32, 5-10x at k = 8, and 1.1-1.4x column-major at k = 8 on
///   the H100);
/// - fp32, row-major, k at least kSpmmCusparseMinK: a longest row at least kSpmmF32SkewRatio
///   times the mean (Maragal_6, email-Enron: CSR_ALG3 1.06-1.35x faster at k = 32, where in fp64
///   the generated unit is 1.4-1.9x faster).
/// Elsewhere the generated unit runs: with its packed loads it was faster on every other entry,
/// by 1.2-3.5x. (The rules fitted to the one-element units, fp64 short scattered rows and fp32
/// long rows to cuSPARSE, picked the slower engine on 13 of 58 entries with the packed units.)
inline constexpr int kSpmmCusparseMinK = 16;
inline constexpr double kSpmmHubRowRatio = 1000.0;
inline constexpr double kSpmmF32SkewRatio = 100.0;
/// The engine for `k` columns in `layout` under Options::spmm_cusparse `mode`: "never" (the
/// generated unit), "always" (cusparseSpMM), "auto" (the model above; with `measure_planner`,
/// PlannerMode::measure, both are timed instead), "measure" (both timed). `have_csr`: the
/// operator keeps a plain CSR on the device (cuSPARSE's input); `no_csr` says why not. Without
/// one, or with f32acc64, the generated unit runs, and "always" is an InputError. InputError
/// for an unknown mode and for k outside 1..kMaxDenseColumns.
SpmmChoice choose_spmm_engine(const SpmmSubject& subject, int k, DenseLayout layout,
                              std::string_view mode, bool measure_planner, bool have_csr,
                              std::string_view no_csr = {});
/// The cuSPARSE algorithm apply_many asks for: column-major CSR_ALG1; row-major CSR_ALG2 in fp64
/// and CSR_ALG3 in fp32 (the fastest of the three most often on an H100 at k = 32). Its name is
/// the unit's kernel_name in Operator::spmm_source ("cusparseSpMM_CSR_ALG2"), or CSR_ALG1's
/// where cuSPARSE declines the one asked for.
const char* spmm_cusparse_algorithm(DenseLayout layout, Precision precision);

/// The SpMM unit for `k` columns in `layout`: entry point kernel_name, parameters in binding
/// order (rows, cols, the format's arrays, x, y, alpha, beta); with `packs` false, one element
/// per load and store whatever the shape allows. InputError for k outside 1..kMaxDenseColumns;
/// InternalError when spmm_unsupported.
KernelSource generate_spmm(const SpmmSubject& subject, int k, DenseLayout layout,
                           bool packs = true);

/// Y = alpha*A*X + beta*Y on the host in fp64 (X and Y dense in `layout`, k columns): the
/// reference the GPU tests compare against. InputError when the sizes disagree.
void reference_spmm(const CsrMatrix& a, int k, DenseLayout layout, std::span<const double> x,
                    std::span<double> y, double alpha, double beta);

/// A^T (ncols x nrows) with sorted rows, on the host.
CsrMatrix transpose(const CsrMatrix& a);

/// The unit that builds A^T's CSR arrays on the GPU from A's (32-bit offsets and columns): a
/// count of each column's nonzeros, then (after an exclusive scan of the counts, the device
/// build's) a fill that places each nonzero at its column's next free slot.
KernelSource transpose_source();
/// Threads per block of its entry points.
inline constexpr int kTransposeBlock = 256;
inline constexpr const char* kTransposeCountEntry = "spmvc_transpose_count";
inline constexpr const char* kTransposeFillF64Entry = "spmvc_transpose_fill_f64";
inline constexpr const char* kTransposeFillF32Entry = "spmvc_transpose_fill_f32";

}  // namespace spmvc::compiler
