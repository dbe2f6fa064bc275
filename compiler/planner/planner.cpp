#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "calibration.hpp"
#include "formats/format.hpp"
#include "formats/model_shortcuts.hpp"
#include "formats/values/values.hpp"
#include "heuristics.hpp"
#include "spmvc/compiler/build_choice.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"
#include "spmvc/value_rounding.hpp"
#include "traffic.hpp"

namespace spmvc::compiler {

namespace {

// `bytes` moved at the cost's lane efficiency, or its serial chain where that is longer; the
// launch floor and the chain (counted in the reference GPU's step time) scaled to the GPU's own.
// csr_stream's split rows' own factor under `calibration` (GpuCalibration::stream_split) where
// `params` are split rows on a GPU that has it; 0 otherwise.
double split_factor(const GpuCalibration* calibration, const FormatParams& params) {
  const auto* q = std::get_if<CsrStreamParams>(&params);
  if (q == nullptr || q->split <= 0 || calibration == nullptr) return 0;
  return calibration->stream_split;
}

double predict_seconds(const formats::Cost& cost, double bytes, double bandwidth,
                       const GpuCalibration* calibration) {
  const double efficiency = std::max(cost.lane_efficiency, 1e-3);
  const double launch = calibration != nullptr ? calibration->launch_scale : 1.0;
  const double step = calibration != nullptr ? calibration->step_scale : 1.0;
  return heuristics::kLaunchSeconds * launch +
         std::max(bytes / (bandwidth * efficiency), cost.serial_seconds * step);
}

// Seconds of one build stage under `factor` (nullptr: `fallback` seconds per nonzero), for a
// matrix of `nnz` nonzeros whose encoding is `matrix_bytes`.
double stage_seconds(const BuildFactor* factor, double fallback, double nnz, double matrix_bytes) {
  if (factor == nullptr) return fallback * nnz;
  if (factor->basis == "kernel") return factor->seconds_per_unit;
  return factor->seconds_per_unit * (factor->basis == "byte" ? matrix_bytes : nnz);
}

// Whether the device build of `format` writes its whole encoding (the ell family's padded
// arrays), rather than reading the caller's CSR arrays as they are (csr, csr_stream).
bool writes_device_encoding(std::string_view format) {
  return format == "ell" || format == "sell" || format == "hyb";
}

// The one-time cost of building `format`'s candidate of `cost` (the stages of BuildEstimate).
BuildEstimate predict_build(const GpuCalibration* calibration, std::string_view format,
                            const Profile& profile, const formats::Cost& cost,
                            const PlanOptions& options) {
  const double nnz = static_cast<double>(profile.nnz);
  const double bytes = cost.matrix_bytes;
  const bool device = options.build_path == BuildPath::device;
  auto stage = [&](std::string_view name, std::string_view fmt, double fallback) {
    return stage_seconds(build_factor(calibration, name, fmt), fallback, nnz, bytes);
  };
  BuildEstimate b;
  if (device) {
    b.inspect = stage("device_inspect", "", heuristics::kDeviceInspectSecondsPerNonzero);
    // A format the GPU encodes whole costs its passes over the matrix, where the calibration has
    // no measured factor of its own for it (the pooled factor is csr's and csr_stream's, whose
    // device build writes next to nothing).
    const BuildFactor* own = build_factor(calibration, "device_encode", format);
    const bool uncalibrated = own == nullptr || own->format != format;
    if (writes_device_encoding(format) && uncalibrated) {
      b.encode = bytes * heuristics::kDeviceEncodeSecondsPerByte;
    } else if (format != "csr" && format != "csr_stream" && uncalibrated) {
      const double value = value_bytes(options.precision);
      b.encode = heuristics::kDeviceEncoderFixedSeconds +
                 (nnz * (2 * 4 + value) + bytes) / heuristics::kDeviceEncoderBytesPerSecond;
      if (format == "bcsr" || format == "bellpack")
        b.encode += nnz * heuristics::kDeviceBlockBytesPerNonzero /
                    heuristics::kDeviceEncoderBytesPerSecond;
      if (format == "bellpack") {
        // A block row holds at most the longest row's nonzeros per row, 8 rows: its count's
        // bits are the sort's passes; every row a block row bounds their length.
        const double passes =
            std::ceil(std::log2(1.0 + 8.0 * static_cast<double>(profile.row_max)));
        b.encode +=
            passes * (heuristics::kDeviceSortSecondsPerPass +
                      static_cast<double>(profile.nrows) * heuristics::kDeviceSortBytesPerRowPass /
                          heuristics::kDeviceEncoderBytesPerSecond);
      }
    } else {
      b.encode = stage("device_encode", format, heuristics::kDeviceEncodeSecondsPerNonzero);
    }
    if (options.uploads_csr) {
      const double csr_bytes = uploaded_csr_bytes(profile.nrows, profile.nnz, options.precision);
      const BuildFactor* upload = build_factor(calibration, "upload");
      b.upload = csr_bytes * (upload != nullptr ? upload->seconds_per_unit
                                                : 1.0 / heuristics::kUploadBytesPerSecond);
    }
  } else {
    b.inspect = stage("inspect", "", heuristics::kInspectSecondsPerNonzero);
    b.encode = stage("encode", format, heuristics::kEncodeSecondsPerNonzero);
    const BuildFactor* upload = build_factor(calibration, "upload");
    b.upload = bytes * (upload != nullptr ? upload->seconds_per_unit
                                          : 1.0 / heuristics::kUploadBytesPerSecond);
  }
  if (!options.cached_kernels) {
    const BuildFactor* compile = build_factor(calibration, "compile", format);
    b.compile = compile != nullptr ? compile->seconds_per_unit : heuristics::kCompileSeconds;
  }
  return b;
}

Prediction predict(const formats::FormatUnit& unit, const Profile& profile,
                   const FormatParams& params, const PlanOptions& options) {
  const GpuCalibration* calibration = find_calibration(options.arch, options.gpu);
  const double bandwidth = options.read_bandwidth > 0 ? options.read_bandwidth
                           : calibration != nullptr   ? calibration->read_bandwidth
                                                      : heuristics::kDefaultReadBandwidth;
  const formats::Cost cost = unit.cost(profile, params, options.precision);
  Prediction p;
  p.time_factor = time_factor(calibration, unit.name(), options.precision, cost.warp_imbalance);
  // csr_stream's split rows: their kernel's own measured over predicted time (calibration.hpp).
  if (const double split = split_factor(calibration, params); split > 0) p.time_factor *= split;
  // The x sectors the rows gather one at a time, at the calibration's price per sector: in both
  // cost models, as the traffic model's x bytes count what misses L2, not the gathers' own cost.
  const double gathers =
      cost.gathered_sectors * sector_bytes(calibration, unit.name(), options.precision) / bandwidth;
  p.compulsory_bytes = cost.total();
  p.compulsory_seconds =
      (predict_seconds(cost, p.compulsory_bytes, bandwidth, calibration) + gathers) * p.time_factor;
  p.traffic = traffic_bytes(cost, profile, options.precision, traffic_traits(profile, params));
  p.traffic_seconds =
      (predict_seconds(cost, p.traffic.total(), bandwidth, calibration) + gathers) * p.time_factor;
  p.build = predict_build(calibration, unit.name(), profile, cost, options);
  return p;
}

// How the reason of a candidate left out by unpriced_gathers() begins.
constexpr std::string_view kUncalibratedReason = "no calibration of";

// Whether `unit`'s candidate charges gathered x sectors (formats::Cost::gathered_sectors) on a
// calibrated GPU whose calibration has no row for the format, so no price for them.
bool unpriced_gathers(const formats::FormatUnit& unit, const Profile& profile,
                      const FormatParams& params, const PlanOptions& options) {
  const GpuCalibration* calibration = find_calibration(options.arch, options.gpu);
  if (calibration == nullptr || has_time_factor(calibration, unit.name(), options.precision))
    return false;
  return unit.cost(profile, params, options.precision).gathered_sectors > 0;
}

// What the ranking compares: the time per multiply, or with a multiply count the one-time cost
// plus that many multiplies.
double ranking_seconds(double per_multiply, double once, std::optional<std::int64_t> multiplies) {
  return multiplies ? once + static_cast<double>(*multiplies) * per_multiply : per_multiply;
}

double ranking_seconds(const Candidate& c, std::optional<std::int64_t> multiplies) {
  return ranking_seconds(c.predicted_seconds, c.build_seconds, multiplies);
}

std::string ranking_name(std::optional<std::int64_t> multiplies) {
  return multiplies ? fmt::format("one-time cost + {} x multiply time", *multiplies)
                    : std::string("time");
}

void set_prediction(Candidate& c, const Prediction& p, const PlanOptions& options) {
  c.predicted_bytes = p.bytes(options.cost_model);
  c.predicted_seconds = p.seconds(options.cost_model);
  c.build_seconds = p.build.total();
  c.total_seconds = options.multiplies ? ranking_seconds(c, options.multiplies) : 0.0;
}

// Sets plan.cusparse_seconds and, where cuSPARSE is predicted faster than the plan (or asked
// for always), turns `plan` into a cuSPARSE plan on the best plain csr candidate's arrays.
// Returns whether it did.
bool weigh_cusparse(Plan& plan, const Profile& profile, const PlanOptions& options) {
  std::optional<Plan> handed = cusparse_plan(plan, profile, options);
  plan.cusparse_seconds = predict_cusparse(profile, options);
  if (!handed) return false;
  const Candidate& best = plan.candidates.front();
  if (options.cusparse != "always" &&
      ranking_seconds(handed->predicted_seconds, handed->predicted_build_seconds,
                      plan.multiplies) >= ranking_seconds(best, plan.multiplies))
    return false;
  const std::string beaten =
      fmt::format("{} [{}] at {:.2f} us", best.format, best.label, best.predicted_seconds * 1e6);
  const double seconds = handed->predicted_seconds;
  plan = std::move(*handed);
  plan.why = options.cusparse == "always"
                 ? fmt::format(
                       "cuSPARSE asked for (cusparse \"always\"); predicted {:.2f} us, "
                       "the best generated candidate {}",
                       seconds * 1e6, beaten)
                 : fmt::format(
                       "cuSPARSE's CSR SpMV is predicted at {:.2f} us, and no generated "
                       "candidate faster: the best is {}",
                       seconds * 1e6, beaten);
  return true;
}

// Seconds as the ranking counts them: us per multiply, or ms of one-time cost + multiplies.
std::string ranking_text(double seconds, std::optional<std::int64_t> multiplies) {
  return multiplies ? fmt::format("{:.2f} ms", seconds * 1e3)
                    : fmt::format("{:.2f} us", seconds * 1e6);
}

// The best applicable mixed-precision candidate of ranked `candidates`, or end().
std::vector<Candidate>::iterator best_mixed(std::vector<Candidate>& candidates) {
  return std::find_if(candidates.begin(), candidates.end(), [](const Candidate& c) {
    return c.applicable && is_mixed_candidate(c.params);
  });
}

// With full-precision candidates ranked beside mixed-precision ones, a full-precision one is
// kept only when predicted faster: a tie (a launch floor, where bytes broke it) goes to the
// best mixed-precision candidate, which the caller asked for.
void prefer_mixed_on_tie(Plan& plan) {
  auto& cs = plan.candidates;
  if (cs.empty() || is_mixed_candidate(cs.front().params)) return;
  const auto mixed = best_mixed(cs);
  if (mixed == cs.end() ||
      ranking_seconds(*mixed, plan.multiplies) > ranking_seconds(cs.front(), plan.multiplies))
    return;
  std::rotate(cs.begin(), mixed, mixed + 1);
  const Candidate& best = cs.front();
  plan.format = best.format;
  plan.params = best.params;
  plan.predicted_bytes = best.predicted_bytes;
  plan.predicted_seconds = best.predicted_seconds;
  plan.predicted_build_seconds = best.build_seconds;
}

// `plan`, a full-precision plan (plain values or cuSPARSE) kept although mixed precision `mode`
// was asked for: no rounding, and why, against the best mixed-precision candidate.
void note_mixed_fallback(Plan& plan, MixedPrecision mode) {
  MixedFallback f;
  f.asked = mode;
  f.full_seconds =
      ranking_seconds(plan.predicted_seconds, plan.predicted_build_seconds, plan.multiplies);
  const auto mixed = best_mixed(plan.candidates);
  std::string note;
  if (mixed != plan.candidates.end()) {
    f.mixed_best = fmt::format("{} [{}]", mixed->format, mixed->label);
    f.mixed_seconds = ranking_seconds(*mixed, plan.multiplies);
    note = fmt::format(
        "mixed precision {} was asked for, but the full-precision plan is predicted {:.2f}x "
        "faster ({} against {} for the best mixed-precision candidate, {}): kept, its values "
        "exact; ",
        to_string(mode), f.mixed_seconds / f.full_seconds,
        ranking_text(f.full_seconds, plan.multiplies),
        ranking_text(f.mixed_seconds, plan.multiplies), f.mixed_best);
  } else {
    note = fmt::format(
        "mixed precision {} was asked for, but no mixed-precision candidate applies: full "
        "precision; ",
        to_string(mode));
  }
  plan.why = note + plan.why;
  plan.rounding.reset();
  plan.mixed_fallback = std::move(f);
}

}  // namespace

std::optional<std::string> cusparse_refusal(const Profile& profile, const PlanOptions& options) {
  if (options.cusparse != "auto" && options.cusparse != "always" && options.cusparse != "never")
    throw InputError("cusparse", 0,
                     fmt::format("'{}' is not auto, always or never", options.cusparse));
  if (options.mixed_precision != MixedPrecision::off && !options.mixed_fallback)
    return "cuSPARSE multiplies the full-precision CSR values: not with mixed precision insisted "
           "on (mixed_fallback off)";
  if (options.mixed_precision != MixedPrecision::off && options.cusparse == "always")
    return "cuSPARSE multiplies the full-precision CSR values: not \"always\" with mixed "
           "precision (\"auto\" weighs it as the full-precision plan)";
  if (options.precision == Precision::f32_acc64)
    return "cuSPARSE accumulates fp32 data in fp32: not with f32acc64";
  if (profile.nnz > std::numeric_limits<std::int32_t>::max())
    return fmt::format("{} nonzeros need 64-bit row offsets; the cuSPARSE engine takes 32-bit ones",
                       profile.nnz);
  return std::nullopt;
}

std::optional<Plan> cusparse_plan(const Plan& plan, const Profile& profile,
                                  const PlanOptions& options) {
  // Its arrays: the plain CSR of the best csr candidate with plain values (they are ranked).
  const Candidate* csr = nullptr;
  for (const Candidate& c : plan.candidates) {
    if (c.applicable && c.format == "csr" &&
        formats::value_coding_of(c.params) == formats::kValuesPlain) {
      csr = &c;
      break;
    }
  }
  if (csr == nullptr) return std::nullopt;
  Plan out = plan;
  out.engine = Engine::cusparse;
  out.rounding.reset();  // cuSPARSE reads the plain CSR values
  // Deterministic plans run CSR ALG2, the algorithm cuSPARSE documents as bitwise reproducible.
  out.cusparse_algorithm =
      options.deterministic ? CusparseAlgorithm::csr_alg2 : CusparseAlgorithm::csr_alg1;
  out.format = csr->format;
  out.params = csr->params;
  out.predicted_bytes = csr->predicted_bytes;
  out.predicted_seconds = predict_cusparse(profile, options);
  out.cusparse_seconds = out.predicted_seconds;
  // One-time: csr's build (its kernel serves SpMM and the transposed multiply) and the same
  // arrays; cuSPARSE's preprocessing is a pass over them, within csr's upload.
  out.predicted_build_seconds = csr->build_seconds;
  return out;
}

bool offer_cusparse(Plan& plan, const Profile& profile, const PlanOptions& options) {
  if (options.cusparse == "never") return false;
  if (auto why = cusparse_refusal(profile, options)) {
    if (options.cusparse == "always") throw InputError("cusparse", 0, *why);
    return false;
  }
  return weigh_cusparse(plan, profile, options);
}

double predict_cusparse(const Profile& profile, const PlanOptions& options) {
  const GpuCalibration* calibration = find_calibration(options.arch, options.gpu);
  const double bandwidth = options.read_bandwidth > 0 ? options.read_bandwidth
                           : calibration != nullptr   ? calibration->read_bandwidth
                                                      : heuristics::kDefaultReadBandwidth;
  const double vb = value_bytes(options.precision);
  const double offset = profile.nnz > std::numeric_limits<std::int32_t>::max() ? 8.0 : 4.0;
  const double bytes = static_cast<double>(profile.nrows + 1) * offset +
                       static_cast<double>(profile.nnz) * (4.0 + vb) +
                       static_cast<double>(profile.nrows + profile.ncols) * vb +
                       static_cast<double>(profile.nrows) * heuristics::kCusparseRowBytes;
  // Deterministic plans weigh CSR ALG2, slower than ALG1 by a factor of the precision's.
  const double algorithm = !options.deterministic ? 1.0
                           : options.precision == Precision::f64
                               ? heuristics::kCusparseAlg2Factor64
                               : heuristics::kCusparseAlg2Factor32;
  return (heuristics::kLaunchSeconds + bytes / bandwidth) * algorithm *
         time_factor(calibration, "cusparse", options.precision);
}

CostModel parse_cost_model(std::string_view name) {
  if (name == "compulsory") return CostModel::compulsory;
  if (name == "traffic") return CostModel::traffic;
  throw InputError("--cost-model", 0,
                   fmt::format("unknown cost model '{}' (compulsory, traffic)", name));
}

std::string_view to_string(CostModel model) {
  return model == CostModel::traffic ? "traffic" : "compulsory";
}

Prediction predict(const Profile& profile, const FormatParams& params, const PlanOptions& options) {
  return predict(formats::find_format(format_of(params)), profile, params, options);
}

std::string BuildEstimate::describe() const {
  return fmt::format("{:.1f} ms: inspect {:.1f}, encode {:.1f}, upload {:.1f}, compile {:.1f}",
                     total() * 1e3, inspect * 1e3, encode * 1e3, upload * 1e3, compile * 1e3);
}

PlanCandidates plan_candidates(const Profile& profile, const PlanOptions& options) {
  const formats::PlanningScope planning(profile);
  std::vector<const formats::FormatUnit*> units;
  if (options.format == "auto") {
    units = formats::registry();
  } else {
    units.push_back(&formats::find_format(options.format));
  }
  std::optional<FormatParams> forced = options.params;
  if (!forced && options.csr) forced = FormatParams{*options.csr};
  if (forced && options.format != "auto" && options.format != format_of(*forced))
    throw InputError("--format", 0,
                     fmt::format("{} parameters were given but the format is {}",
                                 format_of(*forced), options.format));

  const MixedPrecision mixed = options.mixed_precision;
  // Mixed precision asked for with the planner free to choose: the full-precision candidates
  // (plain values, formats without a value coding) are ranked beside the mixed-precision ones,
  // cuSPARSE too, and the fastest is kept (Options::mixed_fallback).
  const bool fallback = weighs_full_precision(options);
  if (mixed != MixedPrecision::off) {
    if (auto why = formats::mixed_precision_problem(mixed, options.precision))
      throw InputError("mixed_precision", 0, *why);
    if (forced && !formats::has_value_coding(*forced))
      throw InputError(
          fmt::format("{} parameters", format_of(*forced)), 0,
          fmt::format("mixed precision {} was asked for, but {} stores full-precision values "
                      "only (it has no value coding; csr, csr_stream, ell, hyb, bro_ell, bro_coo "
                      "and bro_hyb do)",
                      to_string(mixed), format_of(*forced)));
    if (forced)
      forced = formats::with_value_coding(
          *forced, formats::mixed_coding_for(formats::value_coding_of(*forced), mixed, profile,
                                             options.precision));
  }

  std::vector<Candidate> candidates;
  for (const formats::FormatUnit* unit : units) {
    std::vector<Candidate> proposed;
    if (forced && unit->name() == format_of(*forced)) {
      Candidate c{std::string(unit->name()),
                  *forced,
                  describe(*forced),
                  true,
                  "forced by the caller",
                  0,
                  0,
                  true};
      if (auto why = unit->cannot_implement(profile, c.params, options.precision))
        throw InputError(fmt::format("{} parameters", unit->name()), 0, *why);
      if (options.deterministic) {
        if (auto why = unit->nondeterminism(c.params))
          throw InputError(fmt::format("{} parameters", unit->name()), 0,
                           fmt::format("deterministic mode: {} [{}] is not deterministic: {}",
                                       unit->name(), c.label, *why));
      }
      proposed.push_back(std::move(c));
    } else if (forced) {
      continue;  // parameters were forced for one format: the others are not candidates
    } else {
      proposed = unit->propose(profile, options.precision);
      if (!options.value_coding) {
        std::erase_if(proposed, [](const Candidate& c) {
          return formats::value_coding_of(c.params) != formats::kValuesPlain;
        });
      }
      if (mixed != MixedPrecision::off) {
        // The plain candidates stay as they are beside their mixed-precision twins.
        std::vector<Candidate> full;
        if (fallback) {
          for (const Candidate& c : proposed) {
            if (c.applicable && formats::has_value_coding(c.params) &&
                !is_mixed_candidate(c.params))
              full.push_back(c);
          }
        }
        formats::apply_mixed_precision(proposed, profile, options.precision, mixed);
        for (Candidate& c : full) {
          c.reason = "full precision: " + c.reason;
          proposed.push_back(std::move(c));
        }
      }
      // csr_stream's split rows: only on GPUs where they were measured to pay, and only in the
      // value codings they take (a mixed-precision twin may have changed it).
      const bool split_rows = split_rows_measured(options.arch, options.gpu);
      std::erase_if(proposed, [&](const Candidate& c) {
        const auto* q = std::get_if<CsrStreamParams>(&c.params);
        return q != nullptr && q->split > 0 &&
               (!split_rows ||
                unit->cannot_implement(profile, c.params, options.precision).has_value());
      });
    }
    for (Candidate& c : proposed) {
      if (mixed != MixedPrecision::off && c.representable && !formats::has_value_coding(c.params)) {
        if (fallback) {
          if (c.applicable) c.reason = "full precision (no value coding): " + c.reason;
        } else {
          c.applicable = false;
          c.representable = false;  // a forced format name does not override this either
          c.reason = fmt::format(
              "mixed precision {}: {} stores full-precision values only (no value coding)",
              to_string(mixed), c.format);
        }
      }
      if (options.deterministic && c.applicable) {
        if (auto why = unit->nondeterminism(c.params)) {
          c.applicable = false;
          c.representable = false;  // a forced format does not override this either
          c.reason = "deterministic mode: " + *why;
        }
      }
      if (c.applicable) {
        set_prediction(c, predict(*unit, profile, c.params, options), options);
        const GpuCalibration* calibration = find_calibration(options.arch, options.gpu);
        if (const double split = split_factor(calibration, c.params); split > 0)
          c.reason += fmt::format("; the split kernel's own calibrated factor on the {}: {:.3f}",
                                  calibration->model, split);
      }
      if (c.applicable && !forced && options.format == "auto" &&
          unpriced_gathers(*unit, profile, c.params, options)) {
        // The model's bytes leave out what such a format's gathers cost, which its calibration
        // row prices: without one it would look free of them. Planned only when the caller names
        // the format or forces its parameters; its prediction stays for the calibration to fit
        // (scripts/model/planner_data.py).
        c.applicable = false;
        c.reason = fmt::format("{} {} on this GPU: the model has no price for its gathers of x",
                               kUncalibratedReason, c.format);
      }
      candidates.push_back(std::move(c));
    }
  }
  // A format the caller forced runs even where the planner thinks it does not pay: when none of
  // its candidates applies but some can implement the matrix, the one predicted fastest is taken
  // and the planner's objection goes into the plan's why. One that cannot implement the matrix
  // is still refused.
  std::string objection;
  const bool none_applies = std::none_of(candidates.begin(), candidates.end(),
                                         [](const Candidate& c) { return c.applicable; });
  if (!forced && options.format != "auto" && none_applies) {
    Candidate* best = nullptr;
    for (Candidate& c : candidates) {
      if (!c.representable) continue;
      set_prediction(c, predict(formats::find_format(c.format), profile, c.params, options),
                     options);
      if (best == nullptr ||
          ranking_seconds(c, options.multiplies) < ranking_seconds(*best, options.multiplies))
        best = &c;
    }
    if (best != nullptr) {
      objection = best->reason;
      best->applicable = true;
      best->reason = "forced; the planner would not choose it: " + objection;
    }
  }
  return {std::move(candidates), std::move(objection)};
}

Plan make_plan(const Profile& profile, const PlanOptions& options) {
  const formats::PlanningScope planning(profile);
  const bool forced = options.params || options.csr;  // checked by plan_candidates
  const bool fallback = weighs_full_precision(options);
  const MixedPrecision mixed = options.mixed_precision;
  PlanCandidates ranked = plan_candidates(profile, options);
  const std::string& objection = ranked.objection;
  Plan plan = pick_candidate(std::move(ranked.candidates), options.precision, options.multiplies);
  if (fallback) prefer_mixed_on_tie(plan);
  plan.rounding = plan_rounding(profile, options, plan.params, Engine::kernel);
  const bool cusparse = !forced && options.format == "auto" && objection.empty() &&
                        offer_cusparse(plan, profile, options);
  if (fallback && (cusparse || !is_mixed_candidate(plan.params))) note_mixed_fallback(plan, mixed);
  if (cusparse) return plan;
  if (forced) {
    plan.why = "parameters forced by the caller";
  } else if (!objection.empty()) {
    plan.why =
        fmt::format("forced: format {} [{}] was asked for; the planner would not choose it: {}",
                    plan.format, plan.candidates.front().label, objection);
  } else {
    const std::size_t applicable =
        static_cast<std::size_t>(std::count_if(plan.candidates.begin(), plan.candidates.end(),
                                               [](const Candidate& c) { return c.applicable; }));
    plan.why += fmt::format(
        "lowest predicted {} of {} applicable candidates ({}; {:.1f} nonzeros "
        "per row on average)",
        ranking_name(options.multiplies), applicable, plan.candidates.front().reason,
        profile.row_mean);
  }
  return plan;
}

bool is_mixed_candidate(const FormatParams& params) {
  return formats::value_coding_of(params) != formats::kValuesPlain;
}

bool weighs_full_precision(const PlanOptions& options) {
  return options.mixed_precision != MixedPrecision::off && options.mixed_fallback &&
         options.format == "auto" && !options.params && !options.csr;
}

std::optional<ValueRounding> plan_rounding(const Profile& profile, const PlanOptions& options,
                                           const FormatParams& params, Engine engine) {
  if (options.mixed_precision == MixedPrecision::off || engine == Engine::cusparse ||
      !is_mixed_candidate(params))
    return std::nullopt;
  return formats::value_rounding(profile, options.mixed_precision, options.precision,
                                 formats::value_coding_of(params));
}

Plan pick_candidate(std::vector<Candidate> candidates, Precision precision,
                    std::optional<std::int64_t> multiplies) {
  // Applicable first, by predicted time (one-time cost + multiplies x time when the caller said
  // how many), then by bytes (a value-coded twin that ties on a latency floor still moves less);
  // remaining ties keep the proposal order (stable).
  // The order is found on indices with each candidate's time worked out once, and the candidates
  // (strings and parameters) moved once into it.
  const std::size_t n = candidates.size();
  std::vector<double> rank(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    Candidate& c = candidates[i];
    if (c.applicable) rank[i] = ranking_seconds(c, multiplies);
    c.total_seconds = multiplies ? rank[i] : 0.0;
  }
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) {
    const Candidate& a = candidates[i];
    const Candidate& b = candidates[j];
    if (a.applicable != b.applicable) return a.applicable;
    if (!a.applicable) return false;
    if (rank[i] != rank[j]) return rank[i] < rank[j];
    return a.predicted_bytes < b.predicted_bytes;
  });
  std::vector<Candidate> sorted;
  sorted.reserve(n);
  for (const std::size_t i : order) sorted.push_back(std::move(candidates[i]));
  candidates = std::move(sorted);
  if (candidates.empty() || !candidates.front().applicable) {
    std::string reasons;
    for (const Candidate& c : candidates)
      reasons += fmt::format("\n  {} [{}]: {}", c.format, c.label, c.reason);
    throw InputError("planner", 0, "no format can implement this matrix:" + reasons);
  }
  const Candidate& best = candidates.front();
  Plan plan;
  plan.format = best.format;
  plan.params = best.params;
  plan.precision = precision;
  plan.predicted_bytes = best.predicted_bytes;
  plan.predicted_seconds = best.predicted_seconds;
  plan.predicted_build_seconds = best.build_seconds;
  plan.multiplies = multiplies;
  plan.candidates = std::move(candidates);
  return plan;
}

