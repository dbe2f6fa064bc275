// Building bcsr and bellpack on the GPU from a CSR matrix already in device memory
// (spmvc::DeviceCsr), and the block inspection the planner reads for them
// (Profile::block_shapes, aligned shapes 1..8 x 1..8). The arrays are the host encoders'
// (compiler/formats/{bcsr,bellpack}), element for element; what each nonzero decides is
// templates/device_block_index.cuh, shared with a host test.
//
// The encoders' passes take a thread per nonzero (grid-stride), which finds its row by a binary
// search of the offsets, so a long row costs no more than many short ones; the inspection takes
// a warp per row, which needs no search. Columns must be strictly
// increasing within every row: block_inspect says whether they are, and the runtime builds the
// block formats only when they are. The runtime clears the outputs first (bellpack's padding
// columns -1, every value 0), so the fills write only what the nonzeros hold.
//
// block_inspect    a warp per row; per nonzero of the visited block rows
//                  (device_block_index.cuh), for every r and c: whether it opens its block;
//                  counts[(r-1)*8 + c-1] sums the blocks, counts[64 + r-1] the visited nonzeros;
//                  `unsorted` set when a row's columns do not increase.
// block_open       flags[k] = 1 when nonzero k opens its r x c block (a scan then numbers the
//                  blocks).
// block_row_ptr    one thread per block row: brow_ptr[br] = the blocks opened before its first
//                  nonzero (br = 0..nbrows), and the largest block count into most[0].
// bcsr_fill        per nonzero: its block's index and value slot; the opener writes bcol.
// bellpack_iota, bellpack_split_flags, bellpack_split_scatter
//                  the stable sort of block rows by descending block count: identity, then one
//                  binary radix pass per key bit (flags of the zero bits, their scan, the
//                  scatter).
// bellpack_widths  one thread per slice entry: slice_ptr[0] = 0, slice_ptr[s + 1] = the slice's
//                  first (widest) block row's count times C; a scan makes them offsets; and
//                  inverse[perm[i]] = i.
// bellpack_fill    per nonzero: its block's slot in its block row's slice.
#pragma once

#include "spmvc/device_block_index.cuh"

