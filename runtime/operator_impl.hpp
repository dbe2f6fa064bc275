// Operator's insides, shared by the files that build one: operator.cpp (the host pipeline's
// build compiled and uploaded), measure.cpp (measure mode) and device_build.cpp (compile from
// device arrays).
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "device.hpp"
#include "kernel_cache.hpp"
#include "launch_args.hpp"
#include "spmvc/build.hpp"
#include "spmvc/spmvc.hpp"
#include "tiers.hpp"

namespace spmvc {

namespace runtime {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// The process's cache over `dir` (one per directory, so repeated compile() calls share the
/// in-memory level); "" keeps kernels in memory only.
KernelCache& cache_for(const std::filesystem::path& dir);
/// The cache directory `options` ask for ("" when the disk cache is off).
std::filesystem::path cache_dir_of(const Options& options);

struct Operations;
class CusparseEngine;
struct ResidentCsr;

}  // namespace runtime

struct Operator::Impl {
  Profile profile;
  Plan plan;
  KernelSource source;
  CompileTimings timings;
  std::int64_t nrows = 0, ncols = 0, device_bytes = 0;
  std::vector<std::pair<std::string, runtime::DeviceBuffer>> arrays;
  /// Arrays the caller owns (compile(DeviceCsr)): read in place, never freed here.
  std::vector<std::pair<std::string, const void*>> borrowed;
  /// What a multiply reads of each borrowed array, in bytes (read_bytes()); kReadOnWideBlocks for
  /// the caller's col_idx that csr_stream's wide blocks read (counted by wide_column_bytes()).
  std::vector<std::pair<std::string, std::int64_t>> borrowed_read_bytes;
  static constexpr std::int64_t kReadOnWideBlocks = -1;
  /// Kernel parameters are few (csr has 8); apply() keeps their slots on the stack.
  static constexpr std::size_t kMaxParams = runtime::LaunchArgs::kMaxParams;
  /// One per launch of the unit, in launch order.
  struct Launch {
    KernelLaunch desc;
    std::shared_ptr<const runtime::LoadedKernel> kernel;
    /// Device pointer of each array parameter, by parameter index (nullptr for the others).
    std::vector<const void*> array_args;
  };
  std::vector<Launch> launches;
  /// The launches after the first go out early (programmatic dependent launch): the unit is
  /// chained (KernelSource::chained) and the device is sm_90 or newer.
  bool early_launches = false;
  /// Plan::engine cusparse: what apply() calls instead of the launches (cusparse_engine.hpp).
  std::shared_ptr<runtime::CusparseEngine> cusparse;
  /// apply_many and apply_transpose (runtime/operations.hpp).
  std::shared_ptr<runtime::Operations> operations;

  /// What update_values (value_update.cpp) needs: the options it was compiled with, and the
  /// caller's matrix (a host copy of its pattern, with the build's ordering) or device arrays.
  /// The value order is traced from the pattern; a re-plan fills in the new values.
  Options options;
  std::shared_ptr<CsrMatrix> host_matrix;
  std::shared_ptr<const RowColumnMap> map;
  /// Options::plan_order with an ordering: apply() takes and gives vectors in the plan's order,
  /// and these are `map`'s rows and columns on the device (Operator::to_plan_order; a column
  /// buffer only where the columns were renumbered).
  bool plan_ordered = false;
  runtime::DeviceBuffer plan_rows, plan_columns;
  std::optional<DeviceCsr> device_matrix;
  /// Values update_values uploaded for a device-built operator, which reads them in place.
  std::shared_ptr<runtime::DeviceBuffer> owned_values;
  /// The gathers from CSR order into the value arrays, on the device (built at the first update).
  struct ValueGathers;
  std::shared_ptr<ValueGathers> gathers;

