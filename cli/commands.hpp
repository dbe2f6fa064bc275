// The spmvc subcommands and the options they share.
#pragma once

#include <cstdint>
#include <string>

#include "spmvc/spmvc.hpp"

namespace spmvc::cli {

/// Options common to the commands that take a matrix.
struct MatrixArgs {
  std::string matrix;             ///< a path or a generator spec
  std::int64_t replicate = 1;     ///< I_k ⊗ A
  std::int64_t replicate_to = 0;  ///< smallest k with k*nnz >= this (0: off)
  std::string precision = "f64";
  std::string format = "auto";
  int threads_per_row = 0;  ///< > 0 forces csr T
  int vector_width = 0;     ///< > 0 forces csr V
  int unroll = 0;           ///< > 0 forces csr unroll
  int block_size = 0;       ///< > 0 forces csr block size
  std::string params;       ///< --param name=value,... for the forced format
  bool json = false;
  bool quiet = false;
  bool verbose = false;  ///< run: also print NVRTC's log
  bool blocks = false;   ///< inspect: also print the dense-block report (inspect_blocks)
};

/// Loads the matrix named by args (file or spec), applying replication; prints progress to
/// stderr unless quiet. `label` receives a short display name.
CsrMatrix load_matrix(const MatrixArgs& args, std::string* label = nullptr);
/// Library options from the command-line options.
Options make_options(const MatrixArgs& args);

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
int run_gen(const std::string& spec, const std::string& out, std::int64_t replicate);

struct BenchArgs {
  int repetitions = 7;          ///< timed repetitions; the median is reported
  double min_rep_ms = 20;       ///< each repetition runs enough multiplies to last this long
  bool skip_bandwidth = false;  ///< do not measure read bandwidth (use the documented H100 figure)
  bool sweep = false;           ///< also time every csr thread mapping and unroll depth
};
int run_bench(const MatrixArgs& args, const BenchArgs& bench);

}  // namespace spmvc::cli
