#!/usr/bin/env python3
"""scripts/report/retimed-classes.py on a small synthetic pair of runs whose geomeans are worked
out by hand. The earlier run: A (class R) picked csr_stream at 1.0x, B (class R) picked cuSPARSE at
1.0x, C (class P) picked csr_stream reordered at 2.0x. The later run times csr_stream: A at 1.21x
(same parameters), B at 1.44x, C at 1.5x (C's pick was reordered, so it is not re-timed, and 1.5x
is below its 2.0x)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "report", "retimed-classes.py")


def entry(name, cls, pick, params, x, reorder="none", stream_ms=None, cusparse_ms=1.0):
    r = {"matrix": name, "class": cls, "precision": "f64", "regime": "bandwidth",
         "best_cusparse_ms": cusparse_ms,
         "planner": {"format": pick, "params": params, "speedup_vs_best_cusparse": x,
                     "reorder": reorder},
         "formats": []}
    if stream_ms is not None:
        r["formats"] = [{"format": "csr_stream", "params": "b=256", "ms": stream_ms,
                         "correct": True}]
    return r


class RetimedClasses(unittest.TestCase):
    def run_script(self, *extra):
        earlier = {"results": [entry("A", "R", "csr_stream", "b=256", 1.0),
                               entry("B", "R", "cusparse", "", 1.0),
                               entry("C", "P", "csr_stream", "b=256", 2.0, reorder="rcm")]}
        later = {"results": [entry("A", "R", "csr_stream", "b=256", 1.21, stream_ms=1 / 1.21),
                             entry("B", "R", "cusparse", "", 1.0, stream_ms=1 / 1.44),
                             entry("C", "P", "csr_stream", "b=256", 1.5, stream_ms=1 / 1.5)]}
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for name, doc in (("earlier.json", earlier), ("later.json", later)):
                paths.append(os.path.join(d, name))
                with open(paths[-1], "w") as f:
                    json.dump(doc, f)
            out = subprocess.run([sys.executable, SCRIPT, "--later", paths[1], *extra, paths[0]],
                                 capture_output=True, text=True)
        return out

    def rows(self, out):
        self.assertEqual(out.returncode, 0, out.stderr)
        rows = {}
        for line in out.stdout.splitlines()[2:]:
            c, prec, n, *cols = line.split()
            rows[(c, prec)] = (int(n), [float(v) for v in cols])
        return rows

    def test_picks_retimed_and_the_format_where_it_is_faster(self):
        rows = self.rows(self.run_script())
        # R: A re-timed to 1.21, B stays 1.0 (a cuSPARSE pick); if picked, B takes 1.44.
        self.assertEqual(rows[("R", "f64")][0], 2)
        self.assertAlmostEqual(rows[("R", "f64")][1][0], 1.0, places=3)
        self.assertAlmostEqual(rows[("R", "f64")][1][1], 1.1, places=3)  # sqrt(1.21)
        self.assertAlmostEqual(rows[("R", "f64")][1][2], 1.32, places=3)  # sqrt(1.21 * 1.44)
        # P: the reordered pick keeps its own 2.0x in every column.
        self.assertEqual(rows[("P", "f64")][1], [2.0, 2.0, 2.0])

    def test_an_override_replaces_the_later_speedup(self):
        rows = self.rows(self.run_script("--speedup", "A|f64|1.44"))
        self.assertAlmostEqual(rows[("R", "f64")][1][1], 1.2, places=3)  # sqrt(1.44)

    def test_an_override_of_an_entry_the_later_run_did_not_time_is_refused(self):
        out = self.run_script("--speedup", "Z|f64|1.5")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("did not time csr_stream", out.stderr)


if __name__ == "__main__":
    unittest.main()
