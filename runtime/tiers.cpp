#include "tiers.hpp"

#include <string>
#include <utility>

#include "device.hpp"
#include "spmvc/error.hpp"

namespace spmvc::runtime {

namespace {

double seconds_between(std::chrono::steady_clock::time_point a,
                       std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

bool tiered(const Options& options) {
  if (options.deterministic) return false;
  if (options.tiered) return *options.tiered;
  return runtime::env_switch("SPMVC_TIERED").value_or(true);
}

Tiers::Tiers(std::unique_ptr<GenericCsr> generic, const CompileTimings& timings,
             std::chrono::steady_clock::time_point start, int ordinal, Scope scope)
    : generic_(std::move(generic)),
      timings_(timings),
      start_(start),
      ordinal_(ordinal),
      scope_(scope),
      settled_(scope == Scope::kernel) {}

Tiers::~Tiers() {
  {
    std::lock_guard lock(mutex_);
    abandoned_.store(true);
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Tiers::start(Work work) {
  if (thread_.joinable()) throw InternalError("Tiers::start called twice");
  thread_ = std::thread([this, w = std::move(work)]() mutable { run(std::move(w)); });
}

void Tiers::run(Work work) {
  CompileTimings timings;
  {
    std::lock_guard lock(mutex_);
    timings = timings_;
  }
  std::exception_ptr error;
  try {
    set_device(ordinal_);
    work(timings, abandoned_);
  } catch (...) {
    error = std::current_exception();
  }
  // The work's captures (the host build with its encoded arrays) go now, not at the switch.
  work = nullptr;
  std::unique_lock lock(mutex_);
  timings_ = std::move(timings);
  done_ = true;
  // Published work stays switchable whatever failed after (the csr kernel of a cuSPARSE plan).
  if (!ready_ && !error && !abandoned_.load()) {
    ready_ = true;
    ready_seconds_ = seconds_between(start_, std::chrono::steady_clock::now());
  }
  if (error) {
    error_ = error;
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      error_text_ = e.what();
    } catch (...) {
      error_text_ = "unknown error";
    }
  }
  cv_.notify_all();
  if (!ready_) return;  // the generic tier stays (or the operator is going away)
  cv_.wait(lock, [&] { return switched_.load() || abandoned_.load(); });
  if (!switched_.load()) return;
  // No generic launch can start now (apply_generic holds the mutex to launch and sees the
  // switch); DeviceBuffer's destructor waits for the device, so launches already made finish
  // before the memory goes back. Freed outside the lock, which apply() no longer takes.
  std::unique_ptr<GenericCsr> generic = std::move(generic_);
  lock.unlock();
  generic.reset();
}

bool Tiers::apply_generic(const void* x, void* y, double alpha, double beta, void* stream) {
  std::lock_guard lock(mutex_);
  if (switched_.load(std::memory_order_relaxed)) return false;
  if (ready_) {
    switch_seconds_ = seconds_between(start_, std::chrono::steady_clock::now());
    switched_.store(true, std::memory_order_release);
    cv_.notify_all();
    return false;
  }
  generic_->apply(x, y, alpha, beta, stream);
  ++generic_applies_;
  return true;
}

void Tiers::wait_ready() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

void Tiers::settle(const CompileTimings& so_far) { mark_settled(so_far, /*ready=*/false); }

void Tiers::publish(const CompileTimings& so_far) { mark_settled(so_far, /*ready=*/true); }

void Tiers::mark_settled(const CompileTimings& so_far, bool ready) {
  {
    std::lock_guard lock(mutex_);
    timings_ = so_far;
    settled_ = true;
    if (ready && !ready_ && !abandoned_.load()) {
      ready_ = true;
      ready_seconds_ = seconds_between(start_, std::chrono::steady_clock::now());
    }
  }
  cv_.notify_all();
}

void Tiers::wait_settled() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return settled_ || done_; });
  if (!settled_ && error_) std::rethrow_exception(error_);
}

void Tiers::switch_now() {
  if (switched()) return;
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return done_; });
  if (error_) std::rethrow_exception(error_);
  if (switched_.load()) return;
  switch_seconds_ = seconds_between(start_, std::chrono::steady_clock::now());
  switched_.store(true, std::memory_order_release);
  cv_.notify_all();
}

void Tiers::refresh(CompileTimings& t) const {
  std::lock_guard lock(mutex_);
  if (scope_ == Scope::build) {
    t = timings_;  // every stage after the upload comes from the thread
    t.specialised_ready = ready_ ? ready_seconds_ : -1;
  } else if (done_) {
    t.compile = timings_.compile;
    t.upload = timings_.upload;
    t.kernel_origin = timings_.kernel_origin;
    t.cache_note = timings_.cache_note;
    t.registers = timings_.registers;
    t.spill_bytes = timings_.spill_bytes;
    t.early_launches = timings_.early_launches;
    t.compile_log = timings_.compile_log;
    t.specialised_ready = ready_ ? ready_seconds_ : -1;
  }
  t.tier = switched_.load() ? "specialised" : "generic";
  t.generic_applies = generic_applies_;
  t.switched = switch_seconds_;
  t.tier_error = error_text_;
}

}  // namespace spmvc::runtime
