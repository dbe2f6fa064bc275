#!/usr/bin/env python3
"""Tables from scripts/gpu/ops-check's ops-bench.json (one {"command", "result"} document per
line): the cost of Operator::update_values per call, and the deterministic plan against cuSPARSE
CSR ALG1 and ALG2 (ALG2's results are deterministic, ALG1's are not guaranteed to be)."""
import json
import sys


def rows(path):
    with open(path) as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def main(path):
    updates, determ = [], []
    for doc in rows(path):
        r = doc["result"]
        (updates if "host_values_ms" in r else determ).append(r)
    if updates:
        print("update_values (ms per call; the first traces the value order)")
        print(f"{'matrix':34} {'prec':4} {'nnz':>10} {'first':>8} {'host':>7} {'device':>7} "
              f"{'dev-arr':>7} {'multiply':>8}  plan")
        for r in updates:
            dev = r["device_build_update_ms"]
            first = r["first_update"]
            print(f"{r['matrix'][:34]:34} {r['precision']:4} {r['nnz']:>10} "
                  f"{first['seconds'] * 1e3:8.1f} {r['host_values_ms']:7.2f} "
                  f"{r['device_values_ms']:7.2f} {'-' if dev is None else f'{dev:7.2f}':>7} "
                  f"{r['multiply_ms']:8.3f}  {r['plan']}"
                  f"{' -> re-planned: ' + first['plan_after'] if first['replanned'] else ''}"
                  f"{'' if r['correct'] else '  FAILED'}")
    if determ:
        print("\ndeterministic plan against cuSPARSE (us per multiply; speedup = cuSPARSE / ours)")
        print(f"{'matrix':34} {'prec':4} {'ours':>9} {'ALG1':>9} {'ALG2':>9} {'vs ALG1':>8} "
              f"{'vs ALG2':>8}  plan")
        for r in determ:
            by = {m["name"]: m for m in r["results"]}
            ours = next(m for m in r["results"] if m["name"].startswith("spmvc"))
            a1, a2 = by.get("cusparse csr_alg1"), by.get("cusparse csr_alg2")

            def us(m):
                return f"{m['ms'] * 1e3:9.1f}" if m else f"{'-':>9}"

            def ratio(m):
                return f"{m['ms'] / ours['ms']:7.2f}x" if m else f"{'-':>8}"

            print(f"{r['matrix'][:34]:34} {r['precision']:4} {us(ours)} {us(a1)} {us(a2)} "
                  f"{ratio(a1)} {ratio(a2)}  {ours['name'][6:]} [{r['plan']}]"
                  f"{'' if r.get('deterministic') else '  (not deterministic!)'}"
                  f"{'' if r['correct'] else '  FAILED'}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: ops-table.py ops-bench.json")
    main(sys.argv[1])
