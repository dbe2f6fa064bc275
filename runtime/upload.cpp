#include "upload.hpp"

#include <cuda_runtime_api.h>

#include <array>
#include <mutex>

#include <fmt/format.h>

#include "spmvc/error.hpp"

namespace spmvc::runtime {

std::vector<UploadChunk> upload_chunks(std::size_t total_bytes, std::size_t element_bytes,
                                       std::size_t chunk_bytes, int buffers, int first_buffer) {
  if (element_bytes == 0 || element_bytes > chunk_bytes)
    throw InternalError(fmt::format("upload_chunks: {}-byte elements do not fit {}-byte chunks",
                                    element_bytes, chunk_bytes));
  if (buffers < 1 || first_buffer < 0)
    throw InternalError(
        fmt::format("upload_chunks: {} staging buffers, the first {}", buffers, first_buffer));
  const std::size_t step = chunk_bytes / element_bytes * element_bytes;
  std::vector<UploadChunk> chunks;
  chunks.reserve(total_bytes / step + 1);
  int buffer = first_buffer % buffers;
  for (std::size_t offset = 0; offset < total_bytes; offset += step) {
    chunks.push_back({offset, std::min(step, total_bytes - offset), buffer});
    buffer = (buffer + 1) % buffers;
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

// The pinned staging buffers: allocated on first use, portable (usable from every device's
// context), kept for the life of the process (freeing pinned memory at exit can run after the
// driver has shut down).
struct Staging {
  std::mutex mutex;
  std::array<void*, kUploadChunkBuffers> buffers{};
};

Staging& staging() {
  static Staging* s = new Staging;
  return *s;
}

// One upload's events, one per staging buffer (created on the current device). The destructor
// waits for every copy still reading a buffer, so a failed upload leaves none in flight for the
// next one to overwrite.
class BufferEvents {
 public:
  BufferEvents() {
    for (cudaEvent_t& e : events_) {
      check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    }
  }
  BufferEvents(const BufferEvents&) = delete;
  BufferEvents& operator=(const BufferEvents&) = delete;
  ~BufferEvents() {
    for (std::size_t i = 0; i < events_.size(); ++i) {
      if (events_[i] == nullptr) continue;
      if (recorded_[i]) (void)cudaEventSynchronize(events_[i]);
      (void)cudaEventDestroy(events_[i]);
    }
  }
  /// Waits until the copy last staged through buffer `b` is done.
  void wait(int b) {
    if (recorded_[static_cast<std::size_t>(b)])
      check(cudaEventSynchronize(events_[static_cast<std::size_t>(b)]), "cudaEventSynchronize");
  }
  void record(int b) {
    check(cudaEventRecord(events_[static_cast<std::size_t>(b)], nullptr), "cudaEventRecord");
    recorded_[static_cast<std::size_t>(b)] = true;
  }
  void wait_all() {
    for (int b = 0; b < kUploadChunkBuffers; ++b) wait(b);
  }

 private:
  std::array<cudaEvent_t, kUploadChunkBuffers> events_{};
  std::array<bool, kUploadChunkBuffers> recorded_{};
};

}  // namespace

void staged_upload(const std::vector<UploadPart>& parts) {
  std::size_t total = 0;
  for (const UploadPart& p : parts) total += p.bytes;
  if (total == 0) return;
  Staging& s = staging();
  const std::lock_guard<std::mutex> lock(s.mutex);
  for (void*& b : s.buffers) {
    if (b == nullptr)
      check(cudaHostAlloc(&b, kUploadChunkBytes, cudaHostAllocPortable),
            "cudaHostAlloc(upload staging)");
  }
  BufferEvents events;
  int next = 0;
  for (const UploadPart& p : parts) {
    for (const UploadChunk& c :
         upload_chunks(p.bytes, p.element_bytes, kUploadChunkBytes, kUploadChunkBuffers, next)) {
      events.wait(c.buffer);
      void* buffer = s.buffers[static_cast<std::size_t>(c.buffer)];
      p.fill(c.offset, c.bytes, buffer);
      check(cudaMemcpyAsync(static_cast<char*>(p.device) + c.offset, buffer, c.bytes,
                            cudaMemcpyHostToDevice, nullptr),
            "cudaMemcpyAsync(upload staging to device)");
      events.record(c.buffer);
      next = (c.buffer + 1) % kUploadChunkBuffers;
    }
  }
  events.wait_all();
}

}  // namespace spmvc::runtime
