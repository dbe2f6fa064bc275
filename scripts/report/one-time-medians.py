#!/usr/bin/env python3
"""Medians of compile(DeviceCsr)'s one-time stages over suite runs, for comparing builds: per
precision and run, the device-array pick's (planner_device: the second build in its process,
kernels cached) inspect, plan, encode, codegen and kernel-load times and their total in ms, the
median break-even against the best cuSPARSE (no cuSPARSE setup charged), the median break-even
against every cuSPARSE algorithm with its own setup (suite-table.py's device_break_even), and the
pick's geomean over the best cuSPARSE. Only bandwidth-regime entries timed in every run count,
so the rows compare the same matrices.

    one-time-medians.py LABEL=SUITE.json [LABEL=SUITE.json ...]"""
import json
import math
import os
import runpy
import statistics
import sys

STAGES = [("inspect", "inspect"), ("plan", "plan"), ("encode", "encode"),
          ("codegen", "codegen"), ("kernels", "compile")]


def device_records(path):
    """(matrix, precision) -> (the entry, its planner_device) of a suite file's bandwidth entries."""
    with open(path) as f:
        doc = json.load(f)
    out = {}
    for r in doc.get("results", []):
        m = r.get("planner_device")
        if r.get("regime") != "bandwidth" or not m or "one_time" not in m or not m.get("correct"):
            continue
        out[(r["matrix"], r["precision"])] = (r, m)
    return out


def main(args):
    if not args or any("=" not in a for a in args):
        sys.exit(__doc__)
    table = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                        "suite-table.py"))
    runs = [(a.split("=", 1)[0], device_records(a.split("=", 1)[1])) for a in args]
    common = set.intersection(*(set(recs) for _, recs in runs))
    print(f"# compile(DeviceCsr)'s one-time stages, medians in ms over the {len(common)} "
          "bandwidth entries (matrix and precision) every run timed")
    print(f"{'prec':<5}{'run':<28}" + "".join(f"{s:>8}" for s, _ in STAGES) +
          f"{'total':>8}{'b-e':>7}{'b-e setup':>10}{'x':>7}{'n':>4}")
    for prec in ("f64", "f32"):
        keys = sorted(k for k in common if k[1] == prec)
        if not keys:
            continue
        for label, recs in runs:
            picks = [recs[k] for k in keys]
            cells = [statistics.median(m["one_time"][key] * 1e3 for _, m in picks)
                     for _, key in STAGES]
            total = statistics.median(m["one_time_cached_s"] * 1e3 for _, m in picks)
            be = statistics.median(m.get("break_even_multiplies", math.inf) or math.inf
                                   for _, m in picks)
            be_setup = statistics.median(table["device_break_even"](r, m) for r, m in picks)
            x = math.exp(statistics.fmean(math.log(m["speedup_vs_best_cusparse"])
                                          for _, m in picks))
            print(f"{prec:<5}{label[:27]:<28}" + "".join(f"{c:8.2f}" for c in cells) +
                  f"{total:8.2f}{be:7.0f}{be_setup:10.0f}{x:7.3f}{len(picks):4d}")


if __name__ == "__main__":
    main(sys.argv[1:])
