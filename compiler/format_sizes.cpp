// Every format's encoding of one matrix side by side (`spmvc inspect`'s formats table).
#include <algorithm>
#include <type_traits>
#include <variant>

#include <fmt/format.h>

#include "formats/bro/bro_eta.hpp"
#include "formats/cci/cci_format.hpp"
#include "formats/format.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"

namespace spmvc::compiler {

std::vector<std::string> format_names() {
  std::vector<std::string> names;
  for (const formats::FormatUnit* unit : formats::registry()) names.emplace_back(unit->name());
  return names;
}

std::string canonical_format_name(std::string_view name) {
  return std::string(formats::find_format(name).name());
}

double matrix_bytes_per_nonzero(const Profile& profile, const Plan& plan) {
  const formats::Cost cost =
      formats::find_format(plan.format).cost(profile, plan.params, plan.precision);
  return cost.matrix_bytes / static_cast<double>(std::max<std::int64_t>(profile.nnz, 1));
}

std::vector<FormatSize> format_sizes(const CsrMatrix& a, const Profile& profile,
                                     Precision precision,
                                     const std::function<void(std::string_view)>& progress) {
  std::vector<FormatSize> sizes;
  for (const formats::FormatUnit* unit : formats::registry()) {
    FormatSize& s = sizes.emplace_back();
    s.format = std::string(unit->name());
    PlanOptions o;
    o.precision = precision;
    o.format = s.format;
    Plan plan;
    try {
      plan = make_plan(profile, o);
    } catch (const InputError& e) {
      s.reason = e.detail();
      continue;
    }
    if (progress) progress(unit->name());
    const Encoded e = encode(a, plan);
    s.applicable = true;
    s.params = describe(plan.params);
    s.bytes = e.total_bytes();
    for (const EncodedArray& arr : e.arrays) {
      if (arr.scratch || arr.type == ElemType::f32 || arr.type == ElemType::f64) continue;
      s.index_bytes += static_cast<std::int64_t>(arr.bytes.size());
    }
    s.predicted_seconds = plan.predicted_seconds;
    // The papers' own space measures, where a format has one: BRO's eta (index data against
    // the ELL/COO indices it replaces) and CCI's column data saved (codes and starts).
    std::visit(
        [&](const auto& params) {
          using P = std::decay_t<decltype(params)>;
          if constexpr (std::is_same_v<P, BroEllParams> || std::is_same_v<P, BroCooParams> ||
                        std::is_same_v<P, BroHybParams>) {
            s.paper_measure = fmt::format("BRO eta {:.1f}%", 100.0 * formats::bro_eta(a, params));
          } else if constexpr (std::is_same_v<P, CciParams>) {
            s.paper_measure =
                fmt::format("CCI saved {:.1f}%", 100.0 * formats::cci_space(e).saved_with_starts);
          }
        },
        plan.params);
  }
  return sizes;
}

}  // namespace spmvc::compiler
