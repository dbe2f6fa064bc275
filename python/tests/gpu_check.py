"""The Python package on a GPU (CuPy, SciPy and PyTorch installed; nothing is built here).

    python3 python/tests/gpu_check.py [--matrices DIR] [--paths device,host] [--examples DIR]

1. Every public matrix with >= 10k nonzeros (DIR/index.csv, full_nnz), fp64 and fp32, compiled
   from CuPy device arrays ("device": no copy) and from SciPy host arrays ("host": uploaded and
   built on the GPU, build "auto"): op @ x against cupyx's A @ x in the same precision. The error is
   max_i |y_i - y_cupyx_i| / max_i (|A| |x|)_i, which must be <= 1e-12 (fp64) or 1e-5 (fp32).
2. cupyx.scipy.sparse.linalg.cg with op.as_linear_operator() against cg with the CuPy matrix:
   both converge, to the same solution; times of both. gmres the same on a nonsymmetric matrix.
3. Zero copy: compiled from CuPy and from PyTorch arrays, the pointers handed to the kernel are
   the caller's (x, y, the stream), y is written in place, and scaling the caller's values in
   place scales the next product (the kernel reads the caller's value array).
4. The examples: examples/python/*.py, and with --examples DIR (examples/ built against an
   install, see scripts/gpu/prepare-python-check) cg_cusparse, emit_nvcc.sh and the C
   interface's test (DIR/../bin/test_capi: compile and apply through spmvc.h).
5. Operations: on the first six matrices, fp64 and fp32, op.apply_many on C- and
   Fortran-ordered CuPy blocks (k = 3, 8, 32) and on a NumPy block (host pipeline with
   keep_csr=True), and op.apply_transpose, against cupyx's products, with the error of 1.
6. Plan order: a PageRank-like iteration on CuPy vectors in an operator's plan order
   (plan_order=True, dbg) against cupyx's, and the permutations' round trip.
Prints a short table last; exit code 1 when any check fails.
"""

import argparse
import csv
import inspect
import os
import pathlib
import subprocess
import sys
import threading
import time

import numpy as np
import scipy.sparse as sp

import spmvc

import cupy
import cupyx.scipy.sparse as csp
import cupyx.scipy.sparse.linalg as cla

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOLERANCE = {"f64": 1e-12, "f32": 1e-5}
rows = []  # (section, name, result, detail)
failed = []


def record(section, name, ok, detail):
    rows.append((section, name, "ok" if ok else "FAIL", detail))
    if not ok:
        failed.append(f"{section} {name}: {detail}")
    print(f"[{section}] {name}: {'ok' if ok else 'FAIL'} {detail}", flush=True)


def matrices(folder, min_nnz=10_000):
    index = folder / "index.csv"
    with open(index) as f:
        for row in csv.DictReader(f):
            path = folder / f"{row['name']}.mtx.xz"
            if int(row["full_nnz"]) >= min_nnz and path.exists():
                yield row["name"], path


def spmv_error(y, y_ref, bound):
    return float(cupy.abs(y.astype(cupy.float64) - y_ref.astype(cupy.float64)).max() /
                 max(float(bound.max()), 1e-300))


