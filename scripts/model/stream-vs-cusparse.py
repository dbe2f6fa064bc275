#!/usr/bin/env python3
"""csr_stream against cuSPARSE, entry by entry, from a measured suite.

For every bandwidth-regime result of a `spmvc bench --suite` JSON that timed csr_stream, prints
csr_stream's measured and predicted time (the prediction the suite's build made), their ratio,
cuSPARSE ALG1's measured time, and the profile features that may separate the entries where
the model's csr_stream pick measures slower than cuSPARSE: row mean and spread (row_max /
row_mean), x sectors per nonzero (the inspector's x_sectors / nnz, from the cached inspect JSON
of scripts/model/planner_data.py), precision and whether csr_stream ran with 16-bit columns.
Entries where csr_stream measured slower than cuSPARSE ALG1 are marked "<". A last block gives,
per precision, the median measured / predicted ratio of the marked and the other entries.

Then a fit of csr_stream's measured time on its streamed bytes (the suite's own_bytes) alone,
and on those plus the x sectors its rows gather (32 * x_sectors bytes, the same count in both
precisions: the inspector counts 32-byte sectors of fp64 x), each by least squares on the
relative error: the spread of the log error of each fit, what one gathered sector costs in
streamed bytes, and the two-term fit's measured / fitted ratio per entry (column "fit2").

Usage: scripts/model/stream-vs-cusparse.py [--cache DIR] SUITE.json
"""
import argparse
import glob
import json
import os
import statistics
import sys
import math

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def inspect_index(cache):
    """(nrows, nnz) -> inspect JSON of every cached inspection."""
    index = {}
    for path in glob.glob(os.path.join(cache, "inspect", "*.json")):
        with open(path) as f:
            d = json.load(f)
        index[(d.get("nrows"), d.get("nnz"))] = d
    return index


def relative_fit(features, measured):
    """Coefficients c minimising sum((features . c / measured - 1)^2) (normal equations,
    Gaussian elimination); features: one list per entry, measured: times > 0."""
    rows = [[v / m for v in f] for f, m in zip(features, measured)]
    n = len(rows[0])
    a = [[sum(r[i] * r[j] for r in rows) for j in range(n)] for i in range(n)]
    b = [sum(r[i] for r in rows) for i in range(n)]
    for i in range(n):
        if a[i][i] == 0:
            raise ValueError(f"feature {i} is zero on every entry: nothing to fit")
        for j in range(i + 1, n):
            f = a[j][i] / a[i][i]
            a[j] = [x - f * y for x, y in zip(a[j], a[i])]
            b[j] -= f * b[i]
    c = [0.0] * n
    for i in reversed(range(n)):
        c[i] = (b[i] - sum(a[i][k] * c[k] for k in range(i + 1, n))) / a[i][i]
    return c


def log_spread(features, measured, c):
    logs = [math.log(m / sum(x * y for x, y in zip(f, c))) for f, m in zip(features, measured)]
    return statistics.pstdev(logs), logs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", default=os.path.join(ROOT, ".cache", "planner-eval"))
    ap.add_argument("suite")
    args = ap.parse_args()
    with open(args.suite) as f:
        suite = json.load(f)
    inspected = inspect_index(args.cache)
    print(f"{suite.get('gpu', '?')}: csr_stream and cuSPARSE ALG1 on {args.suite}")
    print(f"{'matrix':24s} {'prec':4s} cls {'rmean':>6s} {'spread':>7s} {'sect/nz':>7s} "
          f"{'c16':3s} {'meas ms':>8s} {'pred ms':>8s} {'m/p':>5s} {'cus ms':>8s} {'cus/cs':>6s}")
    groups = {}
    entries = []
    for r in suite["results"]:
        if r.get("regime") != "bandwidth":
            continue
        cs = next((x for x in r.get("formats", []) if x["format"] == "csr_stream"), None)
        alg1 = r.get("cusparse", {}).get("csr_alg1", {})
        if cs is None or "ms" not in alg1 or not cs.get("predicted_ms"):
            continue
        ins = inspected.get((r["nrows"], r["nnz"]))
        sectors = (f"{ins['x_sectors'] / ins['nnz']:7.3f}"
                   if ins and ins.get("x_sectors") else f"{'-':>7s}")
        ratio = cs["ms"] / cs["predicted_ms"]
        vs = alg1["ms"] / cs["ms"]
        loses = vs < 1.0
        groups.setdefault((r["precision"], loses), []).append(ratio)
        entries.append((r, cs, ins))
        c16 = "yes" if "c16" in cs.get("params", "") else "no"
        print(f"{r['matrix'][:24]:24s} {r['precision']:4s} {r.get('class', '?'):>3s} "
              f"{r['row_mean']:6.1f} {r['row_max'] / max(r['row_mean'], 1e-9):7.1f} {sectors} "
              f"{c16:3s} {cs['ms']:8.4f} {cs['predicted_ms']:8.4f} {ratio:5.2f} "
              f"{alg1['ms']:8.4f} {vs:6.3f}{' <' if loses else ''}")
    print("median csr_stream measured / predicted:")
    for (prec, loses), v in sorted(groups.items()):
        label = "slower than cuSPARSE" if loses else "faster than cuSPARSE"
        print(f"  {prec} {label}: {statistics.median(v):.2f} over {len(v)} entries")
    fit_gather(entries)
    return 0


def fit_gather(entries):
    usable = [(r, cs, ins) for r, cs, ins in entries
              if ins and ins.get("x_sectors") and cs.get("own_bytes")]
    if len(usable) < 3:
        print("gather fit: fewer than 3 entries with own_bytes and an inspected x_sectors")
        return
    measured = [cs["ms"] for _, cs, _ in usable]
    one = [[cs["own_bytes"] / 1e9] for _, cs, _ in usable]
    two = [[cs["own_bytes"] / 1e9, 32.0 * ins["x_sectors"] / 1e9] for _, cs, ins in usable]
    c1 = relative_fit(one, measured)
    c2 = relative_fit(two, measured)
    s1, _ = log_spread(one, measured, c1)
    s2, logs = log_spread(two, measured, c2)
    print(f"fit over {len(usable)} entries, csr_stream ms = a * own GB + b * gathered GB:")
    print(f"  bytes alone: a {c1[0]:.4f}; sd of log(measured / fitted) {s1:.3f}")
    print(f"  bytes and x sectors: a {c2[0]:.4f}, b {c2[1]:.4f}; sd {s2:.3f}; "
          f"one sector costs {32.0 * c2[1] / c2[0]:.1f} streamed bytes")
    print("  measured / fitted, two terms, where csr_stream measured slower than cuSPARSE or "
          "within 5% of it:")
    for (r, cs, _), lg in zip(usable, logs):
        vs = r["cusparse"]["csr_alg1"]["ms"] / cs["ms"]
        if vs < 1.05:
            print(f"    {r['matrix'][:24]:24s} {r['precision']:4s} fit2 {math.exp(lg):5.2f}  "
                  f"build {cs['ms'] / cs['predicted_ms']:5.2f}  cuSPARSE / csr_stream {vs:.3f}")


if __name__ == "__main__":
    sys.exit(main())
