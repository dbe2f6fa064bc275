#!/usr/bin/env python3
"""How many 128-byte lines of x a warp's gather touches, in CSR order and with each tile's
nonzeros sorted by column: what a csr_stream whose tiles hold their nonzeros in column order
(each product written to its row's slot in shared memory) would save the L1.

csr_stream's lanes take a tile's nonzeros in CSR order, 32 consecutive ones a warp load; on the
replicated graphs of suite v13 the L1 is 85-92% busy at about 10 sectors a load request
(bench/results/2026-11-29-h200-g-class/ncu-graphs.txt), and a divergent gather costs it a
wavefront for each line it touches, hit or miss. For each matrix and value size this prints the
mean distinct lines of x per warp request over chunks of --tile consecutive nonzeros (csr_stream's
tiles are row blocks of at most that many; the fixed chunks approximate them), first in CSR order,
then sorted by column within each chunk, and their ratio. Replicas (I_k (x) A) have A's figures:
a tile lies within one copy but at the copies' seams.

A CPU model only: nothing here was timed on a GPU. NumPy and SciPy (Debian's python3-numpy and
python3-scipy).

Usage: scripts/model/tile-gather-lines.py [--tile N] [--warp N] MATRIX [MATRIX ...]
  MATRIX: a Matrix Market file (.mtx, .mtx.gz, .mtx.xz) or the name of one in ../shared/matrices
"""
import argparse
import gzip
import lzma
import os
import sys

import numpy as np
import scipy.io
import scipy.sparse as sp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "matrices")
LINE_BYTES = 128


def load(name):
    path = name if os.path.exists(name) else os.path.join(SHARED, name + ".mtx.xz")
    if not os.path.exists(path):
        sys.exit(f"tile-gather-lines: {name}: no such file, nor {path}")
    opener = lzma.open if path.endswith(".xz") else gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        a = sp.csr_matrix(scipy.io.mmread(f))
    a.sort_indices()
    return a


def lines_per_request(lines, warp):
    """Mean distinct values per run of `warp` consecutive entries of each row of `lines`."""
    w = np.sort(lines.reshape(lines.shape[0], -1, warp), axis=2)
    return float(((np.diff(w, axis=2) != 0).sum(axis=2) + 1).mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tile", type=int, default=2048, help="nonzeros a tile (csr_stream's default)")
    ap.add_argument("--warp", type=int, default=32)
    ap.add_argument("matrices", nargs="+")
    args = ap.parse_args()
    if args.tile % args.warp:
        sys.exit("tile-gather-lines: --tile must be a multiple of --warp")
    print(f"lines of x per warp request (--tile {args.tile}, --warp {args.warp}); "
          "ratio = CSR order / sorted")
    print(f"{'matrix':22s} {'value':>5s} {'CSR order':>10s} {'sorted':>8s} {'ratio':>6s}")
    for name in args.matrices:
        a = load(name)
        cols = a.indices.astype(np.int64)
        usable = len(cols) - len(cols) % args.tile
        if usable == 0:
            print(f"{os.path.basename(name):22s} fewer nonzeros than one tile")
            continue
        chunks = cols[:usable].reshape(-1, args.tile)
        for value_bytes in (4, 8):
            lines = chunks * value_bytes // LINE_BYTES
            csr = lines_per_request(lines, args.warp)
            tiled = lines_per_request(np.sort(lines, axis=1), args.warp)
            print(f"{os.path.basename(name):22s} {'fp32' if value_bytes == 4 else 'fp64':>5s} "
                  f"{csr:10.1f} {tiled:8.1f} {csr / tiled:6.2f}")


if __name__ == "__main__":
    main()
