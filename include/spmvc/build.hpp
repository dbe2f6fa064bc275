// The host pipeline, once: reorder -> inspect -> plan -> encode -> generate, everything up to the
// generated source (no GPU needed).
//
//   spmvc::Build b = spmvc::build(a, options);     // b.plan, b.source, b.encoded, b.profile
//
// compile() runs this and then compiles, uploads and binds; `spmvc plan`, `spmvc emit` and
// `spmvc explain` run it and print or write what it made, so what they show is what compile()
// would run. The kernel computes on the reordered matrix when there is one; `map` makes it take x
// and give y in the caller's order.
#pragma once

#include <optional>
#include <string>

#include "spmvc/kernel.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/options.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"
#include "spmvc/reorder.hpp"

namespace spmvc {

/// Seconds spent in each host stage of build().
struct BuildTimings {
  /// Computing the ordering and permuting the matrix; with reorder "auto", also deciding.
  double reorder = 0;
  double inspect = 0, plan = 0, encode = 0, codegen = 0;
};

/// Where build() stops.
enum class BuildStage {
  plan,    ///< after planning: profile and plan set, encoded and source empty
  source,  ///< after codegen: the whole pipeline
};

/// What build() plans for besides the caller's Options.
struct BuildTarget {
  /// Architecture whose calibration scales the model's times ("sm_90"; "" for none).
  std::string arch = "sm_90";
  /// The GPU whose calibration the planner uses (a device name or "H100", "H200"); empty: the
  /// architecture's reference GPU (compiler::calibration_for).
  std::string gpu;
  /// The bytes the planner ranks by: "compulsory" or "traffic" (compiler.hpp's CostModel).
  std::string cost_model = "compulsory";
  BuildStage until = BuildStage::source;
};

/// The pipeline's products for one matrix.
struct Build {
  /// The matrix the kernel computes on when the pipeline reordered the caller's (empty otherwise).
  std::optional<CsrMatrix> reordered;
  /// How `reordered` maps back to the caller's rows and columns (empty when not reordered).
  std::optional<RowColumnMap> map;
  Profile profile;
  /// The plan; its reorder and reorder_why say what the ordering step did and why.
  Plan plan;
  /// The matrix encoded for the plan, the row map's arrays appended when reordered.
  Encoded encoded;
  /// The generated unit, reordering attached and Options::transform_source applied.
  KernelSource source;
  BuildTimings timings;

  /// The matrix the kernel computes on: `reordered`, else the caller's `a`.
  const CsrMatrix& matrix(const CsrMatrix& a) const { return reordered ? *reordered : a; }
};

/// Runs the pipeline on `a` up to `target.until`. InputError for options that do not apply (an
/// unknown format, parameters that cannot implement the matrix, an ordering that is no
/// permutation of it).
Build build(const CsrMatrix& a, const Options& options, const BuildTarget& target = {});

/// The pipeline's last stages (encode, generate, attach the row map, transform) for `plan`, one
/// of the candidates of `b.plan` or a plan of the same matrix: `b.plan`, `b.encoded` and
/// `b.source` are replaced. `a` is the caller's matrix build() was given.
void realize(const CsrMatrix& a, Build& b, const Plan& plan, const Options& options);

}  // namespace spmvc
