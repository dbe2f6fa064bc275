// KernelCache: memory and disk levels, keys, directory permissions, damaged entries. NVRTC runs
// here (no GPU needed); every test works in its own fresh temporary directory.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "device.hpp"
#include "kernel_cache.hpp"
#include "spmvc/bench/bandwidth.hpp"
#include "spmvc/bench/cusparse.hpp"
#include "spmvc/bench/gpu.hpp"
#include "spmvc/error.hpp"
#include "spmvc/spmvc.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace spmvc;
using namespace spmvc::runtime;
using namespace spmvc::bench;

namespace {

// A TempDir tagged for this file's tests.
struct TempDir : spmvc::test::TempDir {
  TempDir() : spmvc::test::TempDir("cache") {}
};
using spmvc::test::EnvVar;

KernelSource tiny_source() {
  KernelSource src;
  src.kernel_name = "spmvc_test_tiny";
  src.file_name = "spmvc_test_tiny.cu";
  src.source =
      "extern \"C\" __global__ void spmvc_test_tiny(float* y, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) y[i] = 2.0f * i;\n"
      "}\n";
  src.block = 128;
  return src;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

unsigned mode_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777u;
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  return out;
}

}  // namespace

TEST_CASE("cache origins: compiled, then memory, then disk in a new cache") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "cache";
  const KernelSource src = tiny_source();

  KernelCache cache(dir);
  const CachedKernel first = cache.get(src, "sm_90");
  CHECK(first.origin == CacheOrigin::compiled);
  CHECK(first.seconds > 0);
  REQUIRE(first.cubin.image.size() > 4);
  CHECK(first.cubin.registers > 0);
  CHECK(fs::is_regular_file(cache.entry_path(KernelCache::key(src, "sm_90"))));
  CHECK(cache.disk_note().empty());
  CHECK(first.disk_note.empty());

  const CachedKernel second = cache.get(src, "sm_90");
  CHECK(second.origin == CacheOrigin::memory);
  CHECK(second.cubin.image == first.cubin.image);

  KernelCache fresh(dir);
  const CachedKernel third = fresh.get(src, "sm_90");
  CHECK(third.origin == CacheOrigin::disk);
  CHECK(third.cubin.image == first.cubin.image);
  CHECK(third.cubin.log == first.cubin.log);
  CHECK(third.cubin.registers == first.cubin.registers);
  CHECK(third.cubin.spill_store_bytes == first.cubin.spill_store_bytes);
  CHECK(third.cubin.spill_load_bytes == first.cubin.spill_load_bytes);
  CHECK(third.cubin.stack_bytes == first.cubin.stack_bytes);
  CHECK(fresh.get(src, "sm_90").origin == CacheOrigin::memory);

  fresh.clear_memory();
  CHECK(fresh.get(src, "sm_90").origin == CacheOrigin::disk);

  // Only the entry is left behind: no temporary files.
  CHECK(files_in(dir).size() == 1);
}

TEST_CASE("holds_none: nothing in memory or on disk, any GPU's entry counts") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "cache";
  KernelCache cache(dir);
  CHECK(cache.holds_none());  // the directory does not exist yet
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
  { std::ofstream(dir / "notes.txt") << "not a kernel"; }
  CHECK(cache.holds_none());  // files that are not entries do not count
  (void)cache.get(tiny_source(), "sm_90");
  CHECK_FALSE(cache.holds_none());  // in memory and on disk
  cache.clear_memory();
  CHECK_FALSE(cache.holds_none());  // on disk
  // Another GPU's entry is an entry too: a cache of another process sees it.
  KernelCache other(dir);
  CHECK_FALSE(other.holds_none());
  fs::remove(cache.entry_path(KernelCache::key(tiny_source(), "sm_90")));
  CHECK(other.holds_none());
  // Memory only: empty until a kernel is compiled.
  KernelCache memory_only("");
  CHECK(memory_only.holds_none());
  (void)memory_only.get(tiny_source(), "sm_90");
  CHECK_FALSE(memory_only.holds_none());
}

TEST_CASE("cache origin names") {
  CHECK(to_string(CacheOrigin::compiled) == "nvrtc");
  CHECK(to_string(CacheOrigin::memory) == "memory");
  CHECK(to_string(CacheOrigin::disk) == "disk");
}

