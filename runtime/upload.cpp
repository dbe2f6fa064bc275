#include "upload.hpp"

#include <cuda_runtime_api.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>

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

void FillerPool::run(int n, const std::function<void(int)>& fn,
                     const std::function<void(int)>& prologue) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (started_ < n - 1) {
    const int from = started_ + 1;
    started_ = n - 1;
    // The roots of the new threads (whose parents are not new) start here.
    for (int i = from; i <= started_; ++i) {
      if (i / 2 < from) adopt(i, caller_owns_);
    }
  }
  job_ = &fn;
  prologue_ = prologue ? &prologue : nullptr;
  n_ = n;
  errors_.assign(static_cast<std::size_t>(n), nullptr);
  pending_ = 0;
  for (int i = 1; i < n; ++i) {
    if (std::find(caller_owns_.begin(), caller_owns_.end(), i) == caller_owns_.end()) ++pending_;
  }
  ++generation_;
  lock.unlock();
  start_.notify_all();
  run_own(fn, prologue_, 0, caller_owns_, errors_);
  lock.lock();
  done_.wait(lock, [&] { return pending_ == 0; });
  std::exception_ptr first;
  for (const std::exception_ptr& e : errors_) {
    if (e) {
      first = e;
      break;
    }
  }
  lock.unlock();
  if (first) std::rethrow_exception(first);
}

int FillerPool::threads() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return started_ - refused_.load();
}

void FillerPool::adopt(int i, std::vector<int>& owner) {
  try {
    if (refuse_start_ && refuse_start_(i)) throw std::system_error(EAGAIN, std::generic_category());
    std::thread([this, i] {
      std::vector<int> own;
      for (const int child : {2 * i, 2 * i + 1}) {
        if (child <= started_) adopt(child, own);
      }
      work(i, own);
    }).detach();
  } catch (const std::system_error&) {
    refused_.fetch_add(1);
    owner.push_back(i);
    for (const int child : {2 * i, 2 * i + 1}) {
      if (child <= started_) adopt(child, owner);
    }
  }
}

void FillerPool::run_own(const std::function<void(int)>& fn,
                         const std::function<void(int)>* prologue, int i,
                         const std::vector<int>& adopted, std::vector<std::exception_ptr>& errors) {
  const auto n = static_cast<int>(errors.size());
  const auto once = [&](const std::function<void(int)>& f, int k) {
    if (k >= n || errors[static_cast<std::size_t>(k)]) return;
    try {
      f(k);
    } catch (...) {
      errors[static_cast<std::size_t>(k)] = std::current_exception();
    }
  };
  if (prologue != nullptr) {
    once(*prologue, i);
    for (const int j : adopted) once(*prologue, j);
  }
  once(fn, i);
  for (const int j : adopted) once(fn, j);
}

void FillerPool::work(int i, const std::vector<int>& adopted) {
  std::uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    start_.wait(lock, [&] { return generation_ != seen; });
    seen = generation_;
    if (i >= n_) continue;
    const std::function<void(int)>& fn = *job_;
    const std::function<void(int)>* prologue = prologue_;
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n_));
    lock.unlock();
    run_own(fn, prologue, i, adopted, errors);
    lock.lock();
    for (std::size_t k = 0; k < errors.size(); ++k) {
      if (errors[k]) errors_[k] = errors[k];
    }
    int shares = 1;
    for (const int k : adopted) shares += k < n_ ? 1 : 0;
    pending_ -= shares;
    if (pending_ == 0) done_.notify_one();
  }
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
// ms by one thread, 3.8 ms by eight; cudaHostRegister once 2-4 ms. So the buffers sit in one
// mapping advised to use huge pages, pinned a group of kStagingGroupFillers fillers' buffers at a
// time by the first upload that uses them: the group's fillers fault their own buffers in, then
// fill their first chunks while a registering thread pins the group (one cudaHostRegister a
// group, in group order), and wait for the pinning only before their first copy. Against faulting
// all 32 MiB in by sixteen threads and then registering it once, a fresh process's first multiply
// from host CSR (27-point stencil, 16.8M nonzeros) came 0.6-1.1 ms sooner
// (bench/results/2026-11-29-h200-first-multiply/design-ab.txt). Where the mapping or a
// registration is refused, that upload copies the group's buffers as pageable memory and later
// ones stage through one cudaHostAlloc block.
struct Staging {
  static constexpr std::size_t kBuffers = std::size_t{kUploadMaxFillers} * kUploadBuffersPerFiller;
  static constexpr std::size_t kBytes = kBuffers * kUploadChunkBytes;
  static constexpr std::size_t kFillerBytes = kUploadBuffersPerFiller * kUploadChunkBytes;
  static constexpr int kGroups = kStagingGroups;
  static constexpr std::size_t kGroupBytes = kStagingGroupFillers * kFillerBytes;
  static_assert(kUploadMaxFillers % kStagingGroupFillers == 0);
  std::mutex mutex;         // held through an upload
  char* slab = nullptr;     // the mapping (2 MiB-aligned), or the cudaHostAlloc block
  bool host_alloc = false;  // slab is a cudaHostAlloc block: every group pinned
  bool refused = false;     // a registration failed: the next upload takes cudaHostAlloc
  std::array<bool, kGroups> pinned{};

