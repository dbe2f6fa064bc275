#!/usr/bin/env python3
"""Fits the planner's one-time build cost model of one GPU model from `spmvc bench --suite`
results taken on it, and writes it as data the compiler embeds
(compiler/calibration/<gpu>_build.inc), with its provenance.

Every timed operator of a suite file (each format's, the planner's pick, the device-array pick)
carries its measured one-time stages (`one_time`: inspect, encode, upload, compile with the
kernel's origin). Each stage is modelled as seconds per unit of one basis, the coefficient being
the median of stage seconds / units over the suite's bandwidth-regime results (medians, so one
matrix far off the model moves no other prediction):

    inspect          host row scan                per nonzero (the same for every candidate)
    upload           host to device copy          per encoded byte (own_bytes less x and y)
    encode FORMAT    host encoder of one format   per nonzero, or per encoded byte where that
                                                  spreads less (padded formats: blocks, slices)
    compile FORMAT   NVRTC cold compile           per kernel (kernel_origin "nvrtc" only)
    device_inspect   GPU row scan (DeviceCsr)     per nonzero
    device_encode F  GPU build of F's arrays      per nonzero

A row FORMAT "*" holds the median over every format's observations: the planner charges it to a
format the suites did not time (the row says so). Formats with fewer than --min-matrices
observations get no row of their own.

Usage: scripts/model/calibrate-build.py --gpu H100|H200 [--out FILE] SUITE.json [SUITE.json ...]
"""
import argparse
import json
import math
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def log_spread(ratios):
    """Standard deviation of log(ratio / median): how far the model's single coefficient misses."""
    m = statistics.median(ratios)
    return statistics.pstdev([math.log(r / m) for r in ratios]) if len(ratios) > 1 else 0.0


def operators(result):
    """(path, operator) for every timed operator of one suite result that carries one_time."""
    # Not planner_measure: its one-time cost includes compiling and timing several candidates.
    if isinstance(result.get("planner"), dict) and "one_time" in result["planner"]:
        yield "host", result["planner"]
    if isinstance(result.get("planner_device"), dict) and "one_time" in result["planner_device"]:
        yield "device", result["planner_device"]
    for m in result.get("formats", []) + result.get("formats_plain", []):
        if "one_time" in m:
            yield "host", m


def observations(results):
    """Stage -> format -> basis -> [seconds per unit] over every operator of `results`."""
    obs = {}

    def add(stage, fmt, basis, seconds, units):
        if units > 0 and seconds > 0:
            obs.setdefault(stage, {}).setdefault(fmt, {}).setdefault(basis, []).append(
                seconds / units)

    for r in results:
        vb = 8 if r["precision"] == "f64" else 4
        nnz = r["nnz"]
        for path, m in operators(r):
            t = m["one_time"]
            fmt = m["format"]
            matrix_bytes = m.get("own_bytes", 0) - (r["nrows"] + r["ncols"]) * vb
            if path == "device":
                add("device_inspect", "", "nonzero", t["inspect"], nnz)
                add("device_encode", fmt, "nonzero", t["encode"], nnz)
            else:
                add("inspect", "", "nonzero", t["inspect"], nnz)
                add("upload", "", "byte", t["upload"], matrix_bytes)
                add("encode", fmt, "nonzero", t["encode"], nnz)
                add("encode", fmt, "byte", t["encode"], matrix_bytes)
            if t.get("kernel_origin") == "nvrtc":
                add("compile", fmt, "kernel", t["compile"], 1)
    return obs


def fit(obs, min_matrices):
    """Rows (stage, format, basis, seconds per unit, observations, log spread), sorted."""
    rows = []
    for stage, formats in sorted(obs.items()):
        pooled = {}
        for fmt, bases in sorted(formats.items()):
            for basis, ratios in bases.items():
                pooled.setdefault(basis, []).extend(ratios)
            # The basis whose single coefficient spreads least over the suite.
            basis, ratios = min(bases.items(), key=lambda kv: (log_spread(kv[1]), kv[0] != "nonzero"))
            if len(ratios) < min_matrices:
                continue
            rows.append((stage, fmt, basis, statistics.median(ratios), len(ratios),
                         log_spread(ratios)))
        if stage in ("encode", "compile", "device_encode"):
            basis = "kernel" if stage == "compile" else "nonzero"
            ratios = pooled.get(basis, [])
            if len(ratios) >= min_matrices:
                rows.append((stage, "*", basis, statistics.median(ratios), len(ratios),
                             log_spread(ratios)))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True, help="calibrated model: H100 or H200")
    ap.add_argument("--out")
    ap.add_argument("--min-matrices", type=int, default=4,
                    help="a row only from this many observations")
    ap.add_argument("suites", nargs="+")
    a = ap.parse_args()
    out = a.out or os.path.join(ROOT, "compiler", "calibration", f"{a.gpu.lower()}_build.inc")
    results, sources, gpus = [], [], set()
    for path in a.suites:
        with open(path) as f:
            doc = json.load(f)
        if a.gpu not in doc.get("gpu", ""):
            sys.exit(f"{path} was measured on {doc.get('gpu')}, not an {a.gpu}")
        gpus.add(doc["gpu"])
        mine = [r for r in doc["results"] if r.get("regime") == "bandwidth" and "nnz" in r]
        results += mine
        sources.append(f"{os.path.relpath(os.path.abspath(path), ROOT)} ({doc['suite']}): "
                       f"{len(mine)} bandwidth-regime results")
    rows = fit(observations(results), a.min_matrices)
    if not rows:
        sys.exit("no one-time stage times in the suite files")
    lines = [
        f"// Planner build-cost calibration for the {a.gpu}: each one-time stage as seconds per",
        "// unit of its basis (calibration.hpp, BuildFactor), the median of measured stage seconds",
        "// over units across the suite runs below. Generated by scripts/model/calibrate-build.py;",
        "// do not edit by hand.",
        f"// GPU: {', '.join(sorted(gpus))}",
    ]
    lines += [f"// from: {s}" for s in sources]
    lines += [
        "// units: nonzero; byte = encoded matrix bytes (own_bytes less x and y); kernel = one cold",
        "// NVRTC compile. Format \"*\": every format pooled, for formats without a row.",
        "// {stage, format, basis, seconds per unit, observations, log-spread (sd of log residual)}",
    ]
    for stage, fmt, basis, value, n, spread in rows:
        lines.append(f'{{"{stage}", "{fmt}", "{basis}", {value:.4e}, {n}, {spread:.3f}}},')
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {out}: {len(rows)} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
