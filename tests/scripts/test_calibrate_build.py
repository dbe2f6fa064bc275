#!/usr/bin/env python3
"""scripts/model/calibrate-build.py on a synthetic suite: each stage's coefficient is the median
of seconds per unit, the encoder's basis is the one that spreads least (per nonzero for a
format whose encode time follows nnz, per encoded byte for one that follows its padded bytes),
only cold compiles count, and the written .inc has one row per fitted stage."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "model", "calibrate-build.py")


def load_script():
    spec = importlib.util.spec_from_file_location("calibrate_build", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def suite():
    """Six matrices; csr encodes at 1 ns per nonzero, bcsr at 2 ns per encoded byte (its bytes
    vary independently of nnz); uploads run at 8 GB/s; csr compiles cold in 20 ms, once from
    memory in 0.01 ms."""
    results = []
    for i, (nnz, pad) in enumerate([(1e6, 1), (2e6, 3), (4e6, 1.5), (8e6, 5), (3e6, 2), (5e6, 1)]):
        nrows = int(nnz // 10)
        vb = 8
        csr_bytes = 12 * nnz
        bcsr_bytes = 12 * nnz * pad
        xy = 2 * nrows * vb

        def op(fmt, encode, nbytes, origin, compile_s):
            return {"format": fmt, "own_bytes": nbytes + xy,
                    "one_time": {"inspect": 2.5e-9 * nnz, "encode": encode,
                                 "upload": nbytes / 8e9, "compile": compile_s,
                                 "kernel_origin": origin, "plan": 0, "codegen": 0}}
        results.append({
            "matrix": f"m{i}", "regime": "bandwidth", "precision": "f64", "nnz": nnz,
            "nrows": nrows, "ncols": nrows,
            "planner": op("csr", 1e-9 * nnz, csr_bytes, "memory" if i == 0 else "nvrtc",
                          1e-5 if i == 0 else 0.020),
            "planner_device": {"format": "csr_stream", "own_bytes": csr_bytes + xy,
                               "one_time": {"inspect": 1e-11 * nnz, "encode": 5e-12 * nnz,
                                            "upload": 0, "compile": 1e-5,
                                            "kernel_origin": "memory"}},
            "formats": [op("bcsr", 2e-9 * bcsr_bytes, bcsr_bytes, "nvrtc", 0.030)]})
    return {"suite": "spmvc-v13", "gpu": "NVIDIA H100 80GB HBM3", "results": results}


class CalibrateBuild(unittest.TestCase):
    def setUp(self):
        self.m = load_script()

    def rows(self):
        rows = self.m.fit(self.m.observations(suite()["results"]), min_matrices=4)
        return {(r[0], r[1]): r for r in rows}

    def test_coefficients_and_bases(self):
        rows = self.rows()
        self.assertEqual(rows[("encode", "csr")][2], "nonzero")
        self.assertAlmostEqual(rows[("encode", "csr")][3], 1e-9)
        self.assertEqual(rows[("encode", "bcsr")][2], "byte")
        self.assertAlmostEqual(rows[("encode", "bcsr")][3], 2e-9)
        self.assertAlmostEqual(rows[("inspect", "")][3], 2.5e-9)
        self.assertEqual(rows[("upload", "")][2], "byte")
        self.assertAlmostEqual(rows[("upload", "")][3], 1 / 8e9)
        self.assertAlmostEqual(rows[("device_inspect", "")][3], 1e-11)
        self.assertAlmostEqual(rows[("device_encode", "csr_stream")][3], 5e-12)

    def test_only_cold_compiles_count(self):
        rows = self.rows()
        self.assertEqual(rows[("compile", "csr")][4], 5)  # the memory hit is left out
        self.assertAlmostEqual(rows[("compile", "csr")][3], 0.020)
        self.assertAlmostEqual(rows[("compile", "bcsr")][3], 0.030)
        self.assertIn(("compile", "*"), rows)

    def test_writes_the_inc_and_checks_the_gpu(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "suite.json")
            with open(path, "w") as f:
                json.dump(suite(), f)
            out = os.path.join(d, "h100_build.inc")
            subprocess.run([sys.executable, SCRIPT, "--gpu", "H100", "--out", out, path],
                           check=True, capture_output=True)
            with open(out) as f:
                text = f.read()
            self.assertIn('{"encode", "bcsr", "byte", 2.0000e-09, 6,', text)
            wrong = subprocess.run([sys.executable, SCRIPT, "--gpu", "H200", "--out", out, path],
                                   capture_output=True, text=True)
            self.assertNotEqual(wrong.returncode, 0)
            self.assertIn("not an H200", wrong.stderr)


if __name__ == "__main__":
    unittest.main()