  void* buffer(int b) const { return slab + static_cast<std::size_t>(b) * kUploadChunkBytes; }

  // Called with the mutex held, before the fillers start: the slab exists, and the groups that
  // `fillers` fillers use and that are not pinned yet are returned (in order) for this upload to
  // pin.
  std::vector<int> prepare(int fillers) {
    if (refused && !host_alloc) {
      // The mapping stays (a pinned group of it may still be registered); the block replaces it.
      void* p = nullptr;
      check(cudaHostAlloc(&p, kBytes, cudaHostAllocPortable), "cudaHostAlloc(upload staging)");
      slab = static_cast<char*>(p);
      host_alloc = true;
      pinned.fill(true);
    }
    if (slab == nullptr) {
      constexpr std::size_t kHuge = std::size_t{2} << 20;
      void* raw = ::mmap(nullptr, kBytes + kHuge, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (raw == MAP_FAILED) {
        refused = true;
        return prepare(fillers);
      }
      const auto at = reinterpret_cast<std::uintptr_t>(raw);
      slab = reinterpret_cast<char*>((at + kHuge - 1) / kHuge * kHuge);
      (void)::madvise(slab, kBytes, MADV_HUGEPAGE);  // advice: 4 KiB pages where not taken
    }
    std::vector<int> groups;
    const int used = (fillers + kStagingGroupFillers - 1) / kStagingGroupFillers;
    for (int g = 0; g < used; ++g) {
      if (!pinned[static_cast<std::size_t>(g)]) groups.push_back(g);
    }
    return groups;
  }
};

Staging& staging() {
  static Staging* s = new Staging;
  return *s;
}

// Writes a byte in every 4 KiB page of [p, p + bytes): the pages are faulted in (a huge page at
// its first byte where the advice was taken) and private to the process before they are pinned.
void fault_in(char* p, std::size_t bytes) {
  constexpr std::size_t kPage = 4096;
  for (std::size_t i = 0; i < bytes; i += kPage) p[i] = 0;
}

// One upload's pinning of the staging groups its fillers use that are not pinned yet. Each
// filler faults its own buffers in (fault_own, in the pool's prologue, which runs before any
// share on a thread waits: a share run by another filler's thread, where a thread could not be
// started, reports before that thread blocks); the registering thread faults in the buffers of
// the fillers this upload does not run, waits for the group's buffers, and pins the group with
// one cudaHostRegister. A filler waits (ready(f)) before its first copy. Joined by the destructor
// (run by the upload's end, error or not).
class GroupPinning {
 public:
  GroupPinning(Staging& s, std::vector<int> groups, int fillers, int device)
      : s_(s), groups_(std::move(groups)), fillers_(fillers) {
    state_.fill(kDone);
    for (const int g : groups_) {
      pinning_[static_cast<std::size_t>(g)] = true;
      state_[static_cast<std::size_t>(g)] = kPending;
    }
    if (groups_.empty()) return;
    thread_ = std::thread([this, device] { run(device); });
  }
  GroupPinning(const GroupPinning&) = delete;
  GroupPinning& operator=(const GroupPinning&) = delete;
  ~GroupPinning() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  /// Whether filler f's group is pinned by this upload.
  bool pinning(int f) const { return pinning_[group_of(f)]; }

  /// Faults filler f's buffers in (once), where this upload pins its group.
  void fault_own(int f) {
    if (pinning(f)) claim_and_fault(f);
  }

