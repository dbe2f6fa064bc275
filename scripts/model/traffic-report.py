#!/usr/bin/env python3
"""Predicted against measured time per matrix and format, for the planner's two cost models.

Reads committed `spmvc bench --suite` results (each format's measured ms with the parameters it
ran), plans every matrix again on the CPU with the built `spmvc` (`spmvc plan --json` lists each
candidate's predicted time under both cost models: compulsory bytes, and the traffic model of
compiler/traffic.hpp), matches each measured format to the candidate with the same parameters,
and prints one row per (matrix, precision, format) plus a summary: per model, the geometric mean
of measured / predicted and its spread (sd of the log ratio), both with the calibration factors
(compiler/calibration/<gpu>.inc, fitted to the compulsory model) and without them (raw).

Usage: scripts/model/traffic-report.py [--spmvc build/ci/cli/spmvc] [--matrices ../shared/matrices]
       [--out FILE] [--only REGEX] SUITE.json [SUITE.json ...]
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # scripts/model/ -> the repository
MODELS = ("compulsory", "traffic")

sys.path.insert(0, HERE)
from planner_data import label_tokens  # noqa: E402


def plan_json(spmvc, matrices, result):
    """`spmvc plan --json` for the result's matrix as the suite built it."""
    source = result["source"]
    if ":" in source:  # a generator spec, used as is
        args = [source]
    else:  # a public matrix; " x16M" entries are I_k (x) A with >= 16M nonzeros
        args = [os.path.join(matrices, source + ".mtx.xz")]
        if result["matrix"].endswith(" x16M"):
            args += ["--replicate-to", "16000000"]
    cmd = [spmvc, "plan", *args, "--precision", result["precision"], "--json", "-q"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def stats(ratios):
    logs = [math.log(r) for r in ratios]
    if not logs:
        return None
    return {
        "n": len(logs),
        "geomean": math.exp(sum(logs) / len(logs)),
        "spread": statistics.pstdev(logs) if len(logs) > 1 else 0.0,
        "within25": sum(1 for r in ratios if 0.8 <= r <= 1.25) / len(ratios),
    }


def fmt_stats(s):
    if s is None:
        return "-"
    return (f"n={s['n']:3d}  geomean {s['geomean']:.3f}  log-sd {s['spread']:.3f}  "
            f"within 0.8-1.25x {100 * s['within25']:.0f}%")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spmvc", default=os.path.join(ROOT, "build", "ci", "cli", "spmvc"))
    ap.add_argument("--matrices", default=os.environ.get(
        "SPMVC_MATRIX_DIR", os.path.join(ROOT, "..", "shared", "matrices")))
    ap.add_argument("--out", help="also write the report here")
    ap.add_argument("--only", default="", help="regex over matrix names")
    ap.add_argument("suites", nargs="+")
    a = ap.parse_args()

    rows, sources, unmatched, same_as_run = [], [], [], 0
    for path in a.suites:
        with open(path) as f:
            doc = json.load(f)
        sources.append(f"{os.path.relpath(path, ROOT)} ({doc['suite']}, {doc['gpu']})")
        for r in doc["results"]:
            if "formats" not in r or not re.search(a.only, r["matrix"]):
                continue
            print(f"{r['matrix']} {r['precision']} ...", file=sys.stderr)
            plan = plan_json(a.spmvc, a.matrices, r)
            by_label = {(c["format"], label_tokens(c["format"], c["label"])): c
                        for c in plan["candidates"] if c["applicable"]}
            best_measured = min(m["ms"] for m in r["formats"] if m.get("correct"))
            for m in r["formats"]:
                if "ms" not in m or not m.get("correct"):
                    continue
                c = by_label.get((m["format"], label_tokens(m["format"], m["params"])))
                if c is None:
                    unmatched.append(f"{r['matrix']} {r['precision']} {m['format']} [{m['params']}]")
                    continue
                pred = c["seconds_by_model"]
                # The run's own prediction (compulsory, calibrated) where the model is unchanged.
                if abs(m.get("predicted_ms", 0) * 1e-3 - pred["compulsory"]) <= 1e-9 * 1e3:
                    same_as_run += 1
                t = c["traffic"]
                rows.append({
                    "matrix": r["matrix"], "precision": r["precision"], "format": m["format"],
                    "params": m["params"], "measured": m["ms"] * 1e-3,
                    "best": m["ms"] == best_measured, "factor": c["time_factor"],
                    "compulsory": pred["compulsory"], "traffic": pred["traffic"],
                    # plan_json plans with the default (compulsory) model: predicted_bytes are
                    # the compulsory bytes, of which x is what matrix and y leave.
                    "added": t["total"] / max(1.0, c["predicted_bytes"]) - 1,
                    "added_x": (t["x"] - (c["predicted_bytes"] - t["matrix"] - t["y"]))
                    / max(1.0, c["predicted_bytes"]),
                    "added_y": t["y_atomic"] / max(1.0, c["predicted_bytes"]),
                })

    lines = [
        "Predicted vs measured time per matrix and format: the planner's compulsory-bytes model",
        "and the traffic model (compiler/traffic.hpp). Generated by scripts/model/traffic-report.py.",
    ]
    lines += [f"measured: {s}" for s in sources]
    lines.append("predicted: `spmvc plan --json` on the CPU (both models include the calibration "
                 "factor; raw = without it)")
    lines.append("ratio = measured / predicted (calibrated); +x, +y atomic = bytes the traffic "
                 "model adds to the compulsory ones (x gathers, y lines read back)")
    lines.append("")
    lines.append(f"{'matrix':<22} {'prec':<4} {'format':<9} {'meas us':>8} {'comp us':>8} "
                 f"{'traf us':>8} {'r comp':>7} {'r traf':>7} {'+x':>7} {'+y atomic':>9}")
    for row in rows:
        lines.append(
            f"{row['matrix']:<22} {row['precision']:<4} {row['format']:<9} "
            f"{row['measured'] * 1e6:8.1f} {row['compulsory'] * 1e6:8.1f} "
            f"{row['traffic'] * 1e6:8.1f} {row['measured'] / row['compulsory']:7.3f} "
            f"{row['measured'] / row['traffic']:7.3f} {100 * row['added_x']:6.1f}% "
            f"{100 * row['added_y']:8.1f}%"
            + (" *" if row["best"] else ""))
    lines.append("(* the fastest measured format of the matrix)")
    lines.append("")

    def ratios(sel, model, raw):
        return [r["measured"] / (r[model] / (r["factor"] if raw else 1)) for r in sel]

    lines.append("Summary: measured / predicted")
    for raw in (False, True):
        for model in MODELS:
            label = f"{model}{' raw' if raw else ''}"
            lines.append(f"  {label:<15} all  {fmt_stats(stats(ratios(rows, model, raw)))}")
    gathers = sum(1 for r in rows if r["added_x"] > 0.01)
    changed = [r for r in rows if r["added"] > 0.01]
    lines.append(f"  where the traffic model adds more than 1% ({len(changed)} of {len(rows)}; "
                 f"x gathers in {gathers}):")
    for model in MODELS:
        lines.append(f"    {model:<13} {fmt_stats(stats(ratios(changed, model, False)))}")
    for model in MODELS:
        lines.append(f"    {model + ' raw':<13} {fmt_stats(stats(ratios(changed, model, True)))}")
    lines.append("")
    lines.append("Per format, raw (no calibration): geomean measured / predicted and log-sd")
    lines.append(f"  {'format':<9} {'prec':<4} {'n':>3}  {'compulsory':>18}  {'traffic':>18}")
    for f in sorted({r["format"] for r in rows}):
        for p in ("f64", "f32"):
            sel = [r for r in rows if r["format"] == f and r["precision"] == p]
            if not sel:
                continue
            sc, st = stats(ratios(sel, "compulsory", True)), stats(ratios(sel, "traffic", True))
            lines.append(f"  {f:<9} {p:<4} {len(sel):3d}  {sc['geomean']:8.3f} {sc['spread']:8.3f}  "
                         f"{st['geomean']:8.3f} {st['spread']:8.3f}")
    lines.append("")

    # Ranking: per matrix, the model's fastest predicted format among those measured, and what it
    # costs against the fastest measured (the planner's regret, on this set of candidates).
    lines.append("Ranking among the measured formats (calibrated): matrices where the model's "
                 "fastest is the measured fastest, and the geomean of measured(pick) / best")
    groups = {}
    for r in rows:
        groups.setdefault((r["matrix"], r["precision"]), []).append(r)
    for model in MODELS:
        hits, regrets = 0, []
        for sel in groups.values():
            pick = min(sel, key=lambda r: r[model])
            best = min(r["measured"] for r in sel)
            hits += pick["measured"] == best
            regrets.append(pick["measured"] / best)
        gm = math.exp(sum(math.log(x) for x in regrets) / len(regrets))
        lines.append(f"  {model:<13} {hits}/{len(groups)} picks fastest, geomean "
                     f"{gm:.3f}x the fastest, worst {max(regrets):.2f}x")
    lines.append("")
    lines.append(f"{len(rows)} measurements matched; {same_as_run} of them with the compulsory "
                 f"prediction the run recorded (model unchanged since)")
    if unmatched:
        lines.append(f"not matched (no candidate with the measured parameters now): "
                     f"{len(unmatched)}")
        lines += [f"  {u}" for u in unmatched]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
