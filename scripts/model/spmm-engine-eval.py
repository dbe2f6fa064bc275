#!/usr/bin/env python3
"""Replays apply_many's choice of SpMM engine (compiler::choose_spmm_engine, row-major X, k >= 16)
over a suite run in which both engines were timed (`spmvc bench --suite v13 --k K --layout row
--spmm-cusparse measure`): each record's note holds the generated unit's and cusparseSpMM's
measured times and the rows the model reads. Prints, per precision and class, the geomean over
cuSPARSE's best of the model's picks, of the faster engine (the most a rule could reach) and of
each engine alone, and the entries where the model picks the slower one.

The rule as compiler::choose_spmm_engine has it: cuSPARSE for hub rows (the longest row at
least --hub times the mean) in either precision at any k, and in fp32 at k >= 16 for a longest
row at least --f32-skew times the mean; the generated unit elsewhere. With --fit, searches both thresholds
for the best geomean over both precisions and prints the best pair in-sample and, leaving each
matrix out in turn, what its pick would have been with the thresholds fitted on the others.

Usage: scripts/model/spmm-engine-eval.py SUITE.json [--fit] [--hub R] [--f32-skew R]
"""
import argparse
import itertools
import json
import math
import re
import sys

MEASURED = re.compile(r"measured ([\d.]+) ms generated, ([\d.]+) ms (\S+); the model's pick: (.*)")
ROWS = re.compile(r"([\d.]+) nonzeros a row, longest ([\d.]+)x the mean, spread ([\d.]+), "
                  r"x sectors per nonzero ([\d.]+)")
INF = float("inf")

# compiler/include/spmvc/compiler/spmm.hpp's constants.
DEFAULTS = {"hub": 1000.0, "f32_skew": 100.0}


def records(path):
    with open(path) as f:
        doc = json.load(f)
    out = []
    for r in doc["results"]:
        if "spmvc_ms" not in r or r.get("layout") != "row":
            continue
        m = MEASURED.search(r.get("note", ""))
        rows = ROWS.search(r.get("note", ""))
        if not m or not rows:
            continue
        alg = m.group(3).replace("cusparseSpMM_CSR_ALG", "cusparse spmm_csr_alg")
        cus = next((t["ms"] for t in r["results"] if t["name"] == alg), float(m.group(2)))
        gen = r["spmvc_ms"] if r.get("engine") != "cusparse" else float(m.group(1))
        mean, skew, spread, scatter = (float(v) for v in rows.groups())
        out.append({"matrix": r["matrix"], "class": r.get("class", "-"),
                    "precision": r["precision"], "k": r["k"], "best": r["cusparse_best_ms"],
                    "gen": gen, "cus": cus, "mean": mean, "skew": skew, "spread": spread,
                    "scatter": scatter})
    return out


def picks_cusparse(r, t):
    if r["skew"] >= t["hub"]:
        return True
    return r["k"] >= 16 and r["precision"] == "f32" and r["skew"] >= t["f32_skew"]


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def speedups(recs, t):
    return [r["best"] / (r["cus"] if picks_cusparse(r, t) else r["gen"]) for r in recs]


def report(recs, t):
    groups = {}
    for r in recs:
        for key in (r["precision"], f"{r['precision']} {r['class']}"):
            groups.setdefault(key, []).append(r)
    print(f"{'group':<8} {'n':>3} {'model':>7} {'faster':>7} {'generated':>9} {'cuSPARSE':>8}")
    for key in sorted(groups):
        g = groups[key]
        print(f"{key:<8} {len(g):>3} {geomean(speedups(g, t)):>7.3f} "
              f"{geomean([r['best'] / min(r['gen'], r['cus']) for r in g]):>7.3f} "
              f"{geomean([r['best'] / r['gen'] for r in g]):>9.3f} "
              f"{geomean([r['best'] / r['cus'] for r in g]):>8.3f}")
    wrong = [r for r in recs if picks_cusparse(r, t) != (r["cus"] < r["gen"])]
    print(f"the model picks the slower engine on {len(wrong)} of {len(recs)}:")
    for r in wrong:
        pick = "cuSPARSE" if picks_cusparse(r, t) else "generated"
        print(f"  {r['matrix'][:26]:<26} {r['precision']} picks {pick:<9} generated "
              f"{r['gen']:.4f} ms, cuSPARSE {r['cus']:.4f} ms (mean {r['mean']:.1f}, skew "
              f"{r['skew']:.0f}, spread {r['spread']:.2f}, x sectors {r['scatter']:.2f})")


GRID = {"hub": [30.0, 100.0, 300.0, 1000.0, 3000.0, INF],
        "f32_skew": [10.0, 30.0, 100.0, 300.0, 1000.0, INF]}


def fit(recs):
    keys = list(GRID)
    best, best_t = -INF, None
    for values in itertools.product(*(GRID[k] for k in keys)):
        t = dict(zip(keys, values))
        score = sum(math.log(s) for s in speedups(recs, t))
        if score > best + 1e-12:
            best, best_t = score, t
    return best_t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite")
    ap.add_argument("--fit", action="store_true")
    for k, v in DEFAULTS.items():
        ap.add_argument("--" + k.replace("_", "-"), type=float, default=v, dest=k)
    a = ap.parse_args()
    recs = records(a.suite)
    if not recs:
        sys.exit(f"{a.suite}: no row-major record with both engines measured "
                 "(run the suite with --spmm-cusparse measure)")
    t = {k: getattr(a, k) for k in DEFAULTS}
    print(f"thresholds: {t}")
    report(recs, t)
    if a.fit:
        fitted = fit(recs)
        print(f"\nfitted in-sample: {fitted}")
        report(recs, fitted)
        left_out = []
        # One fit per matrix, without any of its records, for all its precisions.
        for matrix in dict.fromkeys(r["matrix"] for r in recs):
            tt = fit([q for q in recs if q["matrix"] != matrix])
            for r in (q for q in recs if q["matrix"] == matrix):
                left_out.append((r, r["best"] / (r["cus"] if picks_cusparse(r, tt) else r["gen"])))
        for prec in sorted({r["precision"] for r in recs}):
            v = [s for r, s in left_out if r["precision"] == prec]
            print(f"left out, {prec}: {geomean(v):.3f}x over {len(v)}")


if __name__ == "__main__":
    main()
