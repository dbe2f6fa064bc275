// Two-level cache of compiled kernels: in memory for this process, and on disk across runs.
//
// Key: XXH3-128 of (cache format version, NVRTC version, architecture, options, kernel name,
// source, headers). Disk entries live in one private (0700) directory; each file holds a header
// (magic, format version, key, payload length, payload hash) then the CUBIN. Entries are written
// to a temporary file and renamed into place, so readers never see a partial entry. An entry
// whose header, length or hash does not check out is treated as absent (and replaced), never
// trusted. Two processes that compile the same kernel at once each write their own temporary
// file and rename it over the entry, so it holds one of the two (equal) CUBINs whole; a process
// that exits mid-write leaves at most a temporary file, which is never read as an entry and is
// removed by a later write once it is an hour old.
//
// The disk level is an optimisation, so it degrades instead of failing: a directory owned by
// another user or writable by group or others is never used (a planted entry would run on the
// GPU), and one that cannot be created (a read-only home on a cluster node) turns the disk level
// off for the cache's life; a write that fails (disk full, read-only file system) is skipped.
// get() then goes on in memory and says why in CachedKernel::disk_note.
#pragma once

#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <sys/types.h>

#include "device.hpp"
#include "nvrtc_compiler.hpp"

namespace spmvc::runtime {

enum class CacheOrigin { compiled, memory, disk };
std::string_view to_string(CacheOrigin o);

struct CachedKernel {
  Cubin cubin;
  CacheOrigin origin = CacheOrigin::compiled;
  double seconds = 0;  ///< time spent obtaining it (compile, or read and verify)
  std::string key;     ///< KernelCache::key of the unit
  /// Why the disk level did not serve or keep this kernel ("disk cache off: <dir> is owned by
  /// uid 12345 ..."); empty when it worked or the cache is memory only.
  std::string disk_note;
};

class KernelCache {
 public:
  static constexpr int kFormatVersion = 1;

  /// `dir` empty: memory only. Otherwise the directory is created (mode 0700) on first write.
  /// Nothing about the directory makes get() throw: see the file comment.
  explicit KernelCache(std::filesystem::path dir);

  /// The default directory: $SPMVC_CACHE_DIR, else $XDG_CACHE_HOME/spmvc, else $HOME/.cache/spmvc.
  static std::filesystem::path default_dir();

  /// Returns the cached CUBIN for (src, arch), compiling with NVRTC on a miss. Threads of one
  /// process that miss on the same key at once share one compile: the first compiles, the
  /// others wait for it (origin memory; a CompileError reaches all of them).
  CachedKernel get(const KernelSource& src, const std::string& arch);
  /// The cached CUBIN for (src, arch) from memory or disk, without compiling: nullopt on a miss.
  /// A disk hit is kept in memory, so the get() that follows is a memory hit.
  std::optional<CachedKernel> find(const KernelSource& src, const std::string& arch);

  /// True when no kernel at all is cached or being compiled: nothing in memory, and no entry on
  /// disk (any GPU's; the directory absent or unusable counts as none). Then any kernel must
  /// be compiled, whatever its source: what a tiered GPU build asks before planning in the
  /// background (runtime/device_build.cpp).
  bool holds_none();

  /// The hex key for (src, arch); also the disk file's stem.
  static std::string key(const KernelSource& src, const std::string& arch);
  std::filesystem::path entry_path(const std::string& key) const;
  const std::filesystem::path& dir() const { return dir_; }
  void clear_memory();
  /// Why the directory must not be used ("" when it may be, or does not exist yet). Others that
  /// keep files under it (measure mode's decisions) ask before reading or writing.
  std::string disk_off_reason();
  /// The disk note of the last get() ("" when the disk level worked or there is none).
  std::string disk_note() const;

  /// The write(2) the disk level calls; tests substitute one that fails (disk full, EROFS).
  using WriteFn = ssize_t (*)(int fd, const void* data, std::size_t bytes);
  void set_write_for_testing(WriteFn write);

 private:
  // "" when the directory may be used (`*absent` set when it does not exist and `create` is
  // false); else why not, which turns the disk level off from then on.
  std::string usable_dir(bool create, bool* absent = nullptr);
  std::optional<Cubin> read_disk(const std::string& key);
  // "" when written; else why not.
  std::string write_disk(const std::string& key, const Cubin& cubin);
  // Sets k's disk note (the disk level off, or `write_error`) and remembers it as the last one.
  void note_locked(CachedKernel& k, const std::string& write_error);  // mutex_ held
  CachedKernel noted(CachedKernel k, const std::string& write_error);

  std::filesystem::path dir_;
  mutable std::mutex mutex_;
  std::map<std::string, Cubin> memory_;
  // Compiles under way in this process, by key: later misses on the key wait for the first.
  std::map<std::string, std::shared_future<Cubin>> compiling_;  // guarded by mutex_
  std::string disk_off_;     // guarded by mutex_: why the disk level is off ("" while on)
  std::string disk_note_;    // guarded by mutex_: the last get()'s note
  WriteFn write_ = nullptr;  // nullptr: ::write
};

/// Kernels loaded onto devices, shared by the whole process: entry `entry` of the CUBIN cached
/// under `key`, on device `ordinal` (current), every entry of one image from one load of it.
/// Loading an image costs a few tenths of a millisecond, which an application compiling many
/// matrices would otherwise pay per matrix (and a build unit per entry) for kernels it already
/// has. Loaded kernels stay loaded until the process ends. Not for images whose __device__
/// variables a caller sets (LoadedKernel::set_global): those need their own load.
std::shared_ptr<const LoadedKernel> shared_kernel(const CachedKernel& cached,
                                                  const std::string& entry, int ordinal);

/// Loads the code of every shared kernel of device `ordinal` (current) onto it now, as its first
/// launch would (spmvc::warm_up, off the caller's timed path).
void resolve_shared_kernels(int ordinal);

}  // namespace spmvc::runtime
