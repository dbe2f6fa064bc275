// The cost models' shortcuts: results kept per histogram or per thread (amb's blocking
// estimate, the ELL family's binomial padding sums and padded slots, cci's code tables), per
// planning of one Profile (BRO-ELL's slice estimates, the ELL family's row lengths:
// PlanningScope), cci's bounded code-table search, amb's synthetic rows laid out a run at a
// time. Each gives the answer of the long way round, which stays in the library as its
// reference; the tests turn the shortcuts off to plan the long way and check that every
// candidate's prediction and the chosen plan come out the same.
#pragma once

#include <cstdint>
#include <map>

#include "spmvc/profile.hpp"

namespace spmvc::formats {

/// Whether the models take their shortcuts (on unless a test turned them off; process-wide).
bool model_shortcuts();
/// Turns the shortcuts on or off for the whole process (tests only).
void set_model_shortcuts(bool on);

/// One planning of one Profile on this thread (make_plan, plan_device_csr): while it lives, the
/// Profile cannot change, so a model may keep answers it computed from that Profile alone,
/// under planning(): a number that names this planning. A planning of the same Profile inside
/// another (make_plan per format within plan_device_csr) is the outer one.
class PlanningScope {
 public:
  explicit PlanningScope(const Profile& profile);
  ~PlanningScope();
  PlanningScope(const PlanningScope&) = delete;
  PlanningScope& operator=(const PlanningScope&) = delete;

 private:
  bool owner_ = false;
  const Profile* outer_ = nullptr;  // the planning this one interrupts, resumed at its end
  std::uint64_t outer_number_ = 0;
};

/// The number of the planning of `profile` under way on this thread; 0 when none is (or it
/// plans another Profile), or the shortcuts are off: then nothing may be kept.
std::uint64_t planning(const Profile& profile);

/// Answers computed from a Profile alone, kept by key for the planning under way (planning()):
/// asked again within it, the kept answer; outside a planning, computed each time. One per call
/// site, thread_local.
template <typename Key, typename Value, typename Map = std::map<Key, Value>>
class PlanningMemo {
 public:
  template <typename Make>
  Value get(const Profile& profile, const Key& key, Make&& make) {
    const std::uint64_t number = planning(profile);
    if (number == 0) return make();
    if (number != number_) {
      kept_.clear();
      number_ = number;
    }
    auto it = kept_.find(key);
    if (it == kept_.end()) it = kept_.emplace(key, make()).first;
    return it->second;
  }

 private:
  std::uint64_t number_ = 0;
  Map kept_;
};

}  // namespace spmvc::formats
