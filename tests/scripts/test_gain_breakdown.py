"""scripts/report/gain-breakdown.py on a hand-made suite: the byte and bandwidth factors per class
and their product, the speed-up."""
import os

from script_support import json_file, run

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
script = os.path.join(root, "scripts", "report", "gain-breakdown.py")
bw = 1e9  # 1 GB/s: 12000 bytes in 12 us is all of it


def result(name, cls, nnz, csr_bytes, cus_ms, own_bytes, ms):
    return {"matrix": name, "regime": "bandwidth", "class": cls, "precision": "f64", "nnz": nnz,
            "csr_bytes": csr_bytes, "best_cusparse_ms": cus_ms,
            "planner": {"format": "bro_ell", "ms": ms, "correct": True, "own_bytes": own_bytes,
                        "pct_read_bw": 100 * own_bytes / (ms * 1e-3) / bw}}


# P: half the bytes at the same share of the bandwidth -> 2x. G: the same bytes at half the share
# -> 0.5x. A small-regime result is ignored.
suite = {"gpu": "test GPU", "suite": "t", "read_bandwidth": bw, "results": [
    result("p1", "P", 1000, 12000.0, 0.012, 6000.0, 0.006),
    result("g1", "G", 1000, 12000.0, 0.012, 12000.0, 0.024),
    dict(result("s1", "R", 10, 120.0, 1.0, 60.0, 1.0), regime="small"),
]}
with json_file(suite) as path:
    out = run(script, path)
rows = {tuple(l.split()[:2]): l.split() for l in out.splitlines() if l.startswith("f64")}
assert set(rows) == {("f64", "P"), ("f64", "G"), ("f64", "all")}, out
p, g, a = rows[("f64", "P")], rows[("f64", "G")], rows[("f64", "all")]
# columns: prec class n CSR pick bytes-x pick%bw cuS%bw bw-x speedup
assert p[2] == "1" and p[3] == "12.00" and p[4] == "6.00" and p[5] == "2.00x", p
assert p[6] == "100.0%" and p[7] == "100.0%" and p[8] == "1.00x" and p[9] == "2.00x", p
assert g[5] == "1.00x" and g[6] == "50.0%" and g[8] == "0.50x" and g[9] == "0.50x", g
assert a[2] == "2" and a[9] == "1.00x", a
print("gain-breakdown: ok")
