// How close any kernel that keeps a matrix's nonzero order can come to cuSPARSE where x's gather
// is the limit (power-law graphs): three passes over the nonzeros in storage order with no rows,
// no row offsets and no y (gather_probe_kernels.cu), timed against cuSPARSE's CSR SpMV (ALG1 and
// ALG2) on the same matrix in the same run:
//   stream         the 32-bit column and value streams alone (what CSR reads besides x)
//   gather         the column stream and x gathered at each column (a pattern matrix)
//   gather+values  both streams and the gather: a CSR SpMV without its row sums
//   g+shm, gv+shm  the two gathers with each product stored to shared memory and read back, the
//                  least that csr_stream's staging of products adds (tiles only)
//   g+shfl, gv+shfl  the two gathers with each product through five warp shuffles, what a
//                  warp-wide scan of the products in registers would add (tiles only)
// cuSPARSE's time over a pass's is the most a format could gain over it while reading those
// streams in this order; gather's bounds a format that stores no values. No spmvc format is
// involved. An ordering (spmvc::compute_ordering's names, symmetric ones only) renumbers rows
// and columns first; a .mtx or .mtx.xz file is replicated down the diagonal to 16M nonzeros as
// the suite's x16M entries are.
//
//   spmvc_bench_gather_probe [--order NAME] SPEC|FILE...
//     (default: suite v13's Kronecker scale 21 and 22)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "formats/csr_warp/csr_warp_format.hpp"
#include "gather_probe_kernels.hpp"
#include "probe_support.hpp"
#include "spmvc/bench/cusparse.hpp"
#include "spmvc/bench/gpu.hpp"
#include "spmvc/generators.hpp"
#include "spmvc/matrix.hpp"
#include "spmvc/reorder.hpp"

namespace {

using spmvc::bench::CusparseAlg;
using spmvc::bench::DeviceArray;

using spmvc::bench::probe::cusparse_best_us;
using spmvc::bench::probe::kTimed;
using spmvc::bench::probe::median_us;

// csr_warp's variants on `a`: each one's median time and its largest error against cuSPARSE's y
// (relative to y's largest magnitude), one line each.
template <typename T>
void run_warp(const spmvc::CsrMatrix& a, double base, const DeviceArray& dx,
              const DeviceArray& dval, const DeviceArray& dcol, DeviceArray& dy,
              const std::vector<double>& reference) {
  constexpr bool kF64 = sizeof(T) == 8;
  const spmvc::Precision precision = kF64 ? spmvc::Precision::f64 : spmvc::Precision::f32;
  DeviceArray drow(a.row_ptr.size() * sizeof(long long));
  drow.upload(a.row_ptr.data(), a.row_ptr.size() * sizeof(long long));
  double ymax = 0;
  for (const double v : reference) ymax = std::max(ymax, std::abs(v));
  for (int v = 0; v < gather_probe::kWarpVariants; ++v) {
    const auto c = spmvc::formats::CsrWarpFormat::partition(a, gather_probe::warp_variant_chunk(v));
    const std::vector<int> rows(c.row.begin(), c.row.end());
    const auto nchunks = static_cast<int>(rows.size()) - 1;
    DeviceArray crow(rows.size() * sizeof(int)), cnz(c.nz.size() * sizeof(long long));
    crow.upload(rows.data(), rows.size() * sizeof(int));
    cnz.upload(c.nz.data(), c.nz.size() * sizeof(long long));
    DeviceArray lrows(c.long_rows.size() * sizeof(int));
    lrows.upload(c.long_rows.data(), c.long_rows.size() * sizeof(int));
    DeviceArray partial(static_cast<std::size_t>(nchunks) * sizeof(T));
    const int nlong = c.long_count > 0 ? static_cast<int>(c.long_rows.size() / 3) : 0;
    const gather_probe::WarpArgs<T> args{nchunks,
                                         static_cast<const int*>(crow.get()),
                                         static_cast<const long long*>(cnz.get()),
                                         static_cast<const long long*>(drow.get()),
                                         static_cast<const int*>(dcol.get()),
                                         static_cast<const T*>(dval.get()),
                                         static_cast<const T*>(dx.get()),
                                         static_cast<T*>(dy.get()),
                                         static_cast<T*>(partial.get()),
                                         nlong,
                                         static_cast<const int*>(lrows.get())};
    auto launch = [&] { gather_probe::launch_warp<T>(v, args); };
    dy.fill_bytes(0xff);  // NaN: a row nobody writes shows
    launch();
    const std::vector<double> y = dy.download_values(reference.size(), precision);
    double err = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      const double d = std::abs(y[i] - reference[i]);
      err = std::max(err, std::isnan(d) ? 1e30 : d);
    }
    const double us = median_us(launch);
    std::printf("  csr_warp %-8s %s %9.1f us %7.2fx  chunks %d, long rows %lld, error %.1e\n",
                gather_probe::warp_variant_name(v), kF64 ? "f64" : "f32", us, base / us, nchunks,
                static_cast<long long>(c.long_count), ymax > 0 ? err / ymax : err);
  }
}

