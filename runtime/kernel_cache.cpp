#include "kernel_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <system_error>
#include <tuple>
#include <type_traits>

#include <fmt/format.h>

#include "spmvc/error.hpp"

namespace spmvc::runtime {

namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'S', 'P', 'M', 'V', 'C', 'K', 'C', '1'};

// Fixed-size header at the start of every entry file. Host byte order: entries are private to
// one user's machine, and a file from another byte order fails the magic/version/hash checks.
struct EntryHeader {
  char magic[8];
  std::uint32_t format_version;
  std::uint32_t reserved;
  unsigned char key[16];  // canonical (big-endian) XXH3-128 of the inputs
  std::uint64_t payload_bytes;
  std::uint64_t payload_hash;  // XXH3-64 of the payload
};
static_assert(std::is_trivially_copyable_v<EntryHeader> && sizeof(EntryHeader) == 48);

// Payload layout: four int32 (registers, spill stores, spill loads, stack), uint64 image size,
// uint64 log size, image bytes, log bytes.
constexpr std::size_t kPayloadFixed = 4 * sizeof(std::int32_t) + 2 * sizeof(std::uint64_t);

template <class T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <class T>
T get_at(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::string serialize(const Cubin& c) {
  std::string out;
  out.reserve(kPayloadFixed + c.image.size() + c.log.size());
  put<std::int32_t>(out, c.registers);
  put<std::int32_t>(out, c.spill_store_bytes);
  put<std::int32_t>(out, c.spill_load_bytes);
  put<std::int32_t>(out, c.stack_bytes);
  put<std::uint64_t>(out, c.image.size());
  put<std::uint64_t>(out, c.log.size());
  out.append(c.image.data(), c.image.size());
  out += c.log;
  return out;
}

std::optional<Cubin> deserialize(const char* p, std::size_t n) {
  if (n < kPayloadFixed) return std::nullopt;
  Cubin c;
  c.registers = get_at<std::int32_t>(p);
  c.spill_store_bytes = get_at<std::int32_t>(p + 4);
  c.spill_load_bytes = get_at<std::int32_t>(p + 8);
  c.stack_bytes = get_at<std::int32_t>(p + 12);
  const auto image = get_at<std::uint64_t>(p + 16);
  const auto log = get_at<std::uint64_t>(p + 24);
  const std::size_t rest = n - kPayloadFixed;
  if (image == 0 || image > rest || log != rest - image) return std::nullopt;
  p += kPayloadFixed;
  c.image.assign(p, p + image);
  c.log.assign(p + image, p + image + log);
  return c;
}

class HashState {
 public:
  HashState() : s_(XXH3_createState(), &XXH3_freeState) {
    if (!s_ || XXH3_128bits_reset(s_.get()) != XXH_OK) {
      throw InternalError("XXH3: could not create a hash state");
    }
  }
  // Length-prefixed, so ("ab","c") and ("a","bc") hash differently.
  void field(std::string_view bytes) {
    count(bytes.size());
    XXH3_128bits_update(s_.get(), bytes.data(), bytes.size());
  }
  void count(std::uint64_t n) { XXH3_128bits_update(s_.get(), &n, sizeof n); }
  XXH128_canonical_t digest() const {
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(s_.get()));
    return c;
  }

 private:
  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> s_;
};

XXH128_canonical_t key_digest(const KernelSource& src, const std::string& arch) {
  HashState h;
  h.field(std::to_string(KernelCache::kFormatVersion));
  h.field(nvrtc_version());
  h.field(arch);
  h.count(src.options.size());
  for (const auto& o : src.options) h.field(o);
  h.field(src.kernel_name);
  h.field(src.source);
  h.count(src.headers.size());
  for (const auto& [name, text] : src.headers) {
    h.field(name);
    h.field(text);
  }
  return h.digest();
}

std::string to_hex(const unsigned char* bytes, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    s += kDigits[bytes[i] >> 4];
    s += kDigits[bytes[i] & 0xf];
  }
  return s;
}

// The inverse of to_hex for a key made by KernelCache::key.
XXH128_canonical_t key_bytes(const std::string& key) {
  if (key.size() != 32) throw InternalError("kernel cache key is not 32 hex digits: " + key);
  XXH128_canonical_t c{};
  for (std::size_t i = 0; i < sizeof c.digest; ++i) {
    c.digest[i] = static_cast<unsigned char>(std::stoi(key.substr(2 * i, 2), nullptr, 16));
  }
  return c;
}