def check_products(folder, paths):
    rng = np.random.default_rng(7)
    count = 0
    worst = {}
    for name, path in matrices(folder):
        host = spmvc.load(path)
        x64 = cupy.asarray(rng.uniform(-1, 1, host.shape[1]))
        a64 = csp.csr_matrix(host)
        bound = abs(a64) @ cupy.abs(x64)
        for precision, dtype in (("f64", cupy.float64), ("f32", cupy.float32)):
            a = a64 if dtype == cupy.float64 else a64.astype(dtype)
            x = x64.astype(dtype)
            y_ref = a @ x
            for route in paths:
                op = None
                try:
                    op = spmvc.compile(a if route == "device" else host, precision=precision)
                    y = op @ x
                    err = spmv_error(y, y_ref, bound)
                    ok = err <= TOLERANCE[precision]
                    detail = f"{precision} {route} {op.plan['format']} err {err:.1e}"
                except spmvc.Error as e:
                    ok, err, detail = False, float("inf"), f"{precision} {route}: {e}"
                key = (precision, route)
                worst[key] = max(worst.get(key, 0.0), err)
                if ok:
                    print(f"[A@x] {name}: ok {detail}", flush=True)
                else:
                    record("A@x", name, False, detail)
                del op  # frees its device memory before the next
        count += 1
    for (precision, route), err in sorted(worst.items()):
        record("A@x", f"{count} matrices {precision} {route}", err <= TOLERANCE[precision],
               f"worst err {err:.1e} (limit {TOLERANCE[precision]:.0e})")


def check_operations(folder, count=6):
    """apply_many (C- and Fortran-ordered blocks, device and host) and apply_transpose against
    CuPy's products on the first `count` matrices with >= 10k nonzeros."""
    rng = np.random.default_rng(11)
    for i, (name, path) in enumerate(matrices(folder)):
        if i >= count:
            break
        host = spmvc.load(path)
        a64 = csp.csr_matrix(host)
        for precision, dtype in (("f64", cupy.float64), ("f32", cupy.float32)):
            a = a64 if dtype == cupy.float64 else a64.astype(dtype)
            try:
                op = spmvc.compile(a, precision=precision)  # device arrays: the CSR is kept
                worst = 0.0
                for k, order in ((8, "F"), (3, "C"), (32, "C")):
                    x = cupy.asarray(rng.uniform(-1, 1, (host.shape[1], k)), dtype=dtype,
                                     order=order)
                    y = op.apply_many(x)
                    bound = abs(a64) @ cupy.abs(x.astype(cupy.float64))
                    worst = max(worst, spmv_error(y, a @ x, bound))
                xt = cupy.asarray(rng.uniform(-1, 1, host.shape[0]), dtype=dtype)
                yt = op.apply_transpose(xt)
                bound = abs(a64).T @ cupy.abs(xt.astype(cupy.float64))
                worst = max(worst, spmv_error(yt, a.T @ xt, bound))
                hop = spmvc.compile(host, precision=precision, keep_csr=True)
                xh = rng.uniform(-1, 1, (host.shape[1], 4))
                yh = hop.apply_many(np.asfortranarray(xh))
                ref = host @ xh
                worst = max(worst, float(np.abs(yh - ref).max() /
                                         max(float((abs(host) @ np.abs(xh)).max()), 1e-300)))
                ok = worst <= TOLERANCE[precision]
                detail = f"{precision} {op.plan['format']} worst err {worst:.1e}"
            except spmvc.Error as e:
                ok, detail = False, f"{precision}: {e}"
            record("many", name, ok, detail)


def timed_solve(solver, A, b, **kw):
    iterations = []
    params = inspect.signature(solver).parameters
    if "tol" in kw and "tol" not in params:
        kw["rtol"] = kw.pop("tol")
    cupy.cuda.Device().synchronize()
    start = time.perf_counter()
    x, info = solver(A, b, callback=lambda *a: iterations.append(1), **kw)
    cupy.cuda.Device().synchronize()
    return x, info, len(iterations), time.perf_counter() - start


def check_solver(section, name, solver, a_gpu, kw, precision="f64", must_converge=True):
    b = cupy.ones(a_gpu.shape[0], dtype=a_gpu.dtype)
    op = spmvc.compile(a_gpu, precision=precision)
    x1, info1, it1, t1 = timed_solve(solver, op.as_linear_operator(), b, **kw)
    x2, info2, it2, t2 = timed_solve(solver, a_gpu, b, **kw)
    diff = float(cupy.abs(x1 - x2).max() / cupy.abs(x2).max())
    residual = float(cupy.linalg.norm(a_gpu @ x1 - b) / cupy.linalg.norm(b))
    # Converged (info 0) on the well-conditioned problems; on G3_circuit, whatever the solver
    # reaches in the iterations allowed, the same with either multiply.
    ok = info1 == info2 and (info1 == 0 or not must_converge) and diff <= 1e-6
    record(section, name, ok,
           f"info {info1}/{info2} | spmvc {it1} it {t1:.3f} s | cupy {it2} it {t2:.3f} s | res "
           f"{residual:.1e} | solutions differ {diff:.1e}")


