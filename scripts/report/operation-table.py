#!/usr/bin/env python3
"""Prints a table from `spmvc bench --suite NAME --k K` or `--transpose` (the suite's records of
time_operation): per matrix and precision, spmvc's time, cuSPARSE's best for the operation and
the speed-up over it (and over k separate SpMVs where timed), then geometric means per precision
and per class (R, P, G) with the count below 1.0x. A result whose relative error exceeds the
tolerance (1e-12 fp64, 1e-5 fp32) is marked with !. An SpMM the operator handed to cusparseSpMM
(its record's engine "cusparse", Options::spmm_cusparse) is marked C and counted as cuSPARSE's:
per precision the geomean is given over all matrices (what apply_many delivers) and over the
generated kernels alone, with the number of cuSPARSE picks.

Usage: scripts/report/operation-table.py SUITE.json
"""
import json
import math
import sys


def main(path):
    with open(path) as f:
        doc = json.load(f)
    print(f"{doc['suite']}, {doc.get('operation', '?')}, on {doc['gpu']} "
          f"({doc['arch']}), cuSPARSE {doc['cusparse']}")
    print(f"{'matrix':<26} c {'prec':<4} {'spmvc ms':>9} {'cuSPARSE best':<24} {'ms':>9} "
          f"{'x':>6} {'k SpMV x':>8}  kernel")
    logs = {}
    own, picks = {}, {}  # per precision: the generated kernels' and cuSPARSE picks' logs
    for r in doc["results"]:
        if "failed" in r or "skipped" in r:
            print(f"{r['matrix'][:26]:<26} {r.get('failed', r.get('skipped'))}")
            continue
        if "speedup_vs_cusparse_best" not in r:
            continue
        tol = 1e-12 if r["precision"] == "f64" else 1e-5
        ours = next(t for t in r["results"] if t["name"].startswith("spmvc ") and
                    "x apply" not in t["name"])
        bad = "!" if not ours["relative_error"] <= tol else " "
        picked = r.get("engine") == "cusparse"
        x = r["speedup_vs_cusparse_best"]
        sep = r.get("speedup_vs_separate_spmv")
        print(f"{r['matrix'][:26]:<26} {r.get('class', '-')} {r['precision']:<4} "
              f"{r['spmvc_ms']:>9.4f} {r['cusparse_best'][9:33]:<24} {r['cusparse_best_ms']:>9.4f} "
              f"{x:>6.2f}{bad}{(f'{sep:.2f}' if sep else '-'):>8} {'C' if picked else ' '} "
              f"{r['kernel']}")
        if bad == " ":
            for key in (r["precision"], f"{r['precision']} {r.get('class', '-')}"):
                logs.setdefault(key, []).append(math.log(x))
            (picks if picked else own).setdefault(r["precision"], []).append(math.log(x))
    for key, v in sorted(logs.items()):
        below = sum(1 for a in v if a < 0)
        print(f"geomean over cuSPARSE's best, {key}: {math.exp(sum(v) / len(v)):.3f}x over "
              f"{len(v)} matrices ({below} below 1.0x)")
    for prec in sorted(set(own) | set(picks)):
        v = own.get(prec, [])
        mean = f"{math.exp(sum(v) / len(v)):.3f}x" if v else "-"
        print(f"{prec}: {len(picks.get(prec, []))} cuSPARSE picks (counted as cuSPARSE's); "
              f"generated kernels alone {mean} over {len(v)} matrices "
              f"({sum(1 for a in v if a < 0)} below 1.0x)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
