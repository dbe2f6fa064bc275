// The spmvc subcommands and the options they share.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spmvc/generators.hpp"
#include "spmvc/spmvc.hpp"

namespace spmvc::bench {
class DeviceArray;
}  // namespace spmvc::bench

namespace spmvc::cli {

/// A usage error found after parsing (an option that does not fit the matrix): exit 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What the command is doing now, in words ("reading A.mtx", "inspect"): main() names it when
/// an allocation fails, so an out-of-memory error says which stage ran out.
std::string& current_stage();

/// Options common to the commands that take a matrix.
struct MatrixArgs {
  std::string matrix;             ///< a path or a generator spec
  std::int64_t replicate = 1;     ///< I_k ⊗ A
  std::int64_t replicate_to = 0;  ///< smallest k with k*nnz >= this (0: not given)
  bool repeat_values = false;     ///< replicas repeat A's values (suite v1) instead of scaling
  std::string precision = "f64";
  std::string format = "auto";
  int threads_per_row = 0;        ///< > 0 forces csr T
  int vector_width = 0;           ///< > 0 forces csr V
  int unroll = 0;                 ///< > 0 forces csr unroll
  int block_size = 0;             ///< > 0 forces csr block size
  std::string params;             ///< --param name=value,... for the forced format
  bool no_formats = false;        ///< inspect: skip the formats table
  std::string planner = "model";  ///< model or measure
  /// plan: the bytes the planner ranks by, compulsory or traffic (compiler::CostModel)
  std::string cost_model = "compulsory";
  /// plan: the GPU whose calibration the planner uses (BuildTarget::gpu); empty: sm_90's reference
  std::string gpu;
  bool json = false;
  bool quiet = false;
  bool verbose = false;  ///< run: also print the tiers and NVRTC's log
  std::string reorder;   ///< inspect: compare before/after; others: reorder before encoding
  bool renumber_columns = false;
  bool keep_row_order = false;    ///< Options::keep_row_order
  bool plan_order = false;        ///< Options::plan_order (run, bench)
  bool no_value_coding = false;   ///< plan plain values only
  std::string cusparse = "auto";  ///< Options::cusparse: auto, never or always
  std::string build = "auto";     ///< Options::build: auto, host or device
  bool no_tiered = false;         ///< run: the blocking compile (Options::tiered false)
  bool blocks = false;            ///< inspect: also print the dense-block report (inspect_blocks)
  bool deterministic = false;     ///< Options::deterministic
  /// Options::mixed_precision: "off", "f32" (fp64 operator) or "bf16" (f32 operator)
  std::string mixed_precision = "off";
  /// Options::mixed_fallback off: keep a mixed-precision plan even where a full-precision one
  /// is predicted faster
  bool insist_mixed = false;
  /// run: multiply, give the operator new values (update_values) and multiply again; bench: time
  /// update_values instead of the multiply
  bool update_values = false;
  /// plan, run, bench: the multiplies the caller expects (Options::multiplies); 0: not given
  std::int64_t multiplies = 0;
  bool cached_kernels = false;         ///< with multiplies: charge no NVRTC compile
  int k = 0;                           ///< run/bench: > 0 multiplies k vectors at once (apply_many)
  std::string layout = "col";          ///< run/bench --k: X and Y row- or column-major
  std::string spmm_cusparse = "auto";  ///< Options::spmm_cusparse: auto, never, always, measure
  bool transpose = false;              ///< run/bench: y = A^T x (apply_transpose)