// `a` in the probed order; `input` the matrix as given, whose cuSPARSE time is the baseline (the
// suite's), or null when `a` is it.
template <typename T>
void run(const std::string& name, const spmvc::CsrMatrix* input, const spmvc::CsrMatrix& a, int sms,
         bool warp_only) {
  constexpr bool kF64 = sizeof(T) == 8;
  const spmvc::Precision precision = kF64 ? spmvc::Precision::f64 : spmvc::Precision::f32;
  const auto n = static_cast<std::size_t>(a.ncols);
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = 1.0 + static_cast<double>(i % 7) / 8;
  DeviceArray dx(std::max<std::size_t>(n, 1) * sizeof(T));
  DeviceArray dval(std::max<std::size_t>(a.values.size(), 1) * sizeof(T));
  DeviceArray dcol(std::max<std::size_t>(a.col_idx.size(), 1) * sizeof(std::int32_t));
  dx.upload_values(x, precision);
  dval.upload_values(a.values, precision);
  dcol.upload(a.col_idx.data(), a.col_idx.size() * sizeof(std::int32_t));
  DeviceArray dy(std::max<std::size_t>(static_cast<std::size_t>(a.nrows), 1) * sizeof(T));
  const double here = cusparse_best_us<T>(a, dx, dy);
  const double base = input != nullptr ? cusparse_best_us<T>(*input, dx, dy) : here;
  {
    spmvc::bench::CusparseCsr cus(a, precision);
    cus.prepare(CusparseAlg::csr_alg1, dx.get(), dy.get());
    cus.spmv(CusparseAlg::csr_alg1, dx.get(), dy.get(), 1.0, 0.0, nullptr);
  }
  const std::vector<double> reference =
      dy.download_values(static_cast<std::size_t>(a.nrows), precision);
  std::printf("%-26s %s cuSPARSE %.1f us, here %.1f us\n", name.c_str(), kF64 ? "f64" : "f32", base,
              here);
  run_warp<T>(a, base, dx, dval, dcol, dy, reference);
  if (warp_only) return;

  const int blocks = sms * 8;  // the sweep's resident grid: 8 blocks of 256 a multiprocessor
  const long long nnz = a.nnz();
  using gather_probe::Layout;
  DeviceArray out(
      static_cast<std::size_t>(std::max(gather_probe::out_entries(Layout::sweep, blocks, nnz),
                                        gather_probe::out_entries(Layout::tile, blocks, nnz))) *
      sizeof(T));
  const auto* col = static_cast<const int*>(dcol.get());
  const auto* val = static_cast<const T*>(dval.get());
  const auto* xs = static_cast<const T*>(dx.get());
  auto* o = static_cast<T*>(out.get());
  // Each pass's faster layout: s (sweep) or t (tile); the shared and shuffle passes run tiles
  // only.
  constexpr int kPasses = 7;
  double us[kPasses];
  char layout[kPasses];
  for (int p = 0; p < kPasses; ++p) {
    const auto pass = static_cast<gather_probe::Pass>(p);
    const bool tile_only = p >= static_cast<int>(gather_probe::Pass::gather_shared);
    const double sweep = tile_only ? 1e30 : median_us([&] {
      gather_probe::launch<T>(pass, Layout::sweep, blocks, nnz, col, val, xs, o);
    });
    const double tile = median_us(
        [&] { gather_probe::launch<T>(pass, Layout::tile, blocks, nnz, col, val, xs, o); });
    us[p] = std::min(sweep, tile);
    layout[p] = sweep <= tile ? 's' : 't';
  }
  spmvc::bench::synchronize();
  std::printf(
      "%-26s %s %9.1f %9.1f %8.1f%c %8.1f%c %8.1f%c %8.1f %8.1f %8.1f %8.1f %7.2fx %7.2fx %7.2fx "
      "%7.2fx\n",
      name.c_str(), kF64 ? "f64" : "f32", base, here, us[0], layout[0], us[1], layout[1], us[2],
      layout[2], us[3], us[4], us[5], us[6], base / us[1], base / us[2], base / us[3],
      base / us[4]);
}

}  // namespace

int main(int argc, char** argv) {
  std::string order = "none";
  bool warp_only = false;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--order" && i + 1 < argc) {
      order = argv[++i];
    } else if (arg == "--warp-only") {
      warp_only = true;
    } else if (arg.rfind("--", 0) == 0) {
      std::fprintf(stderr, "usage: %s [--order NAME] [--warp-only] SPEC|FILE...\n", argv[0]);
      return 2;
    } else {
      inputs.push_back(arg);
    }
  }
  if (inputs.empty()) inputs = {"rmat:scale=21,ef=16", "rmat:scale=22,ef=16"};
  try {
    const spmvc::bench::Gpu gpu = spmvc::bench::open_gpu();
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess) sms = 132;
    std::printf(
        "%s, %d SMs; order %s; medians of %d runs in us; cuSPARSE: its best on the "
        "matrix as given, 'here' in the probed order; each pass's faster layout (s sweep, "
        "t tile); ceiling = cuSPARSE / the pass\n",
        gpu.name.c_str(), sms, order.c_str(), kTimed);
    std::printf("%-26s %s %9s %9s %9s %9s %9s %8s %8s %8s %8s %8s %8s %8s %8s\n", "matrix", "prec",
                "cuSPARSE", "cuS here", "stream", "gather", "gath+val", "g+shm", "gv+shm", "g+shfl",
                "gv+shfl", "ceil g", "ceil gv", "ceil gs", "ceil gvs");
    for (const std::string& in : inputs) {
      const spmvc::CsrMatrix a = spmvc::bench::probe::load(in);
      const spmvc::CsrMatrix b =
          order != "none" ? spmvc::permute(a, spmvc::compute_ordering(a, order)) : a;
      const spmvc::CsrMatrix* input = order != "none" ? &a : nullptr;
      const std::string name = in.substr(in.find_last_of('/') + 1);
      run<double>(name, input, b, sms, warp_only);
      run<float>(name, input, b, sms, warp_only);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
