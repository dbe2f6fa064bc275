// The operations an Operator runs besides apply(): SpMM (apply_many) and the transposed multiply
// (apply_transpose). What they build on first use lives here, beside the operator's own arrays:
// the SpMM units per (k, layout), and the operators built from a plain CSR copy of the matrix
// (A^T, and the SpMM encoding of a plan whose format has no SpMM kernel).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cusparse_spmm.hpp"
#include "device.hpp"
#include "device_csr.hpp"
#include "spmvc/build.hpp"
#include "spmvc/compiler/spmm.hpp"
#include "spmvc/spmvc.hpp"

namespace spmvc::runtime {

struct Operations {
  std::mutex mutex;
  /// The caller's options, for the units and operators built on first use.
  Options options;
  /// The plan's encoding as SpMM codegen sees it.
  std::optional<compiler::SpmmSubject> subject;
  /// A plain CSR of the matrix on the device (32-bit offsets), in the order apply() takes its
  /// vectors: the caller's arrays (compile(DeviceCsr)), or `resident` (compile(CsrMatrix) with
  /// Options::keep_csr; the reordered matrix for an operator in the plan's order). Absent
  /// otherwise.
  std::optional<DeviceCsr> csr;
  std::optional<ResidentCsr> resident;
  /// For a `resident` in the plan's order: the caller's CSR index of each of its entries (int32),
  /// which new values are gathered through. Empty otherwise.
  DeviceBuffer value_sources;
  /// Why `csr` is absent.
  std::string no_csr;

  /// How apply_many runs one (k, layout): a compiled SpMM unit and its array arguments by
  /// parameter index, or (engine cusparse) cusparseSpMM on `csr`, with only the source's
  /// kernel_name set (the cuSPARSE algorithm).
  struct SpmmUnit {
    compiler::SpmmEngine engine = compiler::SpmmEngine::kernel;
    KernelSource source;
    std::shared_ptr<const LoadedKernel> kernel;
    std::vector<const void*> array_args;
    /// The alignment a unit of packs needs of X and Y (spmm_pack_bytes); 0 for a unit of single
    /// elements and for cuSPARSE.
    int pack_bytes = 0;
  };
  std::map<std::pair<int, DenseLayout>, SpmmUnit> spmm;
  /// The one-element copies of units whose packs a caller's X or Y was not aligned to, made on
  /// the first such call.
  std::map<std::pair<int, DenseLayout>, SpmmUnit> spmm_unpacked;
  /// The operator apply_many runs on when the plan's encoding has none (built from `csr`).
  std::unique_ptr<Operator> spmm_fallback;
  /// The (k, layout)s decided for the fallback operator (no unit in `spmm`), so that a measured
  /// decision is made once, not on every call.
  std::set<std::pair<int, DenseLayout>> spmm_on_fallback;
  /// cusparseSpMM on `csr`, made when a (k, layout) first picks it.
  std::unique_ptr<CusparseSpmmEngine> cusparse_spmm;

  /// A^T's CSR (built on the GPU from `csr`) and the operator compiled from it.
  DeviceBuffer t_row_ptr, t_col_idx, t_values;
  std::unique_ptr<Operator> transposed;
};

/// Attaches the operations of an operator built by the host pipeline (`build` of `a`): the SpMM
/// subject of its plan and, with Options::keep_csr, `a` uploaded as plain CSR.
void attach_operations(Operator::Impl& im, const Build& build, const Options& options);
/// Uploads `a` as the operator's plain CSR (Options::keep_csr); reordered by `plan_order_map` for
/// an operator in the plan's order (Options::plan_order), so that SpMM and the transposed
/// multiply take and give their vectors in that order too.
void keep_csr(Operator::Impl& im, const CsrMatrix& a, const Options& options,
              const RowColumnMap* plan_order_map = nullptr);
/// Attaches the operations of an operator built from device arrays: the caller's `a` is the
/// plain CSR; `row_blocks` is csr_stream's count (0 for csr).
void attach_operations(Operator::Impl& im, const DeviceCsr& a, const Options& options,
                       std::int64_t row_blocks);

/// After Operator::update_values kept the plan: the kept CSR (Options::keep_csr) gets the new
/// values (`values`: nnz doubles on the host, or nnz of the plan's type on the device), and what
/// was built from the old ones (A^T, an SpMM fallback operator) is built again at its next use.
void values_changed(Operator::Impl& im, const void* values, bool on_device);

}  // namespace spmvc::runtime
