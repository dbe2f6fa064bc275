// The traffic model: the bytes one multiply moves through device memory, by kind, for any format.
//
// A format's Cost (formats/format.hpp) counts compulsory bytes: every encoded array read once, x
// read once, y written once (plus the atomics some formats count in L2). Two things it leaves out
// are what the traffic model adds, with AMB's reasoning (formats/amb/amb_traffic.cpp; Nagasaka,
// Nukada, Matsuoka, the "Estimation of Total Memory Access in SpMV" slides,
// ../shared/seeds/amb-multilevel-blocking-slides.txt) applied to the whole matrix as one column
// segment:
//   - x gathers that miss L2: a sector of x is read again when more than the L2 capacity passes
//     through the cache between two of its uses (x_bytes below);
//   - y lines that leave L2 between the pass that first writes them and the atomic updates that
//     add into them (atomic formats only), read back and written again.
// Matrix bytes and the format's own y accounting are taken from the Cost unchanged, so the traffic
// model never predicts fewer bytes than the compulsory one.
#pragma once

#include <string>

#include "formats/format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/plan.hpp"
#include "spmvc/profile.hpp"

namespace spmvc::compiler {

/// How a format's kernels write y.
enum class YUpdate {
  store,   ///< each row's sum stored once
  atomic,  ///< y scaled or zeroed first, then partial sums added with atomicAdd
};

/// What the traffic model needs to know about a format beyond its Cost.
struct TrafficTraits {
  YUpdate y_update = YUpdate::store;
  /// Fraction of the rows whose y receives atomic updates: 1 for the COO-only kernels (bro_coo,
  /// amb without `deterministic`), the rows longer than the ELL width for hyb and bro_hyb.
  double atomic_row_share = 0;
  /// The Cost's x term already models gathers (AMB, per column segment): kept as it is.
  bool x_modelled = false;
};

/// The traits of the format `params` belongs to, for `profile`.
TrafficTraits traffic_traits(const Profile& profile, const FormatParams& params);

/// The traffic of a candidate whose compulsory bytes are `cost`. Deterministic; O(1).
TrafficBytes traffic_bytes(const formats::Cost& cost, const Profile& profile, Precision precision,
                           const TrafficTraits& traits);

/// The x term alone: bytes of x one multiply reads when the rows gather from a vector of
/// `profile.ncols` values while `stream_bytes` of other data (matrix, y) pass through L2.
double x_traffic_bytes(const Profile& profile, Precision precision, double stream_bytes);

}  // namespace spmvc::compiler
