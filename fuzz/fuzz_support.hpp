// What every fuzz target shares: the memory budget it runs under, and the checks on a result.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "spmvc/matrix.hpp"

namespace spmvc::fuzz {

// The budget every target sets (unless SPMVC_MEMORY_BUDGET is set already). fuzz/smoke and
// fuzz/run-long run with -rss_limit_mb=1024, sixteen times this: whatever an input declares, the
// reader and the generators must refuse it with an InputError before they near the RSS limit,
// so an "out-of-memory" report from libFuzzer is a bug (an allocation not checked against the
// budget), not a large input.
constexpr const char* kBudget = "67108864";  // 64 MiB

inline void set_budget(const char* bytes = kBudget) { setenv("SPMVC_MEMORY_BUDGET", bytes, 0); }

// Stops the run with the input saved: a wrong answer is as much a finding as a crash.
[[noreturn]] inline void finding(const char* what, const std::string& first = {},
                                 const std::string& second = {}) {
  std::fprintf(stderr, "spmvc fuzz finding: %s\n  [%s]\n  [%s]\n", what, first.c_str(),
               second.c_str());
  std::abort();
}

inline bool same_value(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

inline bool same_matrix(const CsrMatrix& a, const CsrMatrix& b) {
  if (a.nrows != b.nrows || a.ncols != b.ncols || a.row_ptr != b.row_ptr ||
      a.col_idx != b.col_idx || a.values.size() != b.values.size())
    return false;
  for (std::size_t k = 0; k < a.values.size(); ++k) {
    if (!same_value(a.values[k], b.values[k])) return false;
  }
  return true;
}

}  // namespace spmvc::fuzz
