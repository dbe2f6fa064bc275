"""PageRank with PyTorch, the multiply done by spmvc.

    python3 examples/python/pagerank.py [GRAPH.mtx[.xz] | SPEC] [--plan-order]
                                                       (default: rmat:scale=16,ef=8)

The graph's transition matrix P (P[i, j] = 1/outdegree(j) for an edge j -> i) is a PyTorch
sparse CSR tensor on the GPU with int32 indices; spmvc compiles it from those device arrays and
the power iteration r <- d P r + (1 - d + d * dangling mass) / n runs on torch tensors. The same
iteration with torch's own sparse multiply checks the ranks. Exit code 0 when they agree, 1
otherwise, 77 without PyTorch or a GPU.

With --plan-order spmvc compiles P from the host instead, lets the planner reorder it
(reorder="auto": a power-law graph's hubs grouped by degree, or RCM) and keeps the ranks in the
plan's order for the whole iteration (plan_order=True): the dangling-node mask is put into that
order once, the ranks are taken out of it once at the end, and no multiply gathers or scatters.
"""

import sys
import time

import numpy as np
import scipy.sparse as sp

import spmvc

try:
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("torch.cuda.is_available() is False")
except Exception as e:
    print(f"skipped: PyTorch with a GPU is needed ({e})")
    sys.exit(77)

DAMPING = 0.85


def transition(graph):
    """P = A^T D^-1 as a torch CSR tensor (int32 indices, fp64), the dangling-node mask, and P as
    a SciPy matrix on the host."""
    a = sp.csr_matrix(graph, dtype=np.float64)
    a.data[:] = 1.0
    out_degree = np.asarray(a.sum(axis=1)).ravel()
    inverse = np.divide(1.0, out_degree, out=np.zeros_like(out_degree), where=out_degree > 0)
    p = (a.T @ sp.diags(inverse)).tocsr()
    p.sort_indices()
    dev = torch.device("cuda")
    tensor = torch.sparse_csr_tensor(
        torch.from_numpy(p.indptr.astype(np.int32)).to(dev),
        torch.from_numpy(p.indices.astype(np.int32)).to(dev),
        torch.from_numpy(p.data).to(dev), size=p.shape)
    return tensor, torch.from_numpy(out_degree == 0).to(dev), p


def pagerank(multiply, n, dangling, tol=1e-12, max_iter=200):
    r = torch.full((n,), 1.0 / n, dtype=torch.float64, device="cuda")
    for it in range(1, max_iter + 1):
        teleport = (1 - DAMPING + DAMPING * r[dangling].sum()) / n
        r_next = DAMPING * multiply(r) + teleport
        if torch.abs(r_next - r).sum().item() < tol:
            return r_next, it
        r = r_next
    return r, max_iter


def warm_up(multiply, n, dangling):
    """One iteration before the clock starts: the first launch of each kernel (the multiply's,
    and torch's for the mask, the sums and the difference) loads its module."""
    pagerank(multiply, n, dangling, max_iter=1)


def main():
    args = [a for a in sys.argv[1:] if a != "--plan-order"]
    in_plan_order = len(args) < len(sys.argv) - 1
    source = args[0] if args else "rmat:scale=16,ef=8"
    P, dangling, host_p = transition(spmvc.load(source))
    n = P.shape[0]
    if in_plan_order:
        op = spmvc.compile(host_p, precision="f64", reorder="auto", plan_order=True)
        # The rows and columns share one order (reorder "auto" renumbers the columns), so the
        # ranks stay in it from one multiply to the next.
        order = op.plan_map("rows")
        # The dangling mask into that order once, with the setup, outside the timed iteration.
        mask = dangling if order is None else dangling[torch.from_numpy(order).cuda().long()]
        warm_up(lambda r: op @ r, n, mask)
        torch.cuda.synchronize()
        start = time.perf_counter()
        in_plan, it_ours = pagerank(lambda r: op @ r, n, mask)
        ours = op.from_plan_order(in_plan)
    else:
        op = spmvc.compile(P, precision="f64")  # from P's device arrays, no copy
        warm_up(lambda r: op @ r, n, dangling)
        torch.cuda.synchronize()
        start = time.perf_counter()
        ours, it_ours = pagerank(lambda r: op @ r, n, dangling)
    torch.cuda.synchronize()
    t_ours = time.perf_counter() - start
    theirs = lambda r: (P @ r.unsqueeze(1)).squeeze(1)  # noqa: E731
    warm_up(theirs, n, dangling)
    torch.cuda.synchronize()
    start = time.perf_counter()
    ref, it_ref = pagerank(theirs, n, dangling)
    torch.cuda.synchronize()
    t_ref = time.perf_counter() - start
    diff = torch.abs(ours - ref).max().item()
    top = torch.topk(ours, 5)
    print(f"{source}: {n:,} nodes, {P._nnz():,} edges; plan {op.plan!r}")
    if in_plan_order:
        print(f"in the plan's order: {op.plan_order} ({op.plan.reorder}: {op.plan.reorder_why})")
    print(f"spmvc {it_ours} iterations in {t_ours:.4f} s; torch {it_ref} in {t_ref:.4f} s")
    print("top 5:", ", ".join(f"{i} ({v:.3e})" for v, i in zip(top.values.tolist(),
                                                             top.indices.tolist())))
    print(f"max |r_spmvc - r_torch| = {diff:.2e}; sum of ranks {ours.sum().item():.12f}")
    return 0 if diff < 1e-12 and abs(ours.sum().item() - 1) < 1e-9 else 1


if __name__ == "__main__":
    sys.exit(main())
