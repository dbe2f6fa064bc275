#!/usr/bin/env python3
"""The price per gathered x sector in scripts/model/planner_data.py, on synthetic suites:
observations take out what the build charged for the sectors, the median fit finds the price a
suite was made with (one for both precisions) and leaves formats that gather nothing at 0, the
predictor charges it, and a calibration file's rows read with and without the column."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts", "model"))
import planner_data as pd  # noqa: E402

BANDWIDTH = 3.0e12
PRICE = 9.0  # bytes of reading per gathered sector in the synthetic GPU


def suite_result(i, precision, sectors_per_nonzero):
    """A result whose csr_stream runs at 1.5 x (raw + PRICE x sectors / bandwidth) and whose
    csr runs at 1.2 x raw: the gather shows in csr_stream's time only."""
    nnz = 16e6
    sectors = sectors_per_nonzero * nnz
    raw = (40e-6 if precision == "f32" else 60e-6) * (1 + 0.05 * i)
    gather = sectors / BANDWIDTH
    r = {"matrix": f"m{i}", "precision": precision, "oracle": {"ms": 1.0}}
    obs = {
        "csr_stream": {"ms": 1.5 * (raw + PRICE * gather), "raw": {"compulsory": raw},
                       "gather": gather, "imbalance": 1.0},
        "csr": {"ms": 1.2 * 1.3 * raw, "raw": {"compulsory": 1.3 * raw}, "gather": 0.0,
                "imbalance": 1.0},
    }
    return r, obs


def suite():
    shares = [0.3, 0.5, 0.7, 0.8, 0.95, 1.0, 0.4, 0.9]
    return [suite_result(i, p, s) for p in ("f64", "f32") for i, s in enumerate(shares)]


class SectorFit(unittest.TestCase):
    def test_the_fit_finds_the_suites_price_for_both_precisions(self):
        rows = pd.fit(suite(), min_matrices=4)
        for prec in ("f64", "f32"):
            row = rows[("csr_stream", prec)]
            self.assertAlmostEqual(pd.sector_bytes(row), PRICE, delta=pd.SECTOR_STEP)
            self.assertAlmostEqual(row[0], 1.5, delta=0.02)
            self.assertLess(row[3], 0.01)
            # csr gathers nothing here: no price, its factor as it was.
            self.assertEqual(pd.sector_bytes(rows[("csr", prec)]), 0.0)
            self.assertAlmostEqual(rows[("csr", prec)][0], 1.2, places=6)

    def test_without_the_price_the_fit_is_worse(self):
        # The same suite fitted with no sectors: csr_stream's log-spread grows.
        entries = suite()
        for _, obs in entries:
            obs["csr_stream"]["gather"] = 0.0
        rows = pd.fit(entries, min_matrices=4)
        self.assertEqual(pd.sector_bytes(rows[("csr_stream", "f64")]), 0.0)
        self.assertGreater(rows[("csr_stream", "f64")][3], 0.05)

    def test_the_predictor_charges_the_price(self):
        entries = suite()
        rows = pd.fit(entries, min_matrices=4)
        r, obs = entries[0]
        predict = pd.predictor(rows, "compulsory", r["precision"])
        o = obs["csr_stream"]
        row = rows[("csr_stream", r["precision"])]
        self.assertAlmostEqual(predict("csr_stream", o),
                               row[0] * (o["raw"]["compulsory"] + row[4] * o["gather"]))
        self.assertAlmostEqual(predict("csr_stream", o) / o["ms"], 1.0, delta=0.02)

    def test_observations_take_out_the_builds_charge(self):
        # A build whose calibration priced a sector at 4 bytes predicted csr_stream at
        # factor x (raw + 4 x sectors / bandwidth): the observation's raw is the raw again.
        profile = {"x_sectors": 8e6, "row_length": {"histogram": [{"lo": 8, "hi": 8,
                                                                     "count": 1000}]}}
        raw = 50e-6
        gather = profile["x_sectors"] / BANDWIDTH
        factor = 0.7
        label = "b=256 tile=1024"
        plan = {"calibration": {"read_bandwidth": BANDWIDTH}, "candidates": [
            {"format": "csr_stream", "label": label, "applicable": True, "params": {},
             "time_factor": factor,
             "seconds_by_model": {"compulsory": factor * (raw + 4.0 * gather),
                                  "traffic": factor * (raw + 4.0 * gather)}}]}
        result = {"matrix": "m", "precision": "f64", "formats": [
            {"format": "csr_stream", "params": label, "ms": 0.06, "correct": True}]}
        build = {("csr_stream", "f64"): (factor, 0.0, 33, 0.2, 4.0)}
        o = pd.observations(result, plan, profile, cusparse=False, build_rows=build)["csr_stream"]
        self.assertAlmostEqual(o["raw"]["compulsory"], raw)
        self.assertAlmostEqual(o["gather"], gather)
        # Without the build's rows nothing is taken out.
        o = pd.observations(result, plan, profile, cusparse=False)["csr_stream"]
        self.assertAlmostEqual(o["raw"]["compulsory"], raw + 4.0 * gather)

    def test_calibration_rows_with_and_without_the_column(self):
        with tempfile.NamedTemporaryFile("w", suffix=".inc", delete=False) as f:
            f.write('{"csr", "f64", 1.2136, 0.243, 33, 0.314},\n')
            f.write('{"csr_stream", "f32", 0.4180, 0.080, 8.00, 33, 0.269},\n')
            path = f.name
        try:
            rows, _ = pd.read_inc(path)
        finally:
            os.unlink(path)
        self.assertEqual(rows[("csr", "f64")], (1.2136, 0.243, 33, 0.314, 0.0))
        self.assertEqual(rows[("csr_stream", "f32")], (0.418, 0.08, 33, 0.269, 8.0))


if __name__ == "__main__":
    unittest.main()