def convection_diffusion(n):
    """Upwinded 2D convection-diffusion on an n x n grid: nonsymmetric, diagonally dominant."""
    t = sp.diags([-1.5, 4.0, -0.5], [-1, 0, 1], shape=(n, n))
    e = sp.diags([-1.2, -0.8], [-1, 1], shape=(n, n))
    return (sp.kron(sp.eye(n), t) + sp.kron(e, sp.eye(n))).tocsr()


def check_solvers(folder):
    for spec in ("stencil7:n=100",):
        check_solver("cg", spec, cla.cg, csp.csr_matrix(spmvc.load(spec)),
                     {"tol": 1e-10, "maxiter": 5000})
    g3 = folder / "G3_circuit.mtx.xz"
    if g3.exists():
        check_solver("cg", "G3_circuit", cla.cg, csp.csr_matrix(spmvc.load(g3)),
                     {"tol": 1e-8, "maxiter": 20000}, must_converge=False)
    check_solver("gmres", "convection-diffusion 512^2", cla.gmres,
                 csp.csr_matrix(convection_diffusion(512)),
                 {"tol": 1e-10, "maxiter": 2000, "restart": 50})


def check_zero_copy():
    host = spmvc.load("stencil27:n=48")
    rng = np.random.default_rng(3)
    # CuPy: a csr plan with plain values (value coding off) reads the caller's three arrays in
    # every multiply, so scaling the values in place scales the product. (The other formats'
    # GPU build makes its own arrays from them.)
    a = csp.csr_matrix(host)
    op = spmvc.compile(a, value_coding=False, format="csr")
    x = cupy.asarray(rng.uniform(-1, 1, a.shape[1]))
    y = cupy.full(a.shape[0], cupy.nan)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        out = op.apply(x, y)
        stream.synchronize()
    ok = (out is y and op.path == "device" and not op.copied and
          op.last_apply == {"x": x.data.ptr, "y": y.data.ptr, "stream": stream.ptr})
    y1 = y.copy()
    a.data *= 2  # in place: same device array
    y2 = op @ x
    scaled = float(cupy.abs(y2 - 2 * y1).max() / cupy.abs(y1).max())
    record("zero-copy", "cupy", ok and scaled < 1e-14 and spmv_error(y1, a @ x / 2, abs(a) @ abs(x)) < 1e-12,
           f"x 0x{x.data.ptr:x} y 0x{y.data.ptr:x} stream 0x{stream.ptr:x} passed as is; "
           f"values scaled in place -> product scaled (err {scaled:.0e}); "
           f"matrix arrays copied: {op.copied or 'none'}")
    try:
        import torch
    except ImportError:
        record("zero-copy", "torch", False, "PyTorch not importable")
        return
    dev = torch.device("cuda")
    t = torch.sparse_csr_tensor(torch.from_numpy(host.indptr.astype(np.int32)).to(dev),
                                torch.from_numpy(host.indices).to(dev),
                                torch.from_numpy(host.data).to(dev), size=host.shape)
    op = spmvc.compile(t, value_coding=False, format="csr")
    xt = torch.from_numpy(rng.uniform(-1, 1, host.shape[1])).to(dev)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        yt = op @ xt
        s.synchronize()
    ref = (t @ xt.unsqueeze(1)).squeeze(1)
    ok = (op.path == "device" and not op.copied and op.last_apply["x"] == xt.data_ptr() and
          op.last_apply["y"] == yt.data_ptr() and op.last_apply["stream"] == s.cuda_stream)
    err = (yt - ref).abs().max().item() / ref.abs().max().item()
    t.values().mul_(3)
    err3 = ((op @ xt) - 3 * yt).abs().max().item() / yt.abs().max().item()
    record("zero-copy", "torch", ok and err < 1e-12 and err3 < 1e-14,
           f"x 0x{xt.data_ptr():x} y 0x{yt.data_ptr():x} on torch stream passed as is; "
           f"err vs torch {err:.0e}; values scaled in place -> product scaled ({err3:.0e})")


