// The dictionary probe's kernels (dict_probe_kernels.cu): CSR SpMV by row blocks whose distinct
// columns are loaded into shared memory first, against the same row mapping reading x in place.
#pragma once

namespace dict_probe {

/// One row block's arrays on the device. blk_row[b]..blk_row[b+1] are block b's rows,
/// blk_dict[b]..blk_dict[b+1] its distinct columns (sorted) in dict; lcol[k] is nonzero k's
/// position in its block's dictionary.
template <typename T>
struct DictArgs {
  int nblocks;
  int max_dict;  // the largest block's dictionary (shared memory elements)
  const int* blk_row;
  const int* blk_dict;
  const int* dict;
  const int* row_ptr;
  const unsigned short* lcol;
  const int* col;  // global columns (the in-place variant)
  const T* val;
  const T* x;
  T* y;
  bool pattern;               // every value 1: no value stream
  const unsigned char* wide;  // per block: 1 where its dictionary would pass C (x read in place)
};

/// lanes: 4, 8, 16 or 32 lanes a row. staged: x through the block's dictionary in shared memory;
/// otherwise x read in place at the global column (same blocks, same mapping).
template <typename T>
void launch(const DictArgs<T>& args, int lanes, bool staged);

/// csr_stream's shape on the same blocks (at most `tile` nonzeros a block, or one longer row):
/// every thread takes the block's nonzeros in turn, its products go to shared memory, and each
/// row is summed from there by 1-32 lanes. tile: 1024 or 2048.
template <typename T>
void launch_tile(const DictArgs<T>& args, int tile, bool staged);

}  // namespace dict_probe
