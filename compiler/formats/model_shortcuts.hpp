// The cost models' shortcuts: results kept per histogram or per thread (amb's blocking
// estimate, the ELL family's binomial padding sums, cci's code tables), cci's bounded
// code-table search, amb's synthetic rows laid out a run at a time. Each gives the answer of
// the long way round, which stays in the library as its reference; the tests turn the
// shortcuts off to plan the long way and check that every candidate's prediction and the
// chosen plan come out the same.
#pragma once

namespace spmvc::formats {

/// Whether the models take their shortcuts (on unless a test turned them off; process-wide).
bool model_shortcuts();
/// Turns the shortcuts on or off for the whole process (tests only).
void set_model_shortcuts(bool on);

}  // namespace spmvc::formats
