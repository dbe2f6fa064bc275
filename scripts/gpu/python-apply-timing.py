"""The Python package's cost per multiply on PyTorch vectors, on the GPU machine: Kronecker scale
20's transition matrix (examples/python/pagerank.py), compiled from device arrays (tiered and not)
and from the host in the plan's order, 50 calls of op @ r and op.apply(r, y) after one, against
torch's own sparse multiply and the PageRank loop's other work.

    PYTHONPATH=python SPMVC_LIBRARY=.../libspmvc.so python3 scripts/gpu/python-apply-timing.py
"""
import os
import sys
import time

import torch

import spmvc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python"))
import pagerank  # noqa: E402


def per_call(label, call, reps=50):
    """Prints the mean time of `call` over `reps` calls after one, the GPU synchronised."""
    call()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        call()
    torch.cuda.synchronize()
    print(f"{label:<40} {(time.perf_counter() - start) / reps * 1e6:9.1f} us/call")


def main():
    P, dangling, host_p = pagerank.transition(spmvc.load("rmat:scale=20,ef=16"))
    n = P.shape[0]
    r = torch.full((n,), 1.0 / n, dtype=torch.float64, device="cuda")
    y = torch.empty_like(r)
    builds = [("device arrays, tiered", P, {}),
              ("host, plan order", host_p, {"reorder": "auto", "plan_order": True}),
              ("device arrays, tiered=False", P, {"tiered": False})]
    for name, matrix, options in builds:
        start = time.perf_counter()
        op = spmvc.compile(matrix, precision="f64", **options)
        torch.cuda.synchronize()
        print(f"{name}: compile {time.perf_counter() - start:.3f} s, plan {op.plan!r}")
        per_call("  op @ r", lambda: op @ r)
        per_call("  op.apply(r, y)", lambda: op.apply(r, y))
        per_call("  op.apply(r, y), again", lambda: op.apply(r, y))
        per_call("  op @ r, .item() each", lambda: (op @ r)[0].item())
    per_call("torch P @ r", lambda: P @ r.unsqueeze(1))
    per_call("loop body w/o multiply", lambda: (r[dangling].sum(), torch.abs(r - r).sum().item()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
