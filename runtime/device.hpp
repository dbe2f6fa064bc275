// The CUDA device, through the CUDA runtime library (cudart). cudart loads the driver itself at
// first use, so binaries start on machines without a GPU; every call here reports the absence of
// a device as NoDeviceError and any other failure as DeviceError (call name, code, message).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace spmvc::runtime {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::int64_t global_bytes = 0;
  std::int64_t l2_bytes = 0;
  int driver_version = 0;  ///< e.g. 13000
  int runtime_version = 0;
  std::string arch() const;  ///< "sm_90"
};

/// Freed memory a device's pool keeps for later DeviceBuffers (above it, memory goes back to the
/// device at the next synchronisation).
inline constexpr std::uint64_t kPoolKeepBytes = std::uint64_t{4} << 30;

/// Bytes the current device's memory pool holds (in use or kept for reuse); 0 where DeviceBuffers
/// do not come from a pool.
std::uint64_t pool_reserved_bytes();

/// Bytes the current device can still allocate: what the driver reports free, plus what its
/// memory pool holds unused for reuse (0 when it cannot tell).
std::uint64_t allocatable_bytes();

/// An on/off environment variable: unset is nullopt; empty, 1, on and true are on; 0, off and
/// false are off; any other value is an InputError naming the variable.
std::optional<bool> env_switch(const char* name);

/// Whether a unit's launches after the first may start before the previous one ends
/// (programmatic dependent launch) on `device`: sm_90 or newer, unless SPMVC_EARLY_LAUNCH is 0,
/// off or false (an InputError names any other value but 1, on, true or empty).
bool early_launch(const DeviceInfo& device);

/// Probes device `ordinal`; throws NoDeviceError when there is none (no driver, no GPU).
DeviceInfo probe_device(int ordinal = 0);
/// Makes `ordinal` current for this thread.
void set_device(int ordinal);

/// Owning device allocation. Where the device supports memory pools, it comes from the device's
/// stream-ordered pool (cudaMallocAsync on the default stream) and goes back to it on
/// destruction, and the pool keeps up to kPoolKeepBytes of freed memory for the next buffers:
/// a process that builds matrix after matrix reuses memory instead of paying cudaMalloc and
/// cudaFree again (about 0.1 ms per 16 MB on an H100). Elsewhere it is plain cudaMalloc.
/// Destruction waits for the device either way (cudaFree does; the pooled free does so first),
/// so no stream can still be reading memory the pool hands out again.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  DeviceBuffer(DeviceBuffer&&) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&&) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  void upload(const void* host, std::size_t bytes, std::size_t offset = 0);
  /// Copies `bytes` from device memory at `device` to the start of this buffer (synchronous).
  void copy_from(const void* device, std::size_t bytes);
  void download(void* host, std::size_t bytes, std::size_t offset = 0) const;
  void fill_bytes(unsigned char value);
  /// Sets `bytes` bytes from `offset` to `value`, ordered on the default stream (no wait).
  void fill_bytes(unsigned char value, std::size_t offset, std::size_t bytes);

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  bool pooled_ = false;
};

/// A CUBIN loaded with cudaLibraryLoadData (a cudaLibrary_t), unloaded when its last holder lets
/// go. `what` names it in errors.
using LoadedLibrary = std::shared_ptr<void>;
LoadedLibrary load_library(const std::vector<char>& cubin, const std::string& what);

/// One kernel, looked up by name in a loaded CUBIN: its own load, or a library it shares with
/// other kernels of the same image (one load however many entries are taken from it).
class LoadedKernel {
 public:
  LoadedKernel(const std::vector<char>& cubin, const std::string& kernel_name);
  /// With `resolve` false the kernel's code is loaded onto the device at its first launch (or
  /// registers()), not now: a build unit's entries that a build never launches cost nothing.
  LoadedKernel(LoadedLibrary library, const std::string& kernel_name, bool resolve = true);
  LoadedKernel(LoadedKernel&&) noexcept;
  LoadedKernel& operator=(LoadedKernel&&) noexcept;
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;
  ~LoadedKernel();

  /// Launches with the given argument pointers (as cudaLaunchKernel takes them). A grid outside
  /// 1..2^31-1 is an InputError; shared_bytes above 48 KiB is opted into first.
  /// With `early`, the launch may start before the previous one on the stream ends
  /// (programmatic dependent launch, sm_90 and up): the kernel must begin with
  /// spmvc::wait_for_previous_launch() (KernelSource::chained).
  void launch(std::int64_t grid, int block, std::size_t shared_bytes, void** args, void* stream,
              bool early = false) const;
  const std::string& name() const { return name_; }
  /// Opts the kernel into `shared_bytes` of dynamic shared memory when that is above the 48 KiB
  /// default (once: a later launch() with no more does not call the driver, so a launch can be
  /// captured into a CUDA graph).
  void opt_in_shared(std::size_t shared_bytes) const;
  /// Writes `bytes` from `host` into the image's __device__ variable `symbol` (extern "C"
  /// name); DeviceError when the image has no such variable or its size differs.
  void set_global(const std::string& symbol, const void* host, std::size_t bytes) const;
  /// Registers per thread and local-memory bytes per thread (spills land there), as the driver
  /// reports them for the loaded image. NVRTC can serve a CUBIN from its own cache without
  /// running ptxas, and then its log has no resource lines; these numbers are always there.
  int registers() const;
  int local_bytes() const;

 private:
  LoadedLibrary library_;   // cudaLibrary_t
  void* kernel_ = nullptr;  // cudaKernel_t
  /// Queried from the driver at construction, or at the first registers() or local_bytes() when
  /// the kernel was not resolved then (-1 until known).
  void resolve() const;
  mutable std::atomic<int> registers_{-1};
  mutable std::atomic<int> local_bytes_{-1};
  /// Dynamic shared memory the kernel may use without another cudaFuncSetAttribute.
  mutable std::atomic<std::size_t> shared_opted_{std::size_t{48} * 1024};
  std::string name_;
};

/// True when `p` points into memory the device can read in a kernel (device or managed
/// allocations); false for host memory, including pinned host memory, and for nullptr.
bool is_device_pointer(const void* p);

/// Copies `bytes` from device memory the caller owns to the host (synchronous).
void copy_to_host(void* host, const void* device, std::size_t bytes);

/// Waits for all work on the current device; throws DeviceError on a pending launch error.
void synchronize();
/// Throws DeviceError if the last launch failed (cudaGetLastError).
void check_last_launch(const std::string& what);

/// Times work on a stream with CUDA events.
class EventTimer {
 public:
  explicit EventTimer(void* stream = nullptr);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start();
  /// Records the stop event, waits for it, and returns the elapsed milliseconds.
  float stop_ms();

 private:
  void* stream_;
  void* begin_ = nullptr;
  void* end_ = nullptr;
};

}  // namespace spmvc::runtime
