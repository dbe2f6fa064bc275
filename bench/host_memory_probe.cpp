// The host side of an upload on this machine, measured without spmvc: how fast host threads copy
// pageable memory into pinned memory, how fast the link moves pinned and pageable memory, and
// what pinned memory costs to get (cudaHostAlloc, cudaHostRegister of 4 KiB pages and of pages
// advised to be transparent huge pages). runtime/upload.cpp's choices rest on these figures.
//
//   spmvc_bench_host_memory_probe [MIB]    (default 200: about a 16M-nonzero fp64 CSR)
#include <cuda_runtime_api.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "error: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

// Fresh anonymous memory, advised to use huge pages or not, not yet touched.
char* map(std::size_t bytes, bool huge) {
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  void* raw =
      ::mmap(nullptr, bytes + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    std::fprintf(stderr, "error: mmap of %zu bytes failed\n", bytes);
    std::exit(1);
  }
  char* p =
      reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(raw) + kHuge - 1) / kHuge * kHuge);
  if (huge) (void)::madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 200;
  if (mib == 0) {
    std::fprintf(stderr, "usage: spmvc_bench_host_memory_probe [MIB > 0]\n");
    return 2;
  }
  const std::size_t bytes = mib << 20;
  auto t0 = Clock::now();
  check(cudaFree(nullptr), "context");
  std::printf("context creation: %.1f ms; %u hardware threads\n", ms_since(t0),
              std::thread::hardware_concurrency());
  char* src = map(bytes, false);
  std::memset(src, 1, bytes);
  void* dev = nullptr;
  check(cudaMalloc(&dev, bytes), "cudaMalloc");
  void* pinned = nullptr;
  check(cudaHostAlloc(&pinned, bytes, 0), "cudaHostAlloc");
  std::memset(pinned, 0, bytes);
  for (int r = 0; r < 2; ++r) {
    t0 = Clock::now();
    check(cudaMemcpy(dev, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    const double pageable = ms_since(t0);
    t0 = Clock::now();
    check(cudaMemcpy(dev, pinned, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    std::printf("%zu MiB to the device: pageable %.2f ms, pinned %.2f ms\n", mib, pageable,
                ms_since(t0));
  }
  for (const int threads : {1, 2, 4, 8, 16}) {
    double best = 1e30;
    for (int r = 0; r < 3; ++r) {
      t0 = Clock::now();
      std::vector<std::thread> pool;
      for (int i = 0; i < threads; ++i) {
        pool.emplace_back([&, i] {
          const std::size_t b = bytes * static_cast<std::size_t>(i) / threads;
          const std::size_t e = bytes * static_cast<std::size_t>(i + 1) / threads;
          std::memcpy(static_cast<char*>(pinned) + b, src + b, e - b);
        });
      }
      for (std::thread& t : pool) t.join();
      best = std::min(best, ms_since(t0));
    }
    std::printf("pageable to pinned, %2d threads: %.2f ms (%.1f GB/s)\n", threads, best,
                static_cast<double>(bytes) / best / 1e6);
  }
  const std::size_t staging = std::size_t{64} << 20;
  t0 = Clock::now();
  void* alloc = nullptr;
  check(cudaHostAlloc(&alloc, staging, cudaHostAllocPortable), "cudaHostAlloc");
  std::printf("64 MiB pinned: cudaHostAlloc %.2f ms\n", ms_since(t0));
  for (const bool huge : {false, true}) {
    char* p = map(staging, huge);
    t0 = Clock::now();
    std::memset(p, 0, staging);
    const double touch = ms_since(t0);
    t0 = Clock::now();
    check(cudaHostRegister(p, staging, cudaHostRegisterPortable), "cudaHostRegister");
    std::printf("64 MiB pinned: %s pages faulted in %.2f ms, cudaHostRegister %.2f ms\n",
                huge ? "huge-page-advised" : "4 KiB", touch, ms_since(t0));
  }
  return 0;
}
