#include "formats/format.hpp"

#include <atomic>
#include <utility>

#include "formats/model_shortcuts.hpp"

#include "codegen/codegen.hpp"
#include "heuristics.hpp"

namespace spmvc::formats {

namespace {
std::atomic<bool> shortcuts{true};
// The planning under way on this thread: its Profile and its number (0: none).
thread_local const Profile* planned = nullptr;
thread_local std::uint64_t planning_number = 0;
thread_local std::uint64_t plannings = 0;
}  // namespace

bool model_shortcuts() { return shortcuts.load(std::memory_order_relaxed); }
void set_model_shortcuts(bool on) { shortcuts.store(on, std::memory_order_relaxed); }

PlanningScope::PlanningScope(const Profile& profile) {
  if (planned == &profile) return;  // inside a planning of the same Profile
  owner_ = true;
  outer_ = planned;
  outer_number_ = planning_number;
  planned = &profile;
  planning_number = ++plannings;
}

PlanningScope::~PlanningScope() {
  if (!owner_) return;
  planned = outer_;
  planning_number = outer_number_;
}

std::uint64_t planning(const Profile& profile) {
  return planned == &profile && model_shortcuts() ? planning_number : 0;
}

Candidate FormatUnit::candidate(const Profile& profile, const FormatParams& params,
                                Precision precision) const {
  Candidate c{std::string(name()), params, describe(params), true, "", 0, 0, true};
  if (auto why = cannot_implement(profile, params, precision)) {
    c.applicable = false;
    c.representable = false;
    c.reason = *why;
  }
  return c;
}

Candidate FormatUnit::rejected(const FormatParams& params, std::string reason) const {
  return {std::string(name()), params, describe(params), false, std::move(reason), 0, 0, false};
}

Candidate FormatUnit::not_paying(const Profile& profile, const FormatParams& params,
                                 Precision precision, std::string reason) const {
  Candidate c = candidate(profile, params, precision);
  if (c.applicable) {
    c.applicable = false;
    c.reason = std::move(reason);
  }
  return c;
}

Encoded FormatUnit::encoded_for(const CsrMatrix& a, Precision precision) const {
  Encoded e;
  e.format = std::string(name());
  e.precision = precision;
  e.nrows = a.nrows;
  e.ncols = a.ncols;
  e.nnz = a.nnz();
  return e;
}

KernelSource FormatUnit::kernel_source(const std::string& kernel_name,
                                       const std::vector<std::string>& templates,
                                       const std::string& banner) {
  KernelSource k;
  k.kernel_name = kernel_name;
  k.file_name = kernel_name + ".cu";
  k.headers = codegen::template_headers(templates);
  k.options = codegen::base_options();
  k.source = banner;
  return k;
}

double gathered_x_sectors(const Profile& profile) {
  if (profile.x_sectors > 0 || profile.nnz == 0) return static_cast<double>(profile.x_sectors);
  return static_cast<double>(profile.nnz) * heuristics::kUnknownSectorsPerNonzero;
}

}  // namespace spmvc::formats
