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

// Runs f(i) on `threads` threads at once and returns the milliseconds until all are done.
template <class F>
double on_threads(int threads, const F& f) {
  const auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back([&f, i] { f(i); });
  for (std::thread& t : pool) t.join();
  return ms_since(t0);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

// How to get the upload's pinned staging (runtime/upload.cpp: 8 fillers, 2 buffers each) the
// first time, each way on fresh huge-page-advised memory: faulting in by touching or by
// MADV_POPULATE_WRITE, registering per buffer or once, and with smaller buffers.
void staging_patterns() {
  constexpr int kFillers = 8;
  for (const std::size_t chunk_mib : {4, 1}) {
    const std::size_t chunk = chunk_mib << 20, per = 2 * chunk, all = kFillers * per;
    char* p = map(all, true);
    const double ms = on_threads(kFillers, [&](int i) {
      for (int b = 0; b < 2; ++b) {
        char* q = p + static_cast<std::size_t>(i) * per + static_cast<std::size_t>(b) * chunk;
        std::memset(q, 0, chunk);
        check(cudaHostRegister(q, chunk, cudaHostRegisterPortable), "cudaHostRegister");
      }
    });
    std::printf(
        "staging %zu MiB (8 x 2 x %zu MiB): each filler touches and registers its own: %.2f ms\n",
        all >> 20, chunk_mib, ms);
  }
  const std::size_t all = std::size_t{64} << 20, per = all / kFillers;
  {
    char* p = map(all, true);
    const double touch = on_threads(kFillers, [&](int i) { std::memset(p + i * per, 0, per); });
    auto t0 = Clock::now();
    check(cudaHostRegister(p, all, cudaHostRegisterPortable), "cudaHostRegister");
    std::printf("staging 64 MiB: 8 threads touch %.2f ms, then one cudaHostRegister %.2f ms\n",
                touch, ms_since(t0));
  }
  {
    char* p = map(all, true);
    auto t0 = Clock::now();
    const int rc = ::madvise(p, all, MADV_POPULATE_WRITE);
    const double pop = ms_since(t0);
    t0 = Clock::now();
    check(cudaHostRegister(p, all, cudaHostRegisterPortable), "cudaHostRegister");
    std::printf(
        "staging 64 MiB: MADV_POPULATE_WRITE (rc %d) %.2f ms, then one cudaHostRegister %.2f ms\n",
        rc, pop, ms_since(t0));
  }
  {
    char* p = map(all, true);
    const double pop = on_threads(
        kFillers, [&](int i) { (void)::madvise(p + i * per, per, MADV_POPULATE_WRITE); });
    auto t0 = Clock::now();
    for (int b = 0; b < 16; ++b)
      check(cudaHostRegister(p + static_cast<std::size_t>(b) * (all / 16), all / 16,
                             cudaHostRegisterPortable),
            "cudaHostRegister");
    std::printf(
        "staging 64 MiB: 8 threads MADV_POPULATE_WRITE %.2f ms, then 16 cudaHostRegister in one "
        "thread %.2f ms\n",
        pop, ms_since(t0));
  }
  {
    auto t0 = Clock::now();
    void* q = nullptr;
    check(cudaHostAlloc(&q, std::size_t{16} << 20, cudaHostAllocPortable), "cudaHostAlloc");
    std::printf("staging 16 MiB: cudaHostAlloc %.2f ms\n", ms_since(t0));
  }
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
  // Before any pinned memory exists: pageable copies issued by several threads at once, each on
  // a stream of its own, and one batch whose sources the driver may read in any order.
  for (int r = 0; r < 2; ++r) {
    for (const int threads : {1, 4, 8, 16}) {
      std::vector<cudaStream_t> streams(static_cast<std::size_t>(threads));
      for (cudaStream_t& st : streams)
        check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate");
      const double ms = on_threads(threads, [&](int i) {
        const std::size_t b = bytes * static_cast<std::size_t>(i) / threads;
        const std::size_t e = bytes * static_cast<std::size_t>(i + 1) / threads;
        check(cudaMemcpyAsync(static_cast<char*>(dev) + b, src + b, e - b, cudaMemcpyHostToDevice,
                              streams[static_cast<std::size_t>(i)]),
              "cudaMemcpyAsync");
        check(cudaStreamSynchronize(streams[static_cast<std::size_t>(i)]), "sync");
      });
      std::printf("pageable, %2d threads each its own stream: %.2f ms (%.1f GB/s)\n", threads, ms,
                  static_cast<double>(bytes) / ms / 1e6);
      for (cudaStream_t st : streams) (void)cudaStreamDestroy(st);
    }
    constexpr std::size_t kPieces = 16;
    std::vector<void*> dsts(kPieces);
    std::vector<const void*> srcs(kPieces);
    std::vector<std::size_t> sizes(kPieces);
    for (std::size_t i = 0; i < kPieces; ++i) {
      const std::size_t b = bytes * i / kPieces, e = bytes * (i + 1) / kPieces;
      dsts[i] = static_cast<char*>(dev) + b;
      srcs[i] = src + b;
      sizes[i] = e - b;
    }
    cudaMemcpyAttributes attr{};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderAny;
    std::size_t index = 0;
    cudaStream_t st = nullptr;
    check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate");
    t0 = Clock::now();
    const cudaError_t e =
        cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), kPieces, &attr, &index, 1, st);
    check(cudaStreamSynchronize(st), "sync");
    std::printf("pageable, one batch of 16 (source order any): %.2f ms (rc %d)\n", ms_since(t0),
                static_cast<int>(e));
    (void)cudaGetLastError();
    (void)cudaStreamDestroy(st);
  }
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
  staging_patterns();
  return 0;
}
