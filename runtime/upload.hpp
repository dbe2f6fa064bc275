// Uploading whole host arrays (a CsrMatrix's) to device memory fast. A pageable cudaMemcpy runs
// at the rate one host thread copies into the driver's pinned buffers (about 8 GB/s on an H200's
// host, a seventh of the PCIe 5 link; pageable copies issued by 4-16 threads on streams of their
// own, or as one cudaMemcpyBatchAsync whose sources the driver may read in any order, took the
// same 29-33 ms for 200 MiB: bench/results/2026-11-29-h200-first-multiply/host-memory-probe.txt),
// so the bytes go through pinned staging buffers that several host threads fill at once (copying,
// or converting: 64-bit offsets to 32-bit, double to float) while the copy engine moves the
// filled ones. The staging buffers and the threads are kept for the process; uploads are
// serialised on them.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
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
/// The staging is pinned a group of this many fillers' buffers at a time, each group by the
/// first upload that uses it, while its fillers fill their first chunks (upload.cpp).
inline constexpr int kStagingGroupFillers = 4;
inline constexpr int kStagingGroups = kUploadMaxFillers / kStagingGroupFillers;

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

/// Host threads that run an upload's fillers, started by the first run() that needs them and
/// parked between runs until the process ends (never destroy a pool): starting them for each
/// upload delayed the last filler's first chunk by 1-2 ms on an H200's host. New threads start in
/// a binary tree (thread i starts 2i and 2i + 1, then works), so the last of fifteen waits for
/// four thread starts rather than fifteen: a fresh process's first multiply from host CSR came
/// 0.2-0.9 ms sooner (bench/results/2026-11-29-h200-first-multiply/design-ab.txt). A thread the
/// system refuses to start is not lost: the thread that tried runs its share, and its subtree's,
/// itself. One run() at a time.
class FillerPool {
 public:
  FillerPool() = default;
  /// For tests: thread i is refused as if the system had no thread left for it.
  explicit FillerPool(std::function<bool(int)> refuse_start)
      : refuse_start_(std::move(refuse_start)) {}
  FillerPool(const FillerPool&) = delete;
  FillerPool& operator=(const FillerPool&) = delete;

  /// Runs fn(i) once for each i in [0, n) (n >= 1), i = 0 on the caller's thread, and returns when
  /// all are done; then rethrows the exception of the lowest i that threw. Where `prologue` is
  /// given, a thread runs prologue(k) for every share k it runs before fn of any of them (a
  /// share whose prologue threw is not run further), so fn may wait for what the prologues of
  /// all shares do, even a share run on another share's thread.
  void run(int n, const std::function<void(int)>& fn,
           const std::function<void(int)>& prologue = {});
  /// Threads started so far (the caller's not counted).
  int threads() const;

 private:
  void adopt(int i, std::vector<int>& owner);
  static void run_own(const std::function<void(int)>& fn, const std::function<void(int)>* prologue,
                      int i, const std::vector<int>& adopted,
                      std::vector<std::exception_ptr>& errors);
  void work(int i, const std::vector<int>& adopted);

  std::function<bool(int)> refuse_start_;
  mutable std::mutex mutex_;
  std::condition_variable start_, done_;
  int started_ = 0;               // threads 1..started_ exist or are adopted (read unlocked by
                                  // starting threads: run() changes it only between runs)
  std::vector<int> caller_owns_;  // the shares of threads that could not be started by run()
  std::atomic<int> refused_{0};   // threads that could not be started
  const std::function<void(int)>* job_ = nullptr;
  const std::function<void(int)>* prologue_ = nullptr;
  int n_ = 0;
  int pending_ = 0;  // shares still running on the pool's threads
  std::uint64_t generation_ = 0;
  std::vector<std::exception_ptr> errors_;
};

/// Uploads the parts through the staging buffers, filled by upload_fillers(total bytes,
/// host_threads()) threads (spmvc/parallel.hpp), the copies on the default stream, and waits
/// until the last copy is done. The device memory must be on the current device. A fill that
/// throws stops the others; the first filler's error (in filler order) is rethrown once every
/// copy already issued is done.
void staged_upload(const std::vector<UploadPart>& parts);

/// Gets what a process's first staged_upload with the most fillers would get first: the staging
/// buffers pinned and the filler threads started (spmvc::warm_up). Nothing where they are ready.
void prepare_staging();

/// How many staging groups are pinned (0 to kStagingGroups): an upload by f fillers pins the
/// first ceil(f / kStagingGroupFillers) groups where they are not pinned yet. All of them where
/// the staging is a cudaHostAlloc block (the mapping or its pinning was refused).
int staging_pinned_groups();

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
