// Measure mode's rules as data (measure.cpp times the candidates): the record a decision is
// remembered by, whether cuSPARSE's CSR SpMV is one of the candidates, and which timing wins.
// Nothing here touches the GPU, so the rules are tested on the CPU.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "spmvc/compiler/compiler.hpp"
#include "spmvc/options.hpp"
#include "spmvc/plan.hpp"

namespace spmvc::runtime {

/// What measure mode remembers of its choice: the plan's parameters, and who multiplies (a
/// cuSPARSE pick keeps the csr parameters of the arrays cuSPARSE reads).
struct MeasuredDecision {
  FormatParams params;
  Engine engine = Engine::kernel;
};

/// The decision file's text: the format, its parameter assignments and "engine NAME", one a line.
std::string decision_text(const MeasuredDecision& decision);

/// The decision `text` records, or nullopt where it is damaged or written by a version with other
/// formats or parameters (measure mode then times the candidates again).
std::optional<MeasuredDecision> parse_decision(std::string_view text);

/// Why measure mode does not time cuSPARSE's CSR SpMV beside the generated candidates, or nullopt
/// when it does. The model planner's refusals (compiler::cusparse_refusal: mixed precision
/// insisted on, f32acc64, 64-bit offsets), and where the planner does not weigh it: cusparse
/// "never", a format the caller forced, an ordering the caller asked for (cuSPARSE multiplies in
/// the caller's order; one that reorder "auto" chose is not a refusal: cuSPARSE is timed on the
/// caller's order), and a `model` plan without a plain-valued csr candidate for its arrays.
std::optional<std::string> measure_cusparse_refusal(const Options& options, const Plan& model,
                                                    const Profile& profile,
                                                    const compiler::PlanOptions& plan_options);

/// One candidate's measured time.
struct MeasuredTime {
  Engine engine = Engine::kernel;
  double us = 0;
  /// A mixed-precision candidate (compiler::is_mixed_candidate), timed where the caller asked
  /// for mixed precision; false for a full-precision one and cuSPARSE.
  bool mixed = false;
};

/// Index of the candidate measure mode keeps: the least time; where times are equal, cuSPARSE
/// (a generated kernel must beat it to be kept), then the earliest (the model's order). Where
/// some candidates are mixed-precision ones, a full-precision candidate is kept only when it is
/// faster than every mixed-precision one (the caller asked for mixed precision; a tie keeps it).
/// InputError for an empty list or a time that is not a finite positive number.
std::size_t measured_winner(std::span<const MeasuredTime> times);

}  // namespace spmvc::runtime
