#include "device.hpp"

#include <cuda_runtime_api.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "nvrtc_compiler.hpp"
#include "spmvc/error.hpp"

namespace spmvc::runtime {

namespace {

// Codes with which cudart says there is no usable device or driver, rather than that a call
// went wrong on one.
bool means_no_device(cudaError_t e) {
  switch (e) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInitializationError:
    case cudaErrorStubLibrary:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorSystemNotReady:
    case cudaErrorCallRequiresNewerDriver:
    case cudaErrorInvalidDevice:
      return true;
    default:
      return false;
  }
}

[[noreturn]] void throw_cuda(cudaError_t e, const std::string& call) {
  // Clears cudart's record of a non-sticky error so a later check_last_launch does not report
  // this one again.
  (void)cudaGetLastError();
  const std::string what = fmt::format("{} ({})", cudaGetErrorName(e), cudaGetErrorString(e));
  if (means_no_device(e)) throw NoDeviceError(fmt::format("{}: {}", call, what));
  throw DeviceError(call, static_cast<int>(e), what);
}

// `call` is a literal: hot paths (launch) format their richer names only on failure.
void check_cuda(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw_cuda(e, call);
}

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace

std::string DeviceInfo::arch() const { return arch_name(cc_major, cc_minor); }

DeviceInfo probe_device(int ordinal) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (means_no_device(e)) {
      throw NoDeviceError(fmt::format(
          "cudaGetDeviceCount: {} ({}) — is there an NVIDIA GPU and driver on this machine?",
          cudaGetErrorName(e), cudaGetErrorString(e)));
    }
    throw_cuda(e, "cudaGetDeviceCount");
  }
  if (count == 0) throw NoDeviceError("cudaGetDeviceCount reports 0 devices");
  if (ordinal < 0 || ordinal >= count) {
    throw NoDeviceError(fmt::format("device {} requested, but this machine has {} (0 to {})",
                                    ordinal, count, count - 1));
  }
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
  DeviceInfo info;
  info.ordinal = ordinal;
  info.name = prop.name;
  check_cuda(cudaDeviceGetAttribute(&info.cc_major, cudaDevAttrComputeCapabilityMajor, ordinal),
             "cudaDeviceGetAttribute(ComputeCapabilityMajor)");
  check_cuda(cudaDeviceGetAttribute(&info.cc_minor, cudaDevAttrComputeCapabilityMinor, ordinal),
             "cudaDeviceGetAttribute(ComputeCapabilityMinor)");
  check_cuda(cudaDeviceGetAttribute(&info.sm_count, cudaDevAttrMultiProcessorCount, ordinal),
             "cudaDeviceGetAttribute(MultiProcessorCount)");
  int l2 = 0;
  check_cuda(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ordinal),
             "cudaDeviceGetAttribute(L2CacheSize)");
  info.l2_bytes = l2;
  info.global_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
  check_cuda(cudaDriverGetVersion(&info.driver_version), "cudaDriverGetVersion");
  check_cuda(cudaRuntimeGetVersion(&info.runtime_version), "cudaRuntimeGetVersion");
  return info;
}

void set_device(int ordinal) { check_cuda(cudaSetDevice(ordinal), "cudaSetDevice"); }

// ---- DeviceBuffer ----

namespace {

// Whether the current device allocates from its pool; the first time a device is seen, its
// default pool is told to keep kPoolKeepBytes of freed memory.
bool pool_ready() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  static std::mutex mutex;
  static std::map<int, bool> ready;
  std::lock_guard guard(mutex);
  const auto seen = ready.find(device);
  if (seen != ready.end()) return seen->second;
  int supported = 0;
  cudaMemPool_t pool = nullptr;
  std::uint64_t keep = kPoolKeepBytes;
  const bool ok =
      cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device) == cudaSuccess &&
      supported != 0 && cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess &&
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) == cudaSuccess;
  ready[device] = ok;
  return ok;
}

}  // namespace

std::uint64_t pool_reserved_bytes() {
  int device = 0;
  cudaMemPool_t pool = nullptr;
  std::uint64_t reserved = 0;
  if (!pool_ready() || cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess ||
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess)
    return 0;
  return reserved;
}