def check_update_values():
    """op.update_values with NumPy and CuPy values, on host-built and device-built operators: the
    product follows the new values; new values a value table cannot hold re-plan."""
    host = spmvc.load("stencil27:n=40")  # a few distinct values: value-coded on the host path
    rng = np.random.default_rng(5)
    x = cupy.asarray(rng.uniform(-1, 1, host.shape[1]))
    for route in ("host", "device"):
        a = csp.csr_matrix(host)
        # The host route asks for the host pipeline: SciPy's default (build "auto") builds on the
        # GPU, whose re-plan names the build rather than the table.
        op = spmvc.compile(host, build="host") if route == "host" else spmvc.compile(a)
        new = rng.uniform(0.5, 2.0, host.nnz)  # every value its own: no table holds them
        u1 = op.update_values(new)
        b = csp.csr_matrix((cupy.asarray(new), a.indices, a.indptr), shape=host.shape)
        err1 = spmv_error(op @ x, b @ x, abs(b) @ abs(x))
        u2 = op.update_values(cupy.asarray(2 * new))
        err2 = spmv_error(op @ x, 2 * (b @ x), 2 * (abs(b) @ abs(x)))
        ok = err1 < 1e-12 and err2 < 1e-12 and not u2["replanned"]
        if route == "host":
            ok = ok and u1["replanned"] and "table" in u1["why"]
        record("update", route, ok,
               f"err {err1:.0e} / {err2:.0e}; first update re-planned: {u1['replanned']} "
               f"({u1['why'] or 'fit'}); second: {u2['replanned']}")


def check_plan_order():
    """plan_order=True with the dbg ordering on an R-MAT graph: op.plan_order, the maps, and a
    PageRank-like power iteration run wholly in the plan's order on CuPy vectors (permuted once
    before, once after) against the same iteration with cupyx's matrix; a NumPy round trip."""
    host = spmvc.load("rmat:scale=14,ef=12")
    a = csp.csr_matrix(host)
    for precision, tol in (("f64", 1e-12), ("f32", 1e-5)):
        op = spmvc.compile(host, precision=precision, reorder="dbg", renumber_columns=True,
                           plan_order=True)
        dtype = np.float64 if precision == "f64" else np.float32
        rows, cols = op.plan_map("rows"), op.plan_map("columns")
        n = host.shape[0]
        ok = (op.plan_order and rows is not None and cols is not None and
              np.array_equal(np.sort(rows), np.arange(n)) and np.array_equal(rows, cols))
        ad = a.astype(dtype)
        x_ref = cupy.full(n, 1.0 / n, dtype=dtype)
        x = op.to_plan_order(x_ref.copy())
        for _ in range(8):
            x_ref = ad @ x_ref
            x_ref /= cupy.abs(x_ref).sum()
            x = op @ x
            x /= cupy.abs(x).sum()
        back = op.from_plan_order(x, axis="columns")
        err = float(cupy.abs(back - x_ref).max() / cupy.abs(x_ref).max())
        v = np.arange(n, dtype=np.float64)
        round_trip = op.from_plan_order(op.to_plan_order(v), axis="columns")
        ok = ok and err <= tol and np.array_equal(round_trip, v)
        record("plan-order", f"{precision} power iteration", ok,
               f"{op.plan['format']} under {op.plan['reorder']}; err {err:.0e}")


