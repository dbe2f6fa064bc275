// The gather probe's kernels (gather_probe_kernels.cu): one pass over a matrix's nonzeros in
// storage order with no rows, 256-thread blocks on the default stream.
#pragma once

namespace gather_probe {

enum class Pass {
  stream,         // the column and value streams alone: sum of (T)col[k] * val[k]
  gather,         // the column stream and x gathered: sum of x[col[k]] (a pattern matrix)
  gather_values,  // both streams and x gathered: sum of val[k] * x[col[k]]
  // gather and gather_values with each product taken through shared memory (stored, a barrier,
  // read back by the thread that stored it): the least of what csr_stream's products cost
  // beside the gather (tile layout only)
  gather_shared,
  gather_values_shared,
  // gather and gather_values with each product taken through five warp shuffles (a butterfly
  // sum across the warp), what a warp-wide segmented scan of the products in registers costs
  // (tile layout only)
  gather_shuffle,
  gather_values_shuffle
};

/// How the nonzeros are dealt to the threads; in both, a warp's lanes take consecutive nonzeros.
enum class Layout {
  /// A resident grid (`blocks` blocks) sweeping the nonzeros in step: the whole grid's step
  /// covers blocks * 256 consecutive nonzeros, so x's accesses of the moment stay close together.
  sweep,
  /// A block for each tile of 2048 consecutive nonzeros, 8 a thread, launched in order: the
  /// tiles of csr_stream's default shape, without the row sums.
  tile
};

/// The number of threads (entries of `out`) a launch writes for `nnz` nonzeros.
long long out_entries(Layout layout, int blocks, long long nnz);

/// One pass over nnz nonzeros; each thread writes its sum to out[thread]. The shared and shuffle
/// passes run in the tile layout whatever `layout` says.
template <typename T>
void launch(Pass pass, Layout layout, int blocks, long long nnz, const int* col, const T* val,
            const T* x, T* out);

/// csr_warp's arrays (templates/csr_warp.cuh) on the device; nchunks and nlong padded to whole
/// blocks.
template <typename T>
struct WarpArgs {
  int nchunks;
  const int* chunk_row;
  const long long* chunk_nz;
  const long long* row_ptr;
  const int* col;
  const T* val;
  const T* x;
  T* y;
  T* partial;
  int nlong;
  const int* long_rows;
};

/// csr_warp's main launch then its long rows' fixup, in variant v's shape.
template <typename T>
void launch_warp(int variant, const WarpArgs<T>& args);

/// The number of csr_warp variants; variant v's chunk (nonzeros a warp takes at most) and name
/// (chunk/round[/s: a step where no row starts or ends skips the scan]). Variant 0 is the shape
/// the format generates.
constexpr int kWarpVariants = 4;
int warp_variant_chunk(int variant);
const char* warp_variant_name(int variant);

}  // namespace gather_probe
