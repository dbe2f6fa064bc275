// Per-GPU calibration of the planner's time model: each calibrated GPU model's read bandwidth and
// per-format time factors, measured by `spmvc bench --suite` on that GPU and fitted by
// scripts/model/calibrate.py (calibration/<model>.inc).
#pragma once

#include <span>
#include <string_view>

#include "spmvc/plan.hpp"

namespace spmvc::compiler {

/// One format's measured over predicted time at one precision.
struct TimeFactor {
  std::string_view format;
  std::string_view precision;
  double factor;  ///< measured / predicted (balanced warps): the median, moved to minimise the
                  ///< picks' measured time (scripts/model/calibrate.py)
  double imbalance_exponent;  ///< time grows as warp_imbalance^exponent beyond the factor
  /// Bytes of reading (at the GPU's read bandwidth, before the factor) that one x sector the
  /// format's rows gather costs (formats::Cost::gathered_sectors; for cuSPARSE, Profile's):
  /// fitted with the factor where the format reports them, 0 elsewhere.
  double sector_bytes;
  int matrices;
  double log_spread;
};

/// One one-time build stage's cost as seconds per unit of its basis, measured by `spmvc bench
/// --suite` on one GPU model and fitted by scripts/model/calibrate-build.py
/// (calibration/<model>_build.inc).
struct BuildFactor {
  /// "inspect", "upload", "encode", "compile" (host path); "device_inspect", "device_encode"
  /// (compile(DeviceCsr))
  std::string_view stage;
  std::string_view format;  ///< "" for stages every format shares; "*": every format pooled
  std::string_view basis;   ///< "nonzero", "byte" (encoded matrix bytes) or "kernel"
  double seconds_per_unit;  ///< median of measured stage seconds over units
  int observations;
  double log_spread;
};

struct GpuCalibration {
  std::string_view model;        ///< short name: "H100"
  std::string_view device_name;  ///< the driver's name, matched whole: "NVIDIA H100 80GB HBM3"
  std::string_view arch;         ///< "sm_90"
  double read_bandwidth;         ///< bytes/s a streaming read kernel reaches
  std::span<const TimeFactor> factors;
  std::span<const BuildFactor> build;
  /// This GPU's latency terms over the reference GPU's (the H100's, where the model's launch
  /// floor heuristics::kLaunchSeconds and step time heuristics::kCsrStepSeconds were fitted):
  /// measured by scripts/gpu/latency-probe, fitted by scripts/model/calibrate-latency.py
  /// (calibration/latency.inc). 1 for the reference GPU and for GPUs not probed.
  double launch_scale = 1;
  double step_scale = 1;
  /// csr_stream's split rows (CsrStreamParams::split) on this GPU: their measured over predicted
  /// time, on top of csr_stream's own time factor (the split kernel is a variant of its own: a
  /// lane descriptor a thread, segments of long rows summed apart). 0 where they were not
  /// measured to pay: the planner proposes them only where it is above 0.
  double stream_split = 0;
};

/// The calibration for `gpu` (a device name or a model's short name, compared whole) on `arch`:
/// that GPU's own where it is calibrated, else the architecture's reference GPU (the first listed
/// for it), else nullptr (an uncalibrated architecture: the model's times as they are).
const GpuCalibration* find_calibration(std::string_view arch, std::string_view gpu);

/// Measured over predicted time for `format` under `calibration`: the format's factor times
/// `warp_imbalance` (formats::Cost) raised to the format's fitted exponent, the share of a warp's
/// wait for its longest row that shows in time. 1 with no calibration or no row for the format.
double time_factor(const GpuCalibration* calibration, std::string_view format, Precision precision,
                   double warp_imbalance = 1.0);

/// Whether `calibration` holds a time factor for `format` at `precision` (fp32's row serves
/// f32acc64); false with no calibration.
bool has_time_factor(const GpuCalibration* calibration, std::string_view format,
                     Precision precision);

/// Bytes of reading one gathered x sector costs `format` under `calibration` (its row's
/// sector_bytes); 0 with no calibration or no row for the format.
double sector_bytes(const GpuCalibration* calibration, std::string_view format,
                    Precision precision);

/// The build stage's row for `format` under `calibration` (stages every format shares: format
/// ""), else its pooled row ("*"), else nullptr (no calibration, or the stage not fitted).
const BuildFactor* build_factor(const GpuCalibration* calibration, std::string_view stage,
                                std::string_view format = "");

}  // namespace spmvc::compiler
