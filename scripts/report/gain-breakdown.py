#!/usr/bin/env python3
"""Where a suite run's gains come from, per class and precision.

For each bandwidth-regime result of a `spmvc bench --suite` JSON: the planner pick's bytes per
nonzero (its own arrays, x and y once) against CSR's (32-bit indices, the plan's value width,
x and y once), the share of the read bandwidth each side reaches (the pick on its own bytes,
cuSPARSE's best on CSR's bytes), and the speed-up over cuSPARSE's best split into those two
factors:

    speedup = (csr bytes / pick bytes) * (pick %bw / cuSPARSE %bw)

(exactly, per matrix and for the geometric means), so a gain from fewer bytes (value and index compression) shows in the first factor, and one from
reaching more of the bandwidth (balance, loads in flight, x locality) in the second. Geometric
means per class (R, P, G) and precision; --matrices lists every result.

Usage: scripts/report/gain-breakdown.py [--pick planner|planner_measure|oracle] [--matrices]
       SUITE.json
"""
import argparse
import json
import math
import sys
from collections import defaultdict


def geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def rows(suite, pick):
    bw = suite["read_bandwidth"]
    for r in suite["results"]:
        if r.get("regime") != "bandwidth":
            continue
        p = r.get(pick)
        if pick == "oracle" and p:
            # The oracle names the fastest variant; its figures are in `formats` or the picks.
            match = [f for f in r.get("formats", []) if f["format"] == p["format"]
                     and abs(f["ms"] - p["ms"]) <= 1e-12 * max(p["ms"], 1)]
            for k in ("planner", "planner_measure", "planner_device"):
                q = r.get(k)
                if q and q["format"] == p["format"] and abs(q["ms"] - p["ms"]) <= 1e-12:
                    match.append(q)
            p = match[0] if match else None
        if not p or not p.get("correct", True) or "own_bytes" not in p:
            continue
        nnz = r["nnz"]
        cus_ms = r["best_cusparse_ms"]
        cus_pct = 100 * r["csr_bytes"] / (cus_ms * 1e-3) / bw
        yield {
            "matrix": r["matrix"], "class": r.get("class", "?"), "precision": r["precision"],
            "format": p["format"], "csr_bpn": r["csr_bytes"] / nnz, "pick_bpn": p["own_bytes"] / nnz,
            "pick_pct": p["pct_read_bw"], "cus_pct": cus_pct, "speedup": cus_ms / p["ms"],
        }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite")
    ap.add_argument("--pick", default="planner",
                    choices=["planner", "planner_measure", "oracle"])
    ap.add_argument("--matrices", action="store_true", help="also list every result")
    a = ap.parse_args()
    with open(a.suite) as f:
        suite = json.load(f)
    rs = list(rows(suite, a.pick))
    if not rs:
        sys.exit(f"{a.suite}: no bandwidth-regime results with byte counts")
    print(f"{suite.get('gpu', '?')}, suite {suite.get('suite', '?')}, pick: {a.pick}; "
          f"read bandwidth {suite['read_bandwidth'] / 1e12:.2f} TB/s")
    if a.matrices:
        print(f"{'matrix':<28} {'cl':<2} {'prec':<4} {'format':<10} {'CSR B/nz':>8} "
              f"{'pick B/nz':>9} {'pick %bw':>8} {'cuS %bw':>7} {'speedup':>7}")
        for r in sorted(rs, key=lambda r: (r["precision"], r["class"], r["matrix"])):
            print(f"{r['matrix'][:28]:<28} {r['class']:<2} {r['precision']:<4} {r['format']:<10} "
                  f"{r['csr_bpn']:>8.2f} {r['pick_bpn']:>9.2f} {r['pick_pct']:>7.1f}% "
                  f"{r['cus_pct']:>6.1f}% {r['speedup']:>6.2f}x")
        print()
    groups = defaultdict(list)
    for r in rs:
        groups[(r["precision"], r["class"])].append(r)
        groups[(r["precision"], "all")].append(r)
    print(f"{'prec':<4} {'class':<5} {'n':>3} {'CSR B/nz':>8} {'pick B/nz':>9} {'bytes x':>7} "
          f"{'pick %bw':>8} {'cuS %bw':>7} {'bw x':>5} {'speedup':>7}")
    for (prec, cls), g in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] == "all",
                                                                   kv[0][1])):
        csr = geomean([r["csr_bpn"] for r in g])
        pick = geomean([r["pick_bpn"] for r in g])
        pp = geomean([r["pick_pct"] for r in g])
        cp = geomean([r["cus_pct"] for r in g])
        sp = geomean([r["speedup"] for r in g])
        print(f"{prec:<4} {cls:<5} {len(g):>3} {csr:>8.2f} {pick:>9.2f} {csr / pick:>6.2f}x "
              f"{pp:>7.1f}% {cp:>6.1f}% {pp / cp:>4.2f}x {sp:>6.2f}x")
    print("geometric means; speedup = bytes x * bw x (both byte counts include x and y once)")


if __name__ == "__main__":
    main()
