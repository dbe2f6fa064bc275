// The affinity probe's kernels (affinity_probe_kernels.cu): csr_stream's shape (tiles of at most
// 2048 nonzeros and 512 rows, a longer row a tile of its own) launched one block a tile, against a
// persistent grid whose blocks take the tiles of their own multiprocessor's share of the rows.
#pragma once

#include <vector>

namespace affinity_probe {

template <typename T>
struct TileArgs {
  int ntiles;
  const int* tile_row;  // tile b: rows [tile_row[b], tile_row[b+1])
  const int* row_ptr;
  const int* col;
  const T* val;
  const T* x;
  T* y;
  bool pattern;
  // Affine: the tiles of share s are [share_first[s], share_first[s+1]), one share for each
  // multiprocessor present. A block takes a rank on its own multiprocessor from next[s] (one
  // atomic), then the share's tiles first + rank, first + rank + grid / nshares, ... A
  // multiprocessor given fewer than grid / nshares blocks leaves tiles undone, which the probe's
  // error check shows.
  int nshares;
  const int* share_of;  // share_of[smid]: the share of the multiprocessor %smid
  const int* share_first;
  int* next;
  int grid;
};

/// mode 0: a block a tile; mode 1: the affine persistent grid (next[] zeroed first, on the
/// same stream, inside what a caller times).
template <typename T>
void launch(const TileArgs<T>& args, int mode);

/// The %smid values the device's blocks run on (a kernel of many blocks records them), ascending.
std::vector<int> present_smids();

}  // namespace affinity_probe
