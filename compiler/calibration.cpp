// The planner's per-GPU time factors: data measured by `spmvc bench --suite` on each GPU model and
// fitted by scripts/model/calibrate.py, embedded here with their provenance
// (calibration/<model>.inc).
#include "calibration.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "spmvc/compiler/compiler.hpp"

namespace spmvc::compiler {

namespace {

constexpr TimeFactor kH100[] = {
#include "calibration/h100.inc"
};

constexpr TimeFactor kH200[] = {
#include "calibration/h200.inc"
};

constexpr BuildFactor kH100Build[] = {
#include "calibration/h100_build.inc"
};

constexpr BuildFactor kH200Build[] = {
#include "calibration/h200_build.inc"
};

// {model, launch floor, step time} over the reference GPU's.
struct LatencyScale {
  std::string_view model;
  double launch, step;
};
constexpr LatencyScale kLatency[] = {
#include "calibration/latency.inc"
};

constexpr LatencyScale latency_of(std::string_view model) {
  for (const LatencyScale& l : kLatency)
    if (l.model == model) return l;
  return {model, 1, 1};
}

// csr_stream's split rows on the H200: the median of their measured over predicted time (the
// predictions with csr_stream's fp32 row of calibration/h200.inc) on the fp32 pattern graphs they
// were timed on in the caller's order, x16M: wiki-Vote 41.4 us against 51.07 predicted (0.81),
// email-Enron 42.5-43.0 against 50.10 (0.85-0.86), astro-ph 41.1-41.5 against 41.60 (0.99-1.00)
// (bench/results/2026-12-02-h200-split-rows/ab.txt, 2026-12-02-h200-split-order/split-miss.txt).
// Whole rows on the same three measured 1.02, 0.87 and 1.04 of their predictions: the split
// kernel's own walk is what the model misses (a warp of whole rows runs as long as its longest
// row; a warp of segments does not).
constexpr double kH200StreamSplit = 0.855;

// The same on the H100, one process each (bench/results/2026-12-02-h100-suite-v13-caller/
// forced.txt, predictions with csr_stream's fp32 row of calibration/h100.inc): wiki-Vote 42.88 us
// against 52.63 predicted (0.81), email-Enron 44.54 against 52.43 (0.85), astro-ph 46.11 against
// 43.95 (1.05); whole rows 1.01, 0.87 and 1.08 of theirs.
constexpr double kH100StreamSplit = 0.850;

// The streaming read bandwidths are docs/BENCHMARKING.md's medians of the default 1 GiB probe:
// the H100 SXM reaches ~3.06 of its nominal 3.35 TB/s, the H200 ~4.46 of its 4.8. Names are
// matched whole: an H100 PCIe or H200 NVL has other memory clocks.
const std::array<GpuCalibration, 2> kCalibrations{{
    {"H100", "NVIDIA H100 80GB HBM3", "sm_90", kDefaultReadBandwidth, kH100, kH100Build,
     latency_of("H100").launch, latency_of("H100").step, kH100StreamSplit},
    {"H200", "NVIDIA H200", "sm_90", 4.46e12, kH200, kH200Build, latency_of("H200").launch,
     latency_of("H200").step, kH200StreamSplit},
}};

// `gpu` names this calibration's GPU: its short name or its device name, whole.
bool names(const GpuCalibration& c, std::string_view gpu) {
  return gpu == c.model || gpu == c.device_name;
}

}  // namespace

const GpuCalibration* find_calibration(std::string_view arch, std::string_view gpu) {
  const GpuCalibration* reference = nullptr;
  for (const GpuCalibration& c : kCalibrations) {
    if (c.arch != arch) continue;
    if (!gpu.empty() && names(c, gpu)) return &c;
    if (reference == nullptr) reference = &c;
  }
  return reference;
}

CalibrationInfo calibration_for(std::string_view arch, std::string_view gpu) {
  CalibrationInfo info;
  if (const GpuCalibration* c = find_calibration(arch, gpu)) {
    info.model = c->model;
    info.own = names(*c, gpu);
    info.read_bandwidth = c->read_bandwidth;
  }
  return info;
}

std::optional<double> calibrated_read_bandwidth(std::string_view device_name) {
  for (const GpuCalibration& c : kCalibrations) {
    if (c.device_name == device_name) return c.read_bandwidth;
  }
  return std::nullopt;
}

std::vector<std::string> calibrated_gpus() {
  std::vector<std::string> out;
  for (const GpuCalibration& c : kCalibrations) out.emplace_back(c.model);
  return out;
}

double time_factor(const GpuCalibration* calibration, std::string_view format, Precision precision,
                   double warp_imbalance) {
  if (calibration == nullptr) return 1.0;  // uncalibrated architectures use the model as is
  // f32acc64 moves fp32 data; its arithmetic differs, its traffic does not.
  const std::string_view prec = precision == Precision::f64 ? "f64" : "f32";
  for (const TimeFactor& f : calibration->factors) {
    if (f.format == format && f.precision == prec)
      return f.factor * std::pow(std::max(1.0, warp_imbalance), f.imbalance_exponent);
  }
  return 1.0;
}

bool has_time_factor(const GpuCalibration* calibration, std::string_view format,
                     Precision precision) {
  if (calibration == nullptr) return false;
  const std::string_view prec = precision == Precision::f64 ? "f64" : "f32";
  return std::any_of(
      calibration->factors.begin(), calibration->factors.end(),
      [&](const TimeFactor& f) { return f.format == format && f.precision == prec; });
}

double sector_bytes(const GpuCalibration* calibration, std::string_view format,
                    Precision precision) {
  if (calibration == nullptr) return 0.0;
  const std::string_view prec = precision == Precision::f64 ? "f64" : "f32";
  for (const TimeFactor& f : calibration->factors) {
    if (f.format == format && f.precision == prec) return f.sector_bytes;
  }
  return 0.0;
}

const BuildFactor* build_factor(const GpuCalibration* calibration, std::string_view stage,
                                std::string_view format) {
  if (calibration == nullptr) return nullptr;
  const BuildFactor* pooled = nullptr;
  for (const BuildFactor& f : calibration->build) {
    if (f.stage != stage) continue;
    if (f.format == format) return &f;
    if (f.format == "*") pooled = &f;
  }
  return pooled;
}

}  // namespace spmvc::compiler
