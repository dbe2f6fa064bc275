#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "commands.hpp"
#include "spmvc/compiler/build_choice.hpp"
#include "spmvc/generators.hpp"

namespace spmvc::cli {

std::string& current_stage() {
  static std::string stage;
  return stage;
}

std::int64_t replication_factor(std::int64_t replicate, std::int64_t replicate_to,
                                std::int64_t nnz) {
  if (replicate < 1)
    throw InputError("--replicate", 0, fmt::format("must be at least 1, got {}", replicate));
  if (replicate_to < 0)
    throw InputError("--replicate-to", 0, fmt::format("must be positive, got {}", replicate_to));
  if (replicate_to == 0 || nnz == 0) return replicate;
  // ceil(replicate_to / nnz) without forming replicate_to + nnz - 1, which overflows near 2^63.
  const std::int64_t k = replicate_to / nnz + (replicate_to % nnz != 0 ? 1 : 0);
  return std::max(replicate, k);
}

CsrMatrix load_matrix(const MatrixArgs& args, std::string* label) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string command_stage = current_stage();
  CsrMatrix a;
  std::string name;
  if (gen::is_spec(args.matrix)) {
    if (!args.quiet) fmt::print(stderr, "generating {} ...\n", args.matrix);
    current_stage() = fmt::format("generating {}", args.matrix);
    a = gen::from_spec(args.matrix);
    name = args.matrix;
  } else {
    if (!std::filesystem::exists(args.matrix))
      throw InputError(args.matrix, 0,
                       "no such file, and not a generator spec (see `spmvc gen --help`)");
    if (!args.quiet) fmt::print(stderr, "reading {} ...\n", args.matrix);
    current_stage() = fmt::format("reading {}", args.matrix);
    a = read_matrix_market(args.matrix);
    name = std::filesystem::path(args.matrix).filename().string();
    for (const char* ext : {".xz", ".gz", ".mtx"}) {
      if (name.size() > std::strlen(ext) && name.ends_with(ext))
        name.resize(name.size() - std::strlen(ext));
    }
  }
  const std::int64_t k = replication_factor(args.replicate, args.replicate_to, a.nnz());
  if (k > 1) {
    if (!args.quiet) fmt::print(stderr, "replicating {} times (I_k ⊗ A) ...\n", k);
    current_stage() = fmt::format("replicating {} {} times", name, k);
    a = gen::replicate(
        a, k, args.repeat_values ? gen::ReplicaValues::repeated : gen::ReplicaValues::scaled);
    name += fmt::format(" x{}", k);
  }
  if (!args.quiet) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print(stderr, "matrix {}: {} x {}, {} nonzeros ({:.2f} s)\n", name, a.nrows, a.ncols,
               a.nnz(), s);
  }
  if (label != nullptr) *label = name;
  current_stage() = command_stage;
  return a;
}

Options make_options(const MatrixArgs& args) {
  Options o;
  o.precision = parse_precision(args.precision);
  o.format = args.format;
  if (!args.reorder.empty()) o.reorder = args.reorder;
  o.renumber_columns = args.renumber_columns;
  o.keep_row_order = args.keep_row_order;
  o.plan_order = args.plan_order;
  o.value_coding = !args.no_value_coding;
  o.deterministic = args.deterministic;
  o.mixed_precision = parse_mixed_precision(args.mixed_precision);
  if (args.insist_mixed && o.mixed_precision == MixedPrecision::off)
    throw InputError("--insist-mixed", 0, "needs --mixed-precision f32 or bf16");
  o.mixed_fallback = !args.insist_mixed;
  o.cusparse = args.cusparse;
  o.spmm_cusparse = args.spmm_cusparse;
  o.build = compiler::parse_build_mode(args.build);
  if (args.no_tiered) o.tiered = false;
  if (args.planner == "measure") {
    o.planner = PlannerMode::measure;
  } else if (args.planner != "model") {
    throw InputError("--planner", 0,
                     fmt::format("unknown planner mode '{}' (model or measure)", args.planner));
  }
  // 0 means "not given" in MatrixArgs; main() rejects a 0 or negative value that was given.
  for (const auto& [option, value] :
       {std::pair{"--threads-per-row", args.threads_per_row},
        std::pair{"--vector-width", args.vector_width}, std::pair{"--unroll", args.unroll},
        std::pair{"--block-size", args.block_size}}) {
    if (value < 0) throw InputError(option, 0, fmt::format("must be positive, got {}", value));
  }
  if (args.threads_per_row > 0 || args.vector_width > 0 || args.unroll > 0 || args.block_size > 0) {
    CsrParams p;
    if (args.threads_per_row > 0) p.threads_per_row = args.threads_per_row;
    if (args.vector_width > 0) p.vector_width = args.vector_width;
    if (args.unroll > 0) p.unroll = args.unroll;
    if (args.block_size > 0) p.block_size = args.block_size;
    o.csr = p;
  }
  if (!args.params.empty()) {
    if (o.format == "auto")
      throw InputError("--param", 0, "--param needs --format to name the format it is for");
    FormatParams p = default_params(o.format);
    if (o.csr) p = *o.csr;
    set_params(p, args.params);
    o.params = p;
    o.csr.reset();
  }
  if (args.multiplies > 0) o.multiplies = args.multiplies;
  o.cached_kernels = args.cached_kernels;
  return o;
}

}  // namespace spmvc::cli
