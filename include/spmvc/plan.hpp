// What the planner decided and why: the format, its parameters, and every alternative considered.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

// Format parameters. Each format has one struct with named fields and a `fields` function that
// lists them (name, short label, member) in a fixed order: describe(), to_json(), the CLI's
// `--param name=value` and the golden banners all read parameters through it. Integer and bool
// fields only. Each struct lives in its format's folder (compiler/formats/<name>/params.hpp),
// staged by CMake as spmvc/params/<name>.hpp.
#include "spmvc/params/amb.hpp"
#include "spmvc/params/bcsr.hpp"
#include "spmvc/params/bellpack.hpp"
#include "spmvc/params/blocked.hpp"
#include "spmvc/params/bro_coo.hpp"
#include "spmvc/params/bro_ell.hpp"
#include "spmvc/params/bro_hyb.hpp"
#include "spmvc/params/cci.hpp"
#include "spmvc/params/csr.hpp"
#include "spmvc/params/csr_stream.hpp"
#include "spmvc/params/csr_warp.hpp"
#include "spmvc/params/dia.hpp"
#include "spmvc/params/ell.hpp"
#include "spmvc/params/hyb.hpp"
#include "spmvc/params/sell.hpp"

namespace spmvc {

/// Value precision. `f32_acc64` stores values and vectors in fp32 and accumulates in fp64.
enum class Precision { f64, f32, f32_acc64 };
std::string_view to_string(Precision p);
/// Parses "f64", "f32" or "f32acc64"; InputError otherwise.
Precision parse_precision(std::string_view text);
/// Bytes of one stored value (8 or 4).
int value_bytes(Precision p);

/// Opt-in mixed precision (Options::mixed_precision): values stored narrower than the
/// operator's precision, each rounded to nearest, the products and sums in the operator's
/// precision. `f32`: an fp64 operator's values stored as fp32; `bf16`: an f32 (or f32acc64)
/// operator's values stored as bf16. Off by default: only exact value codings are planned.
enum class MixedPrecision { off, f32, bf16 };
std::string_view to_string(MixedPrecision m);
/// Parses "off", "f32" or "bf16"; InputError otherwise.
MixedPrecision parse_mixed_precision(std::string_view text);

/// What mixed precision costs in accuracy, from the inspector's values (Plan::rounding).
struct ValueRounding {
  MixedPrecision mode = MixedPrecision::off;
  /// The largest relative rounding error of any stored value (Profile::f32_rounding_error or
  /// bf16_rounding_error).
  double value_error = 0.0;
  /// The longest row, which the bound below is for (a shorter row's bound is smaller).
  std::int64_t longest_row = 0;
  /// Bound on |y_i - (A x)_i| / (|A||x|)_i for every row i (spmvc/value_rounding.hpp,
  /// y_error_bound): the values' rounding plus the accumulation's, at alpha = 1, beta = 0.
  double y_error_bound = 0.0;
};

/// Mixed precision asked for (Options::mixed_precision) and a full-precision plan kept
/// (Options::mixed_fallback): it was predicted, or measured, faster than the best
/// mixed-precision candidate, or no mixed-precision candidate applied.
struct MixedFallback {
  MixedPrecision asked = MixedPrecision::off;  ///< the mode the caller asked for
  /// The best mixed-precision candidate, "format [label]"; empty where none applied.
  std::string mixed_best;
  /// What the two were ranked by, in seconds: the model's ranking (predicted time per
  /// multiply, or one-time cost + multiplies x that time with Plan::multiplies) or measure
  /// mode's median time per multiply. 0 where not known (no mixed candidate applied, or a
  /// remembered measured decision).
  double mixed_seconds = 0;
  double full_seconds = 0;
  bool measured = false;  ///< measure mode's timings decided it, not the model
};

/// One alternative per format.
using FormatParams =
    std::variant<CsrParams, EllParams, SellParams, HybParams, BroEllParams, BroCooParams,
                 BroHybParams, BlockedParams, BellpackParams, BcsrParams, CciParams, AmbParams,
                 CsrStreamParams, DiaParams, CsrWarpParams>;

/// The format a parameter set belongs to ("csr", "ell", ...).
std::string_view format_of(const FormatParams& params);
/// Default parameters of `format` (InputError for an unknown name).
FormatParams default_params(std::string_view format);
/// Sets fields of `params` from "name=value,name=value" (names or short labels; bools take
/// 0/1/true/false). InputError naming the field when a name or value is wrong.
void set_params(FormatParams& params, std::string_view assignments);
/// Every field as "name=value,..." (bools as 0/1): set_params' input.
std::string to_assignments(const FormatParams& params);

/// One plan the planner considered, ranked by predicted time.
struct Candidate {
  std::string format;
  FormatParams params;
  std::string label;  ///< short parameter summary, e.g. "T=8 b=256 u=2"
  bool applicable = true;
  std::string reason;  ///< why rejected, or what recommends it
  /// Bytes moved per multiply under the planner's cost model (compulsory unless
  /// compiler::PlanOptions::cost_model asks for the traffic model).
  double predicted_bytes = 0;
  double predicted_seconds = 0;
  /// False when the parameters cannot implement the matrix at all. A candidate that is not
  /// applicable but representable was rejected only because it does not pay (it would store
  /// more bytes than csr, say): a format the caller forces may still take it.
  bool representable = true;
  /// Predicted one-time cost of building it (inspect, encode, upload, compile), in seconds.
  double build_seconds = 0;
  /// build_seconds + Plan::multiplies x predicted_seconds: what the planner ranked by when the
  /// caller said how many multiplies it expects; 0 otherwise.
  double total_seconds = 0;
};

/// What runs the multiply.
enum class Engine {
  kernel,    ///< the kernel generated for the plan's format
  cusparse,  ///< cuSPARSE's CSR SpMV (Plan::cusparse_algorithm, preprocessed at compile time)
             ///< on the plan's plain CSR arrays (format csr, plain values): chosen where no
             ///< generated candidate is predicted to beat it (Options::cusparse)
};

std::string_view to_string(Engine engine);

/// The algorithm of the cuSPARSE engine: CSR ALG1 (the faster), or CSR ALG2, whose results
/// cuSPARSE documents as bitwise identical run to run: the one deterministic plans use.
enum class CusparseAlgorithm { csr_alg1, csr_alg2 };

std::string_view to_string(CusparseAlgorithm algorithm);

struct Plan {
  std::string format;
  FormatParams params;
  Precision precision = Precision::f64;
  std::string reorder = "none";
  std::string reorder_why;  ///< why an ordering was or was not chosen (reorder "auto")
  double predicted_bytes = 0;
  double predicted_seconds = 0;
  /// Predicted one-time cost of building the plan, in seconds (Candidate::build_seconds).
  double predicted_build_seconds = 0;
  /// The multiplies the ranking assumed (Options::multiplies); empty: ranked by per-multiply
  /// time alone.
  std::optional<std::int64_t> multiplies;
  std::string why;  ///< the reason this candidate won
  /// Set when the plan stores rounded values (mixed precision asked for and taken): the values'
  /// rounding error and the bound it puts on y's.
  std::optional<ValueRounding> rounding;
  /// Set when mixed precision was asked for but a full-precision plan was kept (rounding is
  /// then empty): what it was compared with.
  std::optional<MixedFallback> mixed_fallback;
  std::vector<Candidate> candidates;  ///< everything considered, best first; rejected last
  Engine engine = Engine::kernel;
  /// The cuSPARSE engine's algorithm (engine cusparse): ALG2 for deterministic plans.
  CusparseAlgorithm cusparse_algorithm = CusparseAlgorithm::csr_alg1;
  /// cuSPARSE's CSR SpMV's predicted time per multiply, where the planner weighed it
  /// (compiler::PlanOptions::cusparse); 0 where it did not.
  double cusparse_seconds = 0;
};

std::string to_json(const Plan& plan);
std::string to_report(const Plan& plan);
/// One line on a plan's value rounding: the mode, the values' error and y's bound.
std::string describe(const ValueRounding& rounding);
/// One line on a mixed-precision fallback, for reports.
std::string describe(const MixedFallback& fallback);
/// Short parameter summary of `params`, as in Candidate::label.
std::string describe(const FormatParams& params);

}  // namespace spmvc
