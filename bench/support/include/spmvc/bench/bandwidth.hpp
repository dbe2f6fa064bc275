// Achievable DRAM bandwidth of the current device, measured with a streaming kernel. Benchmarks
// report SpMV throughput as a fraction of this rather than of the datasheet figure, which no
// kernel reaches (an H100 SXM streams about 3.0 of its nominal 3.35 TB/s).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "spmvc/kernel.hpp"

namespace spmvc::bench {

struct Gpu;  // spmvc/bench/gpu.hpp

/// Bytes per second read by a grid-stride kernel that sums `bytes` of int4 data (rounded down
/// to 16-byte elements) on device 0: median of `reps` timed launches after a warm-up. `bytes`
/// should be far beyond the L2 size so the figure is DRAM, not cache. Throws NoDeviceError
/// without a device, InputError if `bytes` < 16 or `reps` < 1.
double measure_read_bandwidth(std::int64_t bytes = std::int64_t{1} << 30, int reps = 20);

/// Bytes per second moved (read plus written) copying `bytes` from one buffer to another, in
/// the same way; 2*`bytes` of device memory is needed.
double measure_copy_bandwidth(std::int64_t bytes = std::int64_t{1} << 30, int reps = 20);

/// The read bandwidth measure_read_bandwidth gave on a known GPU model, by the name the driver
/// reports (Gpu::name, matched whole); nullopt for a model not in the table.
std::optional<double> known_read_bandwidth(std::string_view device_name);

/// The read bandwidth a benchmark divides by, and whether it was measured.
struct AssumedBandwidth {
  double bytes_per_second = 0;
  bool measured = false;
};
/// With `skip_probe`, known_read_bandwidth for `gpu`'s model; measure_read_bandwidth() on the
/// current device otherwise, and for a model not in the table (a figure from another GPU would
/// make every "% of bandwidth" wrong).
AssumedBandwidth assumed_read_bandwidth(const Gpu& gpu, bool skip_probe = true);

/// The two probe kernels (spmvc_read_bandwidth, spmvc_copy_bandwidth) in one translation
/// unit; exposed so the nvrtc tests compile it without a GPU.
KernelSource bandwidth_kernel_source();

}  // namespace spmvc::bench