  /// Waits until every group this upload pins is pinned or refused.
  void wait_all() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] {
      return std::none_of(groups_.begin(), groups_.end(),
                          [&](int g) { return state_[static_cast<std::size_t>(g)] == kPending; });
    });
  }

  /// Waits until filler f's group is pinned or refused.
  void ready(int f) {
    const std::size_t g = group_of(f);
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return state_[g] != kPending || stop_; });
  }

 private:
  static constexpr int kPending = 0, kDone = 1, kRefused = 2;
  static constexpr int kUnclaimed = 0, kClaimed = 1, kFaulted = 2;
  static std::size_t group_of(int f) { return static_cast<std::size_t>(f / kStagingGroupFillers); }

  void claim_and_fault(int f) {
    int expected = kUnclaimed;
    std::atomic<int>& r = region_[static_cast<std::size_t>(f)];
    if (!r.compare_exchange_strong(expected, kClaimed)) return;
    fault_in(static_cast<char*>(s_.buffer(f * kUploadBuffersPerFiller)), Staging::kFillerBytes);
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      r.store(kFaulted);
    }
    changed_.notify_all();
  }

  void run(int device) {
    const bool device_set = cudaSetDevice(device) == cudaSuccess;
    for (const int g : groups_) {
      const auto gi = static_cast<std::size_t>(g);
      const int first = g * kStagingGroupFillers;
      for (int f = std::max(first, fillers_); f < first + kStagingGroupFillers; ++f)
        claim_and_fault(f);
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] {
          return stop_ || std::all_of(region_.begin() + first,
                                      region_.begin() + first + kStagingGroupFillers,
                                      [](const std::atomic<int>& r) { return r == kFaulted; });
        });
        if (stop_) return;
      }
      const bool ok =
          device_set && cudaHostRegister(s_.slab + gi * Staging::kGroupBytes, Staging::kGroupBytes,
                                         cudaHostRegisterPortable) == cudaSuccess;
      if (!ok) (void)cudaGetLastError();
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        state_[gi] = ok ? kDone : kRefused;
        // Kept for the next uploads (owned by s_'s mutex, which the upload holds).
        if (ok) s_.pinned[gi] = true;
        if (!ok) s_.refused = true;
      }
      changed_.notify_all();
    }
  }

  Staging& s_;
  std::vector<int> groups_;
  int fillers_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::array<bool, Staging::kGroups> pinning_{};              // the groups this upload pins (fixed)
  std::array<int, Staging::kGroups> state_{};                 // kPending until the group is pinned
  std::array<std::atomic<int>, kUploadMaxFillers> region_{};  // each filler's buffers
  bool stop_ = false;
  std::thread thread_;
};

FillerPool& filler_pool() {
  static FillerPool* pool = new FillerPool;  // never destroyed: its threads never end
  return *pool;
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

int staging_pinned_groups() {
  Staging& s = staging();
  const std::lock_guard<std::mutex> lock(s.mutex);
  return static_cast<int>(std::count(s.pinned.begin(), s.pinned.end(), true));
}

void prepare_staging() {
  const int fillers = upload_fillers(Staging::kBytes, host_threads());
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  Staging& s = staging();
  const std::lock_guard<std::mutex> lock(s.mutex);
  GroupPinning pinning(s, s.prepare(fillers), fillers, device);
  // Each thread's first CUDA call sets up the runtime's state for that thread: done here too.
  filler_pool().run(
      fillers, [&](int) { check(cudaSetDevice(device), "cudaSetDevice"); },
      [&](int f) { pinning.fault_own(f); });
  pinning.wait_all();
}

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
  std::vector<int> groups = s.prepare(fillers);
  // Destroyed after the events (which wait for the copies) and before the lock.
  GroupPinning pinning(s, std::move(groups), fillers, device);
  BufferEvents events(fillers * kUploadBuffersPerFiller);
  std::atomic<bool> failed{false};
  // Before any share on a thread waits for a pinning: each share's buffers faulted in.
  const std::function<void(int)> fault = [&](int f) { pinning.fault_own(f); };
  const std::function<void(int)> fill = [&](int f) {
    bool waited = !pinning.pinning(f);
    try {
      // The runtime's current device is per thread: the fillers take the caller's.
      check(cudaSetDevice(device), "cudaSetDevice");
      for (const UploadChunk& c : chunks) {
        if (c.filler != f) continue;
        if (failed.load(std::memory_order_relaxed)) return;
        void* buffer = s.buffer(c.buffer);
        events.wait(c.buffer);
        const UploadPart& p = parts[c.part];
        p.fill(c.offset, c.bytes, buffer);
        // A group that could not be pinned is copied as pageable memory (the call returns once
        // the driver has read the buffer).
        if (!waited) {
          pinning.ready(f);
          waited = true;
        }
        check(cudaMemcpyAsync(static_cast<char*>(p.device) + c.offset, buffer, c.bytes,
                              cudaMemcpyHostToDevice, nullptr),
              "cudaMemcpyAsync(upload staging to device)");
        events.record(c.buffer);
      }
    } catch (...) {
      failed.store(true);
      throw;
    }
  };
  filler_pool().run(fillers, fill, fault);
  // (A filler that threw is rethrown by run(); the events' destructor then waits.)
  events.wait_all();
}

}  // namespace spmvc::runtime
