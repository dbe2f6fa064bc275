#!/usr/bin/env python3
"""scripts/report/break-even.py on a small synthetic suite whose totals are worked out by hand.

Two formats per matrix: csr builds in 10 ms and multiplies in 1 ms; bro_ell builds in 500 ms
and multiplies in 0.5 ms. cuSPARSE uploads in 20 ms, preprocesses in 10 ms and multiplies in
0.8 ms with ALG1 (2 ms with ALG2, which needs no preprocessing). Matrix "recorded" carries the planner's picks per horizon (csr at 10, bro_ell at
100000); matrix "replayed" has none, so its picks come from its predictions."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "report", "break-even.py")


def load_script():
    spec = importlib.util.spec_from_file_location("break_even", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(fmt, build_s, ms, compile_s=0.0):
    stages = {"inspect": build_s / 2, "reorder": 0.0, "plan": 0.0, "encode": build_s / 2,
              "codegen": 0.0, "upload": 0.0, "compile": compile_s, "kernel_origin": "nvrtc"}
    return {"format": fmt, "params": "", "ms": ms, "correct": True, "predicted_ms": ms,
            "predicted_one_time_s": build_s + compile_s, "own_bytes": 1000, "one_time": stages}


def result(name, picks):
    r = {"matrix": name, "class": "P", "precision": "f64", "nnz": 100, "nrows": 10, "ncols": 10,
         "cusparse_upload_s": 0.020,
         "cusparse": {"csr_alg1": {"ms": 0.8, "correct": True, "prepare_s": 0.010},
                      "csr_alg2": {"ms": 2.0, "correct": True, "prepare_s": 0.0}},
         "planner": {"format": "bro_ell", "ms": 0.5},
         "formats": [timed("csr", 0.010, 1.0), timed("bro_ell", 0.500, 0.5)]}
    if picks:
        r["planner_by_multiplies"] = {str(n): {"format": f} for n, f in picks.items()}
    return r


class BreakEvenReport(unittest.TestCase):
    def setUp(self):
        self.m = load_script()
        self.cal = {("upload", ""): ("byte", 1e-10)}

    def test_totals_by_hand(self):
        r = result("recorded", {10: "csr", 100000: "bro_ell"})
        (choices, totals), notes = self.m.totals_for(r, 10, self.cal, cached=False)
        self.assertEqual(notes, [])
        self.assertAlmostEqual(totals["csr"], 0.010 + 10 * 1e-3)
        self.assertAlmostEqual(totals["bro_ell"], 0.500 + 10 * 0.5e-3)
        self.assertEqual(choices["aware"][0], "csr")
        self.assertEqual(choices["hindsight"][0], "csr")
        # today: the planner's bro_ell pick, its one-time cost from the bro_ell entry
        self.assertAlmostEqual(choices["today"][1], 0.500 + 10 * 0.5e-3)
        # cuSPARSE: upload + ALG1's preprocessing + 10 multiplies beats ALG2's
        self.assertEqual(choices["cusparse"][0], "csr_alg1")
        self.assertAlmostEqual(choices["cusparse"][1], 0.020 + 0.010 + 10 * 0.8e-3)

    def test_long_horizon_picks_the_costly_encoding(self):
        r = result("recorded", {10: "csr", 100000: "bro_ell"})
        (choices, _), _ = self.m.totals_for(r, 100000, self.cal, cached=False)
        self.assertEqual(choices["aware"], ("bro_ell", 0.500 + 100000 * 0.5e-3))
        self.assertEqual(choices["hindsight"][0], "bro_ell")

    def test_replayed_picks_follow_the_predictions(self):
        r = result("replayed", None)
        (short, _), notes = self.m.totals_for(r, 10, self.cal, cached=False)
        (long, _), _ = self.m.totals_for(r, 100000, self.cal, cached=False)
        self.assertIn("replayed", notes)
        self.assertEqual(short["aware"][0], "csr")
        self.assertEqual(long["aware"][0], "bro_ell")

    def test_a_pick_of_cusparse_counts_csr_build_and_alg1(self):
        # The planner handed the multiply to cuSPARSE (engine cusparse, counted as "cusparse"):
        # csr's build, ALG1's preprocessing and the multiplies at the time the planner measured.
        r = result("engine", {10: "cusparse"})
        r["planner"] = {"format": "cusparse", "ms": 0.9}
        (choices, _), notes = self.m.totals_for(r, 10, self.cal, cached=False)
        self.assertEqual(notes, [])
        self.assertEqual(choices["aware"][0], "cusparse")
        self.assertAlmostEqual(choices["aware"][1], 0.010 + 0.010 + 10 * 0.8e-3)
        self.assertEqual(choices["today"][0], "cusparse")
        self.assertAlmostEqual(choices["today"][1], 0.010 + 0.010 + 10 * 0.9e-3)
        # Without a timed csr entry there is nothing to count it by.
        r["formats"] = [timed("bro_ell", 0.500, 0.5)]
        (choices, _), notes = self.m.totals_for(r, 10, self.cal, cached=False)
        self.assertNotIn("aware", choices)
        self.assertNotIn("today", choices)
        self.assertIn("aware pick cusparse not timed", notes)

    def test_cached_kernels_leave_the_compile_out(self):
        r = result("recorded", {10: "csr"})
        r["formats"][0] = timed("csr", 0.010, 1.0, compile_s=0.2)
        (cold, _), _ = self.m.totals_for(r, 10, self.cal, cached=False)
        (warm, _), _ = self.m.totals_for(r, 10, self.cal, cached=True)
        self.assertAlmostEqual(cold["aware"][1] - warm["aware"][1], 0.2)

    def test_report_rows(self):
        doc = {"suite": "synthetic", "gpu": "NVIDIA H100 80GB HBM3",
               "results": [result("a", {10: "csr", 100000: "bro_ell"}), result("b", None)]}
        rows, notes = self.m.report(doc, [10, 100000], self.cal, cached=False)
        by_n = {r["multiplies"]: r for r in rows if r["class"] == "all"}
        self.assertEqual(by_n[10]["matrices"], 2)
        self.assertEqual(by_n[10]["aware_is_hindsight"], 2)
        self.assertAlmostEqual(by_n[10]["hindsight"], 1.0)
        self.assertEqual(by_n[10]["fixed_format"], "csr")
        self.assertAlmostEqual(by_n[10]["today"], (0.500 + 0.005) / (0.010 + 0.010))
        self.assertAlmostEqual(by_n[10]["cusparse"], (0.030 + 0.008) / 0.020)
        self.assertEqual(by_n[100000]["fixed_format"], "bro_ell")
        self.assertAlmostEqual(by_n[100000]["today"], 1.0)

    def test_command_line(self):
        doc = {"suite": "synthetic", "gpu": "NVIDIA H100 80GB HBM3",
               "results": [result("a", {10: "csr", 100: "csr"})]}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "suite.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            out = subprocess.run([sys.executable, SCRIPT, path, "--multiplies", "10,100",
                                  "--json"], capture_output=True, text=True, check=True)
            rows = json.loads(out.stdout)["rows"]
            self.assertEqual(sorted({r["multiplies"] for r in rows}), [10, 100])
            bad = subprocess.run([sys.executable, SCRIPT, path, "--multiplies", "0"],
                                 capture_output=True, text=True)
            self.assertNotEqual(bad.returncode, 0)
            self.assertIn("--multiplies", bad.stderr)


if __name__ == "__main__":
    unittest.main()
