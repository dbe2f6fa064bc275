"""scripts/report/suite-table.py's break-even of the pick from device arrays against every
cuSPARSE algorithm with that algorithm's own setup, and from host CSR with cuSPARSE's upload
added to it, on hand-made entries worked out by hand; and a suite run without measure mode
(--skip-measure) printed without error; the class table counts a generated pick below 1.0x apart
from a pick handed to cuSPARSE."""
import os
import runpy

from script_support import json_file, run

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
script = os.path.join(root, "scripts", "report", "suite-table.py")
table = runpy.run_path(script)
device_break_even = table["device_break_even"]

# Ours: 0.080 ms a multiply after 2 ms once. ALG1 0.100 ms after 0.5 ms of preprocessing:
# (2 - 0.5) ms / 0.020 ms = 75 multiplies. ALG2 0.120 ms after 0.1 ms: 1.9 / 0.040 = 47.5. The
# later of the two is the break-even.
entry = {"cusparse": {"csr_alg1": {"ms": 0.100, "prepare_s": 0.5e-3, "correct": True},
                      "csr_alg2": {"ms": 0.120, "prepare_s": 0.1e-3, "correct": True},
                      "sell_alg1": {"applicable": False, "reason": "n/a"}}}
pick = {"ms": 0.080, "one_time_cached_s": 2e-3, "correct": True}
assert abs(device_break_even(entry, pick) - 75.0) < 1e-9, device_break_even(entry, pick)
# A setup longer than ours repays at once.
slow_setup = {"cusparse": {"sell_alg1": {"ms": 0.100, "prepare_s": 0.4, "correct": True}}}
assert device_break_even(slow_setup, pick) == 0.0
# An algorithm faster per multiply is never caught up with; a wrong one does not count.
faster = {"cusparse": {"csr_alg1": {"ms": 0.070, "prepare_s": 0.0, "correct": True}}}
assert device_break_even(faster, pick) == float("inf")
wrong = {"cusparse": {"csr_alg1": {"ms": 0.070, "prepare_s": 0.0, "correct": False},
                      "csr_alg2": {"ms": 0.120, "prepare_s": 0.1e-3, "correct": True}}}
assert abs(device_break_even(wrong, pick) - 47.5) < 1e-9

# From host CSR cuSPARSE's upload joins its setup: ours 2 ms (its upload in it) against ALG1's
# 0.5 ms + 1 ms upload: 0.5 / 0.020 = 25; ALG2's 0.1 + 1: 0.9 / 0.040 = 22.5.
assert abs(device_break_even(entry, pick, 1e-3) - 25.0) < 1e-9, device_break_even(entry, pick, 1e-3)
assert device_break_even(entry, pick, 2e-3) == 0.0

# A whole document without planner_measure (bench --suite --skip-measure) prints both medians.
result = {"matrix": "m", "regime": "bandwidth", "class": "P", "precision": "f64",
          "best_cusparse_ms": 0.100, "cusparse": entry["cusparse"],
          "planner": {"format": "bro_ell", "ms": 0.080, "correct": True,
                      "speedup_vs_best_cusparse": 1.25, "break_even_multiplies": 100.0},
          "planner_device": dict(pick, format="bro_ell", speedup_vs_best_cusparse=1.25,
                                 break_even_multiplies=100.0),
          "planner_host_gpu": dict(pick, format="bro_ell", speedup_vs_best_cusparse=1.25),
          "cusparse_upload_s": 1e-3, "cusparse_staged_upload_s": 0.2e-3,
          "formats": []}
doc = {"suite": "t", "gpu": "test GPU", "arch": "sm_90", "cusparse": "12", "read_bandwidth": 1e12,
       "results": [result]}
with json_file(doc) as path:
    out = run(script, path)
lines = [l for l in out.splitlines() if l.startswith("median break-even (device")]
assert any("(device), bandwidth f64: 100 multiplies" in l for l in lines), out
assert any("setup on its side), bandwidth f64: 75 multiplies" in l for l in lines), out
# From host CSR: 25 against cuSPARSE's own 1 ms upload; with its staged 0.2 ms, ALG1's
# (2 - 0.7) / 0.020 = 65 against ALG2's (2 - 0.3) / 0.040 = 42.5.
host = [l for l in out.splitlines() if l.startswith("median break-even (host CSR")]
assert any("each side its own upload), bandwidth f64: 25 multiplies" in l for l in host), out
assert any("staged upload), bandwidth f64: 65 multiplies" in l for l in host), out
assert "host CSR, GPU build: 1.250x over 1 matrices" in out, out
# The class table: a generated pick at 0.95x is below 1.0x; a pick handed to cuSPARSE at 0.999x
# (its own kernel, timed again) is counted as cuSPARSE's, not as below.
slower = dict(result, matrix="slower", planner=dict(result["planner"], speedup_vs_best_cusparse=0.95))
handed = dict(result, matrix="handed", planner={"format": "cusparse", "ms": 0.1001, "correct": True,
                                                "speedup_vs_best_cusparse": 0.999})
with json_file(dict(doc, results=[result, slower, handed])) as path:
    out = run(script, path)
row = next(l for l in out.splitlines() if l.startswith("P     f64"))
# model: geomean of 1.25, 0.95, 0.999 = 1.0589; one below, one cuSPARSE's.
assert row.split()[3:6] == ["1.059", "1", "1"], row
print("suite-table break-even and classes: ok")
