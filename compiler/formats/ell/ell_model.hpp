// The padding model shared by the ELL family (ell, sell, hyb's ELL part): how many slots a
// layout stores, how many the kernel's lanes walk, and how many the memory system fetches, all
// from the row-length histogram of the Profile (no pass over the matrix).
//
// One formula serves every case. Rows are packed in groups of `pack` consecutive rows (a slice,
// a warp, the rows sharing one 32-byte sector); a group costs `pack` slots for every length level
// reached by its longest row. When rows are sorted by decreasing length within windows of W rows
// (SELL-C-sigma), the N rows of a window that reach a level fill ceil(N / pack) groups. With
// N ~ Binomial(W, p) for a level reached by a fraction p of the rows, the expected slots per row
// are
//     (pack / W) * sum over levels of (level step) * E[ceil(N / pack)],
// and without sorting (W = pack) this is E[max over pack rows of the length]. The binomial is the
// approximation: it treats row lengths as independent of the row's position. Matrices whose
// long rows cluster (most real ones: neighbouring rows look alike) pad less than this predicts,
// so the model errs against the ELL family, never for it.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"

namespace spmvc::formats::ell_model {

/// Row lengths as (length, rows) pairs in increasing length. Histogram bins above 32 are ranges:
/// their rows stand at the bin's midpoint (capped at the longest row), as in csr's model.
struct Lengths {
  std::vector<std::pair<double, double>> bins;
  double rows = 0;
  double mean() const;
};

Lengths lengths(const Profile& profile);
/// The same rows with each length replaced by f(length), e.g. min(length, K).
Lengths map(const Lengths& lengths, const std::function<double(double)>& f);

/// E[ceil(N / pack)] for N ~ Binomial(window, p).
double expected_groups(std::int64_t window, double p, std::int64_t pack);
/// The same sum evaluated afresh (expected_groups keeps its answers per thread): the reference
/// the tests hold the kept answers to.
double expected_groups_uncached(std::int64_t window, double p, std::int64_t pack);

/// Expected slots per row when groups of `pack` rows are padded to their longest row, lengths
/// first rounded up to a multiple of `round` and raised to at least `floor`, and rows sorted by
/// decreasing length within windows of `window` rows (window <= pack: unsorted).
double padded_per_row(const Lengths& lengths, std::int64_t window, std::int64_t pack, int round,
                      double floor = 0);

/// Expected slots per row the memory system fetches from one column-major array of `elem_bytes`
/// elements when each row's lanes read `lengths` slots and T lanes interleave a row's slots:
/// every 32-byte sector that any of its rows needs is fetched whole.
double fetched_per_row(const Lengths& lengths, int elem_bytes, int threads_per_row,
                       std::int64_t window = 1);

/// T for a mean of `mean` nonzeros per row: the smallest power of two with mean / T at most
/// csr's nonzeros per lane (the same latency argument: one lane, one dependent gather chain).
int threads_per_row_for(double mean, Precision precision);

/// Fraction of memory parallelism kept when each lane walks `per_lane` nonzeros (csr's model).
double latency_factor(double per_lane, Precision precision);

}  // namespace spmvc::formats::ell_model

// Limits of the ELL family's padding (ell, sell, hyb), each with where it came from. None has an
// H100 sweep behind it yet; they are limits of sense.
namespace spmvc::heuristics {

/// ell, hyb: the padded ELL array may hold at most this many slots per nonzero (plus
/// kEllPadSlack): beyond it the padding costs more bytes than the indices save, and on power-law
/// matrices (one row of 10^5 in a million rows) ELL would need terabytes. The brief's bound.
inline constexpr double kEllMaxPadRatio = 3.0;
/// ell, hyb: slots always allowed, so small matrices (whose time is the launch) are never refused
/// for padding; 2^16 slots are 768 KiB in fp64.
inline constexpr std::int64_t kEllPadSlack = std::int64_t{1} << 16;
/// ell, sell, hyb: the encoded arrays may take at most this many bytes: half of an H100's 80 GB,
/// leaving room for x, y and the caller's own data.
inline constexpr double kEllMaxEncodedBytes = 40e9;

}  // namespace spmvc::heuristics