std::uint64_t allocatable_bytes() {
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  int device = 0;
  cudaMemPool_t pool = nullptr;
  std::uint64_t reserved = 0, used = 0;
  if (pool_ready() && cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess &&
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) == cudaSuccess &&
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess &&
      reserved > used)
    return free + (reserved - used);
  return free;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  // cudaMalloc(0) returns a null pointer anyway; skipping it keeps empty arrays free of driver
  // calls.
  if (bytes == 0) return;
  pooled_ = pool_ready();
  // Ordered on the default stream, which every launch and copy here uses.
  const cudaError_t e = pooled_ ? cudaMallocAsync(&ptr_, bytes, nullptr) : cudaMalloc(&ptr_, bytes);
  if (e != cudaSuccess) {
    ptr_ = nullptr;
    throw_cuda(e, fmt::format("{}({} bytes)", pooled_ ? "cudaMallocAsync" : "cudaMalloc", bytes));
  }
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      pooled_(std::exchange(o.pooled_, false)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    std::swap(pooled_, o.pooled_);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  // A destructor cannot report; a failed free after a sticky device error is expected anyway.
  if (ptr_ == nullptr) return;
  if (pooled_) {
    // cudaFree waits for the whole device; a stream-ordered free on the default stream would not
    // wait for work on a caller's non-blocking stream (an apply() still reading the arrays), and
    // the pool could hand the memory out again. Wait first, as cudaFree did.
    (void)cudaDeviceSynchronize();
    (void)cudaFreeAsync(ptr_, nullptr);
  } else {
    (void)cudaFree(ptr_);
  }
}

namespace {
void check_range(std::size_t offset, std::size_t bytes, std::size_t size, const char* what) {
  if (offset > size || bytes > size - offset) {
    throw InternalError(
        fmt::format("DeviceBuffer::{}: {} bytes at offset {} exceed the {}-byte buffer", what,
                    bytes, offset, size));
  }
}
}  // namespace

void DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) {
  check_range(offset, bytes, bytes_, "upload");
  if (bytes == 0) return;
  check_cuda(cudaMemcpy(static_cast<char*>(ptr_) + offset, host, bytes, cudaMemcpyHostToDevice),
             "cudaMemcpy(host to device)");
}

void DeviceBuffer::copy_from(const void* device, std::size_t bytes) {
  check_range(0, bytes, bytes_, "copy_from");
  if (bytes == 0) return;
  check_cuda(cudaMemcpy(ptr_, device, bytes, cudaMemcpyDeviceToDevice),
             "cudaMemcpy(device to device)");
}

void DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
  check_range(offset, bytes, bytes_, "download");
  if (bytes == 0) return;
  check_cuda(
      cudaMemcpy(host, static_cast<const char*>(ptr_) + offset, bytes, cudaMemcpyDeviceToHost),
      "cudaMemcpy(device to host)");
}

void DeviceBuffer::fill_bytes(unsigned char value) {
  if (bytes_ == 0) return;
  check_cuda(cudaMemset(ptr_, value, bytes_), "cudaMemset");
}

void DeviceBuffer::fill_bytes(unsigned char value, std::size_t offset, std::size_t bytes) {
  if (offset > bytes_ || bytes > bytes_ - offset)
    throw InternalError(
        fmt::format("fill of {} bytes at {} past a {}-byte buffer", bytes, offset, bytes_));
  if (bytes == 0) return;
  check_cuda(cudaMemsetAsync(static_cast<char*>(ptr_) + offset, value, bytes, nullptr),
             "cudaMemsetAsync");
}

// ---- LoadedKernel ----

