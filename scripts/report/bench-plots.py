#!/usr/bin/python3
"""Draws the figures of a `spmvc bench --suite` JSON (needs matplotlib: apt install
python3-matplotlib). Writes, next to the JSON unless --out says otherwise:

  speedup-<prec>.svg   the planner's pick and the fastest format per matrix, over the best cuSPARSE
                       (measure mode and the oracle where the run timed them)
  classes-<prec>.svg   the pick's speedup per matrix by class (R, P, G) with each class's
                       geometric mean and target; picks handed to cuSPARSE hatched
  bandwidth-<prec>.svg % of measured read bandwidth on each variant's own bytes
  planner-<prec>.svg   the planner's time over the oracle's (the fastest measured variant; left
                       out when the run timed no format beside the pick)

Usage: scripts/report/bench-plots.py SUITE.json [--out DIR] [--png]
"""
import argparse
import json
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def order_note(doc):
    """Says so in a title where the run kept x and y in the plan's order (--suite-plan-order)."""
    return " (vectors in the plan's order)" if doc.get("planner_plan_order") else ""


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


def timed_formats(rows):
    """Whether the run timed formats beside the pick (else the oracle is the pick itself)."""
    return any("ms" in m for r in rows for m in r.get("formats", []))


def timed_measure(rows):
    return any("speedup_vs_best_cusparse" in r.get("planner_measure", {}) for r in rows)


def gmean_of(values, rows):
    logs = [math.log(v) for v, r in zip(values, rows) if r["regime"] == "bandwidth" and v > 0]
    return math.exp(sum(logs) / len(logs)) if logs else float("nan")


def speedup(doc, prec, out, png):
    rows = rows_for(doc, prec)
    if not rows:
        return
    names = [r["matrix"] for r in rows]
    series = [("planner, model mode", [r["planner"]["speedup_vs_best_cusparse"] for r in rows])]
    if timed_measure(rows):
        series.append(("planner, measure mode",
                       [r.get("planner_measure", {}).get("speedup_vs_best_cusparse", 0)
                        for r in rows]))
    if timed_formats(rows):
        series.append(("fastest format (oracle)",
                       [r["best_cusparse_ms"] / r["oracle"]["ms"] for r in rows]))
    fig, ax = plt.subplots(figsize=(max(8, 0.4 * len(rows)), 4.5))
    xs = range(len(rows))
    width = 0.8 / len(series)
    for i, (label, ys) in enumerate(series):
        ax.bar([x + (i - (len(series) - 1) / 2) * width for x in xs], ys, width=width, label=label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(names, rotation=75, ha="right", fontsize=7)
    ax.set_ylabel("speedup over best cuSPARSE")
    means = ", ".join(f"{gmean_of(ys, rows):.2f}x {label.split(', ')[-1]}" for label, ys in series)
    ax.set_title(f"{doc['suite']}{order_note(doc)}, {prec}, {doc['gpu']}: geomean over the bandwidth regime {means}",
                 fontsize=10)
    ax.legend(fontsize=8)
    save(fig, out, f"speedup-{prec}", png)


# Suite v13's class targets (README, where the classes are defined): R >= 1.5x fp64 and 1.6x
# fp32, G >= 1.25x.
CLASS_TARGETS = {("R", "f64"): 1.5, ("R", "f32"): 1.6, ("G", "f64"): 1.25, ("G", "f32"): 1.25}
CLASS_COLOURS = {"R": "tab:blue", "P": "tab:green", "G": "tab:red"}


def classes(doc, prec, out, png):
    rows = [r for r in rows_for(doc, prec) if r["regime"] == "bandwidth" and "class" in r]
    if not rows:
        return
    rows.sort(key=lambda r: ("RPG".find(r["class"]), r["matrix"]))
    fig, ax = plt.subplots(figsize=(max(8, 0.4 * len(rows)), 4.5))
    xs = list(range(len(rows)))
    for x, r in zip(xs, rows):
        handed = r["planner"].get("format") == "cusparse"
        ax.bar(x, r["planner"]["speedup_vs_best_cusparse"], color=CLASS_COLOURS.get(r["class"]),
               hatch="//" if handed else None, edgecolor="black" if handed else None,
               linewidth=0.5)
    titles = []
    for c in "RPG":
        idx = [i for i, r in enumerate(rows) if r["class"] == c]
        if not idx:
            continue
        ys = [rows[i]["planner"]["speedup_vs_best_cusparse"] for i in idx]
        g = gmean_of(ys, [rows[i] for i in idx])
        ax.hlines(g, idx[0] - 0.4, idx[-1] + 0.4, colors=CLASS_COLOURS[c], linewidth=1.5)
        target = CLASS_TARGETS.get((c, prec))
        if target:
            ax.hlines(target, idx[0] - 0.4, idx[-1] + 0.4, colors=CLASS_COLOURS[c],
                      linestyles="--", linewidth=1)
        titles.append(f"{c} {g:.2f}x" + (f" (target {target}x)" if target else ""))
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(xs)
    ax.set_xticklabels([r["matrix"] for r in rows], rotation=75, ha="right", fontsize=7)
    ax.set_ylabel("pick's speedup over best cuSPARSE")
    ax.set_title(f"{doc['suite']}{order_note(doc)}, {prec}, {doc['gpu']}: {', '.join(titles)}; solid: class "
                 f"geomean, dashed: target, hatched: handed to cuSPARSE", fontsize=9)
    save(fig, out, f"classes-{prec}", png)


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
    if not rows or not timed_formats(rows):
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
        classes(doc, prec, out, a.png)
        bandwidth(doc, prec, out, a.png)
        planner(doc, prec, out, a.png)


if __name__ == "__main__":
    main()
