// Whether multiprocessors that each take one contiguous share of the rows gather x better than
// blocks dealt to them in launch order (the replicated graphs of class G, whose copies each read
// their own slice of x): csr_stream's shape (tiles of at most 2048 nonzeros and 512 rows, a longer
// row a tile of its own; products through shared memory, rows summed by 1-32 lanes) launched one
// block a tile, against a persistent grid (8 or 4 blocks a multiprocessor) whose blocks each take
// a rank on their own multiprocessor (%smid) and then that multiprocessor's share of the tiles in
// steps of its blocks. cuSPARSE's
// best CSR algorithm on the same matrix is the baseline. No spmvc format is involved. A .mtx or
// .mtx.xz file is replicated down the diagonal to 16M nonzeros as the suite's x16M entries are.
//
//   spmvc_bench_affinity_probe [--order NAME] SPEC|FILE...
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "affinity_probe_kernels.hpp"
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

constexpr long long kTile = 2048, kTileRows = 512;

// csr_stream's row blocks: consecutive rows, at most kTile nonzeros and kTileRows rows, a longer
// row alone.
std::vector<int> tiles(const spmvc::CsrMatrix& a) {
  std::vector<int> t{0};
  std::int64_t start = 0;
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    const long long nnz = a.row_ptr[r + 1] - a.row_ptr[start];
    if (r > start && (nnz > kTile || r - start >= kTileRows)) {
      t.push_back(static_cast<int>(r));
      start = r;
    }
  }
  t.push_back(static_cast<int>(a.nrows));
  return t;
}

template <typename T>
void run(const std::string& name, const spmvc::CsrMatrix& a, const std::vector<int>& smids) {
  constexpr bool kF64 = sizeof(T) == 8;
  spmvc::bench::probe::ProbeMatrix<T> m(a);
  const double base = cusparse_best_us<T>(a, m.x, m.y);
  const bool pattern = m.pattern;

  const std::vector<int> t = tiles(a);
  const int ntiles = static_cast<int>(t.size()) - 1;
  // Shares: the present multiprocessors in %smid order, each a run of tiles with an equal part of
  // the nonzeros; share_of maps %smid to its share.
  const int nshares = static_cast<int>(smids.size());
  std::vector<int> share_first{0}, share_of(1024, 0);
  for (int s = 0; s < nshares; ++s) share_of[static_cast<std::size_t>(smids[s])] = s;
  for (int s = 1; s < nshares; ++s) {
    const long long want = a.nnz() * s / nshares;
    int b = share_first.back();
    while (b < ntiles && a.row_ptr[t[b]] < want) ++b;
    share_first.push_back(b);
  }
  share_first.push_back(ntiles);
  DeviceArray dt(t.size() * sizeof(int)), dfirst(share_first.size() * sizeof(int)),
      dof(share_of.size() * sizeof(int)), dnext(static_cast<std::size_t>(nshares) * sizeof(int));
  dt.upload(t.data(), t.size() * sizeof(int));
  dfirst.upload(share_first.data(), share_first.size() * sizeof(int));
  dof.upload(share_of.data(), share_of.size() * sizeof(int));
  std::printf("%-14s %s cuSPARSE %7.1f us, %d tiles, %d shares%s\n", name.c_str(),
              kF64 ? "f64" : "f32", base, ntiles, nshares, pattern ? ", pattern" : "");
  double best[2] = {1e30, 1e30};
  for (const int grid_per_sm : {0, 8, 4}) {
    const int mode = grid_per_sm == 0 ? 0 : 1;
    const affinity_probe::TileArgs<T> args{ntiles,
                                           static_cast<const int*>(dt.get()),
                                           m.rowp(),
                                           m.colp(),
                                           m.valp(),
                                           m.xp(),
                                           m.yp(),
                                           pattern,
                                           nshares,
                                           static_cast<const int*>(dof.get()),
                                           static_cast<const int*>(dfirst.get()),
                                           static_cast<int*>(dnext.get()),
                                           nshares * std::max(grid_per_sm, 1)};
    auto launch = [&] { affinity_probe::launch<T>(args, mode); };
    m.y.fill_bytes(0xff);
    launch();
    if (cudaDeviceSynchronize() != cudaSuccess) {
      std::printf("  launch failed\n");
      return;
    }
    const double err = m.error();
    const double us = median_us(launch);
    best[mode] = std::min(best[mode], us);
    std::printf(
        "  %-22s %8.1f us %6.2fx  error %.1e\n",
        mode == 0 ? "a block a tile" : (grid_per_sm == 8 ? "affine, 8 a SM" : "affine, 4 a SM"), us,
        base / us, err);
  }
  std::printf("SUMMARY %-14s %s cuSPARSE %7.1f  a block a tile %7.1f %5.2fx  affine %7.1f %5.2fx\n",
              name.c_str(), kF64 ? "f64" : "f32", base, best[0], base / best[0], best[1],
              base / best[1]);
}

}  // namespace

int main(int argc, char** argv) {
  spmvc::bench::probe::Args args;
  if (!spmvc::bench::probe::parse_args(argc, argv, args)) return 2;
  const std::string& order = args.order;
  const std::vector<std::string>& inputs = args.inputs;
  try {
    const spmvc::bench::Gpu gpu = spmvc::bench::open_gpu();
    const std::vector<int> smids = affinity_probe::present_smids();
    std::printf("%s, %zu multiprocessors seen (%%smid %d..%d); order %s; medians of %d runs\n",
                gpu.name.c_str(), smids.size(), smids.empty() ? -1 : smids.front(),
                smids.empty() ? -1 : smids.back(), order.c_str(), kTimed);
    for (const std::string& in : inputs) {
      const spmvc::CsrMatrix a = spmvc::bench::probe::load(in);
      const spmvc::CsrMatrix b =
          order != "none" ? spmvc::permute(a, spmvc::compute_ordering(a, order)) : a;
      std::string name = in.substr(in.find_last_of('/') + 1);
      name = name.substr(0, name.find(".mtx"));
      run<double>(name, b, smids);
      run<float>(name, b, smids);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
