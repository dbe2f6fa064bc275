// What the GPU probes (gather_probe, dict_probe, affinity_probe) share on the host: a launch's
// median time, cuSPARSE's best CSR time on a matrix, and their inputs (a generator spec, or a
// .mtx / .mtx.xz file replicated down the diagonal to 16M nonzeros as the suite's x16M entries
// are).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "spmvc/bench/cusparse.hpp"
#include "spmvc/bench/gpu.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"

namespace spmvc::bench::probe {

constexpr std::int64_t kReplicateTo = 16'000'000;
constexpr int kWarm = 5, kTimed = 40;

/// The median of kTimed launches (CUDA events around each), after kWarm untimed ones, in us.
template <typename F>
double median_us(F&& launch) {
  GpuTimer timer;
  for (int i = 0; i < kWarm; ++i) launch();
  std::vector<double> t;
  for (int i = 0; i < kTimed; ++i) {
    timer.start();
    launch();
    t.push_back(1e3 * timer.stop_ms());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// cuSPARSE's CSR ALG1 and ALG2 on `a` (values of T), the faster one's median in us.
template <typename T>
double cusparse_best_us(const CsrMatrix& a, const DeviceArray& dx, DeviceArray& dy) {
  CusparseCsr cus(a, sizeof(T) == 8 ? Precision::f64 : Precision::f32);
  double best = 1e30;
  for (const CusparseAlg alg : {CusparseAlg::csr_alg1, CusparseAlg::csr_alg2}) {
    cus.prepare(alg, dx.get(), dy.get());
    best = std::min(best, median_us([&] { cus.spmv(alg, dx.get(), dy.get(), 1.0, 0.0, nullptr); }));
  }
  return best;
}

/// A matrix on the device as the probes read it: x (1 + (i mod 7) / 8), the values, 32-bit columns
/// and row offsets, and y; whether every value is 1 (a pattern matrix, whose kernels skip the
/// values); and cuSPARSE ALG1's y as the reference of error().
template <typename T>
struct ProbeMatrix {
  static constexpr Precision kPrecision = sizeof(T) == 8 ? Precision::f64 : Precision::f32;
  explicit ProbeMatrix(const CsrMatrix& a)
      : nrows(static_cast<std::size_t>(a.nrows)),
        x(std::max<std::size_t>(static_cast<std::size_t>(a.ncols), 1) * sizeof(T)),
        values(std::max<std::size_t>(a.values.size(), 1) * sizeof(T)),
        col(std::max<std::size_t>(a.col_idx.size(), 1) * sizeof(std::int32_t)),
        row_ptr(a.row_ptr.size() * sizeof(int)),
        y(std::max<std::size_t>(nrows, 1) * sizeof(T)) {
    std::vector<double> xs(static_cast<std::size_t>(a.ncols));
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = 1.0 + static_cast<double>(i % 7) / 8;
    x.upload_values(xs, kPrecision);
    values.upload_values(a.values, kPrecision);
    col.upload(a.col_idx.data(), a.col_idx.size() * sizeof(std::int32_t));
    const std::vector<int> rp(a.row_ptr.begin(), a.row_ptr.end());
    row_ptr.upload(rp.data(), rp.size() * sizeof(int));
    for (const double v : a.values) pattern = pattern && v == 1.0;
    CusparseCsr cus(a, kPrecision);
    cus.prepare(CusparseAlg::csr_alg1, x.get(), y.get());
    cus.spmv(CusparseAlg::csr_alg1, x.get(), y.get(), 1.0, 0.0, nullptr);
    reference = y.download_values(nrows, kPrecision);
    for (const double v : reference) ymax = std::max(ymax, std::abs(v));
  }
  /// The largest difference of y from the reference, relative to its largest magnitude (a NaN,
  /// a row nobody wrote after y.fill_bytes(0xff), counts 1e30).
  double error() const {
    const std::vector<double> now = y.download_values(nrows, kPrecision);
    double err = 0;
    for (std::size_t i = 0; i < now.size(); ++i) {
      const double d = std::abs(now[i] - reference[i]);
      err = std::max(err, std::isnan(d) ? 1e30 : d);
    }
    return ymax > 0 ? err / ymax : err;
  }
  const T* xp() const { return static_cast<const T*>(x.get()); }
  const T* valp() const { return static_cast<const T*>(values.get()); }
  const int* colp() const { return static_cast<const int*>(col.get()); }
  const int* rowp() const { return static_cast<const int*>(row_ptr.get()); }
  T* yp() const { return static_cast<T*>(y.get()); }

  std::size_t nrows;
  DeviceArray x, values, col, row_ptr, y;
  bool pattern = true;
  std::vector<double> reference;
  double ymax = 0;
};

/// A probe's command line: [--order NAME] SPEC|FILE... (the ordering, spmvc::compute_ordering's
/// names, applied to each input before the probe). False, with the usage on stderr, for an
/// option it does not know.
struct Args {
  std::string order = "none";
  std::vector<std::string> inputs;
};
inline bool parse_args(int argc, char** argv, Args& out) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--order" && i + 1 < argc) {
      out.order = argv[++i];
    } else if (arg.rfind("--", 0) == 0) {
      std::fprintf(stderr, "usage: %s [--order NAME] SPEC|FILE...\n", argv[0]);
      return false;
    } else {
      out.inputs.push_back(arg);
    }
  }
  return true;
}

/// A generator spec, or a Matrix Market file replicated (I_k ⊗ A) to kReplicateTo nonzeros.
inline CsrMatrix load(const std::string& what) {
  const bool file = what.ends_with(".mtx") || what.ends_with(".mtx.xz");
  if (!file) return gen::from_spec(what);
  CsrMatrix a = read_matrix_market(what);
  const std::int64_t k = a.nnz() > 0 ? (kReplicateTo + a.nnz() - 1) / a.nnz() : 1;
  return k > 1 ? gen::replicate(a, k) : a;
}

}  // namespace spmvc::bench::probe
