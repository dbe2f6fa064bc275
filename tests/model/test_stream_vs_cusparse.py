#!/usr/bin/env python3
"""scripts/model/stream-vs-cusparse.py on a hand-made suite whose csr_stream times are exactly
0.3 ms per streamed GB plus 0.1 ms per gathered GB (32 bytes an x sector): the two-term fit gives
those constants back with no spread (a sector then costs 32 * 0.1 / 0.3 = 10.7 streamed bytes),
the bytes-alone fit leaves a spread, and the entry where cuSPARSE measured faster is marked."""
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                      "model", "stream-vs-cusparse.py")


def load():
    spec = importlib.util.spec_from_file_location("stream_vs_cusparse", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def suite_and_cache(tmp):
    results = []
    os.makedirs(os.path.join(tmp, "inspect"))
    # (streamed GB, x sectors in units of 1e9 / 32, cuSPARSE ms)
    cases = [(0.2, 0.1, 1.0), (0.1, 0.5, 1.0), (0.3, 0.05, 1.0), (0.05, 0.9, 0.05)]
    for i, (gb, sectors_g, cus) in enumerate(cases):
        nrows, nnz = 1000 + i, 5000 + i
        x_sectors = int(sectors_g * 1e9 / 32)
        ms = 0.3 * gb + 0.1 * 32 * x_sectors / 1e9
        results.append({
            "matrix": f"m{i}", "regime": "bandwidth", "class": "G", "precision": "f32",
            "nrows": nrows, "nnz": nnz, "row_mean": nnz / nrows, "row_max": 9,
            "cusparse": {"csr_alg1": {"ms": cus}},
            "formats": [{"format": "csr_stream", "params": "b=256 tile=2048 c16", "ms": ms,
                         "predicted_ms": ms / 2, "own_bytes": gb * 1e9}]})
        with open(os.path.join(tmp, "inspect", f"{i}.json"), "w") as f:
            json.dump({"nrows": nrows, "nnz": nnz, "x_sectors": x_sectors}, f)
    path = os.path.join(tmp, "suite.json")
    with open(path, "w") as f:
        json.dump({"gpu": "test GPU", "results": results}, f)
    return path


class StreamVsCusparse(unittest.TestCase):
    def test_relative_fit_recovers_constants(self):
        mod = load()
        feats = [[1.0, 2.0], [3.0, 1.0], [2.0, 5.0]]
        times = [0.3 * a + 0.1 * b for a, b in feats]
        a, b = mod.relative_fit(feats, times)
        self.assertAlmostEqual(a, 0.3)
        self.assertAlmostEqual(b, 0.1)

    def test_relative_fit_names_a_zero_feature(self):
        with self.assertRaisesRegex(ValueError, "feature 1 is zero"):
            load().relative_fit([[1.0, 0.0], [2.0, 0.0]], [1.0, 2.0])

    def test_report(self):
        with tempfile.TemporaryDirectory() as tmp:
            suite = suite_and_cache(tmp)
            out = subprocess.run([sys.executable, SCRIPT, "--cache", tmp, suite], check=True,
                                 capture_output=True, text=True).stdout
        self.assertRegex(out, r"bytes and x sectors: a 0\.3000, b 0\.1000; sd 0\.000; "
                              r"one sector costs 10\.7 streamed bytes")
        self.assertNotRegex(out, r"bytes alone: a [0-9.]+; sd of log\(measured / fitted\) 0\.000")
        marked = [line.split()[0] for line in io.StringIO(out) if line.rstrip().endswith(" <")]
        self.assertEqual(marked, ["m3"])
        self.assertIn("f32 slower than cuSPARSE: 2.00 over 1 entries", out)


if __name__ == "__main__":
    unittest.main()
