#include "upload.hpp"

#include <cuda_runtime_api.h>
#include <sys/mman.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "spmvc/error.hpp"
#include "spmvc/parallel.hpp"

namespace spmvc::runtime {

int upload_fillers(std::size_t total_bytes, int threads) {
  const std::size_t chunks = (total_bytes + kUploadChunkBytes - 1) / kUploadChunkBytes;
  const auto most = static_cast<std::size_t>(std::clamp(threads, 1, kUploadMaxFillers));
  return static_cast<int>(std::max<std::size_t>(1, std::min(most, chunks)));
}

std::vector<UploadChunk> upload_chunks(const std::vector<UploadPart>& parts,
                                       std::size_t chunk_bytes, int fillers,
                                       int buffers_per_filler) {
  if (fillers < 1 || buffers_per_filler < 1)
    throw InternalError(fmt::format("upload_chunks: {} fillers of {} staging buffers each", fillers,
                                    buffers_per_filler));
  std::vector<UploadChunk> chunks;
  std::size_t k = 0;
  for (std::size_t part = 0; part < parts.size(); ++part) {
    const UploadPart& p = parts[part];
    if (p.element_bytes == 0 || p.element_bytes > chunk_bytes)
      throw InternalError(
          fmt::format("upload_chunks: part {}'s {}-byte elements do not fit {}-byte chunks", part,
                      p.element_bytes, chunk_bytes));
    const std::size_t step = chunk_bytes / p.element_bytes * p.element_bytes;
    for (std::size_t offset = 0; offset < p.bytes; offset += step, ++k) {
      const auto f = static_cast<std::size_t>(fillers);
      const int filler = static_cast<int>(k % f);
      const int buffer = filler * buffers_per_filler +
                         static_cast<int>(k / f % static_cast<std::size_t>(buffers_per_filler));
      chunks.push_back({part, offset, std::min(step, p.bytes - offset), filler, buffer});
    }
  }
  return chunks;
}

namespace {

void check(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return;
  (void)cudaGetLastError();
  throw DeviceError(call, static_cast<int>(e),
                    fmt::format("{} ({})", cudaGetErrorName(e), cudaGetErrorString(e)));
}

// The pinned staging buffers, kUploadBuffersPerFiller per filler, kept for the life of the
// process (freeing pinned memory at exit can run after the driver has shut down) and portable
// (usable from every device's context). Getting them is the process's first upload's extra cost,
// dominated on virtual machines by page faults and by the driver's pinning (H200 host,
// bench/results/2026-11-29-h200-first-upload/host-memory-probe.txt, 64 MiB): cudaHostAlloc 34-41
// ms; 4 KiB pages faulted in by one thread 41 ms; pages advised to be transparent huge pages 15-18
// ms by one thread, 3.8 ms by eight; cudaHostRegister once 2-4 ms; but each of 16 buffers faulted
// in and registered by the filler that owns it, 10.5 ms in all. So the buffers sit in one mapping
// advised to use huge pages, faulted in by up to kUploadMaxFillers threads at once and registered
// in one call, at the first upload. Where the mapping or the registration is refused, one
// cudaHostAlloc holds them.
struct Staging {
  static constexpr std::size_t kBuffers = std::size_t{kUploadMaxFillers} * kUploadBuffersPerFiller;
  static constexpr std::size_t kBytes = kBuffers * kUploadChunkBytes;
  std::mutex mutex;
  std::array<void*, kBuffers> buffers{};  // all null until prepare() succeeds

  // Called with the mutex held, before the fillers start.
  void prepare() {
    if (buffers[0] != nullptr) return;
    char* base = pinned_mapping();
    if (base == nullptr) {
      void* p = nullptr;
      check(cudaHostAlloc(&p, kBytes, cudaHostAllocPortable), "cudaHostAlloc(upload staging)");
      base = static_cast<char*>(p);
    }
    for (std::size_t b = 0; b < kBuffers; ++b) buffers[b] = base + b * kUploadChunkBytes;
  }

