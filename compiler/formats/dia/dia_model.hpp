// dia's cost-model constants, with where they come from.
#pragma once

#include <cstdint>

namespace spmvc::heuristics {

/// dia: the diagonals may store at most this many entries per nonzero (plus kDiaPadSlack), the
/// rows a diagonal does not occupy included: past it the padding costs more bytes than the
/// indices save. The 3D stencils of the suite store 1.02 per nonzero, a banded matrix 1.0.
inline constexpr double kDiaMaxPadRatio = 1.5;
/// dia: entries always allowed, so small matrices are never refused for padding.
inline constexpr std::int64_t kDiaPadSlack = std::int64_t{1} << 16;
/// dia, symmetric: the share of the plain kernel's read bandwidth the mirrored kernel keeps. Each
/// stored lower value is read twice (the second time for the row it mirrors into, mostly from
/// L2) and each row runs twice the loads: on the H200 the symmetric kernel moved its DRAM bytes
/// at 0.81 (fp64) and 0.67 (fp32) of the plain one's rate on the 27-point stencil at 54M
/// nonzeros (bench/results/2026-11-28-h200-dia-probe/dia-probe.txt).
inline constexpr double kDiaMirrorEfficiency = 0.75;

}  // namespace spmvc::heuristics