def run_example(name, command, env=None):
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    print(proc.stdout + proc.stderr, flush=True)
    last = (proc.stdout.strip().splitlines() or [""])[-1]
    record("example", name, proc.returncode == 0,
           f"exit {proc.returncode} in {elapsed:.1f} s: {last[:90]}")


def check_examples(examples_dir, folder):
    py = sys.executable
    run_example("cg_cupy.py", [py, str(ROOT / "examples/python/cg_cupy.py")])
    run_example("pagerank.py", [py, str(ROOT / "examples/python/pagerank.py")])
    if examples_dir is None:
        return
    examples_dir = pathlib.Path(examples_dir)
    test_capi = examples_dir.parent / "bin" / "test_capi"
    if test_capi.exists():
        scratch = pathlib.Path(os.environ.get("OUT", "/tmp")) / "capi-scratch"
        run_example("test_capi (C)", [str(test_capi), str(scratch)])
    run_example("cg_cusparse", [str(examples_dir / "cg_cusparse"), "stencil7:n=100"])
    spmvc_bin = examples_dir.parent / "prefix" / "bin" / "spmvc"
    env = dict(os.environ, SPMVC=str(spmvc_bin))
    run_example("emit_nvcc.sh", [str(ROOT / "examples/emit_nvcc.sh"), "stencil27:n=64",
                                 str(pathlib.Path(os.environ.get("OUT", "/tmp")) / "emit")], env)


def _try(fn, *args, **kwargs):
    """None when fn runs, else the error's text."""
    try:
        fn(*args, **kwargs)
        return None
    except Exception as e:  # reported as a failed check
        return f"{type(e).__name__}: {e}"


def main():
    parser = argparse.ArgumentParser()
    default = ROOT / ".device-data" / "matrices"
    if not default.exists():
        default = pathlib.Path(os.environ.get("SPMVC_MATRIX_DIR", ROOT.parent / "shared" / "matrices"))
    parser.add_argument("--matrices", type=pathlib.Path, default=default)
    parser.add_argument("--paths", default="device,host")
    parser.add_argument("--examples", default=None)
    parser.add_argument("--skip", default="",
                        help="sections to skip: products,operations,solvers,zero-copy,update,plan-order,"
                             "examples")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    ok, why = spmvc.device_available()
    if not ok:
        print(f"no GPU: {why}")
        return 77
    print(f"spmvc {spmvc.version()}, CuPy {cupy.__version__}, matrices in {args.matrices}")
    start = time.perf_counter()
    # The warm-up as the docs suggest it, on a thread of its own; the checks then run after it.
    warm = {}
    thread = threading.Thread(target=lambda: warm.update(error=_try(spmvc.warm_up)))
    thread.start()
    thread.join()
    record("warm_up", "on a thread", warm.get("error") is None, warm.get("error") or "")
    sections = [("zero-copy", check_zero_copy), ("update", check_update_values),
                ("plan-order", check_plan_order),
                ("solvers", lambda: check_solvers(args.matrices)),
                ("products", lambda: check_products(args.matrices, args.paths.split(","))),
                ("operations", lambda: check_operations(args.matrices)),
                ("examples", lambda: check_examples(args.examples, args.matrices))]
    for name, fn in sections:
        if name in skip:
            continue
        try:
            fn()
        except Exception as e:  # a crash in one section is a failure, the others still run
            record(name, "crashed", False, f"{type(e).__name__}: {e}")
    print(f"\n{'check':10} {'what':32} {'':4} detail  ({time.perf_counter() - start:.0f} s)")
    for section, name, result, detail in rows:
        if result == "ok" and section == "A@x" and "matrices" not in name:
            continue
        print(f"{section:10} {name[:32]:32} {result:4} {detail}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
