#!/usr/bin/env python3
"""Time per distributed multiply at 8 to 4,096 GPUs, from the halo of real partitions.

Input: the JSON of spmvc_halo_stats (build/*/distributed/spmvc_halo_stats MATRIX --ranks
2,4,...,64 --partition metis), one file per matrix class, computed on real matrices at small rank
counts. Per class the script fits, over the upper half of the measured rank counts,

  ghosts per rank   = c * (rows per rank)^e      (least squares in log-log)
  neighbours        = min(P - 1, a * P^b)
  ghost nonzeros    = k * ghosts                  (k: the median entries per ghost column)

and extrapolates to a larger member of the class (--target-rows; nonzeros per row kept) split
over P GPUs (strong scaling). One multiply on each rank costs

  t = t_launch + max(t_local, t_exchange) + t_ghost
  t_local    = bytes of the local block / HBM bandwidth   (CSR fp64: 12 B per nonzero, 24 B per row)
  t_ghost    = bytes of the ghost block / HBM bandwidth   (12 B per nonzero, 8 B per ghost value)
  t_exchange = latency + neighbours * per-message cost + 8 B * ghosts / link bandwidth

with the link NVLink within a node of 8 GPUs (P <= 8) and InfiniBand beyond, where every ghost
value is assumed to cross it (the worst case: a partition numbered without regard to nodes). The
host-staged MPI transport adds the two PCIe copies and their synchronisation. The constants are
assumptions (--help lists them), not measurements of this code; the README states them.

Usage: dist-scaling.py HALO.json... [--targets name=rows,...] [--markdown]
       dist-scaling.py --check MEASURED.json

--check compares the model's exchange with exchanges measured on GPUs (MEASURED.json: a list of
runs, each with name, ranks, transport "nccl" or "mpi", max_ghosts, neighbours and exchange_s,
the slowest rank's median of `Operator::exchange` alone), and fits latency + bytes / bandwidth to
the measured NCCL exchanges, so that the constants above can be read against them.
"""
import argparse
import json
import math
import sys

# Hardware assumptions (H100 SXM, DGX-style node: 8 GPUs on NVLink 4, one NDR InfiniBand HCA per GPU).
HBM_BYTES_PER_S = 2.6e12       # SpMV-attainable share (~78%) of 3.35 TB/s
NVLINK_BYTES_PER_S = 450e9      # NVLink 4, per direction per GPU
IB_BYTES_PER_S = 50e9           # NDR 400 Gb/s per GPU
NVLINK_LATENCY_S = 3e-6         # NCCL point-to-point start-up within a node
IB_LATENCY_S = 8e-6             # NCCL point-to-point start-up across nodes
PER_MESSAGE_S = 0.5e-6          # each further send/recv pair in the group
LAUNCH_S = 10e-6                # pack, local and ghost kernels plus the two events
PCIE_BYTES_PER_S = 25e9         # host-staged: each direction of the copies
HOST_STAGE_S = 20e-6            # host-staged: two synchronisations and the MPI progress
GPUS_PER_NODE = 8
VALUE_BYTES, INDEX_BYTES = 8, 4


def fit_power(xs, ys):
    """(c, e) with y = c * x^e, least squares on logarithms."""
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    n = len(lx)
    mx, my = sum(lx) / n, sum(ly) / n
    sxx = sum((x - mx) ** 2 for x in lx)
    e = sum((x - mx) * (y - my) for x, y in zip(lx, ly)) / sxx if sxx > 0 else 0.0
    return math.exp(my - e * mx), e


