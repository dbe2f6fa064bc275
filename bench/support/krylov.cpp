#include "spmvc/bench/krylov.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "device.hpp"
#include "kernel_cache.hpp"
#include "spmvc/compiler/compiler.hpp"
#include "spmvc/error.hpp"

namespace spmvc::bench {

// The runtime's device layer (device.hpp, kernel_cache.hpp) loads and launches the kernels; the
// queued reads of the stop code use cudart's events and pinned memory directly.
using namespace spmvc::runtime;

namespace {

// The kernels share one layout of device state with the host code below:
//   scalars[kSlot...] in the value type: rho, alpha, omega, beta, r'r, b'b, tol^2;
//   flags[0] the stop code (SolveStop), flags[1] the iterations completed;
//   partials[sum * SPMVC_KRYLOV_PARTS + block]: each block's share of up to two dot products,
//   reduced in a fixed order by the one-block scalar kernel (so a solve is deterministic).
// Each vector kernel runs a grid of at most SPMVC_KRYLOV_PARTS blocks over the vectors.
constexpr const char* kSource = R"(// spmvc Krylov solver kernels (bench/support/krylov.cpp).
#define SPMVC_KRYLOV_BLOCK 256
#define SPMVC_KRYLOV_PARTS 1024

namespace spmvc_krylov {

enum Stop { kRunning = 0, kConverged = 1, kCurvature = 2, kRhoBreakdown = 3, kOmegaBreakdown = 4,
            kNotFinite = 5 };
enum Slot { kRho = 0, kAlpha = 1, kOmega = 2, kBeta = 3, kRr = 4, kBb = 5, kTol2 = 6 };
enum Step { kStart = 0, kCgAlpha = 1, kCgBeta = 2, kBicgAlpha = 3, kBicgOmega = 4, kBicgBeta = 5 };

constexpr int kBlock = SPMVC_KRYLOV_BLOCK;
constexpr int kParts = SPMVC_KRYLOV_PARTS;

// Every thread of a grid reads the same code (no kernel writes it while another reads it), so
// a stopped kernel returns as a whole block, before any barrier.
__device__ __forceinline__ bool stopped(const int* flags) { return flags[0] != kRunning; }

// x - x is 0 for every finite x and NaN for NaN and infinities (no fast-math here).
template <class T>
__device__ __forceinline__ bool finite(T v) { return v - v == T(0); }

__device__ __forceinline__ long long first_index() {
  return (long long)blockIdx.x * kBlock + threadIdx.x;
}
__device__ __forceinline__ long long grid_stride() { return (long long)gridDim.x * kBlock; }

// The block's total of v, valid in thread 0; every thread of the block must call it.
template <class T>
__device__ T block_sum(T v) {
  __shared__ T warp_sums[kBlock / 32];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  __syncthreads();  // a previous call's reads of warp_sums are done
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  T total = T(0);
  if (threadIdx.x == 0) {
    for (int w = 0; w < kBlock / 32; ++w) total += warp_sums[w];
  }
  return total;
}

template <class T>
__device__ void store_partial(T* partials, int sum, T v) {
  v = block_sum(v);
  if (threadIdx.x == 0) partials[sum * kParts + blockIdx.x] = v;
}

template <class T>
__device__ T sum_partials(const T* partials, int nparts, int sum) {
  T acc = T(0);
  for (int j = threadIdx.x; j < nparts; j += kBlock) acc += partials[sum * kParts + j];
  return block_sum(acc);
}

// x = 0, r = u = b (and p = b for BiCGStab); partial b'b.
template <class T>
__device__ void init(long long n, const T* b, T* x, T* r, T* u, T* p, T* partials) {
  T acc = T(0);
  for (long long i = first_index(); i < n; i += grid_stride()) {
    const T bi = b[i];
    x[i] = T(0);
    r[i] = bi;
    u[i] = bi;
    if (p != nullptr) p[i] = bi;
    acc += bi * bi;
  }
  store_partial(partials, 0, acc);
}

template <class T>
__device__ void dot(long long n, const T* a, const T* c, const int* flags, T* partials) {
  if (stopped(flags)) return;
  T acc = T(0);
  for (long long i = first_index(); i < n; i += grid_stride()) acc += a[i] * c[i];
  store_partial(partials, 0, acc);
}

// Machine epsilon of the value type.
template <class T>
__device__ __forceinline__ T epsilon() {
  return sizeof(T) == 8 ? T(2.220446049250313e-16) : T(1.1920929e-7);
}

// A breakdown once ||r|| <= eps ||b|| (the residual at the value type's rounding level, as a
// long run with tol 0 reaches) ends a converged solve, not a failed one.
template <class T>
__device__ __forceinline__ int floor_or(const T* s, T rr, int code) {
  return rr <= epsilon<T>() * epsilon<T>() * s[kBb] ? kConverged : code;
}

// One block: reduces `nsums` dot products from their partials and takes the method's step.
template <class T>
__device__ void scalar_step(const T* partials, int nparts, int nsums, T* s, int* flags, int step,
                            T tol2) {
  if (step != kStart && stopped(flags)) return;
  const T s0 = sum_partials(partials, nparts, 0);
  const T s1 = nsums > 1 ? sum_partials(partials, nparts, 1) : T(0);
  if (threadIdx.x != 0) return;
  int stop = kRunning;
  switch (step) {
    case kStart:  // s0 = b'b
      flags[1] = 0;
      s[kBb] = s0;
      s[kRr] = s0;
      s[kRho] = s0;  // BiCGStab: (r0, r) with r0 = r = b
      s[kTol2] = tol2;
      s[kAlpha] = s[kOmega] = s[kBeta] = T(0);
      stop = !finite(s0) ? kNotFinite : (s0 == T(0) ? kConverged : kRunning);
      break;
    case kCgAlpha: {  // s0 = p'Ap
      const T alpha = s[kRr] / s0;
      if (!finite(s0)) {
        stop = kNotFinite;
      } else if (s0 < T(0)) {
        stop = kCurvature;
      } else if (s0 == T(0)) {
        stop = floor_or(s, s[kRr], kCurvature);
      } else if (!finite(alpha)) {
        stop = floor_or(s, s[kRr], kNotFinite);
      } else {
        s[kAlpha] = alpha;
      }
      break;
    }
    case kCgBeta:  // s0 = r'r after the update
      flags[1] += 1;
      if (!finite(s0)) {
        stop = kNotFinite;
      } else if (s0 <= s[kTol2] * s[kBb]) {
        stop = kConverged;
      } else {
        s[kBeta] = s0 / s[kRr];
      }
      s[kRr] = s0;
      break;
    case kBicgAlpha: {  // s0 = (r0, v)
      const T alpha = s[kRho] / s0;
      if (!finite(s0)) {
        stop = kNotFinite;
      } else if (s0 == T(0)) {
        stop = floor_or(s, s[kRr], kRhoBreakdown);
      } else if (!finite(alpha)) {
        stop = floor_or(s, s[kRr], kNotFinite);
      } else {
        s[kAlpha] = alpha;
      }
      break;
    }
    case kBicgOmega:  // s0 = (t, s), s1 = (t, t)
      // t = 0 means s = 0 (A nonsingular): x + alpha p solves the system, and omega = 0 lets
      // the update keep r = s = 0, which the next step reads as converged.
      if (!finite(s0) || !finite(s1)) {
        stop = kNotFinite;
      } else if (s1 == T(0)) {
        s[kOmega] = T(0);
      } else if (!finite(s0 / s1)) {
        stop = kNotFinite;
      } else {
        s[kOmega] = s0 / s1;
      }
      break;
    case kBicgBeta: {  // s0 = (r0, r), s1 = r'r after the update
      flags[1] += 1;
      const T beta = (s0 / s[kRho]) * (s[kAlpha] / s[kOmega]);
      if (!finite(s0) || !finite(s1)) {
        stop = kNotFinite;
      } else if (s1 <= s[kTol2] * s[kBb]) {
        stop = kConverged;
      } else if (s[kOmega] == T(0)) {
        stop = floor_or(s, s1, kOmegaBreakdown);
      } else if (s0 == T(0)) {
        stop = floor_or(s, s1, kRhoBreakdown);
      } else if (!finite(beta)) {
        stop = floor_or(s, s1, kNotFinite);
      } else {
        s[kBeta] = beta;
        s[kRho] = s0;
      }
      s[kRr] = s1;
      break;
    }
  }
  flags[0] = stop;
}

// CG: x += alpha p, r -= alpha q; partial r'r. (p is u, q is w.)
template <class T>
__device__ void cg_update(long long n, T* x, T* r, const T* u, const T* w, const T* s,
                          const int* flags, T* partials) {
  if (stopped(flags)) return;
  const T alpha = s[kAlpha];
  T acc = T(0);
  for (long long i = first_index(); i < n; i += grid_stride()) {
    x[i] += alpha * u[i];
    const T ri = r[i] - alpha * w[i];
    r[i] = ri;
    acc += ri * ri;
  }
  store_partial(partials, 0, acc);
}

// CG: p = r + beta p.
template <class T>
__device__ void cg_direction(long long n, const T* r, T* u, const T* s, const int* flags) {
  if (stopped(flags)) return;
  const T beta = s[kBeta];
  for (long long i = first_index(); i < n; i += grid_stride()) u[i] = r[i] + beta * u[i];
}

// BiCGStab: v = A p is in w, kept in v; s = r - alpha v goes to u, the next multiply's input.
template <class T>
__device__ void bicg_s(long long n, const T* r, const T* w, T* u, T* v, const T* s,
                       const int* flags) {
  if (stopped(flags)) return;
  const T alpha = s[kAlpha];
  for (long long i = first_index(); i < n; i += grid_stride()) {
    const T vi = w[i];
    v[i] = vi;
    u[i] = r[i] - alpha * vi;
  }
}

// BiCGStab: t = A s is in w, s in u; partials (t, s) and (t, t).
template <class T>
__device__ void bicg_omega_dots(long long n, const T* w, const T* u, const int* flags,
                                T* partials) {
  if (stopped(flags)) return;
  T ts = T(0), tt = T(0);
  for (long long i = first_index(); i < n; i += grid_stride()) {
    const T ti = w[i];
    ts += ti * u[i];
    tt += ti * ti;
  }
  store_partial(partials, 0, ts);
  store_partial(partials, 1, tt);
}

// BiCGStab: x += alpha p + omega s, r = s - omega t; partials (r0, r) and r'r.
template <class T>
__device__ void bicg_update(long long n, T* x, T* r, const T* p, const T* u, const T* w,
                            const T* r0, const T* s, const int* flags, T* partials) {
  if (stopped(flags)) return;
  const T alpha = s[kAlpha], omega = s[kOmega];
  T rho = T(0), rr = T(0);
  for (long long i = first_index(); i < n; i += grid_stride()) {
    const T si = u[i];
    x[i] += alpha * p[i] + omega * si;
    const T ri = si - omega * w[i];
    r[i] = ri;
    rho += r0[i] * ri;
    rr += ri * ri;
  }
  store_partial(partials, 0, rho);
  store_partial(partials, 1, rr);
}

// BiCGStab: p = r + beta (p - omega v), also into u for the next multiply.
template <class T>
__device__ void bicg_direction(long long n, const T* r, T* p, const T* v, T* u, const T* s,
                               const int* flags) {
  if (stopped(flags)) return;
  const T beta = s[kBeta], omega = s[kOmega];
  for (long long i = first_index(); i < n; i += grid_stride()) {
    const T pi = r[i] + beta * (p[i] - omega * v[i]);
    p[i] = pi;
    u[i] = pi;
  }
}

}  // namespace spmvc_krylov

// The entry points, once per value type: spmvc_krylov_<step>_<f64|f32>.
#define SPMVC_KRYLOV_ENTRY(NAME, SFX, PARAMS, ARGS)                                  \
  extern "C" __global__ void __launch_bounds__(SPMVC_KRYLOV_BLOCK) spmvc_krylov_##NAME##_##SFX \
      PARAMS {                                                                       \
    spmvc_krylov::NAME ARGS;                                                         \
  }
#define SPMVC_KRYLOV_ENTRIES(T, SFX)                                                            \
  SPMVC_KRYLOV_ENTRY(init, SFX,                                                                 \
                     (long long n, const T* b, T* x, T* r, T* u, T* p, T* partials),            \
                     (n, b, x, r, u, p, partials))                                              \
  SPMVC_KRYLOV_ENTRY(dot, SFX, (long long n, const T* a, const T* c, const int* f, T* partials), \
                     (n, a, c, f, partials))                                                    \
  SPMVC_KRYLOV_ENTRY(scalar_step, SFX,                                                          \
                     (const T* partials, int nparts, int nsums, T* s, int* f, int step, T tol2), \
                     (partials, nparts, nsums, s, f, step, tol2))                               \
  SPMVC_KRYLOV_ENTRY(cg_update, SFX,                                                            \
                     (long long n, T* x, T* r, const T* u, const T* w, const T* s, const int* f, \
                      T* partials),                                                             \
                     (n, x, r, u, w, s, f, partials))                                           \
  SPMVC_KRYLOV_ENTRY(cg_direction, SFX,                                                         \
                     (long long n, const T* r, T* u, const T* s, const int* f),                 \
                     (n, r, u, s, f))                                                           \
  SPMVC_KRYLOV_ENTRY(bicg_s, SFX,                                                               \
                     (long long n, const T* r, const T* w, T* u, T* v, const T* s, const int* f), \
                     (n, r, w, u, v, s, f))                                                     \
  SPMVC_KRYLOV_ENTRY(bicg_omega_dots, SFX,                                                      \
                     (long long n, const T* w, const T* u, const int* f, T* partials),          \
                     (n, w, u, f, partials))                                                    \
  SPMVC_KRYLOV_ENTRY(bicg_update, SFX,                                                          \
                     (long long n, T* x, T* r, const T* p, const T* u, const T* w, const T* r0, \
                      const T* s, const int* f, T* partials),                                   \
                     (n, x, r, p, u, w, r0, s, f, partials))                                    \
  SPMVC_KRYLOV_ENTRY(bicg_direction, SFX,                                                       \
                     (long long n, const T* r, T* p, const T* v, T* u, const T* s, const int* f), \
                     (n, r, p, v, u, s, f))

SPMVC_KRYLOV_ENTRIES(double, f64)
SPMVC_KRYLOV_ENTRIES(float, f32)
)";

// Must match the source's SPMVC_KRYLOV_BLOCK and SPMVC_KRYLOV_PARTS.
constexpr int kBlock = 256;
constexpr std::int64_t kParts = 1024;

// The kernels' names without their precision suffix, in the order of Kernel below.
constexpr std::array<const char*, 9> kKernelStems{
    "init",          "dot",    "scalar_step",     "cg_update",
    "cg_direction",  "bicg_s", "bicg_omega_dots", "bicg_update",
    "bicg_direction"};
enum Kernel : std::size_t {
  kInit,
  kDot,
  kScalarStep,
  kCgUpdate,
  kCgDirection,
  kBicgS,
  kBicgOmegaDots,
  kBicgUpdate,
  kBicgDirection
};

// The scalar kernel's steps and slots (the source's Step and Slot).
enum Step : int {
  kStart = 0,
  kCgAlpha = 1,
  kCgBeta = 2,
  kBicgAlpha = 3,
  kBicgOmega = 4,
  kBicgBeta = 5
};

void check_cuda(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw DeviceError(call, static_cast<int>(e), cudaGetErrorString(e));
}

// ||v|| of a host vector, in fp64.
double norm2(std::span<const double> v) {
  double s = 0;
  for (double e : v) s += e * e;
  return std::sqrt(s);
}

// ||a - b|| / ||b|| (||a - b|| when b is zero); infinity when a holds a NaN or infinity.
double relative_distance(std::span<const double> a, std::span<const double> b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return std::numeric_limits<double>::infinity();
    d += (a[i] - b[i]) * (a[i] - b[i]);
  }
  const double ref = norm2(b);
  return ref > 0 ? std::sqrt(d) / ref : std::sqrt(d);
}

}  // namespace

