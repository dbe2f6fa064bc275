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

/// dia's thread shape (DiaFormat::shape_for): a band whose nonzeros all lie within this many
/// places of the main diagonal takes two rows a thread when values are 4 bytes. The H200
/// (bench/results/2026-11-29-h200-dia-tiles/dia-before-after.txt, symmetric half, interior tiles
/// untested): bands of half-width 3, 8 and 24 at 12-49M nonzeros multiplied 6-8% faster with two
/// rows a thread in fp32, the 5-, 7- and 27-point stencils (whose far diagonals' mirrored reads
/// come from L2) 0-3% slower; in fp64 two rows moved bands by -2..+2%. Skipping the bounds tests
/// of interior tiles took fp32 from 16.2 to 12.7 us (band, half-width 8), 59.7 to 55.7 us
/// (7-point stencil) and 47.1 to 45.7 us (27-point), the 5-point stencil 1.5% slower; in fp64 it
/// cost 1-6% (the band 23.6 to 25.1 us), the stencils there being bound by DRAM, not by the
/// instructions the tests take, so fp64 keeps them.
inline constexpr std::int64_t kDiaNarrowBand = 32;

}  // namespace spmvc::heuristics
