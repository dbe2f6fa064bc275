// Two-level cache of compiled kernels: in memory for this process, and on disk across runs.
//
// Key: XXH3-128 of (cache format version, NVRTC version, architecture, options, kernel name,
// source, headers). Disk entries live in one private (0700) directory; each file holds a header
// (magic, format version, key, payload length, payload hash) then the CUBIN. Entries are written
// to a temporary file and renamed into place, so readers never see a partial entry. An entry
// whose header, length or hash does not check out is treated as absent (and replaced), never
// trusted.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

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
};

class KernelCache {
 public:
  static constexpr int kFormatVersion = 1;

  /// `dir` empty: memory only. Otherwise the directory is created (mode 0700) on first write.
  /// get() throws InputError if the directory belongs to another user (a planted entry would run
  /// on the GPU); one writable by group or others is tightened to 0700.
  explicit KernelCache(std::filesystem::path dir);

  /// The default directory: $SPMVC_CACHE_DIR, else $XDG_CACHE_HOME/spmvc, else $HOME/.cache/spmvc.
  static std::filesystem::path default_dir();

  /// Returns the cached CUBIN for (src, arch), compiling with NVRTC on a miss.
  CachedKernel get(const KernelSource& src, const std::string& arch);

  /// The hex key for (src, arch); also the disk file's stem.
  static std::string key(const KernelSource& src, const std::string& arch);
  std::filesystem::path entry_path(const std::string& key) const;
  const std::filesystem::path& dir() const { return dir_; }
  void clear_memory();
  /// Why the last disk write failed ("" if it succeeded). A failed write only costs a later
  /// recompile, so get() does not throw for it; tools may report it.
  std::string last_disk_error() const;

 private:
  std::optional<Cubin> read_disk(const std::string& key) const;
  void write_disk(const std::string& key, const Cubin& cubin) const;

  std::filesystem::path dir_;
  mutable std::mutex mutex_;
  std::map<std::string, Cubin> memory_;
  mutable std::string disk_error_;  // guarded by mutex_
};

/// Kernels loaded onto devices, shared by the whole process: entry `entry` of the CUBIN cached
/// under `key`, on device `ordinal` (current). Loading an image costs a few tenths of a
/// millisecond, which an application compiling many matrices would otherwise pay per matrix for
/// kernels it already has. Loaded kernels stay loaded until the process ends. Not for images whose
/// __device__ variables a caller sets (LoadedKernel::set_global): those need their own load.
std::shared_ptr<const LoadedKernel> shared_kernel(const CachedKernel& cached,
                                                  const std::string& entry, int ordinal);

}  // namespace spmvc::runtime
