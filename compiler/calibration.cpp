// The planner's per-architecture time factors: data measured by `spmvc bench --suite` and fitted
// by scripts/model/calibrate.py, embedded here with their provenance (calibration/<arch>.inc).
#include "calibration.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

namespace spmvc::compiler {

namespace {

struct Factor {
  std::string_view format;
  std::string_view precision;
  double factor;              ///< median of measured / predicted over the suite (balanced warps)
  double imbalance_exponent;  ///< time grows as warp_imbalance^exponent beyond the factor
  int matrices;
  double log_spread;
};

constexpr Factor kSm90[] = {
#include "calibration/sm_90.inc"
};

}  // namespace

double time_factor(std::string_view arch, std::string_view format, Precision precision,
                   double warp_imbalance) {
  // f32acc64 moves fp32 data; its arithmetic differs, its traffic does not.
  const std::string_view prec = precision == Precision::f64 ? "f64" : "f32";
  if (arch != "sm_90") return 1.0;  // uncalibrated architectures use the model as is
  for (const Factor& f : kSm90) {
    if (f.format == format && f.precision == prec)
      return f.factor * std::pow(std::max(1.0, warp_imbalance), f.imbalance_exponent);
  }
  return 1.0;
}

}  // namespace spmvc::compiler