TEST_CASE("cache key covers source, options, arch, name and headers") {
  const KernelSource base = tiny_source();
  const std::string k = KernelCache::key(base, "sm_90");
  CHECK(k.size() == 32);
  CHECK(k.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(KernelCache::key(base, "sm_90") == k);

  KernelSource s = base;
  s.source += "\n";
  CHECK(KernelCache::key(s, "sm_90") != k);
  s = base;
  s.options.push_back("-lineinfo");
  CHECK(KernelCache::key(s, "sm_90") != k);
  CHECK(KernelCache::key(base, "sm_80") != k);
  s = base;
  s.kernel_name = "other";
  CHECK(KernelCache::key(s, "sm_90") != k);

  s = base;
  s.headers.push_back({"spmvc/a.cuh", "// a\n"});
  const std::string with_header = KernelCache::key(s, "sm_90");
  CHECK(with_header != k);
  s.headers[0].second = "// b\n";
  CHECK(KernelCache::key(s, "sm_90") != with_header);
  s.headers[0] = {"spmvc/b.cuh", "// a\n"};
  CHECK(KernelCache::key(s, "sm_90") != with_header);

  // Fields are length-prefixed: moving a character across a field boundary changes the key.
  KernelSource a = base, b = base;
  a.options = {"-DX=1", "-DY"};
  b.options = {"-DX=1-", "DY"};
  CHECK(KernelCache::key(a, "sm_90") != KernelCache::key(b, "sm_90"));

  // Launch geometry is not part of the compiled image.
  s = base;
  s.grid = 77;
  s.block = 64;
  CHECK(KernelCache::key(s, "sm_90") == k);
}

TEST_CASE("cache directory is created private (0700)") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "nested" / "spmvc";
  KernelCache cache(dir);
  CHECK_FALSE(fs::exists(dir));  // nothing until the first write
  cache.get(tiny_source(), "sm_90");
  REQUIRE(fs::is_directory(dir));
  CHECK(mode_of(dir) == 0700u);
}

namespace {

// The disk level is off or skipped for `why`, yet the kernel is compiled and kept in memory.
// Returns the note.
std::string check_degraded(KernelCache& cache, const std::string& why) {
  const KernelSource src = tiny_source();
  const CachedKernel k = cache.get(src, "sm_90");
  CHECK(k.origin == CacheOrigin::compiled);
  CHECK(k.cubin.image.size() > 4);
  CHECK(k.cubin.registers > 0);
  INFO("note: ", k.disk_note);
  CHECK(k.disk_note.find(why) != std::string::npos);
  CHECK(cache.disk_note() == k.disk_note);
  const CachedKernel again = cache.get(src, "sm_90");
  CHECK(again.origin == CacheOrigin::memory);
  CHECK(again.cubin.image == k.cubin.image);
  return k.disk_note;
}

ssize_t write_enospc(int, const void*, std::size_t) {
  errno = ENOSPC;
  return -1;
}

ssize_t write_erofs(int, const void*, std::size_t) {
  errno = EROFS;
  return -1;
}

}  // namespace

TEST_CASE("cache does not use a directory others can write to, and says why") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "open";
  fs::create_directories(dir);
  REQUIRE(::chmod(dir.c_str(), 0777) == 0);
  KernelCache cache(dir);
  check_degraded(cache, "disk cache off: " + dir.string() + " is writable by group or others");
  CHECK(cache.disk_note().find("mode 0777") != std::string::npos);
  CHECK(cache.disk_off_reason().find("writable by group or others") != std::string::npos);
  // Left as it was, and nothing written or read there.
  CHECK(mode_of(dir) == 0777u);
  CHECK(files_in(dir).empty());

  SUBCASE("group-writable only") {
    const fs::path g = tmp.path() / "group";
    fs::create_directories(g);
    REQUIRE(::chmod(g.c_str(), 0770) == 0);
    KernelCache gc(g);
    check_degraded(gc, "is writable by group or others (mode 0770)");
    CHECK(files_in(g).empty());
  }
  SUBCASE("an entry planted there is not loaded") {
    // A valid entry made in a private directory, copied into the open one.
    const fs::path priv = tmp.path() / "private";
    KernelCache maker(priv);
    const std::string key = KernelCache::key(tiny_source(), "sm_90");
    REQUIRE(maker.get(tiny_source(), "sm_90").disk_note.empty());
    fs::copy_file(maker.entry_path(key), dir / (key + ".cubin"));
    KernelCache victim(dir);
    CHECK(victim.get(tiny_source(), "sm_90").origin == CacheOrigin::compiled);
  }
}

