#include "spmvc/bench/gpu.hpp"

#include <algorithm>
#include <vector>

#include "device.hpp"
#include "device_csr.hpp"
#include "kernel_cache.hpp"
#include "nvrtc_compiler.hpp"

namespace spmvc::bench {

Gpu open_gpu(int ordinal) {
  const runtime::DeviceInfo info = runtime::probe_device(ordinal);
  runtime::set_device(ordinal);
  return {info.name, info.arch(), info.runtime_version, info.driver_version};
}

void synchronize() { runtime::synchronize(); }

struct DeviceArray::Impl {
  runtime::DeviceBuffer buffer;
};
DeviceArray::DeviceArray(std::size_t bytes)
    : impl_(std::make_unique<Impl>(Impl{runtime::DeviceBuffer(bytes)})) {}
DeviceArray::~DeviceArray() = default;
DeviceArray::DeviceArray(DeviceArray&&) noexcept = default;
DeviceArray& DeviceArray::operator=(DeviceArray&&) noexcept = default;
void* DeviceArray::get() const { return impl_->buffer.get(); }
void DeviceArray::upload(const void* host, std::size_t bytes) { impl_->buffer.upload(host, bytes); }
void DeviceArray::download(void* host, std::size_t bytes) const {
  impl_->buffer.download(host, bytes);
}
void DeviceArray::fill_bytes(unsigned char value) { impl_->buffer.fill_bytes(value); }
void DeviceArray::upload_values(const std::vector<double>& host, Precision precision) {
  if (precision == Precision::f64) {
    upload(host.data(), host.size() * sizeof(double));
  } else {
    const std::vector<float> narrow(host.begin(), host.end());
    upload(narrow.data(), narrow.size() * sizeof(float));
  }
}
std::vector<double> DeviceArray::download_values(std::size_t n, Precision precision) const {
  std::vector<double> out(n);
  if (precision == Precision::f64) {
    download(out.data(), n * sizeof(double));
  } else {
    std::vector<float> narrow(n);
    download(narrow.data(), n * sizeof(float));
    std::copy(narrow.begin(), narrow.end(), out.begin());
  }
  return out;
}

struct GpuTimer::Impl {
  runtime::EventTimer timer;
};
GpuTimer::GpuTimer() : impl_(std::make_unique<Impl>()) {}
GpuTimer::~GpuTimer() = default;
void GpuTimer::start() { impl_->timer.start(); }
float GpuTimer::stop_ms() { return impl_->timer.stop_ms(); }

std::string nvrtc_version() { return runtime::nvrtc_version(); }

struct KernelCacheProbe::Impl {
  explicit Impl(const std::string& dir) : cache(dir) {}
  runtime::KernelCache cache;
};
KernelCacheProbe::KernelCacheProbe(const std::string& dir) : impl_(std::make_unique<Impl>(dir)) {}
KernelCacheProbe::~KernelCacheProbe() = default;
KernelCacheProbe::Lookup KernelCacheProbe::get(const KernelSource& source,
                                               const std::string& arch) {
  const runtime::CachedKernel cached = impl_->cache.get(source, arch);
  return {cached.seconds, std::string(runtime::to_string(cached.origin))};
}

struct ResidentCsr::Impl {
  runtime::ResidentCsr resident;
};
ResidentCsr::ResidentCsr(const CsrMatrix& a, Precision precision)
    : impl_(std::make_unique<Impl>(Impl{runtime::upload_csr(a, precision)})) {}
ResidentCsr::~ResidentCsr() = default;
const DeviceCsr& ResidentCsr::view() const { return impl_->resident.view; }

}  // namespace spmvc::bench
