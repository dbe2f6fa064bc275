#!/usr/bin/env python3
"""Total time over a horizon of N multiplies, one-time cost included, of the break-even-aware
pick against the best fixed choices, from a `spmvc bench --suite` JSON.

For each matrix, precision and N (default 10, 100, 1000, 100000), a choice's total is its
measured one-time cost + N x its measured multiply time:
  aware      the break-even-aware planner's pick for N (`planner_by_multiplies`, which `spmvc
             bench --suite` records), measured as that format's entry of `formats`. A suite file
             without it (older runs) gets the pick replayed: the timed format with the least
             predicted one-time cost (`predicted_one_time_s`, else the build-cost model of
             --calibration applied to the entry's sizes) + N x predicted multiply time.
  today      the planner's pick without a multiply count (`planner`), its one-time cost with the
             compile counted cold as the format entry of the same format measured it.
  hindsight  the timed format with the least measured total for this matrix and N.
  fixed      the one format with the least total over the class for N (the same for every
             matrix of the class).
  cusparse   the best cuSPARSE algorithm with its setup: the CSR upload and its preprocessing
             (`cusparse_upload_s`, `prepare_s`; older files: the upload estimated from the CSR
             bytes at --calibration's upload rate, preprocessing not counted, and the table says
             so).
A pick handed to cuSPARSE (format "cusparse", the planner's engine) counts as csr's entry's
one-time cost (the arrays cuSPARSE reads and the csr kernel kept beside them) + ALG1's
preprocessing + N x its multiply time (ALG1's for aware, the planner's measured time for today).
One-time costs are the measured stages (inspect, reorder, plan, encode, codegen, upload, and the
kernel's compile as measured: cold for the format entries); --cached-kernels leaves the compile
out of every spmvc total. Per class and N it prints the geometric mean of each choice's total
over the aware pick's (above 1: the aware pick is faster) and how many matrices it covers.

Usage: scripts/report/break-even.py SUITE.json [--multiplies 10,100,1000,100000]
       [--calibration compiler/calibration/h100_build.inc] [--cached-kernels] [--json]
"""
import argparse
import json
import math
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STAGES = ("inspect", "reorder", "plan", "encode", "codegen", "upload")


def read_calibration(path):
    """(stage, format) -> (basis, seconds per unit) from a calibration/<gpu>_build.inc."""
    rows = {}
    with open(path) as f:
        for line in f:
            m = re.match(r'\{"(\w+)", "([\w*]*)", "(\w+)", ([0-9.eE+-]+),', line.strip())
            if m:
                rows[(m.group(1), m.group(2))] = (m.group(3), float(m.group(4)))
    if not rows:
        sys.exit(f"{path}: no build-cost rows")
    return rows


def modelled_one_time(cal, r, m, cached):
    """The build-cost model's one-time seconds for timed format entry m of result r."""
    vb = 8 if r["precision"] == "f64" else 4
    nnz = r["nnz"]
    nbytes = m.get("own_bytes", 0) - (r["nrows"] + r["ncols"]) * vb

    def stage(name, fmt=""):
        basis, v = cal.get((name, fmt)) or cal.get((name, "*")) or ("kernel", 0.0)
        return v if basis == "kernel" else v * (nbytes if basis == "byte" else nnz)

    return stage("inspect") + stage("encode", m["format"]) + stage("upload") + \
        (0.0 if cached else stage("compile", m["format"]))


def one_time(m, cached):
    t = m["one_time"]
    return sum(t.get(s, 0.0) for s in STAGES) + (0.0 if cached else t.get("compile", 0.0))