TEST_CASE("cache does not use a directory that belongs to another user, and says why") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "theirs";
  fs::create_directories(dir);
  REQUIRE(::chmod(dir.c_str(), 0700) == 0);
  // Only root can give a directory away.
  if (::geteuid() != 0) {
    MESSAGE("not root: cannot chown a directory to another user; foreign-owner case skipped");
    return;
  }
  REQUIRE(::chown(dir.c_str(), 12345, 12345) == 0);
  KernelCache cache(dir);
  check_degraded(cache, "disk cache off: " + dir.string() + " is owned by uid 12345");
  CHECK(files_in(dir).empty());
}

TEST_CASE("cache path that cannot be created: memory only, and says why") {
  TempDir tmp;
  const fs::path file = tmp.path() / "a_file";
  write_bytes(file, "not a directory");

  SUBCASE("under a regular file") {
    KernelCache cache(file / "spmvc");
    check_degraded(cache, "disk cache off: cannot create " + (file / "spmvc").string());
    CHECK(cache.disk_note().find("Not a directory") != std::string::npos);
  }
  SUBCASE("deeper under a regular file") {
    KernelCache cache(file / "a" / "b");
    check_degraded(cache, "disk cache off: cannot create");
  }
  SUBCASE("the path is a regular file") {
    KernelCache cache(file);
    check_degraded(cache, "disk cache off: " + file.string() + " is not a directory");
  }
  CHECK(read_bytes(file) == "not a directory");
}

TEST_CASE("cache directory without write permission: memory only, and says why") {
  if (::geteuid() == 0) {
    MESSAGE("root writes through mode 0500; the failing-write cases below stand in for it");
    return;
  }
  TempDir tmp;
  const fs::path dir = tmp.path() / "readonly";
  fs::create_directories(dir);
  REQUIRE(::chmod(dir.c_str(), 0500) == 0);
  KernelCache cache(dir);
  const std::string note =
      check_degraded(cache, "disk cache entry not written (kernel kept in memory): mkstemp in");
  CHECK(note.find("Permission denied") != std::string::npos);
  REQUIRE(::chmod(dir.c_str(), 0700) == 0);
  CHECK(files_in(dir).empty());
}

TEST_CASE("a failing disk write (disk full, read-only file system) only skips the entry") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "cache";
  KernelCache cache(dir);
  SUBCASE("disk full") {
    cache.set_write_for_testing(&write_enospc);
    const std::string note =
        check_degraded(cache, "disk cache entry not written (kernel kept in memory): writing ");
    CHECK(note.find("No space left on device") != std::string::npos);
    // The next get() finds the kernel in memory: nothing to note.
    CHECK(cache.disk_note().empty());
  }
  SUBCASE("read-only file system") {
    cache.set_write_for_testing(&write_erofs);
    check_degraded(cache, "Read-only file system");
  }
  // No entry and no temporary file left behind.
  CHECK(files_in(dir).empty());
  // The write failing does not turn the disk level off: once writes work, entries are kept.
  cache.set_write_for_testing(nullptr);
  cache.clear_memory();
  const CachedKernel k = cache.get(tiny_source(), "sm_90");
  CHECK(k.origin == CacheOrigin::compiled);
  CHECK(k.disk_note.empty());
  CHECK(KernelCache(dir).get(tiny_source(), "sm_90").origin == CacheOrigin::disk);
}

