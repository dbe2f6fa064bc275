#!/usr/bin/env python3
"""Suite v13's class geometric means in the plan's order with the RCM rule for plan-order callers,
composed from two H200 runs: the suite picks with --suite-plan-order (made before that rule) and
`spmvc bench --reorder rcm --renumber-columns --plan-order` on the replicated matrices the rule
reorders. Each entry the rule reorders and the bench run measured takes the bench run's speed-up
over cuSPARSE's best in its own process; every other entry keeps the suite's. A composite of
separate runs, not one suite run: the table says which entries were substituted.

    scripts/report/plan-order-composite.py SUITE.json BENCH.json
"""
import json
import math
import sys


def main():
    suite = json.load(open(sys.argv[1]))
    runs = json.load(open(sys.argv[2]))["runs"]
    rcm = {}
    for j in runs:
        if not j["run"].endswith("-plan-rcm"):
            continue
        name, precision = j["run"][:-len("-plan-rcm")].rsplit("-", 1)
        ours = j["results"][0]["ms"]
        best = min(r["ms"] for r in j["results"] if r["name"].startswith("cusparse") and "ms" in r)
        rcm[(name, precision)] = (best / ours, j["plan"], j["reorder"])
    classes = {}
    print(f"{'entry':24} {'prec':4} {'class':5} {'suite pick':>10} {'under rcm':>10}")
    for r in suite["results"]:
        key = (r["matrix"].replace(" x16M", ""), r["precision"])
        s = r["planner"]["speedup_vs_best_cusparse"]
        x = s
        if key in rcm:
            x = rcm[key][0]
            print(f"{r['matrix'][:24]:24} {r['precision']:4} {r['class']:5} {s:9.3f}x {x:9.3f}x")
        for c in (r["class"], "all"):
            classes.setdefault((c, r["precision"]), []).append(x)
    print(f"\n{'class':5} {'prec':4} {'n':>3} {'geomean':>8} {'min':>7}")
    for (c, p), v in sorted(classes.items(), key=lambda kv: ("RPGa".index(kv[0][0][0]), kv[0][1])):
        g = math.exp(sum(map(math.log, v)) / len(v))
        print(f"{c:5} {p:4} {len(v):3} {g:7.3f}x {min(v):6.3f}x")


if __name__ == "__main__":
    main()
