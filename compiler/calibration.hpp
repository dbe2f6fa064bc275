// Per-architecture calibration of the planner's time model (see calibration.cpp).
#pragma once

#include <string_view>

#include "spmvc/plan.hpp"

namespace spmvc::compiler {

/// Measured over predicted time for `format` on `arch` ("sm_90"), from the benchmark suite; 1
/// where there is no calibration.
double time_factor(std::string_view arch, std::string_view format, Precision precision);

}  // namespace spmvc::compiler
