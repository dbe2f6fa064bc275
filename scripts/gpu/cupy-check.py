#!/usr/bin/env python3
"""Independent check of the suite's cuSPARSE baseline: times `A @ x` through CuPy
(cupyx.scipy.sparse.csr_matrix, which calls cuSPARSE) with CUDA events, for suite entries built from
public matrices, and compares with the cuSPARSE times the suite measured in its own process.

The matrix is rebuilt here as the suite built it: the public matrix read with SciPy (symmetric
storage expanded), then I_k (x) A with the suite's k (its `replicas` field). Values do not change a
CSR SpMV's time, so the replicas keep A's values.

Two CuPy figures per entry: `A @ x` as a user writes it (each call makes its cuSPARSE descriptors,
asks for and allocates the work buffer and allocates y, host work the GPU waits for), and the same
cusparseSpMV call with the descriptors and buffer made once through CuPy's cuSPARSE bindings (what
an iterative solver's matvec costs, and what the suite's cuSPARSE baseline times).

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
import cupyx.cusparse as cx
import cupyx.scipy.sparse as cusp
from cupy._core import _dtype
from cupy.cuda import device as cdevice
from cupy_backends.cuda.libs import cusparse as lib
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


def median_ms(fn, reps):
    for _ in range(5):  # warm up: handles, buffers, the memory pool
        fn()
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


def time_spmv(a_host, dtype, reps):
    """(A @ x median ms, prepared cusparseSpMV median ms, relative error of A @ x)."""
    a = cusp.csr_matrix(a_host.astype(dtype))
    x = cp.asarray(np.cos(np.arange(a.shape[1], dtype=np.float64) * 0.37)).astype(dtype)
    out = {}

    def user():
        out["y"] = a @ x

    user_ms = median_ms(user, reps)
    ref = a_host.astype(np.float64) @ cp.asnumpy(x).astype(np.float64)
    err = float(np.linalg.norm(cp.asnumpy(out["y"]) - ref) / max(np.linalg.norm(ref), 1e-300))

    # The same call with everything but the multiply made once.
    y = cp.empty(a.shape[0], dtype)
    handle = cdevice.get_cusparse_handle()
    mat, vx, vy = (cx.SpMatDescriptor.create(a), cx.DnVecDescriptor.create(x),
                   cx.DnVecDescriptor.create(y))
    one, zero = np.array(1, dtype), np.array(0, dtype)
    op = lib.CUSPARSE_OPERATION_NON_TRANSPOSE
    alg = getattr(lib, "CUSPARSE_SPMV_ALG_DEFAULT", getattr(lib, "CUSPARSE_MV_ALG_DEFAULT", 0))
    ctype = _dtype.to_cuda_dtype(np.dtype(dtype))
    size = lib.spMV_bufferSize(handle, op, one.ctypes.data, mat.desc, vx.desc, zero.ctypes.data,
                               vy.desc, ctype, alg)
    buf = cp.empty(max(size, 1), cp.int8)

    def prepared():
        lib.spMV(handle, op, one.ctypes.data, mat.desc, vx.desc, zero.ctypes.data, vy.desc, ctype,
                 alg, buf.data.ptr)

    prepared_ms = median_ms(prepared, reps)
    if not cp.allclose(y, out["y"], rtol=1e-4 if dtype == np.float32 else 1e-10):
        raise SystemExit("prepared cusparseSpMV disagrees with A @ x")
    return user_ms, prepared_ms, err


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
        ms, prepared, err = time_spmv(host, dtype, a.reps)
        alg1 = r["cusparse"].get("csr_alg1", {}).get("ms")
        rows.append({"matrix": r["matrix"], "precision": r["precision"], "nnz": r["nnz"],
                     "cupy_ms": ms, "cupy_prepared_ms": prepared, "cupy_relative_error": err,
                     "suite_alg1_ms": alg1, "suite_best_ms": r["best_cusparse_ms"]})
        print(f"  {r['matrix']} {r['precision']}: cupy {ms * 1e3:.1f} us, prepared "
              f"{prepared * 1e3:.1f} us", file=sys.stderr)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"gpu": doc["gpu"], "cupy": cp.__version__,
                       "cusparse_suite": doc["cusparse"], "rows": rows}, f, separators=(",", ":"))
    print(f"CuPy {cp.__version__} `A @ x` against the suite's cuSPARSE ({doc['cusparse']}) on "
          f"{doc['gpu']}")
    print(f"{'matrix':<24} {'prec':<4} {'A@x us':>8} {'prep us':>8} {'alg1 us':>8} "
          f"{'best us':>8} {'prep/alg1':>9} {'A@x/alg1':>9}")
    for w in rows:
        alg1 = w["suite_alg1_ms"] or float("nan")
        print(f"{w['matrix'][:24]:<24} {w['precision']:<4} {w['cupy_ms'] * 1e3:>8.1f} "
              f"{w['cupy_prepared_ms'] * 1e3:>8.1f} {alg1 * 1e3:>8.1f} "
              f"{w['suite_best_ms'] * 1e3:>8.1f} {w['cupy_prepared_ms'] / alg1:>9.3f} "
              f"{w['cupy_ms'] / alg1:>9.3f}")


if __name__ == "__main__":
    main()
