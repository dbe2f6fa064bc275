#!/usr/bin/env python3
"""Independent check of the suite's cuSPARSE baseline: times `A @ x` through CuPy
(cupyx.scipy.sparse.csr_matrix, which calls cuSPARSE) with CUDA events, for suite entries built from
public matrices, and compares with the cuSPARSE times the suite measured in its own process.

The matrix is rebuilt here as the suite built it: the public matrix read with SciPy (symmetric
storage expanded), then I_k (x) A with the suite's k (its `replicas` field). Values do not change a
CSR SpMV's time, so the replicas keep A's values.

Usage (on the GPU machine, after the suite ran there):
  scripts/gpu/cupy-check.py SUITE.json MATRIX_DIR [--only REGEX] [--reps N] [--out FILE.json]
Prints one row per entry and precision: CuPy's median, the suite's ALG1 and best cuSPARSE times,
and their ratios.
"""
import argparse
import json
import lzma
import re
import statistics
import sys

import cupy as cp
import cupyx.scipy.sparse as cusp
import numpy as np
import scipy.io
import scipy.sparse as sp


def load(matrix_dir, name, k):
    with lzma.open(f"{matrix_dir}/{name}.mtx.xz") as f:
        a = sp.csr_matrix(scipy.io.mmread(f))
    if k > 1:
        a = sp.kron(sp.identity(k, format="csr"), a, format="csr")
    a.sort_indices()
    return a


def time_spmv(a_host, dtype, reps):
    a = cusp.csr_matrix(a_host.astype(dtype))
    x = cp.asarray(np.cos(np.arange(a.shape[1], dtype=np.float64) * 0.37)).astype(dtype)
    for _ in range(5):  # warm up: handles, buffers, the memory pool
        y = a @ x
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        y = a @ x
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    ref = a_host.astype(np.float64) @ cp.asnumpy(x).astype(np.float64)
    err = float(np.linalg.norm(cp.asnumpy(y) - ref) / max(np.linalg.norm(ref), 1e-300))
    return statistics.median(times), err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("suite")
    ap.add_argument("matrix_dir")
    ap.add_argument("--only", default="x16M$")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--out")
    a = ap.parse_args()
    with open(a.suite) as f:
        doc = json.load(f)
    rows = []
    cache = {}
    for r in doc["results"]:
        if "precision" not in r or not re.search(a.only, r["matrix"]) or ":" in r["source"]:
            continue
        key = (r["source"], r.get("replicas", 1))
        if key not in cache:
            cache.clear()
            cache[key] = load(a.matrix_dir, *key)
        host = cache[key]
        if host.nnz != r["nnz"]:
            print(f"{r['matrix']}: {host.nnz} nonzeros here, {r['nnz']} in the suite: skipped",
                  file=sys.stderr)
            continue
        dtype = np.float64 if r["precision"] == "f64" else np.float32
        ms, err = time_spmv(host, dtype, a.reps)
        alg1 = r["cusparse"].get("csr_alg1", {}).get("ms")
        rows.append({"matrix": r["matrix"], "precision": r["precision"], "nnz": r["nnz"],
                     "cupy_ms": ms, "cupy_relative_error": err, "suite_alg1_ms": alg1,
                     "suite_best_ms": r["best_cusparse_ms"]})
        print(f"  {r['matrix']} {r['precision']}: cupy {ms * 1e3:.1f} us", file=sys.stderr)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"gpu": doc["gpu"], "cupy": cp.__version__,
                       "cusparse_suite": doc["cusparse"], "rows": rows}, f, separators=(",", ":"))
    print(f"CuPy {cp.__version__} `A @ x` against the suite's cuSPARSE ({doc['cusparse']}) on "
          f"{doc['gpu']}")
    print(f"{'matrix':<24} {'prec':<4} {'cupy us':>8} {'alg1 us':>8} {'best us':>8} "
          f"{'cupy/alg1':>9} {'cupy/best':>9}")
    for w in rows:
        alg1 = w["suite_alg1_ms"]
        print(f"{w['matrix'][:24]:<24} {w['precision']:<4} {w['cupy_ms'] * 1e3:>8.1f} "
              f"{alg1 * 1e3 if alg1 else float('nan'):>8.1f} {w['suite_best_ms'] * 1e3:>8.1f} "
              f"{w['cupy_ms'] / alg1 if alg1 else float('nan'):>9.3f} "
              f"{w['cupy_ms'] / w['suite_best_ms']:>9.3f}")


if __name__ == "__main__":
    main()
