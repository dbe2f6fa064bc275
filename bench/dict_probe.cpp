// How far x staged in shared memory takes a CSR SpMV where L1's gathers are the limit (the
// replicated graphs of class G): rows cut into blocks of consecutive rows whose distinct columns
// fit a dictionary of C elements and whose nonzeros are at most M; each thread block loads its
// dictionary's x into shared memory, then takes its rows, `lanes` lanes a row, reading x there
// through 16-bit positions. The same blocks reading x in place at 32-bit columns are timed
// beside it, and cuSPARSE's best CSR algorithm on the matrix as given is the baseline. No spmvc
// format is involved. A .mtx or .mtx.xz file is replicated down the diagonal to 16M nonzeros
// as the suite's x16M entries are.
//
//   spmvc_bench_dict_probe [--order NAME] SPEC|FILE...
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "dict_probe_kernels.hpp"
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

struct Blocks {
  std::vector<int> blk_row{0}, blk_dict{0}, dict;
  std::vector<unsigned short> lcol;
  std::vector<unsigned char> wide;  // a block (one row) whose columns pass the dictionary
  int max_dict = 0;
  bool ok = true;
};

// Greedy blocks of consecutive rows: a row joins the block unless its new columns would take the
// dictionary past `cap`, the nonzeros past `max_nnz` or the rows past `max_rows`. A row alone
// past `cap` is a wide block: no dictionary, x read in place (ok false).
Blocks build(const spmvc::CsrMatrix& a, int cap, long long max_nnz, long long max_rows) {
  Blocks b;
  b.lcol.resize(a.col_idx.size());
  std::vector<int> stamp(static_cast<std::size_t>(a.ncols), -1), slot(a.ncols);
  std::vector<int> cols;
  int block = 0;
  std::int64_t start = 0;
  auto close = [&](std::int64_t end) {
    const bool wide = static_cast<int>(cols.size()) > cap;
    b.wide.push_back(wide ? 1 : 0);
    if (wide) cols.clear();
    std::sort(cols.begin(), cols.end());
    for (std::size_t i = 0; i < cols.size(); ++i) slot[cols[i]] = static_cast<int>(i);
    for (std::int64_t k = a.row_ptr[start]; k < a.row_ptr[end]; ++k)
      b.lcol[k] = wide ? 0 : static_cast<unsigned short>(slot[a.col_idx[k]]);
    b.dict.insert(b.dict.end(), cols.begin(), cols.end());
    b.max_dict = std::max(b.max_dict, static_cast<int>(cols.size()));
    b.blk_row.push_back(static_cast<int>(end));
    b.blk_dict.push_back(static_cast<int>(b.dict.size()));
    cols.clear();
    start = end;
    ++block;
  };
  for (std::int64_t r = 0; r < a.nrows; ++r) {
    int fresh = 0;
    for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k)
      fresh += stamp[a.col_idx[k]] != block;
    const long long nnz = a.row_ptr[r + 1] - a.row_ptr[start];
    if (r > start &&
        (static_cast<int>(cols.size()) + fresh > cap || nnz > max_nnz || r - start >= max_rows)) {
      close(r);
      fresh = static_cast<int>(a.row_length(r));
    }
    if (fresh > cap) b.ok = false;
    for (std::int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      const int c = a.col_idx[k];
      if (stamp[c] != block) {
        stamp[c] = block;
        cols.push_back(c);
      }
    }
  }
  if (start < a.nrows || b.blk_row.size() == 1) close(a.nrows);
  return b;
}

