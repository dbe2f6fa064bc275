// An operator's two tiers (Options::tiered): the generic kernel that multiplies from the start,
// and the background thread that makes the specialised one ready. The switch is stream-ordered:
// the background work finishes (kernel loaded, encoding uploaded, device synchronised) before it
// marks the specialised tier ready, and the first apply() that sees it ready launches the
// specialised kernel from then on, so a multiply runs one complete tier or the other. The
// generic tier's memory is freed by the background thread once every launch already made on it
// is done.
//
// Two scopes of background work. The kernel's (the host pipeline, a GPU build whose format the
// caller named, and any GPU build while a kernel is cached): the operator's plan, profile,
// source and arrays are final when compile() returns, and the thread compiles the kernel. The
// whole build's (the GPU build of format auto while the cache holds no kernel): compile()
// returns once the GPU has checked the arrays, and the thread plans, encodes and compiles; it
// settles the operator's description (settle()) before the kernel's compile, and may let apply()
// switch before its work is done (publish(): a cuSPARSE plan, whose engine is ready while the csr
// kernel for SpMM and the transpose still compiles).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "generic_tier.hpp"
#include "spmvc/spmvc.hpp"

namespace spmvc::runtime {

/// Whether compile() tiers with `options`: never for a deterministic compile (the tiers round
/// differently); else Options::tiered when set, else SPMVC_TIERED ("0", "off" or "false" turn it
/// off; "1", "on", "true" or unset leave it on; anything else is an InputError naming the
/// variable).
bool tiered(const Options& options);

class Tiers {
 public:
  /// What the background thread does: compile, load and upload the specialised tier, filling in
  /// the timings it measures. It returns early (its work abandoned) once `abandoned` is set.
  using Work = std::function<void(CompileTimings& timings, const std::atomic<bool>& abandoned)>;

  /// What the background thread builds: the kernel only, or the whole build (above).
  enum class Scope { kernel, build };

  /// `timings`: the operator's timings so far (the background adds its steps to a copy);
  /// `start`: when compile() was called; `ordinal`: the device the background thread uses.
  Tiers(std::unique_ptr<GenericCsr> generic, const CompileTimings& timings,
        std::chrono::steady_clock::time_point start, int ordinal, Scope scope = Scope::kernel);
  /// Abandons work not yet started (an upload after a compile in flight) and joins the thread:
  /// at most one NVRTC compile's wait.
  ~Tiers();
  Tiers(const Tiers&) = delete;
  Tiers& operator=(const Tiers&) = delete;

  /// Starts the background thread (once).
  void start(Work work);
  /// Multiplies on the generic tier and returns true while the specialised one is not ready;
  /// returns false once it is (the caller then launches the specialised kernel), switching at
  /// the first call that finds it ready.
  bool apply_generic(const void* x, void* y, double alpha, double beta, void* stream);
  /// True once apply() runs the specialised tier: one atomic load, for apply()'s hot path.
  bool switched() const { return switched_.load(std::memory_order_acquire); }
  /// Blocks until the background work is done; rethrows its error.
  void wait_ready();
  /// For the work: the operator's plan, profile, source, arrays and operations are final;
  /// `so_far`, its timings now, is what timings() reports until the work is done.
  void settle(const CompileTimings& so_far);
  /// For the work: settle(), and apply() may switch now, before the rest of the work is done.
  void publish(const CompileTimings& so_far);
  /// Blocks until the operator's description is final (at once for Scope::kernel); rethrows
  /// the error of work that failed before it settled.
  void wait_settled();
  /// Waits for the specialised tier (rethrowing a failed build) and switches to it at once, for
  /// work on the specialised tier's arrays (update_values, apply_many); at once when switched.
  void switch_now();
  /// Copies the tiers' state and the background's timings into `t`: for Scope::kernel the
  /// kernel's steps once the work is done, for Scope::build every stage, as settled and as done.
  void refresh(CompileTimings& t) const;

 private:
  void run(Work work);
  // settle() and publish(): the description final, and with `ready` apply() may switch.
  void mark_settled(const CompileTimings& so_far, bool ready);

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::unique_ptr<GenericCsr> generic_;  // guarded by mutex_; null once freed
  CompileTimings timings_;               // guarded by mutex_: the background's copy
  std::chrono::steady_clock::time_point start_;
  int ordinal_;
  Scope scope_;
  bool settled_ = false;                // guarded by mutex_: the description is final
  bool done_ = false;                   // guarded by mutex_: background work finished
  bool ready_ = false;                  // guarded by mutex_: published, or finished without error
  std::exception_ptr error_;            // guarded by mutex_
  std::string error_text_;              // guarded by mutex_
  double ready_seconds_ = -1;           // guarded by mutex_
  double switch_seconds_ = -1;          // guarded by mutex_
  std::int64_t generic_applies_ = 0;    // guarded by mutex_
  std::atomic<bool> switched_{false};   // written under mutex_
  std::atomic<bool> abandoned_{false};  // written under mutex_
  std::thread thread_;
};

}  // namespace spmvc::runtime
