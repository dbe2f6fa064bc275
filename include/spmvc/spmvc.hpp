// spmvc: a compiler for y = alpha*A*x + beta*y on NVIDIA GPUs.
//
//   spmvc::CsrMatrix a = spmvc::read_matrix_market("A.mtx.xz");
//   spmvc::Operator op = spmvc::compile(a, {.precision = spmvc::Precision::f64});
//   op.apply(d_x, d_y);              // device pointers, caller's row/column order
//
// compile() inspects the matrix, plans a format, generates a specialised kernel, compiles it with
// NVRTC (cached in memory and on disk), uploads the encoded matrix and returns the operator.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "spmvc/dense.hpp"
#include "spmvc/error.hpp"
#include "spmvc/kernel.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/options.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"

namespace spmvc {

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
  /// Why the disk cache did not serve or keep the kernel ("disk cache off: <dir> is owned by uid
  /// N ..."); empty when it worked or is disabled by Options. The compile goes on regardless.
  std::string cache_note;
  /// Registers per thread (ptxas's log, else the driver's count for the loaded kernel).
  int registers = -1;
  /// Bytes spilled per thread (ptxas's spill stores, else the driver's local memory per thread).
  int spill_bytes = -1;
  /// NVRTC's log for the kernel (ptxas resource lines included).
  std::string compile_log;
  /// Launches of each apply() that start before the previous one ends (programmatic dependent
  /// launch: each waits inside for the one before it): the unit's launches less one on a GPU of
  /// sm_90 or newer, else 0. SPMVC_EARLY_LAUNCH=0 turns them off.
  int early_launches = 0;

  // Tiers (Options::tiered). With the blocking compile, or when the kernel was cached, every
  // apply runs the specialised kernel: tier is "specialised" and the rest stay as below.
  /// The tier apply() runs on: "generic" until the switch (before the first apply too),
  /// "specialised" from the apply() that switched on, and always without a generic tier.
  std::string tier;
  /// Multiplies run on the generic tier.
  std::int64_t generic_applies = 0;
  /// Seconds from the compile() call until the specialised kernel was compiled, loaded and its
  /// encoding on the device (-1: not yet, or no generic tier).
  double specialised_ready = -1;
  /// Seconds from the compile() call until the first apply() on the specialised kernel (-1: not
  /// yet, or no generic tier).
  double switched = -1;
  /// Setting up the generic tier inside compile(): its CSR copy uploaded and its kernel loaded.
  double generic_setup = 0;
  /// Why the background compile failed (the operator then stays on the generic tier); "" when
  /// it did not.
  std::string tier_error;

  /// apply_many: seconds spent preparing SpMM units (codegen, compile, load), over all (k,
  /// layout) pairs asked for so far, and how the last one runs ("own encoding: <kernel>", or
  /// the encoding built for it and why).
  double spmm = 0;
  std::string spmm_note;
  /// apply_transpose: seconds spent building A^T on the GPU and compiling its operator (at the
  /// first call), and what was built.
  double transpose = 0;
  std::string transpose_note;

  /// What runs apply(): "kernel" (the generated kernel) or "cusparse" (Plan::engine: cuSPARSE's
  /// CSR SpMV on the plan's arrays), and the seconds its descriptors, work buffer and
  /// cusparseSpMV_preprocess took inside compile().
  std::string engine = "kernel";
  double cusparse_setup = 0;

  /// Where the matrix was inspected, planned and encoded: "host" (the host pipeline, its
  /// encoding uploaded) or "device" (on the GPU: compile(DeviceCsr), or compile(CsrMatrix)
  /// after uploading the CSR, that upload being `upload`), and why (Options::build).
  std::string build = "host";
  std::string build_why;
  /// The GPU build's own kernels (inspection and encoders): "nvcc" (compiled into the library
  /// when it was built) or "nvrtc" (compiled at run time through the kernel cache, where the
  /// library was built without them); empty for the host build.
  std::string build_units;
};

/// What Operator::update_values did.
struct ValueUpdate {
  /// The new values did not fit the plan (a value-coded plan's table or fp32 storage, values
  /// dropped as all ones, or a matrix built from device arrays whose build chose another coding):
  /// the operator was planned and built again, and `why` says what did not fit. Its device
  /// arrays are new, so a CUDA graph captured from apply() before must be captured again.
  bool replanned = false;
  std::string why;
  /// Wall time of the update, the first call's tracing of the value order included.
  double seconds = 0;
};

