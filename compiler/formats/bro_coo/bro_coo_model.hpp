// bro_coo's cost-model constants (also those of bro_hyb's COO part), with where they come from.
#pragma once

#include "formats/bro/bro_model.hpp"

namespace spmvc::formats::bro::model {

/// bro_coo: atomics in L2 per y element updated, in bytes of DRAM-equivalent traffic: a RED
/// moves a value's worth of data to L2 (counted like a y write).
inline constexpr double kAtomicBytesFactor = 1.0;

/// bro_coo: entries a lane keeps in flight (the interval loop is unrolled 4 deep), so a lane's
/// E = I/32 entries are about E/4 dependent steps.
inline constexpr double kCooEntriesPerStep = 4.0;

}  // namespace spmvc::formats::bro::model
