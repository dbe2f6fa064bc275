#!/usr/bin/env python3
"""How close the planner's model pick comes to the fastest measured format, offline.

For every bandwidth-regime (with --regime small: small-regime) result of a `spmvc bench --suite`
JSON (each format timed with the parameters the model chose for it then), plans the matrix again
with the built spmvc (CPU only; plan and inspect JSON cached by scripts/model/planner_data.py) and
takes, per measured format, the
prediction of the candidate with the measured parameters. The pick is the measured format with
the lowest prediction; it counts when its measured time is within --tolerance (5%) of the
oracle (the suite's fastest measured variant). A pick of the suite's planner whose format the
suite did not time otherwise (amb in v13) is one more measured format. Ways to predict:

  build        the predictions as the build makes them (its compiler/calibration/<gpu>.inc)
  refit        the median calibration fitted again here on every result (what
               `scripts/model/calibrate.py --fit median` writes; equal to build when the
               committed file is such a fit and current)
  refit-picks  the same with the pick fit (calibrate.py's default; its docstring)
  loo, loo-picks  leave one matrix out: for each matrix the median (pick) calibration is fitted
               on the others (both precisions of the matrix left out; formats need one matrix
               fewer) and predicts it

Formats without a fitted row take the committed file's, scaled as calibrate.py does. The summary
gives, per precision and way, the picks within the tolerance and the geometric mean of pick /
oracle, the geometric mean of the best cuSPARSE over the pick (overall and per suite class),
and the picks that measured slower than the suite's best cuSPARSE (below 1.0x).
cuSPARSE's CSR SpMV is one more candidate (the planner's Engine::cusparse; scripts/model/
planner_data.py's cusparse_observation) unless --no-cusparse: the refit and leave-one-out modes
fit its factor like a format's, and a pick of it counts at cuSPARSE ALG1's measured time.
--gathering names the formats whose gathered x sectors those modes price (csr_stream, as the
planner does; "csr_stream,cusparse" prices cuSPARSE's too).

It also says where the build's best parameters for a format differ from the measured ones, and
where the build's overall best candidate is a format or parameter set the suite did not time
(the build's pick is then the best timed candidate, not what `spmvc plan` would choose).

Usage: scripts/model/planner-eval.py [--spmvc BIN] [--matrices DIR] [--mode build,loo,...]
       [--cost-model compulsory|traffic] [--regime bandwidth|small] [--gathering FORMATS]
       [--verbose] SUITE.json
"""
import argparse
import os
import sys

import planner_data as pd