std::string errno_text(int err) { return std::generic_category().message(err); }

// Why `dir` must not hold kernel cache entries, or "" when it is a directory private to this
// user. An absent directory is created (mode 0700) when `create`, else `*absent` is set. An entry
// is loaded and run on the GPU, so a directory someone else owns or can write to is refused: they
// could have planted entries already, and tightening its mode would not remove them.
std::string check_dir(const fs::path& dir, bool create, bool* absent) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    // ENOTDIR: a component of the path is a file, so the directory cannot be created.
    if (errno == ENOTDIR)
      return fmt::format("cannot create {}: {}", dir.string(), errno_text(errno));
    if (errno != ENOENT) return fmt::format("cannot stat {}: {}", dir.string(), errno_text(errno));
    if (!create) {
      *absent = true;
      return "";
    }
    std::error_code ec;
    if (dir.has_parent_path()) fs::create_directories(dir.parent_path(), ec);
    if (ec) return fmt::format("cannot create {}: {}", dir.string(), ec.message());
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return fmt::format("cannot create {}: {}", dir.string(), errno_text(errno));
    }
    if (::stat(dir.c_str(), &st) != 0) {
      return fmt::format("cannot stat {}: {}", dir.string(), errno_text(errno));
    }
  }
  if (!S_ISDIR(st.st_mode)) return fmt::format("{} is not a directory", dir.string());
  if (st.st_uid != ::geteuid()) {
    return fmt::format(
        "{} is owned by uid {}, not this user (uid {}); set SPMVC_CACHE_DIR to a private "
        "directory",
        dir.string(), st.st_uid, ::geteuid());
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return fmt::format("{} is writable by group or others (mode {:04o}); chmod 0700 it to use it",
                       dir.string(), st.st_mode & 07777u);
  }
  return "";
}

bool write_all(KernelCache::WriteFn write, int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = write != nullptr ? write(fd, p, n) : ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// A temporary entry file older than this belongs to a writer that died (a process that exited
// mid-write): writes finish in milliseconds, so an hour leaves any live writer alone.
constexpr auto kStaleTemporary = std::chrono::hours(1);

// Removes temporary entry files (`<key>.tmp.XXXXXX`) in `dir` older than kStaleTemporary. Best
// effort: what cannot be listed or removed stays.
void remove_stale_temporaries(const fs::path& dir) {
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find(".tmp.") == std::string::npos) continue;
    std::error_code time_ec;
    const auto written = fs::last_write_time(it->path(), time_ec);
    if (!time_ec && now - written > kStaleTemporary) fs::remove(it->path(), time_ec);
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::string_view to_string(CacheOrigin o) {
  switch (o) {
    case CacheOrigin::compiled:
      return "nvrtc";
    case CacheOrigin::memory:
      return "memory";
    case CacheOrigin::disk:
      return "disk";
  }
  return "?";
}

KernelCache::KernelCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

std::filesystem::path KernelCache::default_dir() {
  if (const char* v = std::getenv("SPMVC_CACHE_DIR"); v != nullptr && *v != '\0') return v;
  // The XDG spec says a relative XDG_CACHE_HOME is invalid and must be ignored.
  if (const char* v = std::getenv("XDG_CACHE_HOME"); v != nullptr && *v == '/') {
    return fs::path(v) / "spmvc";
  }
  if (const char* v = std::getenv("HOME"); v != nullptr && *v != '\0') {
    return fs::path(v) / ".cache" / "spmvc";
  }
  return {};
}

std::string KernelCache::key(const KernelSource& src, const std::string& arch) {
  const XXH128_canonical_t d = key_digest(src, arch);
  return to_hex(d.digest, sizeof d.digest);
}

std::filesystem::path KernelCache::entry_path(const std::string& key) const {
  return dir_ / (key + ".cubin");
}

bool KernelCache::holds_none() {
  {
    std::lock_guard lock(mutex_);
    if (!memory_.empty() || !compiling_.empty()) return false;
  }
  if (dir_.empty()) return true;
  bool absent = false;
  if (!usable_dir(/*create=*/false, &absent).empty() || absent) return true;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".cubin") return false;
  return true;
}

void KernelCache::clear_memory() {
  std::lock_guard lock(mutex_);
  memory_.clear();
}

std::string KernelCache::disk_note() const {
  std::lock_guard lock(mutex_);
  return disk_note_;
}

