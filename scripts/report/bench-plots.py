#!/usr/bin/python3
"""Draws the figures of a `spmvc bench --suite` JSON (needs matplotlib: apt install
python3-matplotlib). Writes, next to the JSON unless --out says otherwise:

  speedup-<prec>.svg   the planner's pick and the fastest format per matrix, over the best cuSPARSE
  bandwidth-<prec>.svg % of measured read bandwidth on each variant's own bytes
  planner-<prec>.svg   the planner's time over the oracle's (the fastest measured variant)

Usage: scripts/report/bench-plots.py SUITE.json [--out DIR] [--png]
"""
import argparse
import json
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows_for(doc, prec):
    rows = [r for r in doc["results"] if r.get("precision") == prec and "ms" in r.get("planner", {})]
    # Bandwidth regime first, then by name: the figure reads as the suite does.
    return sorted(rows, key=lambda r: (r["regime"] != "bandwidth", r["matrix"]))


def save(fig, out, name, png):
    fig.tight_layout()
    path = os.path.join(out, name + (".png" if png else ".svg"))
    fig.savefig(path, dpi=130)
    plt.close(fig)
    print("wrote", path)


def speedup(doc, prec, out, png):
    rows = rows_for(doc, prec)
    if not rows:
        return
    names = [r["matrix"] for r in rows]
    pick = [r["planner"]["speedup_vs_best_cusparse"] for r in rows]
    measured = [r.get("planner_measure", {}).get("speedup_vs_best_cusparse", 0) for r in rows]
    best = [r["best_cusparse_ms"] / r["oracle"]["ms"] for r in rows]
    fig, ax = plt.subplots(figsize=(max(8, 0.4 * len(rows)), 4.5))
    xs = range(len(rows))
    ax.bar([x - 0.27 for x in xs], pick, width=0.27, label="planner, model mode")
    ax.bar(list(xs), measured, width=0.27, label="planner, measure mode")
    ax.bar([x + 0.27 for x in xs], best, width=0.27, label="fastest format (oracle)")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names, rotation=75, ha="right", fontsize=7)
    ax.set_ylabel("speedup over best cuSPARSE (CSR ALG1, ALG2, SELL)")
    def gmean(v):
        logs = [math.log(p) for p, r in zip(v, rows) if r["regime"] == "bandwidth" and p > 0]
        return math.exp(sum(logs) / len(logs)) if logs else float("nan")

    ax.set_title(f"{doc['suite']}, {prec}, {doc['gpu']}: geomean over the bandwidth regime "
                 f"{gmean(pick):.2f}x model, {gmean(measured):.2f}x measure, {gmean(best):.2f}x oracle",
                 fontsize=10)
    ax.legend(fontsize=8)
    save(fig, out, f"speedup-{prec}", png)


def bandwidth(doc, prec, out, png):
    rows = rows_for(doc, prec)
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(max(8, 0.32 * len(rows)), 4.5))
    formats = sorted({m["format"] for r in rows for m in r.get("formats", []) if "ms" in m})
    xs = list(range(len(rows)))
    for f in formats:
        ys = []
        for r in rows:
            m = next((m for m in r.get("formats", []) if m["format"] == f and "ms" in m), None)
            ys.append(m["pct_read_bw"] if m else float("nan"))
        ax.plot(xs, ys, marker="o", linestyle="", markersize=3, label=f)
    ax.plot(xs, [r["planner"]["pct_read_bw"] for r in rows], marker="x", linestyle="", color="black",
            label="planner's pick")
    ax.set_xticks(xs)
    ax.set_xticklabels([r["matrix"] for r in rows], rotation=75, ha="right", fontsize=7)
    ax.set_ylabel("% of measured read bandwidth (own bytes)")
    ax.set_title(f"{doc['suite']}, {prec}: read bandwidth {doc['read_bandwidth'] / 1e9:.0f} GB/s")
    ax.legend(fontsize=7, ncol=4)
    save(fig, out, f"bandwidth-{prec}", png)


def planner(doc, prec, out, png):
    rows = rows_for(doc, prec)
    if not rows:
        return
    gaps = [r["planner"]["ms"] / r["oracle"]["ms"] for r in rows]
    fig, ax = plt.subplots(figsize=(max(8, 0.32 * len(rows)), 4))
    ax.bar(range(len(rows)), [100 * (g - 1) for g in gaps])
    ax.axhline(5.0, color="red", linewidth=0.8, linestyle="--", label="5% target")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r["matrix"] for r in rows], rotation=75, ha="right", fontsize=7)
    ax.set_ylabel("planner's time over the oracle's, %")
    within = sum(1 for g in gaps if g <= 1.05)
    ax.set_title(f"{doc['suite']}, {prec}: pick within 5% of the oracle on {within}/{len(gaps)}")
    ax.legend(fontsize=8)
    save(fig, out, f"planner-{prec}", png)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("suite_json")
    ap.add_argument("--out")
    ap.add_argument("--png", action="store_true")
    a = ap.parse_args()
    with open(a.suite_json) as f:
        doc = json.load(f)
    out = a.out or os.path.dirname(os.path.abspath(a.suite_json))
    os.makedirs(out, exist_ok=True)
    for prec in sorted({r["precision"] for r in doc["results"] if "precision" in r}):
        speedup(doc, prec, out, a.png)
        bandwidth(doc, prec, out, a.png)
        planner(doc, prec, out, a.png)


if __name__ == "__main__":
    main()
