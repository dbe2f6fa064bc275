#!/usr/bin/env python3
"""Prints a short table from `spmvc bench --json` files: ours vs the best cuSPARSE CSR."""
import json
import sys

args = sys.argv[1:]
if args and args[0] == "--combine":  # --combine OUT IN...: merge bench files into one list
    merged = []
    for path in args[2:]:
        try:
            with open(path) as f:
                merged.append(json.load(f))
        except (OSError, ValueError):
            pass
    with open(args[1], "w") as f:
        json.dump(merged, f, indent=1)
    sys.exit(0)

rows = []
for path in args:
    try:
        with open(path) as f:
            data = json.load(f)
        rows.extend(data if isinstance(data, list) else [data])
    except (OSError, ValueError) as e:
        print(f"{path}: unreadable ({e})")
if rows:
    print(f"GPU: {rows[0]['gpu']} ({rows[0]['arch']}), NVRTC {rows[0]['nvrtc']}, cuSPARSE {rows[0]['cusparse']}, "
          f"read bandwidth {rows[0]['read_bandwidth'] / 1e9:.0f} GB/s")
print(f"{'matrix':<34} {'prec':<5} {'nnz':>10} {'plan':<14} {'ours us':>9} {'alg1 us':>9} {'alg2 us':>9} "
      f"{'vs best':>8} {'%bw':>6} {'cusp%bw':>7} {'cold ms':>8} {'b-even':>7} {'err':>8}")
for r in rows:
    res = {x["name"]: x for x in r["results"]}
    ours = next(x for x in r["results"] if x["name"].startswith("spmvc"))
    a1, a2 = res["cusparse csr_alg1"], res["cusparse csr_alg2"]
    best = min((x for n, x in res.items() if n.startswith("cusparse")), key=lambda x: x["ms"])
    be = r["break_even_multiplies"]
    print(f"{r['matrix'][:34]:<34} {r['precision']:<5} {r['nnz']:>10} {r['plan'][:14]:<14} "
          f"{ours['ms'] * 1e3:>9.1f} {a1['ms'] * 1e3:>9.1f} {a2['ms'] * 1e3:>9.1f} "
          f"{ours['speedup_vs_best_cusparse']:>7.3f}x {ours['pct_read_bw']:>5.1f}% {best['pct_read_bw']:>6.1f}% "
          f"{r['one_time']['compile_cold'] * 1e3:>8.1f} {('-' if be is None else f'{be:.0f}'):>7} "
          f"{ours['relative_error']:>8.1e}")
    for s in r.get("sweep", []):
        print(f"    sweep {s['params']:<16} {s['ms'] * 1e3:>9.1f} us  {s['speedup_vs_best_cusparse']:.3f}x")
