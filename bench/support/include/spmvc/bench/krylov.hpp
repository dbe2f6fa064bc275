// Krylov solves on the GPU with the SpMV as a parameter: one implementation of CG and of
// BiCGStab (unpreconditioned) whose vector work (dots, axpys, norms) runs in its own kernels, so
// two solves that differ only in the SpMV they are given do identical work besides it. This is
// how `spmvc bench --solve` compares time to solution with spmvc's operator and with cuSPARSE.
//
// Every scalar (alpha, beta, rho, omega, the residual norm) stays on the device: a one-block
// kernel reduces each dot product's per-block partial sums in a fixed order and takes the
// method's scalar step, and a stop code on the device (converged, breakdown, not finite) turns
// every later kernel into a no-op. The host never waits inside an iteration: every
// kKrylovCheckEvery iterations it queues a copy of the stop code and reads the previous such
// copy, so at most 2 * kKrylovCheckEvery iterations' SpMVs run after a stop; a CUDA event after
// every iteration lets the solve's time end at the iteration that stopped it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spmvc/kernel.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/plan.hpp"

namespace spmvc::bench {

enum class KrylovMethod { cg, bicgstab };
std::string_view to_string(KrylovMethod m);
/// "cg" or "bicgstab"; InputError naming `name` and the methods otherwise.
KrylovMethod parse_krylov_method(std::string_view name);

/// A comma-separated list of iteration counts ("100,1000,10000"): each a positive decimal
/// integer of at most 10^9. InputError naming the item at fault (an empty item, a sign, a
/// fraction or exponent, zero, too large).
std::vector<std::int64_t> parse_iteration_counts(std::string_view list);

/// The multiplies a solve of `iterations` iterations asks of its operator at most: one an
/// iteration for CG (q = A p), two for BiCGStab (v = A p, t = A s); x0 = 0 needs none to start.
/// `spmvc bench --solve` plans for its longest solve with it (Options::multiplies).
std::int64_t solve_multiplies(KrylovMethod method, std::int64_t iterations);

/// Iterations between two queued reads of the device's stop code.
inline constexpr int kKrylovCheckEvery = 10;

/// Why a solve stopped. The codes are those the kernels write (krylov.cpp).
enum class SolveStop {
  iterations = 0,  ///< ran the iterations asked for
  /// ||r|| <= tol * ||b|| (r exactly zero with tol 0), or a breakdown once the recurrence's
  /// ||r|| <= eps * ||b|| (eps of the value type): the residual is at rounding level there
  converged = 1,
  curvature = 2,        ///< CG: p'Ap <= 0, the matrix is not positive definite
  rho_breakdown = 3,    ///< BiCGStab: (r0, r) or (r0, v) is zero
  omega_breakdown = 4,  ///< BiCGStab: omega is zero while r is not
  not_finite = 5,       ///< a dot product or scalar became NaN or infinite
};
std::string_view to_string(SolveStop s);
/// The stop a kernel's code means; InternalError for a code no kernel writes.
SolveStop solve_stop_from_code(int code);
/// True for the stops that end a solve early because the method cannot go on.
bool is_breakdown(SolveStop s);
/// One sentence for a report: "" for iterations and converged, otherwise what broke down.
std::string describe(SolveStop s);

/// The iteration whose end ends a solve's timed work, given how it stopped, the iterations it
/// completed and those launched: all launched when it ran them all; the last completed when it
/// converged; the one that broke down (completed + 1) otherwise. Later iterations only run
/// their multiplies (every other kernel is a no-op by then) and are not timed. InternalError
/// when completed is outside 0..launched.
std::int64_t solve_end_iteration(SolveStop stop, std::int64_t completed, std::int64_t launched);

/// How close x is: ||b - A x|| / ||b|| and ||x - x_true|| / ||x_true|| (absolute norms where the
/// reference is zero), in fp64 on the host; infinity when x holds a NaN or infinity.
struct SolveAccuracy {
  double relative_residual = 0;
  double relative_error = 0;
};
SolveAccuracy solve_accuracy(const CsrMatrix& a, std::span<const double> x,
                             std::span<const double> b, std::span<const double> x_true);

/// y = A*x on device vectors of the solver's value type.
using DeviceSpmv = std::function<void(const void* x, void* y)>;

struct SolveResult {
  std::int64_t iterations = 0;  ///< iterations completed (the stop's iteration, not the check's)
  SolveStop stop = SolveStop::iterations;
  /// CUDA-event time from x0 = 0 to the end of the iteration that stopped the solve
  /// (solve_end_iteration)
  double seconds = 0;
  std::vector<double> x;  ///< the solution, downloaded after timing
};

/// Device vectors and kernels for solving A x = b with A square of order `n` in `precision`'s
/// value type (double for f64, float for f32 and f32_acc64). Throws NoDeviceError without a GPU.
class KrylovSolver {
 public:
  /// Uploads `b` (rounded to the value type) and loads the kernels through a kernel cache over
  /// `cache_dir` (empty: the default directory, as Options::cache_dir). InputError when
  /// b.size() != n or n < 1.
  KrylovSolver(KrylovMethod method, std::int64_t n, Precision precision, std::span<const double> b,
               const std::string& cache_dir = "");
  ~KrylovSolver();
  KrylovSolver(const KrylovSolver&) = delete;
  KrylovSolver& operator=(const KrylovSolver&) = delete;

  /// Every multiply of a solve reads this vector and writes spmv_output(): a library that binds
  /// descriptors to pointers (cuSPARSE) prepares them once, on these two.
  const void* spmv_input() const;
  void* spmv_output() const;

  /// Solves from x0 = 0, stopping after `max_iterations` or when ||r|| <= tol * ||b|| (tol 0:
  /// only a residual at rounding level stops early, see SolveStop::converged) or on a breakdown;
  /// each multiply is spmv(spmv_input(), spmv_output()) on the default stream. InputError for
  /// max_iterations < 1 or a negative or non-finite tol.
  SolveResult solve(const DeviceSpmv& spmv, std::int64_t max_iterations, double tol);

  /// Seconds spent obtaining and loading the solver's kernels, and where the binary came from
  /// ("nvrtc", "memory" or "disk").
  double kernel_load_seconds() const;
  const std::string& kernel_origin() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The solver's kernels (both precisions) in one translation unit; exposed so the nvrtc tests
/// compile it without a GPU.
KernelSource krylov_kernel_source();
/// The kernels krylov_kernel_source() defines, by their extern "C" names.
std::vector<std::string> krylov_kernel_names();

}  // namespace spmvc::bench
