// Per-architecture calibration of the planner's time model (see calibration.cpp).
#pragma once

#include <string_view>

#include "spmvc/plan.hpp"

namespace spmvc::compiler {

/// Measured over predicted time for `format` on `arch` ("sm_90"), from the benchmark suite: the
/// format's factor times `warp_imbalance` (formats::Cost) raised to the format's fitted
/// exponent, the share of a warp's wait for its longest row that shows in time. 1 where there is
/// no calibration; the bare factor for a balanced format (warp_imbalance 1).
double time_factor(std::string_view arch, std::string_view format, Precision precision,
                   double warp_imbalance = 1.0);

}  // namespace spmvc::compiler
