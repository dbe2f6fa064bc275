// Uploading whole host arrays (a CsrMatrix's) to device memory fast: a pageable cudaMemcpy runs
// at a fraction of the link's rate, so the bytes go through a few pinned staging buffers instead.
// The host fills buffer i+1 (copying, or converting: 64-bit offsets to 32-bit, double to float)
// while the copy engine moves buffer i. The staging buffers are allocated once per process and
// reused; uploads are serialised on them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

namespace spmvc::runtime {

/// Bytes per staging buffer, and how many there are: three keep the host fill and the copy
/// engine both busy with one buffer to spare.
inline constexpr std::size_t kUploadChunkBytes = std::size_t{8} << 20;
inline constexpr int kUploadChunkBuffers = 3;

/// One piece of a staged upload: `bytes` bytes from byte `offset` of the source, through
/// staging buffer `buffer`.
struct UploadChunk {
  std::size_t offset = 0;
  std::size_t bytes = 0;
  int buffer = 0;
};

/// Splits `total_bytes` of elements `element_bytes` wide into chunks of at most `chunk_bytes`
/// (rounded down to whole elements), staged through `buffers` buffers in turn from
/// `first_buffer` (mod `buffers`). InternalError when an element does not fit a chunk or
/// `buffers` < 1. No chunks for 0 bytes.
std::vector<UploadChunk> upload_chunks(std::size_t total_bytes, std::size_t element_bytes,
                                       std::size_t chunk_bytes, int buffers, int first_buffer = 0);

/// Fills `staging` with the `bytes` bytes of the source's payload from byte `offset` (in the
/// uploaded type: converting functions write the converted elements).
using StageFill = std::function<void(std::size_t offset, std::size_t bytes, void* staging)>;

/// One array to upload: `bytes` bytes of elements `element_bytes` wide to device address
/// `device`, produced by `fill`.
struct UploadPart {
  void* device = nullptr;
  std::size_t bytes = 0;
  std::size_t element_bytes = 1;
  StageFill fill;
};

/// Uploads the parts through the staging buffers (kUploadChunkBytes x kUploadChunkBuffers) on
/// the default stream, and waits until the last copy is done. The device memory must be on the
/// current device.
void staged_upload(const std::vector<UploadPart>& parts);

/// An UploadPart that copies `count` elements of T from `host` as they are.
template <class T>
UploadPart upload_part(void* device, const T* host, std::size_t count) {
  UploadPart p;
  p.device = device;
  p.bytes = count * sizeof(T);
  p.element_bytes = sizeof(T);
  p.fill = [host](std::size_t offset, std::size_t bytes, void* staging) {
    std::memcpy(staging, reinterpret_cast<const char*>(host) + offset, bytes);
  };
  return p;
}

/// An UploadPart that converts `count` elements of `From` at `host` to `To` on the way.
template <class To, class From>
UploadPart converting_part(void* device, const From* host, std::size_t count) {
  UploadPart p;
  p.device = device;
  p.bytes = count * sizeof(To);
  p.element_bytes = sizeof(To);
  p.fill = [host](std::size_t offset, std::size_t bytes, void* staging) {
    const From* first = host + offset / sizeof(To);
    std::transform(first, first + bytes / sizeof(To), static_cast<To*>(staging),
                   [](From v) { return static_cast<To>(v); });
  };
  return p;
}

}  // namespace spmvc::runtime