template <typename T>
void run(const std::string& name, const spmvc::CsrMatrix* input, const spmvc::CsrMatrix& a,
         const std::vector<std::pair<int, long long>>& shapes) {
  constexpr bool kF64 = sizeof(T) == 8;
  spmvc::bench::probe::ProbeMatrix<T> m(a);
  const double here = cusparse_best_us<T>(a, m.x, m.y);
  const double base = input != nullptr ? cusparse_best_us<T>(*input, m.x, m.y) : here;
  const bool pattern = m.pattern;
  std::printf("%-22s %s cuSPARSE %.1f us (here %.1f)%s\n", name.c_str(), kF64 ? "f64" : "f32", base,
              here, pattern ? ", pattern" : "");
  double best_staged = 1e30, best_place = 1e30, tile_staged = 1e30, tile_place = 1e30;
  for (const auto& [cap, max_nnz] : shapes) {
    const bool tile = cap < 0;  // csr_stream's shape, tile -cap
    const int c = tile ? -cap : cap;
    if (static_cast<std::size_t>(c) * sizeof(T) > 200 * 1024) continue;
    const Blocks b = build(a, c, tile ? c : max_nnz, tile ? 512 : a.nrows);
    if (!b.ok && !tile) {
      std::printf("  C %5d M %6lld: a row reads more than C columns\n", cap, max_nnz);
      continue;
    }
    const int nb = static_cast<int>(b.blk_row.size()) - 1;
    DeviceArray bw(b.wide.size());
    bw.upload(b.wide.data(), b.wide.size());
    DeviceArray br(b.blk_row.size() * 4), bd(b.blk_dict.size() * 4),
        dd(std::max<std::size_t>(b.dict.size(), 1) * 4),
        lc(std::max<std::size_t>(b.lcol.size(), 1) * 2);
    br.upload(b.blk_row.data(), b.blk_row.size() * 4);
    bd.upload(b.blk_dict.data(), b.blk_dict.size() * 4);
    dd.upload(b.dict.data(), b.dict.size() * 4);
    lc.upload(b.lcol.data(), b.lcol.size() * 2);
    const dict_probe::DictArgs<T> args{nb,
                                       b.max_dict,
                                       static_cast<const int*>(br.get()),
                                       static_cast<const int*>(bd.get()),
                                       static_cast<const int*>(dd.get()),
                                       m.rowp(),
                                       static_cast<const unsigned short*>(lc.get()),
                                       m.colp(),
                                       m.valp(),
                                       m.xp(),
                                       m.yp(),
                                       pattern,
                                       static_cast<const unsigned char*>(bw.get())};
    long long nwide = 0;
    for (const unsigned char w : b.wide) nwide += w;
    std::printf("  %s %5d M %6lld: %7d blocks (%lld wide), dictionary %.3f a nonzero, largest %d\n",
                tile ? "tile" : "C   ", c, tile ? static_cast<long long>(c) : max_nnz, nb, nwide,
                static_cast<double>(b.dict.size()) / std::max(1.0, static_cast<double>(a.nnz())),
                b.max_dict);
    for (const int lanes : {4, 8}) {
      if (tile && lanes != 4) continue;
      for (const bool staged : {true, false}) {
        auto launch = [&] {
          if (tile) {
            dict_probe::launch_tile<T>(args, c, staged);
          } else {
            dict_probe::launch<T>(args, lanes, staged);
          }
        };
        m.y.fill_bytes(0xff);
        launch();
        const cudaError_t e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
          std::printf("    error %s\n", cudaGetErrorString(e));
          return;
        }
        const double err = m.error();
        const double us = median_us(launch);
        double& best =
            tile ? (staged ? tile_staged : tile_place) : (staged ? best_staged : best_place);
        best = std::min(best, us);
        std::printf("    %s %2d %-8s %8.1f us %6.2fx  error %.1e\n", tile ? "tile " : "lanes",
                    tile ? 0 : lanes, staged ? "staged" : "in place", us, base / us, err);
      }
    }
  }
  std::printf(
      "SUMMARY %-14s %s cuSPARSE %6.1f  rows: staged %6.1f %5.2fx in place %6.1f %5.2fx  "
      "tiles: staged %6.1f %5.2fx in place %6.1f %5.2fx\n",
      name.c_str(), kF64 ? "f64" : "f32", base, best_staged, base / best_staged, best_place,
      base / best_place, tile_staged, base / tile_staged, tile_place, base / tile_place);
}

}  // namespace

int main(int argc, char** argv) {
  spmvc::bench::probe::Args args;
  if (!spmvc::bench::probe::parse_args(argc, argv, args)) return 2;
  const std::string& order = args.order;
  const std::vector<std::string>& inputs = args.inputs;
  // Row mapping (C, M), then csr_stream's shape (-tile).
  const std::vector<std::pair<int, long long>> shapes = {{4096, 8192}, {-1024, 0}, {-2048, 0}};
  try {
    const spmvc::bench::Gpu gpu = spmvc::bench::open_gpu();
    std::printf("%s; order %s; medians of %d runs; C dictionary elements, M nonzeros a block\n",
                gpu.name.c_str(), order.c_str(), kTimed);
    for (const std::string& in : inputs) {
      const spmvc::CsrMatrix a = spmvc::bench::probe::load(in);
      const spmvc::CsrMatrix b =
          order != "none" ? spmvc::permute(a, spmvc::compute_ordering(a, order)) : a;
      const spmvc::CsrMatrix* input = order != "none" ? &a : nullptr;
      std::string name = in.substr(in.find_last_of('/') + 1);
      name = name.substr(0, name.find(".mtx"));
      run<double>(name, input, b, shapes);
      run<float>(name, input, b, shapes);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