  /// run/bench: multiply over the MPI ranks (spmvc::distributed), with the rows partitioned by
  /// `partition` (block, metis) and the ghost values moved by `transport` (mpi, nccl).
  bool distributed = false;
  std::string partition = "block";
  std::string transport = "mpi";
};

/// Loads the matrix named by args (file or spec), applying replication; prints progress to
/// stderr unless quiet. `label` receives a short display name.
CsrMatrix load_matrix(const MatrixArgs& args, std::string* label = nullptr);
/// Library options from the command-line options.
Options make_options(const MatrixArgs& args);

/// k of I_k ⊗ A: `replicate`, raised to the smallest k with k * nnz >= `replicate_to` when that
/// is given (> 0). InputError for replicate < 1 or replicate_to < 0; never overflows.
std::int64_t replication_factor(std::int64_t replicate, std::int64_t replicate_to,
                                std::int64_t nnz);

int run_inspect(const MatrixArgs& args);
int run_plan(const MatrixArgs& args);
/// What `emit` writes besides the plan's own files.
struct EmitArgs {
  std::string out_dir = "spmvc-out";
  bool flatten = false;         ///< write the kernel flattened by tooling/ instead of its templates
  bool inline_helpers = false;  ///< with flatten: helper bodies at their call sites
};
int run_emit(const MatrixArgs& args, const EmitArgs& emit);
/// `explain`: args.matrix is a kernel (.cu, read with the headers beside it) or a matrix.
int run_explain(const MatrixArgs& args, const std::string& arch);
int run_run(const MatrixArgs& args);
/// `run --k K` / `run --transpose`: apply_many or apply_transpose against the host reference.
int run_operation(const MatrixArgs& args);
int run_gen(const std::string& spec, const std::string& out, std::int64_t replicate);

struct BenchArgs {
  int repetitions = 7;          ///< timed repetitions; the median is reported
  double min_rep_ms = 20;       ///< each repetition runs enough multiplies to last this long
  bool skip_bandwidth = false;  ///< do not measure read bandwidth (use the documented H100 figure)
  bool sweep = false;           ///< also time every csr thread mapping and unroll depth
};
int run_bench(const MatrixArgs& args, const BenchArgs& bench);
/// `run|bench --distributed` under mpirun: rank 0 reads, partitions and scatters; run checks the
/// gathered y against the host reference, bench prints each rank's apply time and the
/// exchange's share. A build without MPI says so (usage error).
int run_distributed(const MatrixArgs& args, const BenchArgs& bench, bool timing);
/// `bench --update-values`: the cost of Operator::update_values per call, host and device
/// variants, on the host path and from device arrays, beside one multiply.
int run_update_bench(const MatrixArgs& args, const BenchArgs& bench);
/// The values `run --update-values` and `bench --update-values` give the operator: nonzero k's
/// value times 1 + (k mod 3) / 4, so that each distinct value becomes up to three.
std::vector<double> updated_values(std::span<const double> values);
/// A host vector in the caller's order permuted into an operator's (Operator::plan_rows or
/// plan_columns: out[i] = v[map[i]]), and back (out[map[i]] = v[i]); an empty map is the
/// caller's order.
std::vector<double> into_plan_order(std::span<const double> v, std::span<const std::int32_t> map);
std::vector<double> out_of_plan_order(std::span<const double> v, std::span<const std::int32_t> map);
/// An operation beyond apply(): k vectors at once in `layout`, or the transposed multiply.
struct OperationArgs {
  int k = 1;
  DenseLayout layout = DenseLayout::col_major;
  bool transpose = false;
  std::string spmm_cusparse = "auto";  ///< Options::spmm_cusparse of the operator
};
/// Compiles `a` (keeping its CSR), checks and times the operation against cuSPARSE: the JSON
/// record `bench --k/--transpose` prints and the suite stores (sizes, plan, kernel, every
/// timing with its relative error, speed-ups over cuSPARSE's best and over k separate SpMVs).
nlohmann::ordered_json time_operation(const CsrMatrix& a, const Options& options,
                                      const OperationArgs& args, const BenchArgs& bench,
                                      bool quiet);
/// `bench --k K` / `bench --transpose`: against cusparseSpMM (CSR ALG1, ALG2, ALG3 where they
/// apply) and k separate SpMVs, or cusparseSpMV with opA = TRANSPOSE.
int bench_operation(const MatrixArgs& args, const BenchArgs& bench);
/// Median milliseconds per call of `fn` over bench.repetitions CUDA-event timings, each of
/// enough calls to last bench.min_rep_ms, after warm-up calls.
double median_ms(const std::function<void()>& fn, const BenchArgs& bench);
/// y's relative error (compiler::relative_error) against `reference` once `fn` has written it
/// to `dy` (reference.size() values of `precision`'s element type): y is poisoned with NaNs
/// first, so that rows fn leaves unwritten fail. y goes to `y_out` where given.
double checked_error(bench::DeviceArray& dy, Precision precision,
                     const std::vector<double>& reference, const std::function<void()>& fn,
                     std::vector<double>* y_out = nullptr);

/// `bench --solve`: the same Krylov method with spmvc's operator and with cuSPARSE.
struct SolveArgs {
  std::string method;               ///< cg or bicgstab
  std::string iterations = "1000";  ///< comma-separated iteration counts, one solve each
  double tol = 0;                   ///< stop when ||r|| <= tol ||b|| (0: run every iteration)
};
/// Time to solution, one-time costs included, for each iteration count. UsageError for a
/// matrix that is not square.
int run_solve(const MatrixArgs& args, const BenchArgs& bench, const SolveArgs& solve);

/// One matrix of a benchmark suite.
struct SuiteEntry {
  std::string name;
  std::string regime;  ///< "small" (as is, launch-bound) or "bandwidth" (>= 16M nonzeros)
  std::string source;  ///< a public matrix's name or a generator spec
  std::int64_t replicate_to = 0;  ///< replicate as I_k ⊗ A to at least this many nonzeros
  /// The replicas' values: v1 repeats A's in every copy, v13 scales each copy's (generators.hpp).
  gen::ReplicaValues replica_values = gen::ReplicaValues::scaled;
};
/// The entries of suite `version` ("v1", "v13"); InputError for an unknown one.
std::vector<SuiteEntry> suite_entries(const std::string& version);

struct SuiteArgs {
  std::string version = "v13";
  std::string formats = "all";  ///< comma-separated, "all" or "none" (planner pick only)
  std::string only;             ///< regex over entry names and regimes
  std::int64_t limit = 0;       ///< at most this many entries (0: all)
  std::string precisions = "f64,f32";
  std::string out;                ///< JSON path, rewritten after every matrix
  bool list = false;              ///< print the entries and stop (no GPU needed)
  std::string orderings;          ///< comma list: also time every format under each ordering
  bool renumber_columns = false;  ///< orderings: renumber columns of symmetric ones too
  /// Comma list: these formats are timed again with plain values (--no-value-coding), beside
  /// their value-coded pick, where the matrix allows a coding.
  std::string plain_twins;
  /// The planner picks' ordering option: "auto" (the planner reorders a matrix whose x accesses
  /// are scattered, and says why) or "none".
  std::string planner_reorder = "auto";
  /// The planner's pick (`planner`) with vectors in the plan's order (Options::plan_order): x
  /// permuted into it and y checked in it, the permutations outside the timed multiply.
  bool plan_order = false;
  /// Also time the planner's deterministic pick (Options::deterministic), as planner_deterministic.
  bool deterministic = false;
  /// Also time the planner's mixed-precision pick (Options::mixed_precision) as planner_mixed,
  /// with its speed-up over the planner's pick and y's measured error: "f32" (fp64 entries),
  /// "bf16" (fp32 entries), a comma list of both, "on" (both) or "off".
  std::string mixed_precision = "off";
  /// With mixed_precision: Options::mixed_fallback off (the mixed-precision candidates only).
  bool insist_mixed = false;
  /// With mixed_precision: time only the planner's pick and its mixed-precision pick (no
  /// cuSPARSE, measure mode, device-array build, horizons or formats), so that the bandwidth
  /// suite fits one short GPU session.
  bool mixed_only = false;
  /// Leave measure mode's pick out (planner_measure): its compiles and timings of several
  /// candidates are most of an entry's time, for runs that need the model and device picks only.
  bool skip_measure = false;
  /// Time this operation of the planner's pick instead of SpMV (time_operation): bench --k K
  /// or --transpose with --suite.
  std::optional<OperationArgs> operation;
};
int run_suite(const SuiteArgs& suite, const BenchArgs& bench);

}  // namespace spmvc::cli
