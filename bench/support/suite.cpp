#include "spmvc/bench/suite.hpp"

namespace spmvc::bench {

std::string_view matrix_class(const Profile& p) {
  if (p.row_mean > 0 && static_cast<double>(p.row_max) > kPowerLawRowRatio * p.row_mean) return "G";
  return p.distinct_values <= kDistinctValuesCap ? "P" : "R";
}

}  // namespace spmvc::bench
