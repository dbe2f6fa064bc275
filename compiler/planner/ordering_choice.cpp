// The planner's ordering decision (Options.reorder = "auto"): reorder only a matrix whose x
// accesses are scattered, with the ordering that makes them local.
//
// Why: an ordering slows every format on a matrix whose x accesses are already local, and pays
// off only where they scatter (measured on the H100 ordering runs,
// bench/results/2026-11-22-h100-suite-v1-formats/ and
// bench/results/2026-11-23-h100-suite-v7-values/, which also place the threshold below).
#include <fmt/format.h>

#include "spmvc/compiler/compiler.hpp"
#include "spmvc/reorder.hpp"

namespace spmvc::compiler {

namespace {

/// Above this many distinct 128-byte lines of x per nonzero (over 32 consecutive rows), the
/// order is scattered enough to reorder.
constexpr double kScatteredLinesPerNonzero = 0.7;
/// The ordering must cut the lines per 32 rows at least this much to be used.
constexpr double kRequiredGain = 2.0;
/// Renumbered columns cost a gather of x per multiply (x read through the map, x' written:
/// about 2 values and an index per row), paid per row while the saving comes per nonzero: below
/// this many nonzeros per row it does not repay (between the short-row matrix that lost under
/// RCM in suite v7 and the longer-row ones that gained).
constexpr double kMinNonzerosPerRow = 6.0;

}  // namespace

OrderingChoice choose_ordering(const CsrMatrix& a, Precision precision) {
  OrderingChoice c;
  if (a.nrows != a.ncols || a.nnz() == 0) {
    c.why = "not reordered: only square matrices get a symmetric ordering";
    return c;
  }
  const int vb = value_bytes(precision);
  const double per_row = static_cast<double>(a.nnz()) / static_cast<double>(a.nrows);
  if (per_row < kMinNonzerosPerRow) {
    c.why = fmt::format(
        "not reordered: {:.1f} nonzeros per row, below {:.0f}: the gather of x that renumbered "
        "columns need each multiply would cost more than local x accesses save",
        per_row, kMinNonzerosPerRow);
    return c;
  }
  const LocalityStats before = locality(a, vb);
  const double scatter = before.lines_per_warp / (32.0 * std::max(per_row, 1.0));
  if (scatter < kScatteredLinesPerNonzero) {
    c.why = fmt::format(
        "not reordered: x accesses are already local ({:.1f} lines of x per 32 rows, {:.2f} per "
        "nonzero, below {:.2f}); on such matrices every ordering measured slower on the H100",
        before.lines_per_warp, scatter, kScatteredLinesPerNonzero);
    return c;
  }
  Ordering rcm = compute_ordering(a, "rcm");
  const LocalityStats after = locality(permute(a, rcm), vb);
  if (after.lines_per_warp * kRequiredGain > before.lines_per_warp) {
    c.why = fmt::format(
        "not reordered: x accesses are scattered ({:.1f} lines per 32 rows) but RCM only brings "
        "them to {:.1f}",
        before.lines_per_warp, after.lines_per_warp);
    return c;
  }
  c.why = fmt::format(
      "rcm, columns renumbered: x accesses were scattered ({:.1f} lines of x per 32 rows, {:.2f} "
      "per nonzero); RCM brings them to {:.1f} in {:.2f} s",
      before.lines_per_warp, scatter, after.lines_per_warp, rcm.seconds);
  c.renumber_columns = true;
  c.ordering = std::move(rcm);
  return c;
}

}  // namespace spmvc::compiler
