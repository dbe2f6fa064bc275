// What a caller asks of compile() and of the host pipeline (spmvc/build.hpp): precision, format,
// planner, ordering, value coding, cache.
#pragma once

#include <cstdint>
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
  measure,  ///< compile the model's best few, time them on the GPU (and cuSPARSE's CSR SpMV
            ///< where `cusparse` allows it), keep the fastest, and remember the decision on
            ///< disk by matrix fingerprint (needs disk_cache for that)
};

/// Where compile(CsrMatrix) inspects, plans and encodes the matrix.
enum class BuildMode {
  /// On the GPU where the options allow it (spmvc::compiler::choose_build says why not), else
  /// on the host.
  automatic,
  /// The host pipeline (spmvc::build): every format, ordering, planner mode and inspection depth.
  host,
  /// The GPU build of compile(DeviceCsr) on an uploaded copy of the matrix; an InputError naming
  /// the option when the options need the host pipeline.
  device,
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
  /// value 1), when that moves fewer bytes. Operator::update_values then re-plans for new values
  /// the coding cannot hold (more distinct values than its table, values other than 1).
  bool value_coding = true;
  /// Only plans whose y is bitwise the same in every multiply of the same x (no floating-point
  /// atomics: hyb, bro_coo and bro_hyb are rejected, amb runs its variant that reduces partial
  /// sums in a fixed order; cuSPARSE, where it is the engine, runs its CSR ALG2, which
  /// cuSPARSE documents as bitwise reproducible); `spmvc plan --deterministic` shows each
  /// rejection's reason.
  bool deterministic = false;
  /// Opt-in mixed precision: store the values narrower than `precision`, each rounded to
  /// nearest, and multiply and accumulate in `precision` (MixedPrecision::f32 for an fp64
  /// operator, bf16 for an f32 or f32acc64 one; another pairing is an InputError). Half the
  /// value bytes, at a rounding error the plan states (Plan::rounding: the values' largest
  /// relative error and the bound on each y_i relative to (|A||x|)_i). A matrix whose values a
  /// table codes exactly (all ones, up to 256 distinct values) keeps that coding; formats
  /// without a value coding (sell, cci, amb and the block formats) have no mixed-precision
  /// candidate, and forcing one is an InputError. The full-precision plan stays in the running
  /// unless `mixed_fallback` is off (below). Operator::update_values rounds new values the same
  /// way. Host matrices only: compile(DeviceCsr) refuses it.
  MixedPrecision mixed_precision = MixedPrecision::off;
  /// With `mixed_precision` asked for, format "auto" and no forced parameters: the planner ranks
  /// the mixed-precision candidates together with the full-precision ones (cuSPARSE among them,
  /// under `cusparse`) and keeps a full-precision plan predicted faster than every
  /// mixed-precision candidate, or measured faster in measure mode: faster and exact, it is
  /// what a caller trading accuracy for speed wants. Plan::rounding is then empty and
  /// Plan::mixed_fallback says why, by how much. false insists on the rounded values (the
  /// mixed-precision candidates alone, cuSPARSE refused; CLI `--insist-mixed`). A forced format
  /// or parameter set always takes mixed precision.
  bool mixed_fallback = true;
  /// cuSPARSE as the plan's engine (spmvc::Engine::cusparse): "auto" hands the multiply to
  /// cuSPARSE's CSR SpMV (ALG1, or ALG2 for deterministic plans; preprocessed at compile time,
  /// graph-capturable) where the planner predicts no generated candidate faster; "never" keeps
  /// generated kernels only; "always" runs cuSPARSE for every multiply (comparisons, tests).
  /// Applies with format "auto" and no forced parameters, not with f32acc64 or an ordering the
  /// caller asked for (refused
  /// there with "always"); an ordering reorder "auto" chose is dropped where cuSPARSE on the
  /// caller's order is predicted faster, except the hub order (dbg for hyb on fp32 hub graphs,
  /// compiler::choose_ordering), whose gain the cost model does not see. Measure mode times
  /// cuSPARSE beside the generated candidates under the same rules ("always": cuSPARSE alone) and
  /// keeps it where none is faster.
  std::string cusparse = "auto";
  /// Reorder the matrix before encoding: "none", an ordering of spmvc/reorder.hpp ("rcm",
  /// "amd", "metis", "d", "dset", "bar", "sort", "degree", "dbg"), or "auto": the planner decides
  /// and says why (compiler::choose_ordering: dbg for hyb on a hub graph, RCM where x accesses
  /// are scattered, both with renumbered columns, the hub order's rows kept in the caller's
  /// order; with plan_order, RCM wherever it makes x's accesses more local; with `multiplies`,
  /// neither where too few are expected to repay the order's host time). The operator hides it:
  /// x and y stay in the caller's order, y written through the row map inside the kernels where
  /// the rows moved (unless plan_order).
  std::string reorder = "none";
  /// With a symmetric ordering (rcm, amd, metis, degree, dbg): also renumber the columns, which
  /// makes the stored indices the reordered ones (what BRO's delta coding sees) at the price of one
  /// gather of x per multiply. Off: columns keep the caller's numbers and x is read in place.
  bool renumber_columns = false;
  /// With renumbered columns: move the columns alone (B = A Q^T) and keep the rows in the
  /// caller's order, so y is written in place instead of through the row map; x is still gathered
  /// each multiply. Reorder "auto" does so for its hub order in the caller's order. Not with
  /// plan_order, whose x and y share one order.
  bool keep_row_order = false;
  /// Vectors in the plan's order: where the operator reorders the matrix (an ordering asked for,
  /// or one reorder "auto" chose), apply() takes x in the reordered column order and gives y in
  /// the reordered row order, so its kernels neither gather x into that order nor write y
  /// through the row map: on the H200 that traffic is 5-12% of a multiply on a Kronecker graph
  /// under dbg. For methods that keep their vectors in one order over many multiplies (power
  /// iteration, PageRank, Krylov solvers whose other operations are order-free): permute once
  /// with Operator::to_plan_order and from_plan_order (or with plan_rows() and plan_columns()).
  /// x's order and y's are one order when the columns were renumbered (reorder "auto" does; an
  /// ordering asked for needs renumber_columns), so y can be the next x. Without an ordering
  /// the plan's order is the caller's. Such an operator is not tiered (the generic tier
  /// multiplies in the caller's order) and keeps its order through update_values. apply_many
  /// takes X's columns and gives Y's in the same orders; apply_transpose takes x in the plan's
  /// row order and gives y in its column order (keep_csr keeps the matrix reordered for them).
  bool plan_order = false;
  ReorderOptions reorder_options;
  /// A precomputed ordering (e.g. from compute_ordering on a matrix this one replicates); used
  /// instead of computing `reorder`.
  std::optional<Ordering> ordering;
  /// measure mode: how many formats' best candidates to time (csr's is always among them). Four
  /// is where timing more formats stopped finding faster ones on the H100 suite (the replay is in
  /// bench/results/README.md, suite v1).
  int measure_candidates = 4;
  /// How many multiplies the caller expects with this matrix (at least 1). Given, the planner
  /// picks the candidate with the least one-time cost (inspection, encoding, upload and, unless
  /// cached_kernels, the kernel's NVRTC compile, each modelled from the GPU's benchmark suite:
  /// calibration/<gpu>_build.inc) plus this many times its predicted multiply time; a short
  /// horizon favours formats that are cheap to build. Unset (the default), the planner ranks by
  /// multiply time alone, as for a caller who multiplies the matrix many times: spmvc's purpose,
  /// and the choice that does not change for callers who predate this option. Measure mode
  /// times the best candidates of this ranking and keeps the fastest multiply.
  std::optional<std::int64_t> multiplies;
  /// With multiplies: the kernels are expected in the kernel cache (a matrix like one compiled
  /// before), so no candidate is charged an NVRTC compile.
  bool cached_kernels = false;
  /// Inspect everything (block fill, distinct values, symmetry) rather than only the row scan
  /// the planner uses; Operator::profile() then holds the full Profile. Costs several times the
  /// row scan on large matrices.
  bool full_inspection = false;
  /// Tiered compile: when the chosen kernel is in neither the memory nor the disk cache,
  /// compile() returns without waiting for NVRTC. Until the specialised kernel is ready, apply()
  /// multiplies with a generic CSR kernel built into the library (on a device copy of the
  /// matrix, or on the caller's arrays for compile(DeviceCsr)) while a background thread compiles
  /// the specialised kernel and uploads its encoding; the first apply() after that switches to
  /// it and the generic tier's memory is freed. The two tiers round differently, so multiplies
  /// before and after the switch agree to floating-point tolerance, not bit for bit: false gives
  /// the blocking compile, where every multiply runs the specialised kernel. Unset: on, unless
  /// the environment sets SPMVC_TIERED=0 (a whole process, such as a test suite that checks
  /// specialised kernels, turned off without code changes). Measure mode always blocks (it times
  /// compiled candidates), and so does compile(CsrMatrix) when the device cannot hold the
  /// generic tier's copy of the matrix beside the encoding. While the kernel cache holds no
  /// kernel at all, the GPU build of format auto also plans and encodes on that thread: compile()
  /// returns once the GPU has checked the arrays, and Operator::plan(), profile(), source() and
  /// device_bytes() wait for the plan.
  std::optional<bool> tiered;
  /// compile(CsrMatrix): where the matrix is inspected, planned and encoded. The GPU build
  /// uploads the CSR once (32-bit offsets and columns, values in the precision's type) and runs
  /// compile(DeviceCsr)'s stages on it: GPU inspection, the planner over the formats the GPU
  /// builds (csr, csr_stream, ell, sell, hyb, bro_ell, bro_coo, bro_hyb, bcsr, bellpack, dia) and
  /// the cuSPARSE engine, and the GPU encoders. `automatic` (the default) takes the GPU build
  /// unless the options ask for what only the host pipeline does (an ordering, measure mode,
  /// full inspection, mixed precision, cuSPARSE "always", a format or parameters with only a
  /// host encoder), the matrix is past 32-bit offsets or its GPU build would not fit the
  /// device's free memory (compiler::gpu_build_bytes), or `multiplies` says enough to repay the
  /// host pipeline (heuristics::kHostPipelineMultiplies64 / 32: 1.8M fp64, 550k fp32, the
  /// suite's medians); CompileTimings::build and build_why say which ran and why. On suite v13
  /// (H200) its picks multiply 1.4-1.5% slower than the host pipeline's (geomean) for a one-time
  /// cost of 7-9 ms at 16M nonzeros against 100 ms to over a second. `host` and `device` force
  /// one or the other (BuildMode).
  BuildMode build = BuildMode::automatic;

