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
  // Affine: the tiles of share s are [share_first[s], share_first[s+1]), nshares shares (one per
  // possible %smid), taken through next[s]; the grid's blocks each start at their own SM's share
  // and move on to the next shares once it is done.
  int nshares;
  const int* share_of;  // share_of[smid]: the share of the multiprocessor %smid
  const int* share_first;
  int* next;
  int grid;
};

/// mode 0: a block a tile; mode 1: the affine persistent grid (next[] zeroed by the caller).
template <typename T>
void launch(const TileArgs<T>& args, int mode);

/// The %smid values the device's blocks run on (a kernel of many blocks records them), ascending.
std::vector<int> present_smids();

}  // namespace affinity_probe
