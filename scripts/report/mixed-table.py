#!/usr/bin/env python3
"""Mixed precision from a `spmvc bench --suite ... --mixed-precision on` JSON: per matrix, the
planner's full-precision pick and its mixed-precision pick (values stored rounded: fp32 in an
fp64 operator, bf16 in an fp32 one), the speed-up of the second over the first, and y's
measured error against the fp64 host reference: the largest componentwise error relative to
(|A||x|)_i beside the bound the plan states, and the normwise relative error. Ends with the table
per class (R real values, P pattern or few values, G power-law rows) and mode: matrices, the
geometric mean speed-up with its range, the largest componentwise error and its bound, the
median normwise error, and how many stayed within the bound. An entry where the planner kept the
full-precision plan because it is faster ("fallback": Options::mixed_fallback) counts at
speed-up 1.00x with the full-precision plan's error, marked "full kept" (and counted per class).
Usage: scripts/report/mixed-table.py SUITE.json [more.json ...]"""
import json
import math
import statistics
import sys


def records(paths):
    """Each result with a timed mixed-precision pick: (entry, full pick, mixed pick)."""
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        for r in doc.get("results", []):
            m = r.get("planner_mixed")
            if m is None:
                continue
            yield r, r.get("planner", {}), m


def main(paths):
    rows = list(records(paths))
    if not rows:
        sys.exit("no planner_mixed results: run the suite with --mixed-precision on")
    print(f"{'matrix':<28} {'cls':<3} {'prec':<4} {'mode':<4} {'full pick':<12} {'mixed pick':<12}"
          f" {'full us':>9} {'mixed us':>9} {'speed-up':>8} {'max err':>9} {'bound':>9}"
          f" {'normwise':>9}")
    groups = {}
    for r, full, m in rows:
        mode = m.get("mode", "?")
        if "ms" not in m or "ms" not in full:
            why = m.get("reason") or m.get("error") or full.get("error") or "not timed"
            print(f"{r['matrix'][:28]:<28} {r.get('class', '?'):<3} {r['precision']:<4} "
                  f"{mode:<4} {why}")
            continue
        fallback = bool(m.get("fallback"))
        # A kept full-precision plan is the full-precision pick itself.
        speedup = 1.0 if fallback else full["ms"] / m["ms"]
        pick = "full kept" if fallback else m.get("format", "?")[:12]
        print(f"{r['matrix'][:28]:<28} {r.get('class', '?'):<3} {r['precision']:<4} {mode:<4} "
              f"{full.get('format', '?')[:12]:<12} {pick:<12} "
              f"{full['ms'] * 1e3:>9.1f} {m['ms'] * 1e3:>9.1f} {speedup:>7.2f}x "
              f"{m['max_error']:>9.2e} {m['tolerance']:>9.2e} {m['normwise_error']:>9.2e}"
              f"{'' if m['within_bound'] else '  OUTSIDE THE BOUND'}")
        g = groups.setdefault((r.get("class", "?"), mode), [])
        g.append((speedup, m))
    print()
    print("per class and mode (speed-up of the mixed-precision pick over the full-precision one;"
          " errors against the fp64 reference)")
    print(f"{'class':<5} {'mode':<4} {'n':>3} {'geomean':>8} {'min':>6} {'max':>6}"
          f" {'max err':>9} {'max bound':>9} {'median normwise':>15} {'within':>7}"
          f" {'full kept':>9}")
    order = {"R": 0, "P": 1, "G": 2}
    for (cls, mode), g in sorted(groups.items(), key=lambda kv: (order.get(kv[0][0], 3), kv[0])):
        s = [x for x, _ in g]
        geomean = math.exp(sum(math.log(x) for x in s) / len(s))
        max_err = max(m["max_error"] for _, m in g)
        max_bound = max(m["tolerance"] for _, m in g)
        normwise = statistics.median(m["normwise_error"] for _, m in g)
        within = sum(1 for _, m in g if m["within_bound"])
        kept = sum(1 for _, m in g if m.get("fallback"))
        print(f"{cls:<5} {mode:<4} {len(g):>3} {geomean:>7.2f}x {min(s):>5.2f}x {max(s):>5.2f}x"
              f" {max_err:>9.2e} {max_bound:>9.2e} {normwise:>15.2e} {within:>3}/{len(g):<3}"
              f" {kept:>9}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