LoadedLibrary load_library(const std::vector<char>& cubin, const std::string& what) {
  if (cubin.empty()) throw InternalError("LoadedKernel: empty CUBIN for " + what);
  cudaLibrary_t lib = nullptr;
  if (const cudaError_t e =
          cudaLibraryLoadData(&lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
      e != cudaSuccess) {
    throw_cuda(e, fmt::format("cudaLibraryLoadData({})", what));
  }
  return {lib, [](void* l) { (void)cudaLibraryUnload(static_cast<cudaLibrary_t>(l)); }};
}

LoadedKernel::LoadedKernel(const std::vector<char>& cubin, const std::string& kernel_name)
    : LoadedKernel(load_library(cubin, kernel_name), kernel_name) {}

LoadedKernel::LoadedKernel(LoadedLibrary library, const std::string& kernel_name, bool resolve)
    : library_(std::move(library)), name_(kernel_name) {
  cudaKernel_t kernel = nullptr;
  if (const cudaError_t e = cudaLibraryGetKernel(
          &kernel, static_cast<cudaLibrary_t>(library_.get()), kernel_name.c_str());
      e != cudaSuccess) {
    throw_cuda(e, fmt::format("cudaLibraryGetKernel({})", kernel_name));
  }
  kernel_ = kernel;
  // Lazy loading (the default since CUDA 12.2) defers loading the code onto the device until
  // first use; asking for the attributes forces it now, so an image the GPU cannot run fails
  // here, by name, rather than at the first launch.
  if (resolve) this->resolve();
}

void LoadedKernel::resolve() const {
  if (registers_.load() >= 0) return;
  cudaFuncAttributes attributes{};
  if (const cudaError_t e = cudaFuncGetAttributes(&attributes, static_cast<const void*>(kernel_));
      e != cudaSuccess) {
    throw_cuda(e, fmt::format("cudaFuncGetAttributes({})", name_));
  }
  local_bytes_.store(static_cast<int>(attributes.localSizeBytes));
  registers_.store(attributes.numRegs);
}

int LoadedKernel::registers() const {
  resolve();
  return registers_.load();
}

int LoadedKernel::local_bytes() const {
  resolve();
  return local_bytes_.load();
}

void LoadedKernel::set_global(const std::string& symbol, const void* host,
                              std::size_t bytes) const {
  void* address = nullptr;
  std::size_t size = 0;
  if (const cudaError_t e = cudaLibraryGetGlobal(
          &address, &size, static_cast<cudaLibrary_t>(library_.get()), symbol.c_str());
      e != cudaSuccess)
    throw_cuda(e, fmt::format("cudaLibraryGetGlobal({}, {})", name_, symbol));
  if (size != bytes)
    throw DeviceError(
        "cudaLibraryGetGlobal", 0,
        fmt::format("{}: __device__ {} has {} bytes, not {}", name_, symbol, size, bytes));
  if (const cudaError_t e = cudaMemcpy(address, host, bytes, cudaMemcpyHostToDevice);
      e != cudaSuccess)
    throw_cuda(e, "cudaMemcpy to " + symbol);
}

LoadedKernel::LoadedKernel(LoadedKernel&& o) noexcept
    : library_(std::move(o.library_)),
      kernel_(std::exchange(o.kernel_, nullptr)),
      registers_(o.registers_.load()),
      local_bytes_(o.local_bytes_.load()),
      shared_opted_(o.shared_opted_.load()),
      name_(std::move(o.name_)) {}

LoadedKernel& LoadedKernel::operator=(LoadedKernel&& o) noexcept {
  if (this != &o) {
    std::swap(library_, o.library_);
    std::swap(kernel_, o.kernel_);
    std::swap(name_, o.name_);
    registers_.store(o.registers_.exchange(registers_.load()));
    local_bytes_.store(o.local_bytes_.exchange(local_bytes_.load()));
    shared_opted_.store(o.shared_opted_.exchange(shared_opted_.load()));
  }
  return *this;
}

LoadedKernel::~LoadedKernel() = default;

void LoadedKernel::launch(std::int64_t grid, int block, std::size_t shared_bytes, void** args,
                          void* stream, bool early) const {
  // The grid's x dimension is limited to 2^31-1 blocks on every architecture spmvc targets.
  if (grid <= 0 || grid > INT_MAX) {
    throw InputError(name_, 0,
                     fmt::format("launch needs {} blocks; a grid holds 1 to {}", grid, INT_MAX));
  }
  if (block <= 0 || block > 1024) {
    throw InternalError(fmt::format("{}: block of {} threads (1 to 1024 allowed)", name_, block));
  }
  const void* fn = static_cast<const void*>(kernel_);
  if (shared_bytes > shared_opted_.load(std::memory_order_relaxed)) opt_in_shared(shared_bytes);
  if (early) {
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(static_cast<unsigned>(grid));
    config.blockDim = dim3(static_cast<unsigned>(block));
    config.dynamicSmemBytes = shared_bytes;
    config.stream = as_stream(stream);
    config.attrs = &attribute;
    config.numAttrs = 1;
    if (const cudaError_t e = cudaLaunchKernelExC(&config, fn, args); e != cudaSuccess) {
      throw_cuda(e, fmt::format("cudaLaunchKernelExC({}, grid {}, block {}, {} bytes shared, "
                                "programmatic stream serialization)",
                                name_, grid, block, shared_bytes));
    }
    return;
  }
  if (const cudaError_t e = cudaLaunchKernel(fn, dim3(static_cast<unsigned>(grid)),
                                             dim3(static_cast<unsigned>(block)), args, shared_bytes,
                                             as_stream(stream));
      e != cudaSuccess) {
    throw_cuda(e, fmt::format("cudaLaunchKernel({}, grid {}, block {}, {} bytes shared)", name_,
                              grid, block, shared_bytes));
  }
}

void LoadedKernel::opt_in_shared(std::size_t shared_bytes) const {
  if (shared_bytes <= shared_opted_.load(std::memory_order_relaxed)) return;
  // Dynamic shared memory above 48 KiB must be opted into per kernel; cudaFuncSetAttribute
  // accepts a cudaKernel_t as the function.
  const void* fn = static_cast<const void*>(kernel_);
  if (const cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 static_cast<int>(shared_bytes));
      e != cudaSuccess) {
    throw_cuda(e, fmt::format("cudaFuncSetAttribute({}, MaxDynamicSharedMemorySize={})", name_,
                              shared_bytes));
  }
  std::size_t seen = shared_opted_.load();
  while (seen < shared_bytes && !shared_opted_.compare_exchange_weak(seen, shared_bytes)) {
  }
}