namespace spmvc {
namespace device_block {

constexpr int kBlock = 256;  // threads per block of every entry point
constexpr int kCounters = kShapes + kMaxBlock;

__device__ __forceinline__ long long grid_thread() {
  return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long grid_threads() {
  return static_cast<long long>(gridDim.x) * blockDim.x;
}

/// Copies element k of `src` (elem_bytes each: 4 or 8) to slot `pos` of `dst`.
__device__ __forceinline__ void copy_value(const void* __restrict__ src, void* __restrict__ dst,
                                           int elem_bytes, long long k, long long pos) {
  if (elem_bytes == 8) {
    static_cast<unsigned long long*>(dst)[pos] =
        __ldg(static_cast<const unsigned long long*>(src) + k);
  } else if (elem_bytes == 4) {
    static_cast<unsigned int*>(dst)[pos] = __ldg(static_cast<const unsigned int*>(src) + k);
  }
}

__device__ __forceinline__ void block_inspect(const int* __restrict__ row_ptr,
                                              const int* __restrict__ col_idx, long long nrows,
                                              long long windows, long long len,
                                              unsigned long long* __restrict__ counts,
                                              int* __restrict__ unsorted) {
  __shared__ unsigned long long acc[kCounters];
  for (int i = threadIdx.x; i < kCounters; i += blockDim.x) acc[i] = 0;
  __syncthreads();
  bool disorder = false;
  const int lane = threadIdx.x & 31;
  for (long long row = grid_thread() >> 5; row < nrows; row += grid_threads() >> 5) {
    // The block heights whose block row of this row the inspection visits.
    unsigned heights = 0;
    for (int r = 1; r <= kMaxBlock; ++r)
      if (block_row_visited(row / r * r, r, nrows, windows, len)) heights |= 1u << (r - 1);
    const long long b = row_ptr[row], e = row_ptr[row + 1];
    for (long long k = b + lane; k < e; k += 32) {
      if (k > b && col_idx[k - 1] >= col_idx[k]) disorder = true;
      for (int r = 1; r <= kMaxBlock; ++r) {
        if ((heights & (1u << (r - 1))) == 0) continue;
        atomicAdd(&acc[kShapes + r - 1], 1ull);
        const unsigned mask = open_mask(row_ptr, col_idx, row / r * r, row, k);
        for (int c = 1; c <= kMaxBlock; ++c)
          if (mask & (1u << (c - 1))) atomicAdd(&acc[(r - 1) * kMaxBlock + c - 1], 1ull);
      }
    }
  }
  if (disorder) atomicExch(unsorted, 1);
  __syncthreads();
  for (int i = threadIdx.x; i < kCounters; i += blockDim.x)
    if (acc[i] != 0) atomicAdd(counts + i, acc[i]);
}

__device__ __forceinline__ void block_open(const int* __restrict__ row_ptr,
                                           const int* __restrict__ col_idx, long long nrows,
                                           long long nnz, int r, int c,
                                           long long* __restrict__ flags) {
  for (long long k = grid_thread(); k < nnz; k += grid_threads()) {
    const long long row = row_of(row_ptr, nrows, k);
    const unsigned mask = open_mask(row_ptr, col_idx, row / r * r, row, k);
    flags[k] = (mask >> (c - 1)) & 1u;
  }
}

__device__ __forceinline__ void block_row_ptr(const int* __restrict__ row_ptr, long long nrows,
                                              int r, const long long* __restrict__ incl,
                                              long long* __restrict__ brow_ptr,
                                              unsigned long long* __restrict__ most) {
  const long long nbrows = (nrows + r - 1) / r;
  for (long long br = grid_thread(); br <= nbrows; br += grid_threads()) {
    const long long r0 = br * r < nrows ? br * r : nrows;
    const long long r1 = r0 + r < nrows ? r0 + r : nrows;
    const long long first = opened_before(incl, row_ptr[r0]);
    brow_ptr[br] = first;
    if (br < nbrows) {
      const long long count = opened_before(incl, row_ptr[r1]) - first;
      atomicMax(most, static_cast<unsigned long long>(count));
    }
  }
}

// The block of nonzero k (of row `row`): its block row's first row, its index among the block
// row's blocks, and whether k opens it.
struct BlockOf {
  long long r0, rank;
  bool opens;
};
__device__ __forceinline__ BlockOf block_of(const int* __restrict__ row_ptr,
                                            const int* __restrict__ col_idx, long long nrows,
                                            long long row, long long k, int r, int c,
                                            const long long* __restrict__ incl) {
  BlockOf b;
  b.r0 = static_cast<long long>(static_cast<int>(row) / r * r);
  const long long r1 = b.r0 + r < nrows ? b.r0 + r : nrows;
  b.rank = block_rank(row_ptr, col_idx, incl, b.r0, r1, col_idx[k] / c, c);
  b.opens = incl[k] - opened_before(incl, k) == 1;
  return b;
}

__device__ __forceinline__ void bcsr_fill(const int* __restrict__ row_ptr,
                                          const int* __restrict__ col_idx,
                                          const void* __restrict__ src, int elem_bytes,
                                          long long nrows, long long nnz, int r, int c,
                                          const long long* __restrict__ incl,
                                          int* __restrict__ bcol, void* __restrict__ values) {
  for (long long k = grid_thread(); k < nnz; k += grid_threads()) {
    const long long row = row_of(row_ptr, nrows, k);
    const BlockOf b = block_of(row_ptr, col_idx, nrows, row, k, r, c, incl);
    const long long blk = opened_before(incl, row_ptr[b.r0]) + b.rank;
    const int col = col_idx[k];
    if (b.opens) bcol[blk] = col / c;
    copy_value(src, values, elem_bytes, k,
               bcsr_value_slot(blk, r, c, static_cast<int>(row - b.r0), col % c));
  }
}

__device__ __forceinline__ void bellpack_iota(long long n, int* __restrict__ perm) {
  for (long long i = grid_thread(); i < n; i += grid_threads()) perm[i] = static_cast<int>(i);
}

__device__ __forceinline__ void bellpack_split_flags(const long long* __restrict__ brow_ptr,
                                                     const int* __restrict__ perm, long long n,
                                                     long long most, int bit,
                                                     long long* __restrict__ flags) {
  for (long long i = grid_thread(); i < n; i += grid_threads()) {
    const int br = perm[i];
    const long long key = sort_key(brow_ptr[br + 1] - brow_ptr[br], most);
    flags[i] = ((key >> bit) & 1) == 0 ? 1 : 0;
  }
}

__device__ __forceinline__ void bellpack_split_scatter(const int* __restrict__ perm, long long n,
                                                       const long long* __restrict__ incl,
                                                       int* __restrict__ out) {
  const long long zeros = n > 0 ? incl[n - 1] : 0;
  for (long long i = grid_thread(); i < n; i += grid_threads()) {
    const bool zero = incl[i] - (i > 0 ? incl[i - 1] : 0) == 1;
    out[split_position(i, zero, incl[i], zeros)] = perm[i];
  }
}

__device__ __forceinline__ void bellpack_widths(const long long* __restrict__ brow_ptr,
                                                const int* __restrict__ perm, long long nbrows,
                                                int h, long long* __restrict__ slice_ptr,
                                                int* __restrict__ inverse) {
  const long long nslices = (nbrows + h - 1) / h;
  for (long long i = grid_thread(); i <= nslices || i < nbrows; i += grid_threads()) {
    if (i < nbrows) inverse[perm[i]] = static_cast<int>(i);
    if (i == 0) slice_ptr[0] = 0;
    if (i < nslices) {
      const int br = perm[i * h];
      slice_ptr[i + 1] = (brow_ptr[br + 1] - brow_ptr[br]) * h;
    }
  }
}

__device__ __forceinline__ void bellpack_fill(
    const int* __restrict__ row_ptr, const int* __restrict__ col_idx, const void* __restrict__ src,
    int elem_bytes, long long nrows, long long nnz, int r, int c, int h,
    const long long* __restrict__ incl, const int* __restrict__ inverse,
    const long long* __restrict__ slice_ptr, int* __restrict__ bcol, void* __restrict__ values) {
  for (long long k = grid_thread(); k < nnz; k += grid_threads()) {
    const long long row = row_of(row_ptr, nrows, k);
    const BlockOf b = block_of(row_ptr, col_idx, nrows, row, k, r, c, incl);
    // 32-bit divisions (rows and block rows fit an int): a 64-bit one is a subroutine call.
    const int sorted = inverse[static_cast<int>(b.r0) / r];
    const long long base = slice_ptr[sorted / h], bl = sorted % h;
    const int col = col_idx[k];
    if (b.opens) bcol[bellpack_slot(base, b.rank, h, bl)] = col / c;
    copy_value(
        src, values, elem_bytes, k,
        bellpack_value_slot(base, b.rank, h, bl, r, c, static_cast<int>(row - b.r0), col % c));
  }
}

}  // namespace device_block
}  // namespace spmvc