Encoded encode(const CsrMatrix& a, const Plan& plan) {
  return formats::find_format(plan.format).encode(a, plan.params, plan.precision);
}

void reference_spmv(const Plan& plan, const Encoded& encoded, std::span<const double> x,
                    std::span<double> y, double alpha, double beta) {
  formats::find_format(plan.format).reference_spmv(encoded, plan.params, x, y, alpha, beta);
}

double relative_error(std::span<const double> y, std::span<const double> ref) {
  if (y.size() != ref.size()) throw InternalError("relative_error: sizes differ");
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    diff += (y[i] - ref[i]) * (y[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  const double err = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  return std::isnan(err) ? std::numeric_limits<double>::infinity() : err;
}

MixedError mixed_error(const CsrMatrix& a, std::span<const double> x, std::span<const double> y,
                       std::span<const double> ref) {
  if (static_cast<std::int64_t>(y.size()) != a.nrows || y.size() != ref.size() ||
      static_cast<std::int64_t>(x.size()) != a.ncols)
    throw InternalError("mixed_error: sizes differ");
  MixedError e;
  e.normwise = relative_error(y, ref);
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    double scale = 0;  // (|A||x|)_r
    for (std::int64_t j = a.row_ptr[r]; j < a.row_ptr[r + 1]; ++j)
      scale += std::fabs(a.values[j]) * std::fabs(x[static_cast<std::size_t>(a.col_idx[j])]);
    const auto i = static_cast<std::size_t>(r);
    const double diff = std::fabs(y[i] - ref[i]);
    double rel = scale > 0 ? diff / scale : (diff == 0 ? 0.0 : HUGE_VAL);
    if (std::isnan(rel)) rel = HUGE_VAL;  // an unwritten (NaN) y never passes
    e.componentwise = std::max(e.componentwise, rel);
  }
  return e;
}

double mixed_error_tolerance(const Plan& plan) {
  if (!plan.rounding) return result_tolerance(plan.precision);
  // The plan's bound plus the fp64 host reference's own rounding over the longest row.
  return plan.rounding->y_error_bound +
         y_error_bound(0.0, plan.rounding->longest_row, 0x1p-53, 0.0);
}

void csr_reference_spmv(const CsrMatrix& a, std::span<const double> x, std::span<double> y,
                        double alpha, double beta) {
  if (static_cast<std::int64_t>(x.size()) != a.ncols ||
      static_cast<std::int64_t>(y.size()) != a.nrows)
    throw InputError("csr_reference_spmv", 0,
                     fmt::format("x has {} elements (need {}), y has {} (need {})", x.size(),
                                 a.ncols, y.size(), a.nrows));
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    double sum = 0;
    for (std::int64_t j = a.row_ptr[r]; j < a.row_ptr[r + 1]; ++j)
      sum += a.values[j] * x[static_cast<std::size_t>(a.col_idx[j])];
    const auto i = static_cast<std::size_t>(r);
    y[i] = alpha * sum + (beta != 0.0 ? beta * y[i] : 0.0);
  }
}

}  // namespace spmvc::compiler
