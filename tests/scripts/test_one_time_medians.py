"""scripts/report/one-time-medians.py on two hand-made suite runs: the medians of the stages, the
total and the break-evens over the entries both runs timed, and the geomean of the picks."""
import os

from script_support import json_file, run

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
script = os.path.join(root, "scripts", "report", "one-time-medians.py")


def entry(name, inspect_ms, total_ms, pick_ms, cus_ms=0.1, prepare_ms=0.0, regime="bandwidth"):
    pick = {"format": "bro_ell", "ms": pick_ms, "correct": True,
            "speedup_vs_best_cusparse": cus_ms / pick_ms,
            "one_time": {"inspect": inspect_ms * 1e-3, "plan": 0.5e-3, "encode": 1e-3,
                         "codegen": 0.0, "compile": 0.0},
            "one_time_cached_s": total_ms * 1e-3,
            "break_even_multiplies": total_ms / (cus_ms - pick_ms)}
    return {"matrix": name, "regime": regime, "precision": "f64",
            "cusparse": {"csr_alg1": {"ms": cus_ms, "correct": True, "prepare_s": prepare_ms * 1e-3}},
            "planner_device": pick}


# Run a: three entries (c only in a: left out); run b halves the inspection of a and b.
a = {"results": [entry("a", 1.0, 3.0, 0.05), entry("b", 3.0, 5.0, 0.05),
                 entry("c", 9.0, 9.0, 0.05), entry("s", 9.0, 9.0, 0.05, regime="small")]}
b = {"results": [entry("a", 0.5, 2.5, 0.05, prepare_ms=0.5), entry("b", 1.5, 3.5, 0.05)]}
with json_file(a) as pa, json_file(b) as pb:
    out = run(script, f"before={pa}", f"after={pb}")
rows = {l.split()[1]: l.split() for l in out.splitlines() if l.startswith("f64")}
assert set(rows) == {"before", "after"}, out
# columns: prec run inspect plan encode codegen kernels total b-e b-e-setup x n
before, after = rows["before"], rows["after"]
assert before[2] == "2.00" and after[2] == "1.00", out  # medians of 1, 3 and of 0.5, 1.5
assert before[3] == "0.50" and before[4] == "1.00", out
assert before[7] == "4.00" and after[7] == "3.00", out
# Break-even: total / 0.05 ms saved; a's cuSPARSE setup of 0.5 ms is charged to its side.
assert before[8] == "80" and after[8] == "60", out
# With setup: before as without; after a (2.5 - 0.5) / 0.05 = 40 and b 3.5 / 0.05 = 70.
assert before[9] == "80" and after[9] == "55", out
assert before[10] == "2.000" and before[11] == "2", out
print("one-time-medians: ok")
