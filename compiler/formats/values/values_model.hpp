// The value codings' model constants as data, with where they came from.
#pragma once

namespace spmvc::heuristics {

// Value codings (formats/values): their bytes are counted exactly; these are the cost of the
// table read each value adds, as lane efficiency. An 8-bit table (<= 2 KiB) is an L1 hit beside
// the x gather. A 16-bit table that stays in L1 still beats plain values on the H100; past L1
// every value is an L2 read, slower than plain values, so it is charged a lane efficiency that
// loses to them.
inline constexpr double kValueTable8Efficiency = 0.95;
inline constexpr double kValueTable16Efficiency = 0.8;
inline constexpr double kValueTableL1Bytes = 128.0 * 1024;
inline constexpr double kValueTableL2Efficiency = 0.4;

}  // namespace spmvc::heuristics
