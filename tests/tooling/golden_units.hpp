// Every golden unit of every format for the tooling tests: the plan-only golden lists (csr, ell,
// sell, hyb, the BRO formats, amb, cci, the dense-block formats, dia, csr_warp) and the pinned
// units (csr_stream, every value coding, reordered units), each with the plan, profile and encoding
// it was generated from.
#pragma once

#include <string>
#include <vector>

#include "../block_plans.hpp"
#include "../bro_golden_plans.hpp"
#include "../golden/csr_warp_golden_plans.hpp"
#include "../golden/dia_golden_plans.hpp"
#include "../golden/ell_golden_plans.hpp"
#include "../golden/pinned_units.hpp"
#include "../golden/test_amb_cci_plans.hpp"
#include "golden_plans.hpp"

namespace spmvc::test {

struct GoldenUnit {
  std::string name;
  Plan plan;
  Profile profile;
  Encoded encoded;
  KernelSource source;
};

inline GoldenUnit golden_unit(const GoldenPlan& g) {
  const CsrMatrix a = gen::from_spec(g.spec);
  GoldenUnit u{g.name, {}, inspect(a), {}, {}};
  u.plan = compiler::make_plan(u.profile, g.options);
  u.encoded = compiler::encode(a, u.plan);
  u.source = codegen::generate(u.plan, u.encoded, u.profile);
  return u;
}

inline GoldenUnit golden_unit(const PinnedUnit& p) {
  PinnedBuild b = build_pinned(p);
  return {p.name, std::move(b.plan), std::move(b.profile), std::move(b.encoded),
          std::move(b.source)};
}

/// Every golden plan and pinned unit, in a fixed order.
inline std::vector<GoldenUnit> every_golden_unit() {
  std::vector<GoldenUnit> units;
  std::vector<GoldenPlan> plans = golden_plans();
  for (auto* more : {&ell_golden_plans, &bro_golden_plans, &amb_golden_plans, &cci_golden_plans,
                     &block_golden_plans, &dia_golden_plans, &csr_warp_golden_plans}) {
    for (auto& g : (*more)()) plans.push_back(std::move(g));
  }
  for (const auto& g : plans) units.push_back(golden_unit(g));
  for (const auto& p : pinned_units()) units.push_back(golden_unit(p));
  return units;
}

}  // namespace spmvc::test
