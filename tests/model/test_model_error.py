#!/usr/bin/env python3
"""scripts/model/planner_data.py's model_errors on hand-made observations: the geometric mean of
measured / predicted per format, class and precision, with "all" over the classes, and the spread
within a group."""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts", "model"))
import planner_data as pd  # noqa: E402


def entry(cls, precision, times):
    """One result and its observations from {format: (predicted s, measured s)}."""
    obs = {f: {"ms": t[1], "predicted": {"compulsory": t[0]}, "raw": {"compulsory": t[0] / 2}}
           for f, t in times.items()}
    return {"matrix": f"m-{cls}", "class": cls, "precision": precision}, obs


class ModelErrors(unittest.TestCase):
    def test_groups_by_format_class_and_precision(self):
        entries = [
            entry("G", "f64", {"hyb": (2.0, 1.0), "csr": (1.0, 1.0)}),  # hyb 0.5
            entry("G", "f64", {"hyb": (1.0, 0.5)}),                     # hyb 0.5
            entry("R", "f64", {"hyb": (1.0, 2.0)}),                     # hyb 2
            entry("R", "f32", {"hyb": (1.0, 3.0)}),
        ]
        e = pd.model_errors(entries)
        n, gm, sd = e[("hyb", "G", "f64")]
        self.assertEqual(n, 2)
        self.assertAlmostEqual(gm, 0.5)
        self.assertAlmostEqual(sd, 0.0)
        n, gm, sd = e[("hyb", "all", "f64")]
        self.assertEqual(n, 3)
        self.assertAlmostEqual(gm, (0.5 * 0.5 * 2.0) ** (1 / 3))
        logs = [math.log(0.5), math.log(0.5), math.log(2.0)]
        mean = sum(logs) / 3
        self.assertAlmostEqual(sd, math.sqrt(sum((v - mean) ** 2 for v in logs) / 3))
        n, gm, sd = e[("hyb", "R", "f32")]
        self.assertEqual((n, sd), (1, 0.0))
        self.assertAlmostEqual(gm, 3.0)
        self.assertEqual(e[("csr", "G", "f64")][0], 1)
        self.assertNotIn(("csr", "R", "f64"), e)

    def test_raw_key_reads_the_uncalibrated_prediction(self):
        e = pd.model_errors([entry("P", "f64", {"ell": (1.0, 1.0)})], key="raw")
        self.assertAlmostEqual(e[("ell", "P", "f64")][1], 2.0)

    def test_relative_divides_by_the_other_formats_on_the_same_result(self):
        # hyb 0.5 where csr and ell run at 2 and 0.5 (geomean 1): relative 0.5; csr relative to
        # hyb and ell (geomean 0.5): 4. A result with one format has no others: left out.
        entries = [entry("G", "f64", {"hyb": (2.0, 1.0), "csr": (1.0, 2.0), "ell": (2.0, 1.0)}),
                   entry("G", "f64", {"hyb": (1.0, 3.0)})]
        e = pd.model_errors(entries, relative=True)
        n, gm, _ = e[("hyb", "G", "f64")]
        self.assertEqual(n, 1)
        self.assertAlmostEqual(gm, 0.5)
        self.assertAlmostEqual(e[("csr", "G", "f64")][1], 4.0)

    def test_observations_without_a_prediction_are_left_out(self):
        _, obs = entry("P", "f64", {"ell": (1.0, 1.0)})
        obs["bro_ell"] = {"ms": 1.0, "missing": "h=32"}
        e = pd.model_errors([({"matrix": "m", "class": "P", "precision": "f64"}, obs)])
        self.assertNotIn(("bro_ell", "P", "f64"), e)


if __name__ == "__main__":
    unittest.main()
