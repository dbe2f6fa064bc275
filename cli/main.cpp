// spmvc: the command-line face of the compiler. The only place in spmvc that prints.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <new>
#include <regex>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "spmvc/bench/krylov.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/generators.hpp"

namespace {

// The exit codes README.md documents.
constexpr int kExitBadInput = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoDevice = 3;
constexpr int kExitInternal = 4;

// Counts and sizes whose 0 means "not given" in the argument structs, so a given value below 1
// is refused (CLI::PositiveNumber would word it as a range up to 1.8e308).
const CLI::Validator kPositive(
    [](std::string& value) {
      std::int64_t v = 0;
      const char* end = value.data() + value.size();
      const auto [ptr, ec] = std::from_chars(value.data(), end, v);
      if (value.empty() || ec != std::errc{} || ptr != end || v < 1)
        return "must be a positive integer, got '" + value + "'";
      return std::string();
    },
    "POSITIVE");

// An option that, when given, must not be empty (`--reorder ''` would otherwise mean "none").
const CLI::Validator kNonEmpty(
    [](std::string& value) { return value.empty() ? std::string("must not be empty") : ""; },
    "NONEMPTY");

// NVRTC's target names: sm_XY or compute_XY, optionally with an a/f suffix (sm_90a).
const CLI::Validator kArch(
    [](std::string& value) {
      static const std::regex re("(sm|compute)_[0-9]+[af]?");
      return std::regex_match(value, re)
                 ? std::string()
                 : "'" + value + "' is not an NVRTC architecture (e.g. sm_90, compute_90)";
    },
    "ARCH");

// A regex that std::regex (ECMAScript) accepts, checked at parse time rather than when the
// suite is filtered.
const CLI::Validator kRegex(
    [](std::string& value) {
      try {
        std::regex re(value);
      } catch (const std::regex_error& e) {
        return fmt::format("'{}' is not a valid regular expression: {}", value, e.what());
      }
      return std::string();
    },
    "REGEX");

// bench --iterations: a comma list of positive counts (spmvc::bench::parse_iteration_counts).
const CLI::Validator kIterationList(
    [](std::string& value) {
      try {
        (void)spmvc::bench::parse_iteration_counts(value);
      } catch (const spmvc::InputError& e) {
        return e.detail();
      }
      return std::string();
    },
    "N[,N...]");

// bench --tol: a finite number >= 0 (CLI::NonNegativeNumber lets "nan" through).
const CLI::Validator kTolerance(
    [](std::string& value) {
      double v = -1;
      const char* end = value.data() + value.size();
      const auto [ptr, ec] = std::from_chars(value.data(), end, v);
      if (value.empty() || ec != std::errc{} || ptr != end || !(v >= 0) || !std::isfinite(v))
        return "must be a finite number >= 0, got '" + value + "'";
      return std::string();
    },
    "TOL");

void add_matrix_options(CLI::App* cmd, spmvc::cli::MatrixArgs& args, bool with_format = true,
                        bool matrix_required = true) {
  cmd->add_option(
         "matrix", args.matrix,
         "Matrix Market file (.mtx, .mtx.gz, .mtx.xz) or generator spec (e.g. stencil27:n=64)")
      ->required(matrix_required);
  cmd->add_option("--replicate", args.replicate,
                  "use I_k ⊗ A: k copies of the matrix on the diagonal, each copy's values "
                  "scaled by its own factor (unless A holds one value)")
      ->check(kPositive);
  cmd->add_flag("--repeat-values", args.repeat_values,
                "replicas repeat A's values instead (suite v1's replication)");
  cmd->add_option("--replicate-to", args.replicate_to,
                  "replicate until the matrix has at least this many nonzeros")
      ->check(kPositive);
  cmd->add_flag("--json", args.json, "machine-readable output");
  cmd->add_flag("-q,--quiet", args.quiet, "no progress messages on stderr");
  cmd->add_flag("-v,--verbose", args.verbose,
                "run: also print the tiers (which ran, when the specialised kernel took over) "
                "and NVRTC's log; plan: the host stages' times");
  if (!with_format) return;
  cmd->add_option("--precision", args.precision,
                  "f64, f32 or f32acc64 (fp32 storage, fp64 accumulation)")
      ->capture_default_str();
  cmd->add_option("--format", args.format,
                  "force a format instead of the planner's choice (`spmvc plan` lists them)")
      ->capture_default_str();
  cmd->add_option(
         "--reorder", args.reorder,
         "reorder before encoding (rcm, amd, metis, d, dset, bar, sort, degree, dbg, or auto: the "
         "planner decides and says why); x and y keep their order")
      ->check(kNonEmpty);
  cmd->add_flag("--renumber-columns", args.renumber_columns,
                "with a symmetric ordering, renumber the columns too (x gathered per multiply)");
  cmd->add_flag("--keep-row-order", args.keep_row_order,
                "with --renumber-columns, move the columns alone: rows keep their order and y is "
                "written in place (Options::keep_row_order)");
  cmd->add_flag("--plan-order", args.plan_order,
                "run, bench: x and y in the plan's order (Options::plan_order): a reordered "
                "matrix's multiply without the gather of x and the row map's writes of y; the "
                "vectors are permuted outside the multiply (bench --solve: once per solve, "
                "b in and x out, the solve's own vectors in that order)");
  cmd->add_flag("--no-value-coding", args.no_value_coding,
                "keep one stored value per nonzero (no value tables, no implicit ones)");
  cmd->add_option("--cusparse", args.cusparse,
                  "cuSPARSE's CSR SpMV as the plan's engine: auto (where no generated candidate "
                  "is predicted faster), never, always")
      ->check(CLI::IsMember({"auto", "never", "always"}));
  cmd->add_option(
         "--build", args.build,
         "where compile() inspects, plans and encodes: auto (on the GPU where the options allow "
         "it; the default), host (the host pipeline), device (the GPU build, or an error naming "
         "the option that needs the host)")
      ->check(CLI::IsMember({"auto", "host", "device"}));
  cmd->add_flag("--deterministic", args.deterministic,
                "only plans whose y is bitwise the same run to run (no floating-point atomics; "
                "`spmvc plan` shows why each other candidate is rejected)");
  cmd->add_option("--mixed-precision", args.mixed_precision,
                  "store the values rounded to a narrower type, arithmetic in --precision: f32 "
                  "for an f64 operator, bf16 for an f32 one (`spmvc plan` states the rounding "
                  "error and its bound on y); off by default. A full-precision plan (cuSPARSE "
                  "among them) predicted faster than every mixed-precision candidate is kept, "
                  "and the plan says so")
      ->capture_default_str();
  cmd->add_flag("--insist-mixed", args.insist_mixed,
                "with --mixed-precision: the mixed-precision candidates only, even where a "
                "full-precision plan is predicted (or measured) faster");
  cmd->add_flag("--no-tiered", args.no_tiered,
                "run: wait for the specialised kernel's compile instead of multiplying with the "
                "generic kernel meanwhile");
  cmd->add_option("--planner", args.planner,
                  "model: the cost model's pick; measure (run, bench): time the model's best "
                  "few on the GPU, keep the fastest, remember it by matrix fingerprint")
      ->capture_default_str();
  cmd->add_option("--param", args.params,
                  "force parameters of --format: name=value,... (names or short labels as "
                  "`spmvc plan` prints them; unset ones take their defaults)");
  // 0 stands for "not given" in MatrixArgs, so a given 0 (or less) is refused here.
  cmd->add_option("--threads-per-row", args.threads_per_row, "csr: force T (1, 2, 4, 8, 16, 32)")
      ->check(kPositive);
  cmd->add_option("--vector-width", args.vector_width,
                  "csr: force V, nonzeros per vector load (1, 2, 4)")
      ->check(kPositive);
  cmd->add_option("--unroll", args.unroll, "csr: force the unroll depth (1..8)")->check(kPositive);
  cmd->add_option("--block-size", args.block_size, "csr: force threads per block")
      ->check(kPositive);
}

// run and bench: SpMM (--k, --layout) or the transposed multiply (--transpose).
void add_operation_options(CLI::App* cmd, spmvc::cli::MatrixArgs& args) {
  auto* k = cmd->add_option("--k", args.k,
                            "multiply k vectors at once, Y = A X (Operator::apply_many), k in "
                            "1..64")
                ->check(CLI::Range(1, spmvc::kMaxDenseColumns));
  cmd->add_option("--layout", args.layout, "--k: X and Y row-major (row) or column-major (col)")
      ->check(CLI::IsMember({"row", "col"}))
      ->capture_default_str();
  cmd->add_flag("--transpose", args.transpose,
                "multiply by the transpose, y = A^T x (Operator::apply_transpose)")
      ->excludes(k);
  cmd->add_option(
         "--spmm-cusparse", args.spmm_cusparse,
         "--k: cusparseSpMM as apply_many's engine: auto (rows with hubs; skewed fp32 rows "
         "with row-major X and k >= 16; "
         "timed against the generated unit with --planner measure), "
         "never, always, measure (time both, keep the faster)")
      ->check(CLI::IsMember({"auto", "never", "always", "measure"}))
      ->capture_default_str();
}

// run and bench over MPI ranks (mpirun -n N spmvc run --distributed A.mtx).
void add_distributed_options(CLI::App* cmd, spmvc::cli::MatrixArgs& args) {
  auto* d = cmd->add_flag("--distributed", args.distributed,
                          "multiply over the MPI ranks this was started on (mpirun -n N): rank 0 "
                          "reads, partitions and scatters the rows");
  cmd->add_option("--partition", args.partition, "--distributed: rows by block or by METIS")
      ->check(CLI::IsMember({"block", "metis"}))
      ->needs(d)
      ->capture_default_str();
  cmd->add_option("--transport", args.transport,
                  "--distributed: ghost values by host-staged MPI (mpi; ranks may share a GPU) "
                  "or NCCL (nccl; one GPU per rank)")
      ->check(CLI::IsMember({"mpi", "nccl"}))
      ->needs(d)
      ->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"spmvc: a compiler for sparse matrix-vector multiply on NVIDIA GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "spmvc 0.1.0");

  spmvc::cli::MatrixArgs margs;
  auto* inspect =
      app.add_subcommand("inspect", "report the matrix's structure (the inspector's Profile)");
  add_matrix_options(inspect, margs, false);
  inspect->add_option("--precision", margs.precision, "value precision of the formats table")
      ->capture_default_str();
  inspect->add_flag("--no-formats", margs.no_formats,
                    "skip the table of every format's encoded size (it encodes the matrix once "
                    "per format)");
  inspect
      ->add_option(
          "--reorder", margs.reorder,
          "also compute this ordering (none, rcm, amd, metis, d, dset, bar, sort, degree, dbg) and "
          "compare bandwidth, profile, BRO index saving and x lines per warp")
      ->check(kNonEmpty);
  inspect->add_flag("--keep-row-order", margs.keep_row_order,
                    "with --reorder, apply a symmetric ordering to the columns alone (rows in "
                    "their order) and compare that");
  inspect->add_flag("--blocks", margs.blocks,
                    "also report every dense-block shape (fill, blocks, aligned and unaligned)");
  auto* plan =
      app.add_subcommand("plan", "show the chosen plan and every alternative with its reason");
  add_matrix_options(plan, margs);
  plan->add_option("--gpu", margs.gpu,
                   "plan with this GPU's calibration (" +
                       fmt::format("{}", fmt::join(spmvc::compiler::calibrated_gpus(), ", ")) +
                       ", or a device name); default: the reference GPU of sm_90 (H100)")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            if (spmvc::compiler::calibration_for("sm_90", value).own) return {};
            return fmt::format("no calibration for '{}' (calibrated: {})", value,
                               fmt::join(spmvc::compiler::calibrated_gpus(), ", "));
          },
          "GPU"));
  plan->add_option("--cost-model", margs.cost_model,
                   "bytes the planner ranks by: compulsory (every array, x and y once) or "
                   "traffic (also x gathers and y lines that miss L2)")
      ->capture_default_str();
  spmvc::cli::EmitArgs eargs;
  auto* emit =
      app.add_subcommand("emit", "write the generated .cu, the encoded matrix and an nvcc harness");
  add_matrix_options(emit, margs);
  emit->add_option("-o,--output", eargs.out_dir, "output directory")->capture_default_str();
  emit->add_flag("--flatten", eargs.flatten,
                 "write the kernel as one template-free .cu (every specialisation printed as a "
                 "plain function; needs the Clang tooling build)");
  emit->add_flag("--inline-helpers", eargs.inline_helpers,
                 "with --flatten: print each helper's body at its call sites, so the kernel is "
                 "one function")
      ->needs("--flatten");
  std::string explain_arch = "sm_90";
  auto* explain = app.add_subcommand(
      "explain",
      "static report on a kernel (KERNEL.cu, or the planner's pick for a matrix): parameter "
      "roles, loads and stores, loops, bytes per nonzero beside the cost model, NVRTC "
      "resources (needs the Clang tooling build)");
  add_matrix_options(explain, margs);
  explain->add_option("--arch", explain_arch, "NVRTC target for the resource report")
      ->check(kArch)
      ->capture_default_str();
  auto* run = app.add_subcommand("run", "multiply on the GPU and check against a CPU reference");
  add_matrix_options(run, margs);
  run->add_flag("--update-values", margs.update_values,
                "then give the operator new values (each times 1 + (k mod 3)/4), multiply and "
                "check again; -v says whether it re-planned");
  add_operation_options(run, margs);
  spmvc::cli::BenchArgs bargs;
  add_distributed_options(run, margs);
  auto* bench = app.add_subcommand(
      "bench", "time the kernel against cuSPARSE CSR ALG1 and ALG2 (--solve: a Krylov solve)");
  add_matrix_options(bench, margs, true, false);  // --suite names its own matrices
  add_operation_options(bench, margs);
  add_distributed_options(bench, margs);
  bench->add_option("--reps", bargs.repetitions, "timed repetitions (median reported)")
      ->capture_default_str();
  bench->add_option("--min-rep-ms", bargs.min_rep_ms, "minimum duration of one repetition")
      ->capture_default_str();
  bench->add_flag("--sweep", bargs.sweep, "also time every csr thread mapping and unroll depth");
  spmvc::cli::SuiteArgs sargs;
  bench->add_option("--suite", sargs.version,
                    "run the named benchmark suite (v1) instead of one matrix: every format and "
                    "the planner's pick against cuSPARSE, as JSON");
  bench->add_option("--formats", sargs.formats, "suite: formats to time (comma list, all, none)")
      ->capture_default_str();
  bench->add_option("--only", sargs.only, "suite: entries whose name or regime matches this regex")
      ->check(kRegex);
  bench->add_option("--limit", sargs.limit, "suite: at most this many entries")->check(kPositive);
  bench->add_option("--precisions", sargs.precisions, "suite: comma list of precisions")
      ->capture_default_str();
  bench->add_option("--out", sargs.out, "suite: JSON file, rewritten after every matrix");
  bench->add_flag("--list", sargs.list, "suite: list its entries and stop");
  bench->add_option("--orderings", sargs.orderings,
                    "suite: also time each format under these orderings (comma list), computed "
                    "on A and repeated over the replicated blocks");
  bench->add_flag("--mixed-only", sargs.mixed_only,
                  "suite with --mixed-precision (f32, bf16, or on for both): time only the "
                  "planner's pick and its mixed-precision pick (scripts/report/mixed-table.py)");
  bench->add_flag("--skip-measure", sargs.skip_measure,
                  "suite: leave measure mode's pick out (planner_measure)");
  bench->add_option("--plain-twins", sargs.plain_twins,
                    "suite: time these formats (comma list) again with plain values where the "
                    "planner coded them, as formats_plain");
  bench
      ->add_option("--planner-reorder", sargs.planner_reorder,
                   "suite: the planner picks' ordering (auto: the planner decides, with renumbered "
                   "columns: dbg for hyb on hub graphs whose x fits in half the L2, RCM where x "
                   "accesses are scattered; "
                   "none)")
      ->check(CLI::IsMember({"auto", "none"}))
      ->capture_default_str();
  bench->add_flag("--suite-plan-order", sargs.plan_order,
                  "suite: the planner's pick with x and y in the plan's order (Options::"
                  "plan_order): a reordered pick's multiply without the reorder's traffic");
  bench->add_flag("--suite-renumber-columns", sargs.renumber_columns,
                  "suite: symmetric orderings renumber the columns too (x gathered per multiply)");
  spmvc::cli::SolveArgs solve_args;
  auto* solve_opt =
      bench
          ->add_option("--solve", solve_args.method,
                       "time to solution: run this Krylov method (cg, bicgstab) from x0 = 0 with "
                       "cuSPARSE's SpMV and with spmvc's, one-time costs included")
          ->check(CLI::IsMember({"cg", "bicgstab"}))
          ->excludes("--suite");
  bench
      ->add_option("--iterations", solve_args.iterations,
                   "solve: iteration counts, a solve each (comma list, e.g. 100,1000,10000); "
                   "the plan is for the longest unless --multiplies says otherwise")
      ->check(kIterationList)
      ->needs(solve_opt)
      ->capture_default_str();
  bench
      ->add_option("--tol", solve_args.tol,
                   "solve: also stop when ||r|| <= tol ||b|| (0: run every iteration)")
      ->check(kTolerance)
      ->needs(solve_opt)
      ->capture_default_str();
  bench
      ->add_flag("--update-values", margs.update_values,
                 "time Operator::update_values (new values, same pattern) per call, from host "
                 "and device memory, also on an operator built from device arrays")
      ->excludes("--sweep")
      ->excludes("--suite")
      ->excludes(solve_opt);
  bench->add_flag(
      "--skip-bandwidth", bargs.skip_bandwidth,
      "assume the read bandwidth measured earlier on this GPU model (H100, H200) instead of "
      "measuring it");
  // The planner's horizon: plan, run and bench (one matrix) rank by one-time cost + N multiplies.
  for (CLI::App* cmd : {plan, run, bench}) {
    cmd->add_option("--multiplies", margs.multiplies,
                    "multiplies you expect with this matrix: the planner picks the least "
                    "one-time cost (inspect, encode, upload, compile) + N x multiply time "
                    "(default: multiply time alone)")
        ->check(kPositive);
    cmd->add_flag("--cached-kernels", margs.cached_kernels,
                  "with --multiplies: the kernels are in the cache (no compile charged)")
        ->needs("--multiplies");
  }
  std::string spec, gen_out;
  std::int64_t gen_rep = 1;
  auto* gen = app.add_subcommand(
      "gen", "write a generated matrix as Matrix Market\n\n" + spmvc::gen::spec_help());
  gen->add_option("spec", spec, "generator spec, e.g. stencil27:n=64 or rmat:scale=16")->required();
  gen->add_option("-o,--output", gen_out, "output file (default: standard output)");
  gen->add_option("--replicate", gen_rep, "k copies on the diagonal")->check(kPositive);

  // Not CLI11_PARSE: its exit codes are CLI11's own (105 and up); README documents 2 for every
  // usage error, including a missing subcommand.
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }

  for (CLI::App* sub : app.get_subcommands())
    spmvc::cli::current_stage() = fmt::format("running `spmvc {}`", sub->get_name());
  try {
    if (inspect->parsed()) return spmvc::cli::run_inspect(margs);
    if (plan->parsed()) return spmvc::cli::run_plan(margs);
    if (emit->parsed()) return spmvc::cli::run_emit(margs, eargs);
    if (explain->parsed()) return spmvc::cli::run_explain(margs, explain_arch);
    if ((run->parsed() || bench->parsed()) && margs.distributed) {
      if (bench->count("--suite") > 0 || solve_opt->count() > 0)
        throw spmvc::cli::UsageError("--distributed excludes --suite and --solve");
      return spmvc::cli::run_distributed(margs, bargs, bench->parsed());
    }
    if (run->parsed()) {
      if (margs.k > 0 || margs.transpose) return spmvc::cli::run_operation(margs);
      return spmvc::cli::run_run(margs);
    }
    if (bench->parsed()) {
      if (bench->count("--suite") > 0) {
        sargs.deterministic = margs.deterministic;
        sargs.mixed_precision = margs.mixed_precision;
        sargs.insist_mixed = margs.insist_mixed;
        if (sargs.mixed_only && sargs.mixed_precision == "off")
          throw spmvc::cli::UsageError("--mixed-only needs --mixed-precision f32, bf16 or on");
        if (margs.transpose && margs.k > 0)
          throw spmvc::cli::UsageError("--transpose and --k do not combine");
        if (margs.k > 0 || margs.transpose)
          sargs.operation = spmvc::cli::OperationArgs{margs.transpose ? 1 : margs.k,
                                                      spmvc::parse_dense_layout(margs.layout),
                                                      margs.transpose, margs.spmm_cusparse};
        return spmvc::cli::run_suite(sargs, bargs);
      }
      if (margs.matrix.empty())
        throw spmvc::InputError("bench", 0, "give a matrix (file or spec) or --suite NAME");
      if (solve_opt->count() > 0) return spmvc::cli::run_solve(margs, bargs, solve_args);
      if (margs.update_values) return spmvc::cli::run_update_bench(margs, bargs);
      if (margs.k > 0 || margs.transpose) return spmvc::cli::bench_operation(margs, bargs);
      return spmvc::cli::run_bench(margs, bargs);
    }
    if (gen->parsed()) return spmvc::cli::run_gen(spec, gen_out, gen_rep);
  } catch (const spmvc::cli::UsageError& e) {
    fmt::print(stderr, "spmvc: error: {}\n", e.what());
    return kExitUsage;
  } catch (const spmvc::NoDeviceError& e) {
    fmt::print(stderr, "spmvc: {}\n", e.what());
    fmt::print(stderr,
               "spmvc: this command needs an NVIDIA GPU; `inspect`, `plan`, `emit` and `gen` work "
               "without one\n");
    return kExitNoDevice;
  } catch (const spmvc::CompileError& e) {
    fmt::print(stderr, "spmvc: {}\noptions: {}\n", e.what(), fmt::join(e.options(), " "));
    return kExitInternal;
  } catch (const spmvc::InputError& e) {
    fmt::print(stderr, "spmvc: error: {}\n", e.what());
    return kExitBadInput;
  } catch (const spmvc::Error& e) {
    fmt::print(stderr, "spmvc: {}\n", e.what());
    return kExitInternal;
  } catch (const std::bad_alloc&) {
    // Size estimates refuse what would exceed the memory budget up front; this is what slipped
    // past them (or a budget set above what the machine can give). The matrix is too large for
    // this machine: the user's input, not a bug.
    fmt::print(stderr,
               "spmvc: error: out of memory while {} (the matrix is too large for this machine; "
               "see SPMVC_MEMORY_BUDGET in README.md)\n",
               spmvc::cli::current_stage());
    return kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "spmvc: unexpected error: {}\n", e.what());
    return kExitInternal;
  }
  return 0;
}