TEST_CASE("damaged disk entries are recompiled and repaired") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "cache";
  const KernelSource src = tiny_source();
  const std::string key = KernelCache::key(src, "sm_90");
  std::string good;
  std::vector<char> good_image;
  {
    KernelCache cache(dir);
    const CachedKernel k = cache.get(src, "sm_90");
    REQUIRE(k.origin == CacheOrigin::compiled);
    good = read_bytes(cache.entry_path(key));
    good_image = k.cubin.image;
  }
  REQUIRE(good.size() > 100);

  auto check_repaired = [&](const std::string& damaged) {
    KernelCache cache(dir);
    write_bytes(cache.entry_path(key), damaged);
    const CachedKernel k = cache.get(src, "sm_90");
    CHECK(k.origin == CacheOrigin::compiled);
    CHECK(k.cubin.image == good_image);
    // Rewritten whole (the ptxas log records its compile time, so the bytes are not identical).
    CHECK(read_bytes(cache.entry_path(key)) != damaged);
    KernelCache again(dir);
    const CachedKernel d = again.get(src, "sm_90");
    CHECK(d.origin == CacheOrigin::disk);
    CHECK(d.cubin.image == good_image);
  };

  SUBCASE("truncated") { check_repaired(good.substr(0, good.size() / 2)); }
  SUBCASE("truncated inside the header") { check_repaired(good.substr(0, 20)); }
  SUBCASE("empty") { check_repaired(""); }
  SUBCASE("payload byte flipped") {
    std::string bad = good;
    bad[bad.size() - 100] = static_cast<char>(bad[bad.size() - 100] ^ 0x40);
    check_repaired(bad);
  }
  SUBCASE("bad magic") {
    std::string bad = good;
    bad[0] = 'X';
    check_repaired(bad);
  }
  SUBCASE("other format version") {
    std::string bad = good;
    bad[8] = static_cast<char>(bad[8] + 1);
    check_repaired(bad);
  }
  SUBCASE("entry of another key") {
    std::string bad = good;
    bad[16] = static_cast<char>(bad[16] ^ 1);
    check_repaired(bad);
  }
  SUBCASE("trailing bytes") { check_repaired(good + "extra"); }
  SUBCASE("garbage") { check_repaired(std::string(4096, '\x5a')); }
}

TEST_CASE("memory-only cache writes nothing") {
  TempDir tmp;
  const fs::path old_cwd = fs::current_path();
  fs::current_path(tmp.path());
  {
    KernelCache cache{fs::path{}};
    CHECK(cache.dir().empty());
    CHECK(cache.get(tiny_source(), "sm_90").origin == CacheOrigin::compiled);
    CHECK(cache.get(tiny_source(), "sm_90").origin == CacheOrigin::memory);
    cache.clear_memory();
    CHECK(cache.get(tiny_source(), "sm_90").origin == CacheOrigin::compiled);
  }
  fs::current_path(old_cwd);
  CHECK(files_in(tmp.path()).empty());
}

TEST_CASE("concurrent gets of one kernel all succeed and leave one valid entry") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "cache";
  KernelCache cache(dir);
  const KernelSource src = tiny_source();
  std::vector<std::vector<char>> images(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < images.size(); ++i) {
    threads.emplace_back([&, i] { images[i] = cache.get(src, "sm_90").cubin.image; });
  }
  for (auto& t : threads) t.join();
  for (const auto& img : images) CHECK(img == images[0]);
  CHECK(files_in(dir).size() == 1);
  CHECK(KernelCache(dir).get(src, "sm_90").origin == CacheOrigin::disk);
}

TEST_CASE("threads of one process that miss on one key share one compile") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "cache";
  KernelCache cache(dir);
  const KernelSource src = tiny_source();
  std::vector<CachedKernel> got(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] { got[i] = cache.get(src, "sm_90"); });
  for (auto& t : threads) t.join();
  const auto compiled = std::count_if(got.begin(), got.end(), [](const CachedKernel& k) {
    return k.origin == CacheOrigin::compiled;
  });
  CHECK(compiled == 1);
  for (const CachedKernel& k : got) CHECK(k.cubin.image == got[0].cubin.image);
  CHECK(files_in(dir).size() == 1);
}

TEST_CASE("a compile that fails reaches every thread waiting on it, and is not cached") {
  TempDir tmp;
  EnvVar dump("SPMVC_DUMP_DIR", tmp.path().c_str());
  KernelCache cache{fs::path{}};
  KernelSource bad = tiny_source();
  bad.source += "this is not CUDA;\n";
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      try {
        (void)cache.get(bad, "sm_90");
      } catch (const CompileError&) {
        ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures.load() == 3);
  CHECK_FALSE(cache.find(bad, "sm_90").has_value());
}