void KernelCache::set_write_for_testing(WriteFn write) {
  std::lock_guard lock(mutex_);
  write_ = write;
}

std::string KernelCache::usable_dir(bool create, bool* absent) {
  {
    std::lock_guard lock(mutex_);
    if (!disk_off_.empty()) return disk_off_;
  }
  bool missing = false;
  std::string why = check_dir(dir_, create, &missing);
  if (absent != nullptr) *absent = missing;
  std::lock_guard lock(mutex_);
  if (!why.empty() && disk_off_.empty()) disk_off_ = why;
  return why;
}

std::string KernelCache::disk_off_reason() {
  return dir_.empty() ? "" : usable_dir(/*create=*/false);
}

void KernelCache::note_locked(CachedKernel& k, const std::string& write_error) {
  if (!disk_off_.empty()) {
    k.disk_note = "disk cache off: " + disk_off_;
  } else if (!write_error.empty()) {
    k.disk_note = "disk cache entry not written (kernel kept in memory): " + write_error;
  }
  disk_note_ = k.disk_note;
}

CachedKernel KernelCache::noted(CachedKernel k, const std::string& write_error) {
  std::lock_guard lock(mutex_);
  note_locked(k, write_error);
  return k;
}

std::optional<CachedKernel> KernelCache::find(const KernelSource& src, const std::string& arch) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string k = key(src, arch);
  {
    std::lock_guard lock(mutex_);
    if (auto it = memory_.find(k); it != memory_.end()) {
      CachedKernel hit{it->second, CacheOrigin::memory, seconds_since(t0), k, {}};
      note_locked(hit, "");
      return hit;
    }
  }
  if (!dir_.empty()) {
    if (std::optional<Cubin> c = read_disk(k)) {
      {
        std::lock_guard lock(mutex_);
        memory_.insert_or_assign(k, *c);
      }
      return noted({std::move(*c), CacheOrigin::disk, seconds_since(t0), k, {}}, "");
    }
  }
  return std::nullopt;
}

CachedKernel KernelCache::get(const KernelSource& src, const std::string& arch) {
  const auto t0 = std::chrono::steady_clock::now();
  // The mutex is not held while reading or compiling: compiles take up to seconds and other
  // kernels should not wait.
  if (std::optional<CachedKernel> hit = find(src, arch)) return std::move(*hit);
  const std::string k = key(src, arch);
  std::promise<Cubin> compiled;
  std::shared_future<Cubin> other;
  {
    std::lock_guard lock(mutex_);
    if (auto it = memory_.find(k); it != memory_.end()) {
      // Another thread's compile finished since find() looked.
      CachedKernel hit{it->second, CacheOrigin::memory, seconds_since(t0), k, {}};
      note_locked(hit, "");
      return hit;
    }
    if (auto it = compiling_.find(k); it != compiling_.end()) {
      other = it->second;
    } else {
      compiling_.emplace(k, compiled.get_future().share());
    }
  }
  if (other.valid()) {
    // Rethrows the compiling thread's CompileError.
    Cubin c = other.get();
    return noted({std::move(c), CacheOrigin::memory, seconds_since(t0), k, {}}, "");
  }
  Cubin c;
  try {
    c = compile_cubin(src, arch);
  } catch (...) {
    compiled.set_exception(std::current_exception());
    std::lock_guard lock(mutex_);
    compiling_.erase(k);
    throw;
  }
  // Another process may compile the same key at once: each renames its own temporary file over
  // the entry, which ends up holding one of them whole.
  std::string write_error;
  if (!dir_.empty()) write_error = write_disk(k, c);
  {
    std::lock_guard lock(mutex_);
    memory_.insert_or_assign(k, c);
    compiling_.erase(k);
  }
  compiled.set_value(c);
  return noted({std::move(c), CacheOrigin::compiled, seconds_since(t0), k, {}}, write_error);
}

