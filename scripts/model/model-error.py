#!/usr/bin/env python3
"""The planner model's error per format and per matrix class, on a `spmvc bench --suite` run.

Every bandwidth-regime result is planned again with the built spmvc (scripts/model/planner_data.py,
CPU only, cached), each measured format matched to the candidate with the parameters it ran (as
planner-eval.py and calibrate.py do), and the measured time set against the build's calibrated
prediction (--key predicted, the default) or the cost model's raw one (--key raw). Per format,
class (R, P, G, all) and precision: the results, the geometric mean of measured / predicted
(below 1: the model over-predicts the format there) and the log-spread within the group. A
format whose classes sit far apart on either side of 1 has a term the calibration's one factor
per format cannot fix; cuSPARSE's CSR SpMV is one more row (planner_data.cusparse_observation).
--relative divides each ratio by the geometric mean ratio of the other formats timed on the same
result: what decides the picks is a format's error against the others', not its own (on the
power-law graphs every format runs slower than its compulsory bytes predict). --verbose lists
every result's ratio.

Usage: scripts/model/model-error.py [--spmvc BIN] [--key predicted|raw] [--relative]
       [--gpu H100|H200] [--verbose] SUITE.json
"""
import argparse
import math
import sys

import planner_data as pd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spmvc", default=pd.DEFAULT_SPMVC)
    ap.add_argument("--matrices", default=pd.DEFAULT_MATRICES)
    ap.add_argument("--cache", default=pd.DEFAULT_CACHE)
    ap.add_argument("--cost-model", default="compulsory", choices=["compulsory", "traffic"])
    ap.add_argument("--key", default="predicted", choices=["predicted", "raw"])
    ap.add_argument("--gpu", help="the calibrated model to plan with (default: the suite's gpu)")
    ap.add_argument("--relative", action="store_true",
                    help="each ratio over the mean of the other formats' on the same result")
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("suite")
    a = ap.parse_args()
    doc, results = pd.bandwidth_results(a.suite)
    gpu = a.gpu or next((m for m in ("H100", "H200") if m in doc["gpu"]), None)
    if gpu is None:
        sys.exit(f"no calibrated model in '{doc['gpu']}': give --gpu")
    runner = pd.Runner(a.spmvc, a.matrices, a.cache, log=lambda s: print(s, file=sys.stderr),
                       gpu=gpu)
    entries = []
    for r in results:
        entries.append((r, pd.observations(r, runner.plan(r), runner.profile(r))))
    if a.verbose:
        for r, obs in entries:
            ratios = " ".join(f"{f}={o['ms'] / o[a.key][a.cost_model]:.2f}"
                              for f, o in sorted(obs.items()) if a.key in o)
            print(f"{r['matrix'][:26]:<26} {r.get('class', '?')} {r['precision']:<4} {ratios}")
        print()
    errs = pd.model_errors(entries, a.cost_model, a.key, a.relative)
    classes = sorted({k[1] for k in errs} - {"all"}) + ["all"]
    kind = "calibrated" if a.key == "predicted" else "raw"
    print(f"{doc['gpu']}: measured / {kind} predicted time ({a.cost_model} bytes)"
          f"{', over the other formats on the same result' if a.relative else ''}, geometric "
          f"mean [log-spread] (results) per class")
    print(f"{'format':<10} {'prec':<4} " + " ".join(f"{c:>17}" for c in classes))
    for fmt, prec in sorted({(k[0], k[2]) for k in errs}):
        cells = []
        for c in classes:
            e = errs.get((fmt, c, prec))
            cells.append(f"{e[1]:5.2f} [{e[2]:4.2f}] ({e[0]:2d})" if e else f"{'-':>17}")
        print(f"{fmt:<10} {prec:<4} " + " ".join(f"{s:>17}" for s in cells))
    spread = [abs(math.log(errs[(f, c, p)][1]))
              for f, c, p in errs if c != "all"]
    print(f"mean |log error| of the class means: {sum(spread) / len(spread):.3f}")


if __name__ == "__main__":
    main()