MODES = ("build", "refit", "loo", "refit-picks", "loo-picks")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spmvc", default=pd.DEFAULT_SPMVC)
    ap.add_argument("--matrices", default=pd.DEFAULT_MATRICES)
    ap.add_argument("--cache", default=pd.DEFAULT_CACHE)
    ap.add_argument("--mode", default=",".join(MODES))
    ap.add_argument("--strength", type=float, default=pd.PICK_STRENGTH,
                    help="the pick fit's pull towards the median fit")
    ap.add_argument("--margin", type=float, default=pd.PICK_MARGIN,
                    help="the pick fit's distance kept from a turning point (log time)")
    ap.add_argument("--cost-model", default="compulsory", choices=["compulsory", "traffic"])
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--gpu", help="the calibrated model the suite ran on (H100, H200); default: "
                    "from the suite file's gpu field")
    ap.add_argument("--calibration", help="default: compiler/calibration/<gpu>.inc")
    ap.add_argument("--min-matrices", type=int, default=4)
    ap.add_argument("--regime", default="bandwidth", choices=["bandwidth", "small"],
                    help="the suite's results to score (the calibration is fitted on bandwidth)")
    ap.add_argument("--verbose", "-v", action="store_true", help="one line per result")
    ap.add_argument("--no-cusparse", action="store_true",
                    help="leave cuSPARSE's CSR SpMV out of the candidates (the planner's "
                    "cusparse \"never\")")
    ap.add_argument("--gathering", default=",".join(pd.GATHERING),
                    help="formats whose gathered x sectors the refit and leave-one-out modes "
                    "price (default: planner_data.GATHERING, what the planner charges)")
    ap.add_argument("suite")
    a = ap.parse_args()
    model = a.cost_model
    pd.GATHERING = tuple(f for f in a.gathering.split(",") if f)

    doc, results = pd.bandwidth_results(a.suite, a.regime)
    gpu = a.gpu or next((m for m in ("H100", "H200") if m in doc["gpu"]), None)
    if gpu is None:
        sys.exit(f"no calibrated model in '{doc['gpu']}': give --gpu")
    if a.calibration is None:
        a.calibration = os.path.join(pd.ROOT, "compiler", "calibration", f"{gpu.lower()}.inc")
    runner = pd.Runner(a.spmvc, a.matrices, a.cache, log=lambda s: print(s, file=sys.stderr),
                       gpu=gpu)
    # The refit and leave-one-out modes recompute warp_imbalance here: it must agree with the
    # build's, which the committed calibration file and the build's time factors tell.
    committed, _ = pd.read_inc(a.calibration)
    entries, notes, unmeasured = [], [], set()
    for r in results:
        plan, profile = runner.plan(r), runner.profile(r)
        obs = pd.observations(r, plan, profile, cusparse=not a.no_cusparse, build_rows=committed)
        entries.append((r, obs))
        name = f"{r['matrix']} {r['precision']}"
        for fmt, o in obs.items():
            expected = pd.calibrated(committed, fmt, r["precision"], o.get("imbalance", 1.0))
            if fmt == "cusparse":
                continue
            if "raw" in o and expected is not None and abs(o["time_factor"] / expected - 1) > 2e-3:
                notes.append(f"{name}: {fmt}'s time factor is {o['time_factor']:.4f} in the build, "
                             f"{expected:.4f} from {a.calibration} (stale build or imbalance)")
            if "missing" in o:
                notes.append(f"{name}: {fmt} [{o['missing']}] is no longer a candidate")
            elif o["top_label"] != o["label"]:
                notes.append(f"{name}: {fmt} measured [{o['label']}], the build's best is "
                             f"[{o['top_label']}]")
        top = min((c for c in plan["candidates"] if c["applicable"]),
                  key=lambda c: c["seconds_by_model"][model])
        timed = obs.get(top["format"], {})
        if timed.get("label") != top["label"]:
            unmeasured.add(id(r))
            notes.append(f"{name}: the build's best candidate, {top['format']} [{top['label']}], "
                         "was not timed: its pick above is the best timed candidate")

    # A build that predicts no cuSPARSE time (before the cusparse engine): its median measured /
    # raw time per precision stands in for the build's factor.
    for prec in ("f64", "f32"):
        cusp = [obs["cusparse"] for r, obs in entries
                if r["precision"] == prec and "cusparse" in obs]
        if not cusp or all(o["build_predicted"] for o in cusp):
            continue
        factor = pd.median([o["ms"] / o["raw"][model] for o in cusp])
        notes.append(f"{prec}: the build predicts no cuSPARSE time; its factor is the median "
                     f"measured / raw, {factor:.3f}")
        for o in cusp:
            o["time_factor"] = factor
            o["predicted"] = {k: v * factor for k, v in o["raw"].items()}

    modes = [m for m in a.mode.split(",") if m]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        sys.exit(f"unknown --mode {', '.join(unknown)} ({', '.join(MODES)})")
    picks = {m: {} for m in modes}

    fit = {"strength": a.strength, "margin": a.margin}
    if "build" in modes:
        for r, obs in entries:
            picks["build"][id(r)] = pd.pick(r, obs, lambda fmt, o: o["predicted"][model])
    for m, method in (("refit", "median"), ("refit-picks", "picks")):
        if m in modes:
            # As calibrate.py writes it: rows fitted here, the committed file's for the rest.
            rows = pd.fitted_rows(entries, model, a.min_matrices, committed, method, **fit)
            for r, obs in entries:
                picks[m][id(r)] = pd.pick(r, obs, pd.predictor(rows, model, r["precision"]))
    for m, method in (("loo", "median"), ("loo-picks", "picks")):
        if m in modes:
            picks[m] = pd.leave_one_out(entries, model, a.min_matrices, committed, method, **fit)

    print(f"{doc['gpu']}, {len(entries)} {a.regime}-regime results of {a.suite}; "
          f"{model} cost model; within {100 * a.tolerance:.0f}% of the oracle")
    header = f"{'matrix':24s} {'prec':4s} {'oracle':11s}" + "".join(
        f" {m + ' pick':>18s}" for m in modes)
    rows_out = []
    for r, obs in entries:
        cells = []
        for m in modes:
            f, ratio = picks[m][id(r)]
            mark = " " if ratio is not None and ratio <= 1 + a.tolerance else "*"
            if m == "build" and id(r) in unmeasured:
                mark = "?" if mark == " " else mark
            cells.append(f" {f or '-':>11s} {ratio or 0:5.2f}{mark}")
        line = f"{r['matrix'][:24]:24s} {r['precision']:4s} {r['oracle']['format'][:11]:11s}" + \
            "".join(cells)
        if a.verbose or "*" in line or "?" in line:
            rows_out.append(line)
    print(header)
    print("\n".join(rows_out))
    for prec in ("f64", "f32"):
        counts = []
        for m in modes:
            gm, ok, n = pd.score(entries, picks[m], prec, a.tolerance)
            counts.append(f"{m} {ok}/{n} geomean {gm:.3f}")
        print(f"{prec}: " + ", ".join(counts))
    for prec in ("f64", "f32"):
        gains = []
        for m in modes:
            gm = pd.speedup(entries, picks[m], prec)
            gains.append(f"{m} {gm:.3f}x")
        print(f"{prec}: geomean pick over the best cuSPARSE: " + ", ".join(gains))
    classes = sorted({r["class"] for r, _ in entries if r.get("class")})
    if classes:
        for prec in ("f64", "f32"):
            for m in modes:
                gains = ", ".join(f"{c} {pd.speedup(entries, picks[m], prec, c):.3f}x"
                                  for c in classes)
                print(f"{prec} {m}: geomean pick over the best cuSPARSE by class: {gains}")
    for prec in ("f64", "f32"):
        for m in modes:
            slow = pd.below_cusparse(entries, picks[m], prec)
            names = ", ".join(f"{n} {1 / x:.2f}x" for n, x in slow)
            print(f"{prec} {m}: {len(slow)} picks below 1.0x of the best cuSPARSE"
                  + (f" ({names})" if names else ""))
    print("*: more than the tolerance from the oracle; ?: within it, but the build's best candidate "
          "overall has parameters the suite did not time (see notes)")
    if notes:
        print("notes:")
        print("\n".join("  " + n for n in notes))


if __name__ == "__main__":
    main()
