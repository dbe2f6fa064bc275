// spmvc: a compiler for y = alpha*A*x + beta*y on NVIDIA GPUs.
//
//   spmvc::CsrMatrix a = spmvc::read_matrix_market("A.mtx.xz");
//   spmvc::Operator op = spmvc::compile(a, {.precision = spmvc::Precision::f64});
//   op.apply(d_x, d_y);              // device pointers, caller's row/column order
//
// compile() inspects the matrix, plans a format, generates a specialised kernel, compiles it with
// NVRTC (cached in memory and on disk), uploads the encoded matrix and returns the operator.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "spmvc/error.hpp"
#include "spmvc/kernel.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"
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
  /// measure mode: how many formats' best candidates to time (csr's is always among them). 4:
  /// replaying the H100 suite's measured times (bench/results/2026-11-22-h100-suite-v1), the
  /// best of the model's top 1/2/3/4/12 formats plus csr is within 5% of the fastest on 16/20/25/
  /// 26/28 of 28 matrices in fp64 and 18/22/24/26/28 in fp32.
  int measure_candidates = 4;
  /// Inspect everything (block fill, distinct values, symmetry) rather than only the row scan
  /// the planner uses; Operator::profile() then holds the full Profile. Costs several times the
  /// row scan on large matrices.
  bool full_inspection = false;
  /// Rewrites the generated translation unit before it is compiled (and cached under its new
  /// text), e.g. tooling::flatten to run the flattened kernel in place of the template one. The
  /// result must keep the entry point's name, parameters and launch shape.
  std::function<KernelSource(const KernelSource&)> transform_source;
};

/// A CSR matrix whose arrays are already in device memory (for instance the ones a cuSPARSE
/// descriptor was made from). compile(DeviceCsr) builds on the GPU from them without copying:
/// the Operator reads these arrays in every multiply, so they must stay allocated and unchanged
/// for its lifetime.
struct DeviceCsr {
  std::int64_t nrows = 0, ncols = 0, nnz = 0;
  const std::int32_t* row_ptr = nullptr;  ///< nrows+1 offsets: row_ptr[0] = 0, row_ptr[nrows] = nnz
  const std::int32_t* col_idx = nullptr;  ///< nnz column indices in [0, ncols), any order in a row
  /// nnz values: double for Precision::f64, float for f32 and f32_acc64.
  const void* values = nullptr;
};

/// Time spent in each one-time step of compile(), in seconds.
struct CompileTimings {
  double inspect = 0, plan = 0, encode = 0, codegen = 0, compile = 0, upload = 0;
  /// measure mode: compiling and timing the candidates (0 when a decision was remembered).
  double measure = 0;
  /// Computing the ordering and permuting the matrix; with reorder "auto", also deciding (0 with
  /// reorder "none").
  double reorder = 0;
  /// Where the kernel binary came from: "nvrtc", "memory" or "disk".
  std::string kernel_origin;
  /// Registers per thread (ptxas's log, else the driver's count for the loaded kernel).
  int registers = -1;
  /// Bytes spilled per thread (ptxas's spill stores, else the driver's local memory per thread).
  int spill_bytes = -1;
  /// NVRTC's log for the kernel (ptxas resource lines included).
  std::string compile_log;
};

/// A compiled SpMV for one matrix on one device. Move-only.
class Operator {
 public:
  Operator(Operator&&) noexcept;
  Operator& operator=(Operator&&) noexcept;
  ~Operator();

  /// y = alpha*A*x + beta*y on device memory. x has ncols and y nrows elements, of the value
  /// type of the plan's precision (double for f64, float otherwise). `stream` is a cudaStream_t
  /// (nullptr: the default stream). Asynchronous with respect to the host.
  void apply(const void* x, void* y, double alpha = 1.0, double beta = 0.0,
             void* stream = nullptr) const;
  /// Convenience on host arrays: copies in, multiplies, copies out, synchronises.
  void apply_host(std::span<const double> x, std::span<double> y, double alpha = 1.0,
                  double beta = 0.0) const;

  std::int64_t nrows() const;
  std::int64_t ncols() const;
  const Plan& plan() const;
  const Profile& profile() const;
  const KernelSource& source() const;
  const CompileTimings& timings() const;
  /// Bytes of the encoded matrix resident on the device.
  std::int64_t device_bytes() const;

  struct Impl;

 private:
  explicit Operator(std::unique_ptr<Impl> impl);
  friend Operator compile(const CsrMatrix& a, const Options& options);
  friend Operator compile(const DeviceCsr& a, const Options& options);
  std::unique_ptr<Impl> impl_;
};

/// Inspects, plans, generates, JIT-compiles and uploads. Throws NoDeviceError without a GPU.
Operator compile(const CsrMatrix& a, const Options& options = {});

/// Plans and builds from a matrix already in device memory, on the GPU: one kernel pass over
/// the arrays gives the row-length statistics the planner needs, the values' distinct bit
/// patterns (up to 256), and checks the arrays (a decreasing row_ptr, row_ptr[0] != 0,
/// row_ptr[nrows] != nnz or a column out of range is an InputError naming the first fault);
/// csr_stream's row blocks and 8-bit value codes (a byte per nonzero in place of its value, for
/// matrices with at most 255 distinct values) are built on the GPU; the kernel comes from the
/// cache. Nothing is copied from the host, so the one-time cost is a few passes over the arrays
/// plus the kernel load: a cached build repays itself within tens of multiplies where the host
/// path (compile(CsrMatrix)) needs thousands. The price is the choice of plans: csr and
/// csr_stream on the caller's row_ptr and col_idx, values plain, dropped (all ones) or 8-bit
/// coded; no reordering; model planner only. Options that ask for more are InputErrors.
Operator compile(const DeviceCsr& a, const Options& options = {});

/// True when a CUDA device is usable; otherwise `why` says what is missing.
bool device_available(std::string* why = nullptr);

}  // namespace spmvc
