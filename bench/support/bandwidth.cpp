#include "spmvc/bench/bandwidth.hpp"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "device.hpp"
#include "nvrtc_compiler.hpp"
#include "spmvc/bench/gpu.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"

namespace spmvc::bench {

// The runtime's device layer (device.hpp, nvrtc_compiler.hpp) does the CUDA work.
using namespace spmvc::runtime;

namespace {

// int4 rather than double4: CUDA 13 deprecates double4 in favour of explicitly aligned
// variants, and 16 bytes per load is already the widest single global load. Each thread keeps
// four loads in flight per iteration so a modest grid saturates DRAM. The XOR sum is stored per
// block so the compiler cannot drop any load.
constexpr const char* kSource = R"(// spmvc bandwidth probe kernels (bench/support/bandwidth.cpp).
#define SPMVC_BW_BLOCK 256

extern "C" __global__ void __launch_bounds__(SPMVC_BW_BLOCK)
spmvc_read_bandwidth(const int4* __restrict__ in, long long n, unsigned* __restrict__ out) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned acc = 0;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const int4 a = in[i];
    const int4 b = in[i + stride];
    const int4 c = in[i + 2 * stride];
    const int4 d = in[i + 3 * stride];
    acc ^= (unsigned)(a.x ^ a.y ^ a.z ^ a.w) ^ (unsigned)(b.x ^ b.y ^ b.z ^ b.w) ^
           (unsigned)(c.x ^ c.y ^ c.z ^ c.w) ^ (unsigned)(d.x ^ d.y ^ d.z ^ d.w);
  }
  for (; i < n; i += stride) {
    const int4 a = in[i];
    acc ^= (unsigned)(a.x ^ a.y ^ a.z ^ a.w);
  }
  for (int offset = 16; offset > 0; offset /= 2) acc ^= __shfl_xor_sync(0xffffffffu, acc, offset);
  __shared__ unsigned warp_acc[SPMVC_BW_BLOCK / 32];
  if (threadIdx.x % 32 == 0) warp_acc[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned total = 0;
    for (int w = 0; w < SPMVC_BW_BLOCK / 32; ++w) total ^= warp_acc[w];
    out[blockIdx.x] = total;
  }
}

extern "C" __global__ void __launch_bounds__(SPMVC_BW_BLOCK)
spmvc_copy_bandwidth(const int4* __restrict__ in, long long n, int4* __restrict__ out) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = in[i];
  }
}
)";

constexpr int kBlock = 256;  // must match SPMVC_BW_BLOCK above
constexpr int kWarmups = 3;

struct Probe {
  DeviceInfo info;
  LoadedKernel kernel;
  std::int64_t grid;
};

Probe load_probe(const char* kernel_name) {
  DeviceInfo info = probe_device();
  set_device(info.ordinal);
  const Cubin cubin = compile_cubin(bandwidth_kernel_source(), info.arch());
  // A full device's worth of resident threads (2048 per SM on every architecture since Volta
  // except sm_86/89's 1536; the hardware simply queues the rest).
  const std::int64_t grid = static_cast<std::int64_t>(info.sm_count) * (2048 / kBlock);
  return {info, LoadedKernel(cubin.image, kernel_name), grid};
}

// Median of `reps` event-timed launches of `launch`, after a warm-up, in seconds.
template <class F>
double median_seconds(int reps, F&& launch) {
  for (int i = 0; i < kWarmups; ++i) launch();
  synchronize();
  EventTimer timer;
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    timer.start();
    launch();
    ms.push_back(timer.stop_ms());
  }
  check_last_launch("bandwidth probe");
  std::sort(ms.begin(), ms.end());
  const std::size_t mid = ms.size() / 2;
  const double median = ms.size() % 2 == 1 ? ms[mid] : 0.5 * (ms[mid - 1] + ms[mid]);
  if (!(median > 0)) throw InternalError(fmt::format("bandwidth probe timed at {} ms", median));
  return median * 1e-3;
}

void check_args(std::int64_t bytes, int reps) {
  if (bytes < 16) {
    throw InputError("bandwidth", 0, fmt::format("{} bytes is below one int4", bytes));
  }
  if (reps < 1) throw InputError("bandwidth", 0, fmt::format("{} repetitions", reps));
}

}  // namespace

KernelSource bandwidth_kernel_source() {
  KernelSource src;
  src.kernel_name = "spmvc_read_bandwidth";
  src.file_name = "spmvc_bandwidth.cu";
  src.source = kSource;
  src.grid = 1;
  src.block = kBlock;
  return src;
}

double measure_read_bandwidth(std::int64_t bytes, int reps) {
  check_args(bytes, reps);
  Probe p = load_probe("spmvc_read_bandwidth");
  long long n = bytes / 16;
  DeviceBuffer in(static_cast<std::size_t>(n) * 16);
  DeviceBuffer out(static_cast<std::size_t>(p.grid) * sizeof(unsigned));
  in.fill_bytes(1);
  void* in_ptr = in.get();
  void* out_ptr = out.get();
  void* args[] = {&in_ptr, &n, &out_ptr};
  const double s = median_seconds(reps, [&] { p.kernel.launch(p.grid, kBlock, 0, args, nullptr); });
  return static_cast<double>(n) * 16.0 / s;
}

double measure_copy_bandwidth(std::int64_t bytes, int reps) {
  check_args(bytes, reps);
  Probe p = load_probe("spmvc_copy_bandwidth");
  long long n = bytes / 16;
  DeviceBuffer in(static_cast<std::size_t>(n) * 16);
  DeviceBuffer out(static_cast<std::size_t>(n) * 16);
  in.fill_bytes(1);
  void* in_ptr = in.get();
  void* out_ptr = out.get();
  void* args[] = {&in_ptr, &n, &out_ptr};
  const double s = median_seconds(reps, [&] { p.kernel.launch(p.grid, kBlock, 0, args, nullptr); });
  return 2.0 * static_cast<double>(n) * 16.0 / s;
}

std::optional<double> known_read_bandwidth(std::string_view device_name) {
  // The planner's calibration holds each calibrated model's figure (compiler/calibration.cpp).
  return compiler::calibrated_read_bandwidth(device_name);
}

AssumedBandwidth assumed_read_bandwidth(const Gpu& gpu, bool skip_probe) {
  if (const std::optional<double> known = known_read_bandwidth(gpu.name); known && skip_probe)
    return {*known, false};
  return {measure_read_bandwidth(), true};
}

}  // namespace spmvc::bench