  /// compile(CsrMatrix): also keep the matrix on the device as plain CSR in the caller's order
  /// (32-bit offsets and columns, values in the precision's type: 12 or 8 bytes a nonzero),
  /// from which Operator::apply_transpose builds A^T and apply_many builds an SpMM encoding for
  /// formats without an SpMM kernel, each on first use. compile(DeviceCsr) always has it (the
  /// caller's arrays) and ignores this.
  bool keep_csr = false;
  /// apply_many's engine per (k, layout): "auto" runs cusparseSpMM on the plain CSR the
  /// operator keeps where compiler::choose_spmm_engine's model says (rows with hubs at any k;
  /// skewed fp32 rows with row-major X and k >= 16), the generated SpMM unit elsewhere; "measure"
  /// times both at the first call for a (k, layout) and keeps the faster, as "auto" does under
  /// PlannerMode::measure; "never" runs the generated unit only; "always" runs cusparseSpMM for
  /// every k and layout (an InputError at apply_many where the operator keeps no plain CSR, or
  /// with f32acc64). The algorithm is compiler::spmm_cusparse_algorithm's. CompileTimings::
  /// spmm_note says which ran and why.
  std::string spmm_cusparse = "auto";
  /// Rewrites the generated translation unit before it is compiled (and cached under its new
  /// text), e.g. tooling::flatten to run the flattened kernel in place of the template one. The
  /// result must keep the entry point's name, parameters and launch shape, and the waits of a
  /// chained unit (KernelSource::chained; tooling::flatten keeps them), or clear `chained`: its
  /// launches after the first then go out in plain stream order.
  std::function<KernelSource(const KernelSource&)> transform_source;
};

}  // namespace spmvc