  // kBytes of fresh huge-page-advised memory, 2 MiB-aligned, faulted in and registered; null
  // (and nothing kept) where the system refuses.
  static char* pinned_mapping() {
    constexpr std::size_t kHuge = std::size_t{2} << 20;
    void* raw =
        ::mmap(nullptr, kBytes + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    const auto at = reinterpret_cast<std::uintptr_t>(raw);
    char* slab = reinterpret_cast<char*>((at + kHuge - 1) / kHuge * kHuge);
    (void)::madvise(slab, kBytes, MADV_HUGEPAGE);  // advice: 4 KiB pages where it is not taken
    // Faulted in by up to kUploadMaxFillers threads, each a contiguous share.
    parallel_for(static_cast<std::int64_t>(kBytes),
                 static_cast<std::int64_t>(kBytes / kUploadMaxFillers),
                 [&](std::int64_t begin, std::int64_t end) {
                   std::memset(slab + begin, 0, static_cast<std::size_t>(end - begin));
                 });
    if (cudaHostRegister(slab, kBytes, cudaHostRegisterPortable) == cudaSuccess) return slab;
    (void)cudaGetLastError();
    (void)::munmap(raw, kBytes + kHuge);
    return nullptr;
  }
};

Staging& staging() {
  static Staging* s = new Staging;
  return *s;
}

// One upload's events, one per staging buffer (created on the current device). Buffer b's event
// is recorded and waited on by the one filler that owns b. The destructor waits for every copy
// still reading a buffer, so a failed upload leaves none in flight for the next one to overwrite.
class BufferEvents {
 public:
  explicit BufferEvents(int buffers)
      : events_(static_cast<std::size_t>(buffers)), recorded_(events_.size()) {
    for (cudaEvent_t& e : events_) {
      check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    }
  }
  BufferEvents(const BufferEvents&) = delete;
  BufferEvents& operator=(const BufferEvents&) = delete;
  ~BufferEvents() {
    for (std::size_t i = 0; i < events_.size(); ++i) {
      if (events_[i] == nullptr) continue;
      if (recorded_[i] != 0) (void)cudaEventSynchronize(events_[i]);
      (void)cudaEventDestroy(events_[i]);
    }
  }
  /// Waits until the copy last staged through buffer `b` is done.
  void wait(int b) {
    const auto i = static_cast<std::size_t>(b);
    if (recorded_[i] != 0) check(cudaEventSynchronize(events_[i]), "cudaEventSynchronize");
  }
  void record(int b) {
    const auto i = static_cast<std::size_t>(b);
    check(cudaEventRecord(events_[i], nullptr), "cudaEventRecord");
    recorded_[i] = 1;
  }
  void wait_all() {
    for (std::size_t b = 0; b < events_.size(); ++b) wait(static_cast<int>(b));
  }

 private:
  std::vector<cudaEvent_t> events_;
  std::vector<unsigned char> recorded_;  // one byte per buffer: fillers write their own
};

}  // namespace

void staged_upload(const std::vector<UploadPart>& parts) {
  std::size_t total = 0;
  for (const UploadPart& p : parts) total += p.bytes;
  if (total == 0) return;
  const int fillers = upload_fillers(total, host_threads());
  const std::vector<UploadChunk> chunks =
      upload_chunks(parts, kUploadChunkBytes, fillers, kUploadBuffersPerFiller);
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  Staging& s = staging();
  const std::lock_guard<std::mutex> lock(s.mutex);
  s.prepare();
  BufferEvents events(fillers * kUploadBuffersPerFiller);
  std::atomic<bool> failed{false};
  std::vector<Range> ranges(static_cast<std::size_t>(fillers));
  for (int f = 0; f < fillers; ++f) ranges[static_cast<std::size_t>(f)] = {f, f + 1};
  run_ranges(ranges, [&](std::size_t filler, std::int64_t, std::int64_t) {
    try {
      // The runtime's current device is per thread: the fillers take the caller's.
      check(cudaSetDevice(device), "cudaSetDevice");
      for (const UploadChunk& c : chunks) {
        if (static_cast<std::size_t>(c.filler) != filler) continue;
        if (failed.load(std::memory_order_relaxed)) return;
        void* buffer = s.buffers[static_cast<std::size_t>(c.buffer)];
        events.wait(c.buffer);
        const UploadPart& p = parts[c.part];
        p.fill(c.offset, c.bytes, buffer);
        check(cudaMemcpyAsync(static_cast<char*>(p.device) + c.offset, buffer, c.bytes,
                              cudaMemcpyHostToDevice, nullptr),
              "cudaMemcpyAsync(upload staging to device)");
        events.record(c.buffer);
      }
    } catch (...) {
      failed.store(true);
      throw;
    }
  });
  // (A filler that threw is rethrown by run_ranges; the events' destructor then waits.)
  events.wait_all();
}

}  // namespace spmvc::runtime
