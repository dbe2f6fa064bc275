// What a caller asks of compile() and of the host pipeline (spmvc/build.hpp): precision, format,
// planner, ordering, value coding, cache.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "spmvc/kernel.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/reorder.hpp"

namespace spmvc {

/// How compile() chooses among the planner's candidates.
enum class PlannerMode {
  model,    ///< the cost model's lowest predicted time
  measure,  ///< compile the model's best few, time them on the GPU, keep the fastest, and
            ///< remember the decision on disk by matrix fingerprint (needs disk_cache for that)
};

struct Options {
  Precision precision = Precision::f64;
  /// "auto" lets the planner choose; a format name forces it.
  std::string format = "auto";
  /// Forces the csr parameters (format must be "auto" or "csr").
  std::optional<CsrParams> csr;
  /// Forces a parameter set of any format, and so the format (e.g. spmvc::EllParams{...}).
  std::optional<FormatParams> params;
  /// Keep compiled kernels on disk ($SPMVC_CACHE_DIR, else $XDG_CACHE_HOME/spmvc, else
  /// ~/.cache/spmvc). The in-memory cache is always on.
  bool disk_cache = true;
  /// Overrides the cache directory.
  std::string cache_dir;
  int device = 0;
  PlannerMode planner = PlannerMode::model;
  /// Let the planner store values as table indices, or not at all for a pattern matrix (every
  /// value 1), when that moves fewer bytes. The operator then needs a new compile() whenever the
  /// values change, even with the pattern kept.
  bool value_coding = true;
  /// Reorder the matrix before encoding: "none", or an ordering of spmvc/reorder.hpp ("rcm",
  /// "amd", "metis", "d", "dset", "bar", "sort"). The operator hides it: x and y stay in the
  /// caller's order, y written through the row map inside the kernels.
  std::string reorder = "none";
  /// With a symmetric ordering (rcm, amd, metis): also renumber the columns, which makes the
  /// stored indices the reordered ones (what BRO's delta coding sees) at the price of one gather
  /// of x per multiply. Off: columns keep the caller's numbers and x is read in place.
  bool renumber_columns = false;
  ReorderOptions reorder_options;
  /// A precomputed ordering (e.g. from compute_ordering on a matrix this one replicates); used
  /// instead of computing `reorder`.
  std::optional<Ordering> ordering;
  /// measure mode: how many formats' best candidates to time (csr's is always among them). Four
  /// is where timing more formats stopped finding faster ones on the H100 suite (the replay is in
  /// bench/results/README.md, suite v1).
  int measure_candidates = 4;
  /// Inspect everything (block fill, distinct values, symmetry) rather than only the row scan
  /// the planner uses; Operator::profile() then holds the full Profile. Costs several times the
  /// row scan on large matrices.
  bool full_inspection = false;
  /// compile(CsrMatrix): also keep the matrix on the device as plain CSR in the caller's order
  /// (32-bit offsets and columns, values in the precision's type: 12 or 8 bytes a nonzero),
  /// from which Operator::apply_transpose builds A^T and apply_many builds an SpMM encoding for
  /// formats without an SpMM kernel, each on first use. compile(DeviceCsr) always has it (the
  /// caller's arrays) and ignores this.
  bool keep_csr = false;
  /// Rewrites the generated translation unit before it is compiled (and cached under its new
  /// text), e.g. tooling::flatten to run the flattened kernel in place of the template one. The
  /// result must keep the entry point's name, parameters and launch shape.
  std::function<KernelSource(const KernelSource&)> transform_source;
};

}  // namespace spmvc
