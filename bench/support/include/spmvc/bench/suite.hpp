// What the benchmark suite reports a matrix as: its class, from the profile the planner reads.
#pragma once

#include <string_view>

#include "spmvc/profile.hpp"

namespace spmvc::bench {

/// The longest row over the mean above which a matrix is power-law (class G).
inline constexpr double kPowerLawRowRatio = 50.0;

/// A matrix's class, reported separately and together by the suite:
/// "G": power-law rows, the longest row over kPowerLawRowRatio times the mean;
/// "P": pattern or genuinely few values, at most kDistinctValuesCap distinct (a value table can
///      code them): graphs, constant-coefficient stencils;
/// "R": real values, too many distinct values to code.
/// G takes precedence: a power-law graph is G whatever its values.
std::string_view matrix_class(const Profile& profile);

}  // namespace spmvc::bench