def totals_for(r, n, cal, cached):
    """{choice: (label, total seconds)} for result r at horizon n, plus notes."""
    timed = {m["format"]: m for m in r.get("formats", [])
             if m.get("correct") and "one_time" in m and "ms" in m}
    if not timed:
        return None, []
    notes = []
    total = {f: one_time(m, cached) + n * m["ms"] * 1e-3 for f, m in timed.items()}
    out = {}
    hind = min(total, key=total.get)
    out["hindsight"] = (hind, total[hind])
    picks = r.get("planner_by_multiplies", {})
    pick = picks.get(str(n), {}).get("format")
    if pick is None:
        notes.append("replayed")

        def predicted(f):
            m = timed[f]
            pre = m.get("predicted_one_time_s")
            if pre is None:
                pre = modelled_one_time(cal, r, m, cached)
            return pre + n * m["predicted_ms"] * 1e-3

        pick = min(timed, key=predicted)
    alg1 = r.get("cusparse", {}).get("csr_alg1", {})

    def engine_total(ms):
        """A plan handed to cuSPARSE (format "cusparse"): csr's build (the arrays cuSPARSE
        reads, the kernel kept for SpMM and the transpose), ALG1's preprocessing, n multiplies
        of ms; None where the suite timed no csr or no ALG1."""
        if "csr" not in timed or ms is None or "ms" not in alg1:
            return None
        return one_time(timed["csr"], cached) + alg1.get("prepare_s", 0.0) + n * ms * 1e-3

    if pick in timed:
        out["aware"] = (pick, total[pick])
    elif pick == "cusparse" and engine_total(alg1.get("ms")) is not None:
        out["aware"] = (pick, engine_total(alg1.get("ms")))
    else:
        notes.append(f"aware pick {pick} not timed")
    today = r.get("planner", {}).get("format")
    if today in timed and "ms" in r["planner"]:
        out["today"] = (today, one_time(timed[today], cached) + n * r["planner"]["ms"] * 1e-3)
    elif today == "cusparse" and engine_total(r["planner"].get("ms")) is not None:
        out["today"] = (today, engine_total(r["planner"]["ms"]))
    best = None
    upload = r.get("cusparse_upload_s")
    if upload is None:
        basis, v = cal.get(("upload", ""), ("byte", 1 / 7e9))
        upload = v * ((r["nrows"] + 1) * 4 + r["nnz"] * (4 + (8 if r["precision"] == "f64" else 4)))
        notes.append("cusparse setup estimated")
    for alg, c in r.get("cusparse", {}).items():
        if "ms" in c and c.get("correct", True):
            t = upload + c.get("prepare_s", 0.0) + n * c["ms"] * 1e-3
            if best is None or t < best[1]:
                best = (alg, t)
    if best:
        out["cusparse"] = best
    return (out, total), notes


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def report(doc, horizons, cal, cached):
    results = [r for r in doc["results"] if "precision" in r and "nnz" in r]
    rows = []
    notes_seen = set()
    for prec in sorted({r["precision"] for r in results}, reverse=True):
        for klass in sorted({r.get("class", "-") for r in results}) + ["all"]:
            group = [r for r in results if r["precision"] == prec and
                     (klass == "all" or r.get("class", "-") == klass)]
            for n in horizons:
                per = []
                for r in group:
                    got, notes = totals_for(r, n, cal, cached)
                    notes_seen.update(notes)
                    if got and "aware" in got[0]:
                        per.append(got)
                if not per:
                    continue
                # The fixed format: least summed total over the class among formats every
                # matrix timed.
                common = set.intersection(*(set(t) for _, t in per))
                fixed = min(common, key=lambda f: sum(t[f] for _, t in per)) if common else None
                row = {"precision": prec, "class": klass, "multiplies": n, "matrices": len(per),
                       "fixed_format": fixed}
                aware = [c["aware"][1] for c, _ in per]
                for key in ("today", "hindsight", "cusparse"):
                    pairs = [(c[key][1], a) for (c, _), a in zip(per, aware) if key in c]
                    row[key] = geomean([t / a for t, a in pairs]) if pairs else None
                row["fixed"] = geomean([t[fixed] / a for (_, t), a in zip(per, aware)]) \
                    if fixed else None
                row["aware_is_hindsight"] = sum(
                    c["aware"][0] == c["hindsight"][0] for c, _ in per)
                rows.append(row)
    return rows, sorted(notes_seen)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("suite")
    ap.add_argument("--multiplies", default="10,100,1000,100000")
    ap.add_argument("--calibration", help="build-cost .inc for files without predictions "
                    "(default: the suite GPU's, compiler/calibration/<gpu>_build.inc)")
    ap.add_argument("--cached-kernels", action="store_true",
                    help="leave the kernel compile out of every spmvc one-time cost")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    try:
        horizons = [int(x) for x in a.multiplies.split(",")]
    except ValueError:
        sys.exit(f"--multiplies: '{a.multiplies}' is not a comma list of integers")
    if any(n < 1 for n in horizons):
        sys.exit("--multiplies: every count must be at least 1")
    with open(a.suite) as f:
        doc = json.load(f)
    cal_path = a.calibration
    if cal_path is None:
        model = "h200" if "H200" in doc.get("gpu", "") else "h100"
        cal_path = os.path.join(ROOT, "compiler", "calibration", f"{model}_build.inc")
    rows, notes = report(doc, horizons, read_calibration(cal_path), a.cached_kernels)
    if a.json:
        print(json.dumps({"suite": doc.get("suite"), "gpu": doc.get("gpu"), "notes": notes,
                          "rows": rows}, indent=1))
        return
    print(f"{doc.get('suite')} on {doc.get('gpu')}: total time over N multiplies, one-time cost "
          f"included{' (kernels cached)' if a.cached_kernels else ' (compile cold)'}; each "
          "column: geomean of that choice's total / the break-even-aware pick's")
    print(f"{'prec':<5} {'class':<5} {'N':>7} {'mat':>4} {'today':>7} {'hindsight':>9} "
          f"{'fixed':>7} {'fixed format':<12} {'cuSPARSE':>8} {'aware=best':>10}")
    fmt = lambda v: f"{v:.3f}" if v is not None else "-"
    for r in rows:
        print(f"{r['precision']:<5} {r['class']:<5} {r['multiplies']:>7} {r['matrices']:>4} "
              f"{fmt(r['today']):>7} {fmt(r['hindsight']):>9} {fmt(r['fixed']):>7} "
              f"{(r['fixed_format'] or '-'):<12} {fmt(r['cusparse']):>8} "
              f"{r['aware_is_hindsight']:>6}/{r['matrices']}")
    for note in notes:
        print(f"note: {note}: " + {
            "replayed": "picks replayed from predictions (no planner_by_multiplies in the file)",
            "cusparse setup estimated": "cuSPARSE setup = CSR upload at the calibrated upload "
                                        "rate, preprocessing not counted (not in the file)",
        }.get(note, "see the matrices concerned"))


if __name__ == "__main__":
    main()