TEST_CASE("two caches over one directory compiling one kernel at once leave one valid entry") {
  // Two KernelCache objects share nothing but the directory, as two processes would.
  TempDir tmp;
  const fs::path dir = tmp.path() / "cache";
  const KernelSource src = tiny_source();
  KernelCache first(dir), second(dir);
  CachedKernel a, b;
  std::thread ta([&] { a = first.get(src, "sm_90"); });
  std::thread tb([&] { b = second.get(src, "sm_90"); });
  ta.join();
  tb.join();
  CHECK(a.cubin.image == b.cubin.image);
  // One entry, no temporary file left.
  const std::vector<fs::path> files = files_in(dir);
  REQUIRE(files.size() == 1);
  CHECK(files[0] == first.entry_path(KernelCache::key(src, "sm_90")));
  const std::optional<CachedKernel> read = KernelCache(dir).find(src, "sm_90");
  REQUIRE(read.has_value());
  CHECK(read->origin == CacheOrigin::disk);
  CHECK(read->cubin.image == a.cubin.image);
}

TEST_CASE("find() serves memory and disk and never compiles") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "cache";
  const KernelSource src = tiny_source();
  KernelCache cache(dir);
  CHECK_FALSE(cache.find(src, "sm_90").has_value());
  CHECK_FALSE(fs::exists(dir));  // a miss writes nothing
  const CachedKernel compiled = cache.get(src, "sm_90");
  REQUIRE(compiled.origin == CacheOrigin::compiled);
  const std::optional<CachedKernel> memory = cache.find(src, "sm_90");
  REQUIRE(memory.has_value());
  CHECK(memory->origin == CacheOrigin::memory);
  KernelCache fresh(dir);
  const std::optional<CachedKernel> disk = fresh.find(src, "sm_90");
  REQUIRE(disk.has_value());
  CHECK(disk->origin == CacheOrigin::disk);
  CHECK(disk->cubin.image == compiled.cubin.image);
  // A disk hit is kept in memory.
  CHECK(fresh.get(src, "sm_90").origin == CacheOrigin::memory);
}

namespace {
// A write(2) that stops the process half-way through its first call, as a process killed
// mid-write would.
ssize_t write_half_then_exit(int fd, const void* data, std::size_t bytes) {
  (void)::write(fd, data, bytes / 2);
  ::_exit(0);
}
}  // namespace

TEST_CASE("a process that exits mid-write leaves no entry; its temporary file goes later") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "cache";
  const KernelSource src = tiny_source();
  const std::string key = KernelCache::key(src, "sm_90");
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    KernelCache cache(dir);
    cache.set_write_for_testing(&write_half_then_exit);
    (void)cache.get(src, "sm_90");
    ::_exit(1);  // not reached: the write exits
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  // The torn write is a temporary file, never the entry.
  std::vector<fs::path> files = files_in(dir);
  REQUIRE(files.size() == 1);
  const fs::path torn = files[0];
  CHECK(torn.filename().string().find(key + ".tmp.") == 0);
  KernelCache cache(dir);
  CHECK_FALSE(cache.find(src, "sm_90").has_value());
  CHECK_FALSE(fs::exists(cache.entry_path(key)));
  // The next process compiles and writes the entry; a recent temporary file (a writer may still
  // be at work) stays.
  CHECK(cache.get(src, "sm_90").origin == CacheOrigin::compiled);
  CHECK(KernelCache(dir).find(src, "sm_90").has_value());
  CHECK(fs::exists(torn));
  // Once it is over an hour old, the next write removes it.
  fs::last_write_time(torn, fs::file_time_type::clock::now() - std::chrono::hours(2));
  KernelSource other = tiny_source();
  other.source += "// another kernel\n";
  CHECK(cache.get(other, "sm_90").origin == CacheOrigin::compiled);
  CHECK_FALSE(fs::exists(torn));
  CHECK(files_in(dir).size() == 2);
}

