#!/usr/bin/env python3
"""Class geomeans of a suite run's model picks over the best cuSPARSE, with one format's kernel
re-timed by a later, partial run: an estimate of the classes after a kernel change, when the
whole suite could not be run again. Three columns per class and precision:

  as run     the picks as the suite file measured them;
  re-timed   each pick of FORMAT whose parameters (and no reordering) match the later run's
             timing of FORMAT on that entry takes the later run's speedup over its own best
             cuSPARSE;
  if picked  also entries picked otherwise take FORMAT's later speedup where it is higher: what
             a planner that knew the new kernel's time would reach, at most.

The later run must time FORMAT (`spmvc bench --suite NAME --formats FORMAT`). --speedup
overrides a later entry's speedup (a timing made apart from the suite run, say).

    retimed-classes.py --later LATER.json [--format csr_stream]
                       [--speedup "MATRIX|PRECISION|X" ...] SUITE.json [SUITE.json ...]"""
import argparse
import json
import math


def later_speedups(path, fmt, overrides):
    """(matrix, precision) -> (params, speedup of fmt over the run's best cuSPARSE)."""
    with open(path) as f:
        doc = json.load(f)
    out = {}
    for r in doc["results"]:
        if "precision" not in r:
            continue
        timed = [m for m in r.get("formats", []) if m.get("format") == fmt and "ms" in m]
        if timed and timed[0].get("correct", True):
            out[(r["matrix"], r["precision"])] = (timed[0]["params"],
                                                  r["best_cusparse_ms"] / timed[0]["ms"])
    for text in overrides:
        matrix, precision, x = text.split("|")
        key = (matrix, precision)
        if key not in out:
            raise SystemExit(f"--speedup {text}: {path} did not time {fmt} on that entry")
        out[key] = (out[key][0], float(x))
    return out


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--later", required=True)
    ap.add_argument("--format", default="csr_stream")
    ap.add_argument("--speedup", action="append", default=[])
    ap.add_argument("suites", nargs="+")
    a = ap.parse_args()
    later = later_speedups(a.later, a.format, a.speedup)
    for path in a.suites:
        with open(path) as f:
            doc = json.load(f)
        rows = {}
        for r in doc["results"]:
            if r.get("regime") != "bandwidth" or "precision" not in r:
                continue
            p = r["planner"]
            as_run = retimed = p["speedup_vs_best_cusparse"]
            picked = as_run
            hit = later.get((r["matrix"], r["precision"]))
            if hit:
                params, x = hit
                if (p["format"] == a.format and p["params"] == params
                        and p.get("reorder", "none") == "none"):
                    retimed = x
                picked = max(retimed, x)
            for c in (r.get("class", "-"), "all"):
                rows.setdefault((c, r["precision"]), []).append((as_run, retimed, picked))
        print(f"{path}: {a.format} re-timed from {a.later}")
        print("class prec   n   as run  re-timed  if picked")
        order = {"R": 0, "P": 1, "G": 2, "all": 3}
        for (c, prec), v in sorted(rows.items(), key=lambda kv: (kv[0][1], order.get(kv[0][0], 9))):
            cols = [geomean([t[i] for t in v]) for i in range(3)]
            print(f"{c:5} {prec}  {len(v):3}   {cols[0]:.3f}    {cols[1]:.3f}     {cols[2]:.3f}")


if __name__ == "__main__":
    main()