std::optional<Cubin> KernelCache::read_disk(const std::string& key) {
  bool absent = false;
  if (!usable_dir(/*create=*/false, &absent).empty() || absent) return std::nullopt;
  const int fd = ::open(entry_path(key).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string bytes;
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            static_cast<std::size_t>(st.st_size) >= sizeof(EntryHeader);
  if (ok) {
    bytes.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < bytes.size()) {
      const ssize_t r = ::read(fd, bytes.data() + got, bytes.size() - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += static_cast<std::size_t>(r);
    }
    ok = got == bytes.size();
  }
  ::close(fd);
  if (!ok) return std::nullopt;

  EntryHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  const XXH128_canonical_t want = key_bytes(key);
  const char* payload = bytes.data() + sizeof h;
  const std::size_t payload_bytes = bytes.size() - sizeof h;
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 ||
      h.format_version != static_cast<std::uint32_t>(kFormatVersion) ||
      std::memcmp(h.key, want.digest, sizeof h.key) != 0 || h.payload_bytes != payload_bytes ||
      XXH3_64bits(payload, payload_bytes) != h.payload_hash) {
    return std::nullopt;
  }
  return deserialize(payload, payload_bytes);
}

std::string KernelCache::write_disk(const std::string& key, const Cubin& cubin) {
  if (std::string why = usable_dir(/*create=*/true); !why.empty()) return why;
  WriteFn write = nullptr;
  {
    std::lock_guard lock(mutex_);
    write = write_;
  }
  const std::string payload = serialize(cubin);
  EntryHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.format_version = static_cast<std::uint32_t>(kFormatVersion);
  const XXH128_canonical_t bytes = key_bytes(key);
  std::memcpy(h.key, bytes.digest, sizeof h.key);
  h.payload_bytes = payload.size();
  h.payload_hash = XXH3_64bits(payload.data(), payload.size());

  // A unique temporary file in the same directory, renamed into place: rename() within one file
  // system is atomic, so a concurrent reader sees the old entry or the new one, never a torn one.
  std::string tmp = (dir_ / (key + ".tmp.XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  std::string error;
  if (fd < 0) {
    error = fmt::format("mkstemp in {}: {}", dir_.string(), errno_text(errno));
  } else {
    const bool wrote = write_all(write, fd, reinterpret_cast<const char*>(&h), sizeof h) &&
                       write_all(write, fd, payload.data(), payload.size());
    const int write_errno = errno;
    if (::close(fd) != 0 || !wrote) {
      error = fmt::format("writing {}: {}", tmp, errno_text(wrote ? errno : write_errno));
      ::unlink(tmp.c_str());
    } else if (::rename(tmp.c_str(), entry_path(key).c_str()) != 0) {
      error = fmt::format("rename {} -> {}: {}", tmp, entry_path(key).string(), errno_text(errno));
      ::unlink(tmp.c_str());
    }
  }
  if (error.empty()) remove_stale_temporaries(dir_);
  return error;
}

namespace {

// The process's shared kernels (shared_kernel), never destroyed: unloading at exit would race
// the CUDA runtime's own teardown.
struct SharedKernels {
  using Key = std::tuple<int, std::string, std::string>;
  std::mutex mutex;
  std::map<Key, std::shared_ptr<const LoadedKernel>> loaded;
  // One load of an image per device, whatever number of its entries are taken: a build unit
  // holds tens of entry points, and a fresh process's first GPU build loaded 32 of them, each a
  // load of its whole image, for 8-10 ms on an H200 (2.5-3.5 ms with one load per image;
  // bench/results/2026-11-29-h200-first-multiply/design-ab.txt).
  std::map<std::pair<int, std::string>, LoadedLibrary> libraries;
};

SharedKernels& shared_kernels() {
  static auto* s = new SharedKernels;
  return *s;
}

}  // namespace

std::shared_ptr<const LoadedKernel> shared_kernel(const CachedKernel& cached,
                                                  const std::string& entry, int ordinal) {
  SharedKernels& s = shared_kernels();
  std::lock_guard lock(s.mutex);
  auto& slot = s.loaded[{ordinal, cached.key, entry}];
  if (!slot) {
    LoadedLibrary& library = s.libraries[{ordinal, cached.key}];
    if (!library) library = load_library(cached.cubin.image, entry);
    // Resolved at its first launch: a unit's entries that no build launches are never loaded.
    slot = std::make_shared<const LoadedKernel>(library, entry, /*resolve=*/false);
  }
  return slot;
}

void resolve_shared_kernels(int ordinal) {
  std::vector<std::shared_ptr<const LoadedKernel>> kernels;
  {
    SharedKernels& s = shared_kernels();
    std::lock_guard lock(s.mutex);
    for (const auto& [key, kernel] : s.loaded) {
      if (std::get<0>(key) == ordinal) kernels.push_back(kernel);
    }
  }
  for (const auto& k : kernels) (void)k->registers();
}

}  // namespace spmvc::runtime
