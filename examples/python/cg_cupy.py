"""Conjugate gradients with CuPy, the multiply done by spmvc.

    python3 examples/python/cg_cupy.py [A.mtx[.xz] | SPEC]      (default: stencil7:n=64)

The matrix goes to the GPU as a CuPy CSR matrix; spmvc builds its operator from those device
arrays (no copy) and cupyx.scipy.sparse.linalg.cg runs with it, then again with the CuPy matrix
itself. Exit code 0 when both converge to the same solution, 1 otherwise, 77 without CuPy or a GPU.
"""

import inspect
import sys
import time

import spmvc

try:
    import cupy
    import cupyx.scipy.sparse as csp
    import cupyx.scipy.sparse.linalg as cla
    cupy.cuda.runtime.getDeviceCount()
except Exception as e:  # no CuPy, no driver or no device
    print(f"skipped: CuPy with a GPU is needed ({e})")
    sys.exit(77)


def solve(A, b, tol):
    """cg from x = 0; returns x, iterations, seconds."""
    iterations = []
    key = "rtol" if "rtol" in inspect.signature(cla.cg).parameters else "tol"
    cupy.cuda.Device().synchronize()
    start = time.perf_counter()
    x, info = cla.cg(A, b, maxiter=5000, callback=lambda xk: iterations.append(1), **{key: tol})
    cupy.cuda.Device().synchronize()
    if info != 0:
        raise RuntimeError(f"cg did not converge (info {info})")
    return x, len(iterations), time.perf_counter() - start


def main():
    source = sys.argv[1] if len(sys.argv) > 1 else "stencil7:n=64"
    A = csp.csr_matrix(spmvc.load(source))       # on the GPU
    b = cupy.ones(A.shape[0])
    op = spmvc.compile(A, precision="f64")       # from A's device arrays
    print(f"{source}: {A.shape[0]:,} rows, {A.nnz:,} nonzeros; plan {op.plan!r}")
    x_ours, it_ours, t_ours = solve(op.as_linear_operator(), b, 1e-10)
    x_ref, it_ref, t_ref = solve(A, b, 1e-10)
    diff = float(cupy.abs(x_ours - x_ref).max() / cupy.abs(x_ref).max())
    residual = float(cupy.linalg.norm(A @ x_ours - b) / cupy.linalg.norm(b))
    print(f"{'multiply':10} {'iterations':>10} {'seconds':>9}")
    print(f"{'spmvc':10} {it_ours:>10} {t_ours:>9.4f}")
    print(f"{'CuPy':10} {it_ref:>10} {t_ref:>9.4f}")
    print(f"relative residual {residual:.2e}; max |x_spmvc - x_cupy| / max |x| = {diff:.2e}")
    return 0 if residual < 1e-9 and diff < 1e-8 else 1


if __name__ == "__main__":
    sys.exit(main())