std::optional<bool> env_switch(const char* name) {
  const char* env = std::getenv(name);
  if (env == nullptr) return std::nullopt;
  const std::string v = env;
  if (v.empty() || v == "1" || v == "on" || v == "true") return true;
  if (v == "0" || v == "off" || v == "false") return false;
  throw InputError(name, 0, "'" + v + "' is not one of 0, off, false, 1, on, true");
}

bool early_launch(const DeviceInfo& device) {
  // The variable is read on every GPU, so that a bad value is reported wherever it is set.
  const bool wanted = env_switch("SPMVC_EARLY_LAUNCH").value_or(true);
  return wanted && device.cc_major >= 9;
}

bool is_device_pointer(const void* p) {
  if (p == nullptr) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

void copy_to_host(void* host, const void* device, std::size_t bytes) {
  if (bytes == 0) return;
  check_cuda(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(device to host)");
}

void synchronize() { check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

void check_last_launch(const std::string& what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw_cuda(e, what);
}

// ---- EventTimer ----

EventTimer::EventTimer(void* stream) : stream_(stream) {
  cudaEvent_t b = nullptr, e = nullptr;
  check_cuda(cudaEventCreate(&b), "cudaEventCreate");
  if (const cudaError_t r = cudaEventCreate(&e); r != cudaSuccess) {
    (void)cudaEventDestroy(b);
    throw_cuda(r, "cudaEventCreate");
  }
  begin_ = b;
  end_ = e;
}

EventTimer::~EventTimer() {
  (void)cudaEventDestroy(static_cast<cudaEvent_t>(begin_));
  (void)cudaEventDestroy(static_cast<cudaEvent_t>(end_));
}

void EventTimer::start() {
  check_cuda(cudaEventRecord(static_cast<cudaEvent_t>(begin_), as_stream(stream_)),
             "cudaEventRecord");
}

float EventTimer::stop_ms() {
  const auto end = static_cast<cudaEvent_t>(end_);
  check_cuda(cudaEventRecord(end, as_stream(stream_)), "cudaEventRecord");
  check_cuda(cudaEventSynchronize(end), "cudaEventSynchronize");
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(begin_), end),
             "cudaEventElapsedTime");
  return ms;
}

}  // namespace spmvc::runtime