/// The side of the matrix a vector belongs to: x has one element per column, y one per row.
enum class PlanAxis { rows, columns };

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

  /// New values for the same pattern: `values` (nnz of them, in the CSR order of the matrix
  /// compile() was given) replace the old ones. The plan's value arrays are rewritten on the
  /// GPU by a gather from that order into the encoding's (traced once, at the first call), with
  /// no recompile and every device pointer kept, so a graph captured from apply() stays valid.
  /// When the values do not fit the plan's value coding (ValueUpdate::why), the operator is
  /// planned and compiled again with them. Synchronous: waits for the device before and after.
  /// An operator built from device arrays (compile(DeviceCsr)) is built again on the GPU from
  /// its arrays and the new values (uploaded here into memory the operator owns); its launches
  /// then read new arrays, so a graph captured from it must be captured again.
  ValueUpdate update_values(std::span<const double> values);
  /// The same from device memory: nnz values of the plan's value type (double for f64, float
  /// otherwise). Plain and fp32-stored values are gathered from it on the GPU; a value table is
  /// coded on the host (one download). An operator built from device arrays then reads
  /// `device_values` in place, as compile(DeviceCsr) does, so it must outlive the operator.
  ValueUpdate update_values(const void* device_values);
  /// Y = alpha*A*X + beta*Y for k vectors at once (SpMM), on device memory: X is ncols x k and
  /// Y nrows x k, dense in `layout` (spmvc/dense.hpp), of the plan's value type; k is
  /// 1..kMaxDenseColumns. The first call for a (k, layout) generates and compiles an SpMM kernel
  /// for it (cached like any kernel; timings().spmm). Plans in csr, csr_stream, ell and sell
  /// run it over their own encoding, reading each matrix byte once for all k columns. Other
  /// formats, and orderings that renumber columns, have no SpMM kernel: the first call then
  /// builds a csr or csr_stream operator (compile(DeviceCsr)) from the plain CSR the operator
  /// keeps (compile(DeviceCsr) always; compile(CsrMatrix) with Options::keep_csr), and
  /// timings().spmm_note says so; without that CSR it is an InputError naming the format.
  /// Row-major units move each lane's columns of X and Y in packs of up to 16 bytes; where X or
  /// Y does not start on a multiple of the pack (an offset into an allocation), the call runs a
  /// one-element copy of the unit, compiled at the first such call.
  void apply_many(const void* x, void* y, int k, DenseLayout layout = DenseLayout::col_major,
                  double alpha = 1.0, double beta = 0.0, void* stream = nullptr) const;
  /// Convenience on host arrays (fp64 whatever the precision): copies in, multiplies, copies
  /// out, synchronises.
  void apply_many_host(std::span<const double> x, std::span<double> y, int k,
                       DenseLayout layout = DenseLayout::col_major, double alpha = 1.0,
                       double beta = 0.0) const;
  /// y = alpha*A^T*x + beta*y on device memory: x has nrows and y ncols elements. The first call
  /// builds A^T's CSR on the GPU by a counting sort of the plain CSR the operator keeps (see
  /// apply_many), plans and compiles it as compile(DeviceCsr) does, and keeps it
  /// (timings().transpose): later calls are one multiply by a matrix planned for A^T's own rows.
  /// Without the plain CSR it is an InputError saying to compile with Options::keep_csr.
  void apply_transpose(const void* x, void* y, double alpha = 1.0, double beta = 0.0,
                       void* stream = nullptr) const;
  /// Convenience on host arrays: x has nrows and y ncols elements.
  void apply_transpose_host(std::span<const double> x, std::span<double> y, double alpha = 1.0,
                            double beta = 0.0) const;
  /// The plan A^T runs with (building it as apply_transpose's first call does). Calling it, or
  /// spmm_source, ahead of time keeps the one-time work (compiles, allocations, synchronisation)
  /// out of a later apply_transpose or apply_many, e.g. one captured in a CUDA graph.
  const Plan& transpose_plan() const;
  /// The SpMM unit apply_many runs for (k, layout) on X and Y aligned to its packs (any
  /// cudaMalloc'd arrays), preparing it as its first call does.
  const KernelSource& spmm_source(int k, DenseLayout layout = DenseLayout::col_major) const;

  /// The order apply() takes x and gives y in (Options::plan_order): the caller's, unless the
  /// operator was compiled with plan_order and reorders the matrix. Then the plan's column j is
  /// the caller's column plan_columns()[j] and its row r the caller's row plan_rows()[r]; an
  /// empty span is the caller's order on that side (no ordering, or columns not renumbered).
  bool plan_order() const;
  std::span<const std::int32_t> plan_rows() const;
  std::span<const std::int32_t> plan_columns() const;
  /// Permutes a vector in the caller's order into the order apply() uses on `axis`: x_plan[j] =
  /// x[plan_columns()[j]] for columns (x), y_plan[r] = y[plan_rows()[r]] for rows (a y that
  /// apply() reads with beta != 0). Device memory of the plan's value type, `v` and `v_plan` not
  /// overlapping; a copy where the orders agree. Asynchronous on `stream`, as apply().
  void to_plan_order(const void* v, void* v_plan, PlanAxis axis = PlanAxis::columns,
                     void* stream = nullptr) const;
  /// The inverse: y[plan_rows()[r]] = y_plan[r] for rows (apply()'s y), and likewise for
  /// columns.
  void from_plan_order(const void* v_plan, void* v, PlanAxis axis = PlanAxis::rows,
                       void* stream = nullptr) const;

  std::int64_t nrows() const;
  std::int64_t ncols() const;
  /// The plan, profile, source and device_bytes of a tiered GPU build that plans in the
  /// background (Options::tiered) wait for its plan, and rethrow its error if it failed first.
  const Plan& plan() const;
  const Profile& profile() const;
  const KernelSource& source() const;
  /// The one-time costs, and the tiers' state as of this call: refreshed by each call (so not
  /// to be called from two threads at once); steps done in the background fill in when they
  /// finish.
  const CompileTimings& timings() const;
  /// Waits until the specialised kernel is ready (at once when there is no generic tier), then
  /// rethrows the background compile's error if it failed. The next apply() runs it.
  void wait_specialised() const;
  /// Bytes of the encoded matrix resident on the device: with the GPU build of a host matrix,
  /// the kept copy of its CSR too, whatever reads it.
  std::int64_t device_bytes() const;
  /// Bytes of the matrix's device arrays one apply() reads: each array its kernels take, once
  /// (for a cuSPARSE plan, the CSR arrays it multiplies). Not x or y. Where csr_stream's 16-bit
  /// columns are built on the GPU, the wide blocks read their columns from the CSR's col_idx:
  /// those nonzeros' columns are counted, found by reading the block codes back from the device
  /// (and the row offsets where a block is wide), so this call then waits for the device. The
  /// figure the share of read bandwidth is taken of.
  std::int64_t read_bytes() const;

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
/// csr_stream's row blocks, 8-bit value codes (a byte per nonzero in place of its value, for
/// matrices with at most 255 distinct values), 16-bit ones (up to 65,535 distinct values; for
/// csr, csr_stream, ell and hyb), the ell, sell and hyb encodings and the BRO
/// encodings are built on the GPU; the kernel comes from the cache. Nothing is copied from the
/// host, so the one-time cost is a few passes over the arrays plus the kernel load: a cached
/// build repays itself within tens of multiplies where the host path (compile(CsrMatrix)) needs
/// thousands. The price is the choice of plans: csr and csr_stream on the caller's row_ptr and
/// col_idx, ell, sell (sorting windows up to 4096 rows) and hyb on their own arrays, bro_ell
/// (every width-table mode; columns must increase within each row, else BRO is not offered, and
/// forcing it is an InputError naming the first nonzero at fault), bro_coo and bro_hyb encoded
/// on the GPU, bcsr and bellpack (every block shape 1..8 x 1..8; a GPU pass measures their
/// block fill as inspect_blocks does, aligned shapes only; columns must strictly increase
/// within each row, else they are not offered, and forcing one is an InputError); values plain,
/// dropped (all ones), 8-bit coded, 16-bit coded (csr, csr_stream, ell, hyb) or fp32; cuSPARSE
/// as the engine on the caller's arrays where no generated candidate is predicted faster; no
/// reordering; model planner only. Past 256 distinct values a second pass counts them up to
/// 65,536 for 16-bit tables (format "auto", csr, csr_stream, ell, hyb; it stops as soon as there
/// are more). With format "auto" the block formats are not considered (the block pass costs more
/// than the rest of the build): name the format to have them. Options that ask for more are
/// InputErrors.
Operator compile(const DeviceCsr& a, const Options& options = {});

/// Gets ready what a process's first compile() on `options.device` would otherwise get inside
/// its own time: the device's CUDA context, the pinned staging buffers and host threads that
/// upload a CsrMatrix, and the GPU build's kernels (and the generic tier's, where the options
/// tier) loaded onto the device. Blocking, and slow where it creates the context (about 0.2 s on
/// an H200): run it on a thread of your own while the matrix is read or assembled, and the first
/// compile() starts as a later one would. On an H200, the 27-point stencil at 16.8M nonzeros,
/// empty kernel cache, fp64 / fp32: the first multiply is done 9.4-10.4 / 7.6-8.9 ms after
/// compile() from host CSR with it and 13.0-13.4 / 10.6-11.0 ms without (three lends of the
/// machine); from device arrays 2.8 / 2.3 against 5.8 / 5.1
/// (bench/results/2026-11-29-h200-first-multiply/warm-up.txt). Safe to call more than once and
/// from several threads; never required. Throws NoDeviceError without a GPU.
void warm_up(const Options& options = {});

/// True when a CUDA device is usable; otherwise `why` says what is missing.
bool device_available(std::string* why = nullptr);

}  // namespace spmvc
