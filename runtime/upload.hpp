// Uploading whole host arrays (a CsrMatrix's) to device memory fast. A pageable cudaMemcpy runs
// at the rate one host thread copies into the driver's pinned buffers (about 8 GB/s on an H200's
// host, a seventh of the PCIe 5 link), so the bytes go through pinned staging buffers that several
// host threads fill at once (copying, or converting: 64-bit offsets to 32-bit, double to float)
// while the copy engine moves the filled ones. The staging buffers are allocated once per process
// and reused; uploads are serialised on them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

namespace spmvc::runtime {

/// Bytes per staging buffer; at most kUploadMaxFillers host threads fill them, each through its
/// own kUploadBuffersPerFiller buffers (one filling while the last one's copy runs). On an H200's
/// host (16 threads) eight threads copy into pinned memory at 32 GB/s and sixteen at 38, where
/// the link takes 55. Sixteen fillers of 1 MiB buffers keep the staging at 32 MiB (what the
/// process's first upload faults in and pins). Stencil27 n=86 (16.8M nonzeros), first multiply
/// after compile(), medians of three processes, fp32 / fp64: the process's first upload 11.6 /
/// 12.4 ms, later ones 6.7 / 8.2, against 12.9 / 13.8 and 7.8 / 9.4 with eight fillers of 2 MiB
/// and 11.8 / 11.7 and 9.3 / 8.2 with eight of 1 MiB (bench/results/2026-11-29-h200-hub-order/).
inline constexpr std::size_t kUploadChunkBytes = std::size_t{1} << 20;
inline constexpr int kUploadMaxFillers = 16;
inline constexpr int kUploadBuffersPerFiller = 2;

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

/// One piece of a staged upload: `bytes` bytes from byte `offset` of part `part`, filled by
/// host thread `filler` into staging buffer `buffer`.
struct UploadChunk {
  std::size_t part = 0;
  std::size_t offset = 0;
  std::size_t bytes = 0;
  int filler = 0;
  int buffer = 0;
};

/// How many host threads fill the staging buffers for `total_bytes` when `threads` may run:
/// at most kUploadMaxFillers, and no more than there are chunks of kUploadChunkBytes (>= 1).
int upload_fillers(std::size_t total_bytes, int threads);

/// The parts cut into chunks of at most `chunk_bytes` (rounded down to whole elements), part
/// after part, in order. Chunk k (counting across the parts) goes to filler k mod `fillers`, into
/// the `buffers_per_filler` buffers that filler owns in turn: buffer
/// filler * buffers_per_filler + (k / fillers) mod buffers_per_filler. InternalError when a
/// part's element does not fit a chunk, or `fillers` or `buffers_per_filler` < 1. No chunks for
/// empty parts.
std::vector<UploadChunk> upload_chunks(const std::vector<UploadPart>& parts,
                                       std::size_t chunk_bytes, int fillers,
                                       int buffers_per_filler);

/// Uploads the parts through the staging buffers, filled by upload_fillers(total bytes,
/// host_threads()) threads (spmvc/parallel.hpp), the copies on the default stream, and waits
/// until the last copy is done. The device memory must be on the current device. A fill that
/// throws stops the others; the first filler's error (in filler order) is rethrown once every
/// copy already issued is done.
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