class HaloFit:
    """The halo of one matrix class, fitted from its measured partitions."""

    def __init__(self, doc, partition="metis"):
        self.name = doc["matrix"]
        self.rows = doc["rows"]
        self.nnz_per_row = doc["nnz"] / doc["rows"]
        runs = [r for r in doc["runs"] if r["partition"] == partition and r["max_ghosts"] > 0]
        # The upper half of the measured rank counts: at few ranks a partition cuts slabs whose
        # faces do not shrink with the part, so the asymptotic law shows only further up.
        counts = sorted({r["ranks"] for r in runs})
        runs = [r for r in runs if r["ranks"] >= counts[len(counts) // 2]] if counts else []
        if len(runs) < 2:
            raise ValueError(f"{self.name}: need {partition} runs at 3 or more rank counts")
        self.c, self.e = fit_power([r["max_rows"] for r in runs], [r["max_ghosts"] for r in runs])
        self.a, self.b = fit_power([r["ranks"] for r in runs],
                                   [max(r["max_neighbours"], 1) for r in runs])
        ks = sorted(r["ghost_nnz_share"] * doc["nnz"] / r["ranks"] / r["mean_ghosts"]
                    for r in runs if r["mean_ghosts"] > 0)
        self.k = ks[len(ks) // 2]
        self.measured = runs

    def ghosts(self, rows_total, p):
        per_rank = rows_total / p
        return min(rows_total - per_rank, self.c * per_rank ** self.e)

    def neighbours(self, p):
        return min(p - 1, self.a * p ** self.b)


def exchange_time(ghosts, neighbours, p, transport):
    """The model's seconds for one exchange of `ghosts` values (the NCCL or host-staged path)."""
    on_node = p <= GPUS_PER_NODE
    bandwidth = NVLINK_BYTES_PER_S if on_node else IB_BYTES_PER_S
    latency = NVLINK_LATENCY_S if on_node else IB_LATENCY_S
    halo_bytes = ghosts * VALUE_BYTES
    t = latency + neighbours * PER_MESSAGE_S + halo_bytes / bandwidth
    if transport == "mpi":
        t += 2 * halo_bytes / PCIE_BYTES_PER_S + HOST_STAGE_S
    return t


def multiply_time(fit, rows_total, p):
    """Seconds per multiply on P GPUs, its parts, and the host-staged variant's total."""
    rows = rows_total / p
    nnz = rows * fit.nnz_per_row
    ghosts = fit.ghosts(rows_total, p)
    ghost_nnz = min(nnz, fit.k * ghosts)
    local_bytes = (nnz - ghost_nnz) * (VALUE_BYTES + INDEX_BYTES) + rows * 3 * VALUE_BYTES
    ghost_bytes = ghost_nnz * (VALUE_BYTES + INDEX_BYTES) + ghosts * VALUE_BYTES
    t_local = local_bytes / HBM_BYTES_PER_S
    t_ghost = ghost_bytes / HBM_BYTES_PER_S
    t_exchange = exchange_time(ghosts, fit.neighbours(p), p, "nccl")
    t_staged = exchange_time(ghosts, fit.neighbours(p), p, "mpi")
    total = LAUNCH_S + max(t_local, t_exchange) + t_ghost
    staged = LAUNCH_S + max(t_local, t_staged) + t_ghost
    return {"p": p, "rows": rows, "ghosts": ghosts, "neighbours": fit.neighbours(p),
            "t_local": t_local, "t_ghost": t_ghost, "t_exchange": t_exchange, "total": total,
            "staged": staged}


def check(runs):
    """Rows of (run, modelled s, measured s) and the (latency s, bytes/s) fitted by least squares
    to the measured NCCL exchanges (None with fewer than two distinct halo sizes)."""
    rows = [(r, exchange_time(r["max_ghosts"], r["neighbours"], r["ranks"], r["transport"]),
             r["exchange_s"]) for r in runs]
    nccl = [(r["max_ghosts"] * VALUE_BYTES, r["exchange_s"]) for r in runs
            if r["transport"] == "nccl"]
    fit = None
    if len({b for b, _ in nccl}) >= 2:
        n = len(nccl)
        mb = sum(b for b, _ in nccl) / n
        mt = sum(t for _, t in nccl) / n
        sbb = sum((b - mb) ** 2 for b, _ in nccl)
        slope = sum((b - mb) * (t - mt) for b, t in nccl) / sbb
        fit = (mt - slope * mb, 1 / slope if slope > 0 else math.inf)
    return rows, fit


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("halo", nargs="*", help="spmvc_halo_stats JSON files")
    ap.add_argument("--check", metavar="MEASURED.json",
                    help="compare the model's exchange with measured ones (see above)")
    ap.add_argument("--targets", default="",
                    help="name=rows,... the rows of the extrapolated member of each class "
                         "(default: 100x the measured matrix)")
    ap.add_argument("--partition", default="metis")
    ap.add_argument("--gpus", default="8,16,32,64,128,256,512,1024,2048,4096")
    ap.add_argument("--markdown", action="store_true", help="the README's table")
    args = ap.parse_args(argv)
    if args.check:
        with open(args.check) as f:
            rows, fit = check(json.load(f))
        print(f"{'run':32} {'transport':>9} {'ghosts':>9} {'model us':>9} {'measured us':>11} "
              f"{'measured/model':>14}")
        for r, model, measured in rows:
            print(f"{r['name']:32} {r['transport']:>9} {r['max_ghosts']:>9,} {model * 1e6:>9.1f} "
                  f"{measured * 1e6:>11.1f} {measured / model:>13.1f}x")
        if fit:
            print(f"measured NCCL exchanges: {fit[0] * 1e6:.1f} us + bytes / "
                  f"{fit[1] / 1e9:.0f} GB/s (the model: {NVLINK_LATENCY_S * 1e6:.1f} us + "
                  f"{PER_MESSAGE_S * 1e6:.1f} us a peer + bytes / "
                  f"{NVLINK_BYTES_PER_S / 1e9:.0f} GB/s)")
        return 0
    if not args.halo:
        ap.error("give spmvc_halo_stats JSON files, or --check MEASURED.json")
    targets = dict(t.split("=") for t in args.targets.split(",") if t)
    gpus = [int(g) for g in args.gpus.split(",")]
    fits = []
    for path in args.halo:
        with open(path) as f:
            fits.append(HaloFit(json.load(f), args.partition))
    for fit in fits:
        fit.target_rows = float(targets.get(fit.name, 100 * fit.rows))
        print(f"{fit.name}: ghosts = {fit.c:.3g} (rows/rank)^{fit.e:.3f}, neighbours = "
              f"min(P-1, {fit.a:.3g} P^{fit.b:.3f}), {fit.k:.2f} ghost nonzeros per ghost; "
              f"extrapolated to {fit.target_rows:.3g} rows, "
              f"{fit.target_rows * fit.nnz_per_row:.3g} nonzeros", file=sys.stderr)
    if args.markdown:
        head = "| GPUs | " + " | ".join(
            f"{f.name}: µs (speedup vs 8, exchange share; host-staged µs)" for f in fits) + " |"
        print(head)
        print("|---:|" + "---|" * len(fits))
        base = {f.name: multiply_time(f, f.target_rows, gpus[0])["total"] for f in fits}
        for p in gpus:
            cells = []
            for f in fits:
                m = multiply_time(f, f.target_rows, p)
                cells.append(f"{m['total'] * 1e6:,.0f} ({base[f.name] / m['total']:.1f}x, "
                             f"{100 * m['t_exchange'] / m['total']:.0f}%; "
                             f"{m['staged'] * 1e6:,.0f})")
            print(f"| {p:,} | " + " | ".join(cells) + " |")
        return 0
    for f in fits:
        print(f"{f.name} ({f.target_rows:.3g} rows)")
        print(f"{'GPUs':>6} {'rows/GPU':>10} {'ghosts':>9} {'peers':>6} {'local us':>9} "
              f"{'exch us':>8} {'ghost us':>9} {'total us':>9} {'staged us':>9}")
        for p in gpus:
            m = multiply_time(f, f.target_rows, p)
            print(f"{p:>6} {m['rows']:>10.3g} {m['ghosts']:>9.3g} {m['neighbours']:>6.1f} "
                  f"{m['t_local'] * 1e6:>9.1f} {m['t_exchange'] * 1e6:>8.1f} "
                  f"{m['t_ghost'] * 1e6:>9.1f} {m['total'] * 1e6:>9.1f} {m['staged'] * 1e6:>9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