std::string_view to_string(KrylovMethod m) {
  switch (m) {
    case KrylovMethod::cg:
      return "cg";
    case KrylovMethod::bicgstab:
      return "bicgstab";
  }
  return "?";
}

KrylovMethod parse_krylov_method(std::string_view name) {
  if (name == "cg") return KrylovMethod::cg;
  if (name == "bicgstab") return KrylovMethod::bicgstab;
  throw InputError("--solve", 0, fmt::format("unknown method '{}' (cg, bicgstab)", name));
}

std::int64_t solve_multiplies(KrylovMethod method, std::int64_t iterations) {
  return iterations * (method == KrylovMethod::bicgstab ? 2 : 1);
}

std::vector<std::int64_t> parse_iteration_counts(std::string_view list) {
  constexpr std::int64_t kMaxIterations = 1'000'000'000;
  std::vector<std::int64_t> counts;
  std::size_t at = 0;
  for (int item = 1;; ++item) {
    const std::size_t comma = list.find(',', at);
    const std::string_view s =
        list.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
    auto bad = [&](std::string_view why) {
      return InputError("--iterations", 0,
                        fmt::format("item {} '{}' of '{}': {}", item, s, list, why));
    };
    if (s.empty()) throw bad("empty (give counts like 100,1000,10000)");
    if (!std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
      throw bad("not a whole number of iterations");
    if (s.size() > 10) throw bad(fmt::format("more than {} iterations", kMaxIterations));
    std::int64_t v = 0;
    for (char c : s) v = v * 10 + (c - '0');
    if (v < 1) throw bad("at least one iteration is needed");
    if (v > kMaxIterations) throw bad(fmt::format("more than {} iterations", kMaxIterations));
    counts.push_back(v);
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  return counts;
}

std::string_view to_string(SolveStop s) {
  switch (s) {
    case SolveStop::iterations:
      return "iterations";
    case SolveStop::converged:
      return "converged";
    case SolveStop::curvature:
      return "curvature";
    case SolveStop::rho_breakdown:
      return "rho_breakdown";
    case SolveStop::omega_breakdown:
      return "omega_breakdown";
    case SolveStop::not_finite:
      return "not_finite";
  }
  return "?";
}

SolveStop solve_stop_from_code(int code) {
  if (code < 0 || code > static_cast<int>(SolveStop::not_finite))
    throw InternalError(fmt::format("Krylov kernels wrote stop code {}", code));
  return static_cast<SolveStop>(code);
}

bool is_breakdown(SolveStop s) { return s != SolveStop::iterations && s != SolveStop::converged; }

std::string describe(SolveStop s) {
  switch (s) {
    case SolveStop::iterations:
    case SolveStop::converged:
      return "";
    case SolveStop::curvature:
      return "CG breakdown: p'Ap <= 0 (the matrix is not symmetric positive definite)";
    case SolveStop::rho_breakdown:
      return "BiCGStab breakdown: rho = (r0, r) or (r0, v) is zero";
    case SolveStop::omega_breakdown:
      return "BiCGStab breakdown: omega is zero while the residual is not";
    case SolveStop::not_finite:
      return "stopped: a dot product or scalar is NaN or infinite";
  }
  return "";
}

std::int64_t solve_end_iteration(SolveStop stop, std::int64_t completed, std::int64_t launched) {
  if (completed < 0 || completed > launched) {
    throw InternalError(
        fmt::format("Krylov solve completed {} of {} iterations launched", completed, launched));
  }
  switch (stop) {
    case SolveStop::iterations:
      return launched;
    case SolveStop::converged:
      return completed;
    default:
      return std::min(completed + 1, launched);
  }
}

SolveAccuracy solve_accuracy(const CsrMatrix& a, std::span<const double> x,
                             std::span<const double> b, std::span<const double> x_true) {
  if (static_cast<std::int64_t>(x.size()) != a.ncols ||
      static_cast<std::int64_t>(b.size()) != a.nrows || x_true.size() != x.size()) {
    throw InputError("solve", 0,
                     fmt::format("vectors of {}, {} and {} elements for a {} x {} matrix", x.size(),
                                 b.size(), x_true.size(), a.nrows, a.ncols));
  }
  SolveAccuracy acc;
  acc.relative_error = relative_distance(x, x_true);
  if (std::isinf(acc.relative_error)) {
    acc.relative_residual = acc.relative_error;
    return acc;
  }
  std::vector<double> ax(b.size());
  compiler::csr_reference_spmv(a, x, ax);
  acc.relative_residual = relative_distance(ax, b);
  return acc;
}

struct KrylovSolver::Impl {
  KrylovMethod method = KrylovMethod::cg;
  std::int64_t n = 0;
  bool f64 = true;
  std::size_t value_bytes = 8;
  std::int64_t grid = 1;
  // b (also BiCGStab's shadow residual r0 = b - A x0), x, r, the multiply's input u (p for CG,
  // p then s for BiCGStab) and output w; BiCGStab also keeps p and v.
  DeviceBuffer b, x, r, u, w, p, v;
  DeviceBuffer scalars, flags, partials;
  std::vector<LoadedKernel> kernels;
  double load_seconds = 0;
  std::string origin;
  // Two pinned slots for the queued reads of the stop code, and their events.
  int* pinned = nullptr;
  std::array<cudaEvent_t, 2> checks{};
  // Timing: the start, the end of the last launch, and a ring of marks after each iteration
  // (marks[i % size] after iteration i, 0 the start step) to time a solve to the iteration
  // that stopped it rather than to the end of the iterations queued after it.
  cudaEvent_t begin = nullptr, end = nullptr;
  std::array<cudaEvent_t, 2 * kKrylovCheckEvery + 2> marks{};

  ~Impl() {
    for (cudaEvent_t e : {checks[0], checks[1], begin, end}) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    for (cudaEvent_t e : marks) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    if (pinned != nullptr) cudaFreeHost(pinned);
  }

  cudaEvent_t mark(std::int64_t iteration) const {
    return marks[static_cast<std::size_t>(iteration) % marks.size()];
  }

  void launch(Kernel k, std::int64_t blocks, std::vector<void*> args) const {
    kernels[k].launch(blocks, kBlock, 0, args.data(), nullptr);
  }

  // The scalar kernel over `nsums` dot products of the last vector kernel.
  void scalar(Step step, int nsums, double tol2 = 0) {
    void* part = partials.get();
    int nparts = static_cast<int>(grid);
    void* s = scalars.get();
    void* f = flags.get();
    int st = step;
    if (f64) {
      launch(kScalarStep, 1, {&part, &nparts, &nsums, &s, &f, &st, &tol2});
    } else {
      float tol2f = static_cast<float>(tol2);
      launch(kScalarStep, 1, {&part, &nparts, &nsums, &s, &f, &st, &tol2f});
    }
  }
};

KrylovSolver::KrylovSolver(KrylovMethod method, std::int64_t n, Precision precision,
                           std::span<const double> b, const std::string& cache_dir)
    : impl_(std::make_unique<Impl>()) {
  if (n < 1 || static_cast<std::int64_t>(b.size()) != n) {
    throw InputError("solve", 0,
                     fmt::format("right-hand side of {} elements for order {}", b.size(), n));
  }
  Impl& m = *impl_;
  m.method = method;
  m.n = n;
  m.f64 = precision == Precision::f64;
  m.value_bytes = m.f64 ? sizeof(double) : sizeof(float);
  m.grid = std::min<std::int64_t>((n + kBlock - 1) / kBlock, kParts);

  const DeviceInfo info = probe_device();
  set_device(info.ordinal);
  const auto t0 = std::chrono::steady_clock::now();
  KernelCache cache(cache_dir.empty() ? KernelCache::default_dir()
                                      : std::filesystem::path(cache_dir));
  const CachedKernel cubin = cache.get(krylov_kernel_source(), info.arch());
  for (const std::string& name : krylov_kernel_names()) {
    if (name.ends_with(m.f64 ? "_f64" : "_f32")) m.kernels.emplace_back(cubin.cubin.image, name);
  }
  m.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.origin = std::string(to_string(cubin.origin));

  const std::size_t bytes = static_cast<std::size_t>(n) * m.value_bytes;
  for (DeviceBuffer* d : {&m.b, &m.x, &m.r, &m.u, &m.w}) *d = DeviceBuffer(bytes);
  if (method == KrylovMethod::bicgstab) {
    m.p = DeviceBuffer(bytes);
    m.v = DeviceBuffer(bytes);
  }
  if (m.f64) {
    m.b.upload(b.data(), bytes);
  } else {
    const std::vector<float> bf(b.begin(), b.end());
    m.b.upload(bf.data(), bytes);
  }
  // Poisoned with NaN until written: a kernel reading what it should not stops as not finite.
  m.w.fill_bytes(0xff);
  m.scalars = DeviceBuffer(8 * m.value_bytes);
  m.flags = DeviceBuffer(2 * sizeof(int));
  m.partials = DeviceBuffer(2 * static_cast<std::size_t>(kParts) * m.value_bytes);
  void* pinned = nullptr;
  check_cuda(cudaMallocHost(&pinned, 2 * 2 * sizeof(int)), "cudaMallocHost");
  m.pinned = static_cast<int*>(pinned);
  for (cudaEvent_t* e : {&m.checks[0], &m.checks[1]})
    check_cuda(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreate");
  check_cuda(cudaEventCreate(&m.begin), "cudaEventCreate");
  check_cuda(cudaEventCreate(&m.end), "cudaEventCreate");
  for (cudaEvent_t& e : m.marks) check_cuda(cudaEventCreate(&e), "cudaEventCreate");
  synchronize();
}

KrylovSolver::~KrylovSolver() = default;

const void* KrylovSolver::spmv_input() const { return impl_->u.get(); }
void* KrylovSolver::spmv_output() const { return impl_->w.get(); }
double KrylovSolver::kernel_load_seconds() const { return impl_->load_seconds; }
const std::string& KrylovSolver::kernel_origin() const { return impl_->origin; }

SolveResult KrylovSolver::solve(const DeviceSpmv& spmv, std::int64_t max_iterations, double tol) {
  if (max_iterations < 1) {
    throw InputError("solve", 0,
                     fmt::format("{} iterations: at least one is needed", max_iterations));
  }
  if (!(tol >= 0) || !std::isfinite(tol)) {
    throw InputError("--tol", 0, fmt::format("tolerance {} is not a finite number >= 0", tol));
  }
  Impl& m = *impl_;
  long long n = m.n;
  void *b = m.b.get(), *x = m.x.get(), *r = m.r.get(), *u = m.u.get(), *w = m.w.get();
  void *p = m.p.get(), *v = m.v.get();
  void *s = m.scalars.get(), *f = m.flags.get(), *part = m.partials.get();
  const std::int64_t g = m.grid;
  const bool cg = m.method == KrylovMethod::cg;

  check_cuda(cudaEventRecord(m.begin, nullptr), "cudaEventRecord");
  void* p_or_null = cg ? nullptr : p;
  m.launch(kInit, g, {&n, &b, &x, &r, &u, &p_or_null, &part});
  m.scalar(kStart, 1, tol * tol);
  check_cuda(cudaEventRecord(m.mark(0), nullptr), "cudaEventRecord");
  std::int64_t checks = 0, launched = 0;
  for (std::int64_t it = 1; it <= max_iterations; ++it) {
    if (cg) {
      spmv(u, w);                                  // q = A p
      m.launch(kDot, g, {&n, &u, &w, &f, &part});  // p'q
      m.scalar(kCgAlpha, 1);
      m.launch(kCgUpdate, g, {&n, &x, &r, &u, &w, &s, &f, &part});
      m.scalar(kCgBeta, 1);
      m.launch(kCgDirection, g, {&n, &r, &u, &s, &f});
    } else {
      spmv(u, w);                                  // v = A p
      m.launch(kDot, g, {&n, &b, &w, &f, &part});  // (r0, v)
      m.scalar(kBicgAlpha, 1);
      m.launch(kBicgS, g, {&n, &r, &w, &u, &v, &s, &f});
      spmv(u, w);  // t = A s
      m.launch(kBicgOmegaDots, g, {&n, &w, &u, &f, &part});
      m.scalar(kBicgOmega, 2);
      m.launch(kBicgUpdate, g, {&n, &x, &r, &p, &u, &w, &b, &s, &f, &part});
      m.scalar(kBicgBeta, 2);
      m.launch(kBicgDirection, g, {&n, &r, &p, &v, &u, &s, &f});
    }
    check_cuda(cudaEventRecord(m.mark(it), nullptr), "cudaEventRecord");
    launched = it;
    if (it % kKrylovCheckEvery != 0 || it == max_iterations) continue;
    // Queue a read of the stop code, then look at the one queued kKrylovCheckEvery iterations
    // ago: the device still has this many iterations queued, so it never idles on the host.
    const std::size_t slot = static_cast<std::size_t>(checks % 2);
    check_cuda(
        cudaMemcpyAsync(m.pinned + 2 * slot, f, 2 * sizeof(int), cudaMemcpyDeviceToHost, nullptr),
        "cudaMemcpyAsync");
    check_cuda(cudaEventRecord(m.checks[slot], nullptr), "cudaEventRecord");
    if (checks > 0) {
      const std::size_t previous = 1 - slot;
      check_cuda(cudaEventSynchronize(m.checks[previous]), "cudaEventSynchronize");
      if (m.pinned[2 * previous] != 0) break;
    }
    ++checks;
  }
  check_cuda(cudaEventRecord(m.end, nullptr), "cudaEventRecord");
  check_cuda(cudaEventSynchronize(m.end), "cudaEventSynchronize");
  check_last_launch("Krylov solve");

  SolveResult res;
  std::array<int, 2> state{};
  m.flags.download(state.data(), sizeof(state));
  res.stop = solve_stop_from_code(state[0]);
  res.iterations = state[1];
  // The ring still holds the stopping iteration's mark: the loop ends within two checks of it.
  const std::int64_t last = solve_end_iteration(res.stop, res.iterations, launched);
  const bool marked = launched - last < static_cast<std::int64_t>(m.marks.size());
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, m.begin, marked ? m.mark(last) : m.end),
             "cudaEventElapsedTime");
  res.seconds = static_cast<double>(ms) * 1e-3;
  res.x.resize(static_cast<std::size_t>(m.n));
  if (m.f64) {
    m.x.download(res.x.data(), res.x.size() * sizeof(double));
  } else {
    std::vector<float> xf(res.x.size());
    m.x.download(xf.data(), xf.size() * sizeof(float));
    std::copy(xf.begin(), xf.end(), res.x.begin());
  }
  return res;
}

KernelSource krylov_kernel_source() {
  KernelSource src;
  src.kernel_name = "spmvc_krylov_dot_f64";
  src.file_name = "spmvc_krylov.cu";
  src.source = kSource;
  src.options = {"-std=c++17"};
  src.grid = 1;
  src.block = kBlock;
  return src;
}

std::vector<std::string> krylov_kernel_names() {
  std::vector<std::string> names;
  for (const char* sfx : {"f64", "f32"}) {
    for (const char* stem : kKernelStems)
      names.push_back(fmt::format("spmvc_krylov_{}_{}", stem, sfx));
  }
  return names;
}

}  // namespace spmvc::bench
