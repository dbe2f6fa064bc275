// What a benchmark needs of the GPU beside the Operator: which device it is, device memory for x
// and y, event timing, the kernel cache's load times, and a CSR matrix resident on the device
// for compile(DeviceCsr). The runtime's own device layer stays internal; this is its face for
// `spmvc bench` and the suite.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "spmvc/kernel.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/plan.hpp"

namespace spmvc::bench {

/// The device benchmarks run on.
struct Gpu {
  std::string name;  ///< e.g. "NVIDIA H100 80GB HBM3"
  std::string arch;  ///< e.g. "sm_90"
  int runtime_version = 0;
  int driver_version = 0;
};
/// Device `ordinal`, made current. NoDeviceError without one.
Gpu open_gpu(int ordinal = 0);

/// Waits for all work on the current device.
void synchronize();

/// Device memory owned by the benchmark (x, y).
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t bytes);
  ~DeviceArray();
  DeviceArray(DeviceArray&&) noexcept;
  DeviceArray& operator=(DeviceArray&&) noexcept;
  void* get() const;
  void upload(const void* host, std::size_t bytes);
  void download(void* host, std::size_t bytes) const;
  void fill_bytes(unsigned char value);
  /// `host` stored as a kernel of `precision` reads x: double for f64, float otherwise.
  void upload_values(const std::vector<double>& host, Precision precision);
  /// The first `n` values, stored as upload_values stores them, widened to double.
  std::vector<double> download_values(std::size_t n, Precision precision) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// CUDA-event timing on the default stream.
class GpuTimer {
 public:
  GpuTimer();
  ~GpuTimer();
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;
  void start();
  /// Records the stop event, waits for it, and returns the elapsed milliseconds.
  float stop_ms();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// NVRTC's version as "13.0".
std::string nvrtc_version();

/// One lookup of a unit in a kernel cache over `dir`: the seconds it took and where the binary
/// came from ("nvrtc", "memory" or "disk"). A second lookup on the same object finds it in memory.
class KernelCacheProbe {
 public:
  explicit KernelCacheProbe(const std::string& dir);
  ~KernelCacheProbe();
  struct Lookup {
    double seconds = 0;
    std::string origin;
  };
  Lookup get(const KernelSource& source, const std::string& arch);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// `a` uploaded as compile(DeviceCsr) takes it (32-bit offsets and columns, values in
/// `precision`'s type); `view()` points at the device arrays while this object lives.
class ResidentCsr {
 public:
  ResidentCsr(const CsrMatrix& a, Precision precision);
  ~ResidentCsr();
  const DeviceCsr& view() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spmvc::bench
