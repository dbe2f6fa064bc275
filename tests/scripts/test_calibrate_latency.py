#!/usr/bin/env python3
"""scripts/model/calibrate-latency.py on synthetic probe files: the launch floor is the median of
the launch probes, the step time the slope of the step probes (whatever their fixed launch part),
each GPU's row is over the reference's, and bad input stops with a message naming it."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "model", "calibrate-latency.py")


def probes(gpu, launch_us, step_ns):
    """Launch probes around `launch_us` (median exactly it), step probes at `step_ns` per nonzero
    on top of a launch."""
    runs = [{"probe": f"launch-{i}", "nnz": 100 * (i + 1), "gpu": gpu, "ms": (launch_us + d) * 1e-3}
            for i, d in enumerate([-0.5, 0.0, 0.4, 3.0, -0.2])]
    for n in (10000, 20000, 40000, 80000):
        runs.append({"probe": f"step-{n}", "nnz": n, "gpu": gpu,
                     "ms": (launch_us * 1e-6 + n * step_ns * 1e-9) * 1e3})
    return runs


class CalibrateLatency(unittest.TestCase):
    def run_script(self, *files):
        out = os.path.join(self.tmp.name, "latency.inc")
        r = subprocess.run([sys.executable, SCRIPT, "--out", out, *files], capture_output=True,
                           text=True)
        return r, (open(out).read() if os.path.exists(out) else "")

    def write(self, name, runs):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            json.dump(runs, f)
        return path

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_rows_are_over_the_reference(self):
        ref = self.write("h100.json", probes("NVIDIA H100 80GB HBM3", 5.0, 200.0))
        other = self.write("h200.json", probes("NVIDIA H200", 6.0, 150.0))
        r, inc = self.run_script(ref, other)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [l for l in inc.splitlines() if l.startswith("{")]
        self.assertEqual(rows, ['{"H100", 1.0000, 1.0000},', '{"H200", 1.2000, 0.7500},'])
        self.assertIn("launch 6.00 us, step 150.0 ns", inc)

    def test_bad_input_is_named(self):
        ref = self.write("h100.json", probes("NVIDIA H100 80GB HBM3", 5.0, 200.0))
        mixed = self.write("mixed.json", probes("NVIDIA H100 80GB HBM3", 5.0, 200.0) +
                           probes("NVIDIA H200", 6.0, 150.0))
        r, _ = self.run_script(ref, mixed)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("one GPU", r.stderr)
        no_steps = self.write("nosteps.json", [p for p in probes("NVIDIA H200", 6.0, 150.0)
                                               if p["probe"].startswith("launch")])
        r, _ = self.run_script(ref, no_steps)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("two step probes", r.stderr)


if __name__ == "__main__":
    unittest.main()