TEST_CASE("default_dir: SPMVC_CACHE_DIR, then XDG_CACHE_HOME, then HOME") {
  {
    EnvVar a("SPMVC_CACHE_DIR", "/some/where");
    EnvVar b("XDG_CACHE_HOME", "/xdg");
    CHECK(KernelCache::default_dir() == fs::path("/some/where"));
  }
  {
    EnvVar a("SPMVC_CACHE_DIR", nullptr);
    EnvVar b("XDG_CACHE_HOME", "/xdg");
    CHECK(KernelCache::default_dir() == fs::path("/xdg/spmvc"));
  }
  {
    EnvVar a("SPMVC_CACHE_DIR", "");
    EnvVar b("XDG_CACHE_HOME", "relative/is/ignored");
    EnvVar c("HOME", "/home/u");
    CHECK(KernelCache::default_dir() == fs::path("/home/u/.cache/spmvc"));
  }
  {
    EnvVar a("SPMVC_CACHE_DIR", nullptr);
    EnvVar b("XDG_CACHE_HOME", nullptr);
    EnvVar c("HOME", nullptr);
    CHECK(KernelCache::default_dir().empty());
  }
}

// Runs on any machine: with a GPU the probe must describe it; without one every device entry
// point must say so with NoDeviceError rather than a generic failure.
TEST_CASE("probe_device describes the GPU or reports that there is none") {
  bool have_device = false;
  try {
    const DeviceInfo info = probe_device();
    have_device = true;
    CHECK(info.cc_major >= 7);
    CHECK_FALSE(info.name.empty());
    CHECK(info.arch().rfind("sm_", 0) == 0);
  } catch (const NoDeviceError& e) {
    CHECK(std::string(e.what()).find("no CUDA device") != std::string::npos);
  }
  if (!have_device) {
    CHECK_THROWS_AS(DeviceBuffer(64), NoDeviceError);
    CsrMatrix a;
    a.nrows = a.ncols = 1;
    a.row_ptr = {0, 1};
    a.col_idx = {0};
    a.values = {1.0};
    CHECK_THROWS_AS(CusparseCsr(a, Precision::f64), NoDeviceError);
    CHECK_THROWS_AS(spmvc::warm_up(), NoDeviceError);
  }
}

TEST_CASE("cuSPARSE version is read without a device") {
  const std::string v = CusparseCsr::version();
  CHECK(v.find_first_not_of("0123456789.") == std::string::npos);
  CHECK(std::count(v.begin(), v.end(), '.') == 2);
  CHECK(std::stoi(v) >= 12);  // the generic SpMV preprocess API needs cuSPARSE 12
}

TEST_CASE("bandwidth probes reject sizes and repetition counts that measure nothing") {
  CHECK_THROWS_AS(measure_read_bandwidth(8, 5), InputError);
  CHECK_THROWS_AS(measure_read_bandwidth(1 << 20, 0), InputError);
  CHECK_THROWS_AS(measure_copy_bandwidth(0, 5), InputError);
}

TEST_CASE("assumed read bandwidth comes from the GPU model, not one fixed figure") {
  const std::optional<double> h100 = known_read_bandwidth("NVIDIA H100 80GB HBM3");
  const std::optional<double> h200 = known_read_bandwidth("NVIDIA H200");
  REQUIRE(h100.has_value());
  REQUIRE(h200.has_value());
  CHECK(*h100 == doctest::Approx(3.06e12));
  CHECK(*h200 == doctest::Approx(4.46e12));
  // Measured figures, each below its datasheet's 3.35 and 4.8 TB/s.
  CHECK(*h100 < 3.35e12);
  CHECK(*h200 < 4.8e12);
  CHECK(*h200 > *h100);
  // Names are matched whole: other parts of the family have other memory clocks.
  CHECK_FALSE(known_read_bandwidth("NVIDIA H100 PCIe"));
  CHECK_FALSE(known_read_bandwidth("NVIDIA H200 NVL"));
  CHECK_FALSE(known_read_bandwidth("NVIDIA H100"));
  CHECK_FALSE(known_read_bandwidth(""));
  // A known model needs no device: nothing is measured.
  Gpu gpu;
  gpu.name = "NVIDIA H200";
  const AssumedBandwidth assumed = assumed_read_bandwidth(gpu);
  CHECK(assumed.bytes_per_second == *h200);
  CHECK_FALSE(assumed.measured);
}