  /// The operator's own array `name`, or nullptr (a borrowed array, or none).
  const runtime::DeviceBuffer* own_array(const std::string& name) const;
  const void* array(const std::string& name) const;
  /// Bytes of the arrays one multiply reads: each array a launch takes, counted once.
  std::int64_t read_bytes() const;
  /// Bytes of the caller's col_idx that a GPU-built csr_stream unit with 16-bit columns reads:
  /// its wide blocks' nonzeros (a block whose columns span 2^16 or more), found from the block
  /// codes on the device (and the row offsets where a block is wide).
  std::int64_t wide_column_bytes() const;
  /// Obtains the unit's CUBIN through `cache` and loads every launch's entry point: shared with
  /// other operators (runtime::shared_kernel), or a load of its own when `own_load` (a reordered
  /// unit, whose spmvc_row_map variable is set per operator). Fills the compile timings but the
  /// time, which it returns.
  double load_kernels(runtime::KernelCache& cache, const runtime::DeviceInfo& device,
                      bool own_load);
  /// load_kernels for a CUBIN already obtained, filling `t` (the background thread of a tiered
  /// operator fills its own copy).
  double load_cached(const runtime::CachedKernel& cached, const runtime::DeviceInfo& device,
                     bool own_load, CompileTimings& t);
  /// Resolves every launch's array parameters to device pointers (after the arrays are in place).
  void bind_arrays();
  /// Waits until the fields above are final: a GPU build on its tiers' thread writes them
  /// (Tiers::Scope::build); at once otherwise. Rethrows that build's error.
  void settled() const {
    if (tiers) tiers->wait_settled();
  }

  /// The operator for `build` (of the caller's matrix, through the pipeline): compiles through
  /// the kernel cache (or loads `found`, the unit's kernel already looked up), uploads the
  /// encoded arrays and binds them. `timings` arrive with the steps before it filled in.
  static std::unique_ptr<Impl> from_build(const Build& build, const Options& options,
                                          const runtime::DeviceInfo& device, CompileTimings timings,
                                          const runtime::CachedKernel* found = nullptr);
  /// The tiered operator for `build`, whose kernel is in neither cache level: the generic tier
  /// on a device copy of `a`, and a background thread that compiles the kernel and uploads the
  /// encoding. `start`: when compile() was called.
  static std::unique_ptr<Impl> tiered_from_build(Build&& build, const CsrMatrix& a,
                                                 const Options& options,
                                                 const runtime::DeviceInfo& device,
                                                 CompileTimings timings,
                                                 runtime::Clock::time_point start);
  /// Wraps an Impl (Operator's constructor is private to the friends it names).
  static Operator wrap(std::unique_ptr<Impl> impl) { return Operator(std::move(impl)); }
  static std::unique_ptr<Impl> unwrap(Operator&& op) { return std::move(op.impl_); }

  /// compile(CsrMatrix)'s GPU build: the uploaded CSR that `device_matrix` points at (the
  /// device build reads it in place; a re-build from new values keeps it).
  std::shared_ptr<runtime::ResidentCsr> resident;

  /// The generic tier and the background compile while a tiered operator has them (null for
  /// the blocking compile). Last, so it is destroyed first: its thread writes the members above.
  std::unique_ptr<runtime::Tiers> tiers;
};

/// How compile(CsrMatrix) came to build on the GPU (nothing for compile(DeviceCsr)): the
/// uploaded CSR the operator keeps, the upload's seconds and the choice's reason.
struct HostUpload {
  std::shared_ptr<runtime::ResidentCsr> resident;
  double seconds = 0;
  std::string why;
};

/// The GPU build of compile(DeviceCsr) (device_build.cpp) on `a`, for `device` (probed and
/// current); `start`: when compile() was called; `upload`: set when `a` is compile(CsrMatrix)'s
/// uploaded copy.
std::unique_ptr<Operator::Impl> build_from_device_arrays(const DeviceCsr& a, const Options& options,
                                                         const runtime::DeviceInfo& device,
                                                         runtime::Clock::time_point start,
                                                         const HostUpload* upload = nullptr);

/// Loads what build_from_device_arrays on a matrix of `nrows` rows and `nnz` nonzeros loads
/// first in a process (the build units' modules, the generic tier's kernel where the options
/// tier; with nnz < 0, the generic kernels for every row length): compile(CsrMatrix) runs it on a
/// thread of its own during the upload. Sets `device` current on the calling thread; errors are
/// left to the build, which loads the same again.
void preload_device_build(const Options& options, const runtime::DeviceInfo& device,
                          std::int64_t nrows, std::int64_t nnz) noexcept;

/// Measure mode (measure.cpp): a remembered decision, else the model's best few candidates of
/// `build` compiled and timed; the fastest becomes the operator.
Operator compile_measured(const CsrMatrix& a, Build build, const Options& options,
                          const BuildTarget& target, const runtime::DeviceInfo& device,
                          const CompileTimings& timings);

}  // namespace spmvc
