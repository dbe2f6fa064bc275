#!/usr/bin/env python3
"""The calibration fits of scripts/model/planner_data.py on synthetic suites: where the median
fit ranks two formats wrong on a class of matrices, the pick fit ranks them right, on the
matrices it was fitted on and on one it was not; where the median fit already picks right, or
the prior's pull is strong, the pick fit leaves the median's numbers; with_prior scales the rows
the suites did not fit."""
import math
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts", "model"))
import planner_data as pd  # noqa: E402


def result(name, precision, times):
    """One suite result and its observations from {format: (raw predicted s, measured s)} or
    {format: (raw, measured, warp imbalance)}."""
    obs = {}
    for fmt, t in times.items():
        obs[fmt] = {"ms": t[1], "raw": {"compulsory": t[0]},
                    "imbalance": t[2] if len(t) > 2 else 1.0}
    fastest = min(t[1] for t in times.values())
    return {"matrix": name, "precision": precision, "oracle": {"ms": fastest * 1e3}}, obs


def coded(i, precision="f64"):
    """A pattern matrix: bro_ell runs at 1.35x its raw prediction and wins; ell at 1.2x."""
    s = 1.0 + 0.1 * i
    return result(f"coded{i}", precision, {"bro_ell": (60e-6 * s, 81e-6 * s),
                                           "ell": (75e-6 * s, 90e-6 * s),
                                           "csr": (90e-6 * s, 117e-6 * s)})


def plain(i, precision="f64"):
    """Plain values: bro_ell runs at 0.75x its raw prediction and still wins by 1.28x; its
    median factor (set by the coded matrices) predicts it slower than ell."""
    s = 1.0 + 0.07 * i
    return result(f"plain{i}", precision, {"bro_ell": (100e-6 * s, 75e-6 * s),
                                           "ell": (80e-6 * s, 96e-6 * s),
                                           "csr": (85e-6 * s, 110e-6 * s)})


def picks(entries, rows):
    return [pd.pick(r, obs, pd.predictor(rows, "compulsory", r["precision"]))
            for r, obs in entries]


class PickFit(unittest.TestCase):
    def setUp(self):
        self.entries = [coded(i) for i in range(7)] + [plain(i) for i in range(4)]
        self.median = pd.fit(self.entries, min_matrices=4)

    def test_median_fit_picks_wrong_where_the_model_errs_by_class(self):
        # The premise: the median factors are the coded class's, and plain matrices go to ell.
        self.assertAlmostEqual(self.median[("bro_ell", "f64")][0], 1.35, places=6)
        self.assertAlmostEqual(self.median[("ell", "f64")][0], 1.2, places=6)
        got = picks(self.entries, self.median)
        self.assertEqual([f for f, _ in got[7:]], ["ell"] * 4)
        self.assertTrue(all(ratio > 1.25 for _, ratio in got[7:]))

    def test_pick_fit_picks_the_fastest_everywhere(self):
        rows = pd.fit_picks(self.entries, self.median)
        got = picks(self.entries, rows)
        self.assertEqual([f for f, _ in got], ["bro_ell"] * 11)
        self.assertTrue(all(ratio == 1.0 for _, ratio in got))
        # bro_ell moved down just past the turning point (1.2 * 80 / 100 = 0.96) by the margin,
        # no further: the prior's pull holds it at the edge nearest the median.
        f = rows[("bro_ell", "f64")][0]
        self.assertLess(f, 0.96 * math.exp(-pd.PICK_MARGIN) * 1.0001)
        self.assertGreater(f, 0.96 * math.exp(-pd.PICK_MARGIN) * 0.99)
        # Rows the picks do not need to move stay where the median put them.
        self.assertEqual(rows[("ell", "f64")][:2], self.median[("ell", "f64")][:2])
        self.assertEqual(rows[("csr", "f64")][:2], self.median[("csr", "f64")][:2])
        # The matrices column is kept; the spread is against the moved factor (bro_ell's log
        # residuals are log(1.35 / f) and log(0.75 / f), so it is theirs about the mean).
        self.assertEqual(rows[("bro_ell", "f64")][2], 11)
        self.assertGreater(rows[("bro_ell", "f64")][3], self.median[("ell", "f64")][3])

    def test_pick_fit_holds_on_a_matrix_it_was_not_fitted_on(self):
        held_out = plain(9)
        rows = pd.fit_picks(self.entries, self.median)
        self.assertEqual(picks([held_out], rows)[0][0], "bro_ell")
        self.assertEqual(picks([held_out], self.median)[0][0], "ell")
        # leave_one_out() refits without each matrix: the plain ones still go to bro_ell.
        loo = pd.leave_one_out(self.entries + [held_out], "compulsory", 4, {}, "picks")
        self.assertEqual(pd.score(self.entries + [held_out], loo, "f64"), (1.0, 12, 12))
        median_loo = pd.leave_one_out(self.entries + [held_out], "compulsory", 4, {}, "median")
        gm, ok, n = pd.score(self.entries + [held_out], median_loo, "f64")
        self.assertEqual((ok, n), (7, 12))
        self.assertGreater(gm, 1.05)

    def test_beats_needs_a_lower_geomean_and_as_many_close_picks(self):
        entries = self.entries
        median = {id(r): pick for (r, _), pick in zip(entries, picks(entries, self.median))}
        moved = pd.fit_picks(entries, self.median)
        better = {id(r): pick for (r, _), pick in zip(entries, picks(entries, moved))}
        self.assertTrue(pd.beats(entries, better, median, "f64"))
        self.assertFalse(pd.beats(entries, median, better, "f64"))
        self.assertFalse(pd.beats(entries, better, better, "f64"))
        self.assertFalse(pd.beats(entries, better, median, "f32"))  # no f32 results
        # A lower geomean with fewer picks within 5% does not beat.
        mixed = dict(better)
        r0 = id(entries[0][0])
        mixed[r0] = ("ell", 1.06)
        for r, _ in entries[7:]:
            mixed[id(r)] = ("bro_ell", 1.0)
        worse_count = dict(median)
        for r, _ in entries[7:]:
            worse_count[id(r)] = ("ell", 1.04)
        self.assertLess(pd.score(entries, mixed, "f64")[0],
                        pd.score(entries, worse_count, "f64")[0])
        self.assertFalse(pd.beats(entries, mixed, worse_count, "f64"))

    def test_strong_prior_keeps_the_median_fit(self):
        rows = pd.fit_picks(self.entries, self.median, strength=100.0)
        self.assertEqual(rows[("bro_ell", "f64")][:2], self.median[("bro_ell", "f64")][:2])

    def test_right_median_fit_is_left_alone(self):
        entries = [coded(i) for i in range(7)]
        median = pd.fit(entries, min_matrices=4)
        rows = pd.fit_picks(entries, median)
        for key in median:
            self.assertEqual(rows[key][:2], median[key][:2])

    def test_fixed_rows_take_part_but_do_not_move(self):
        # hyb, timed too seldom to fit, is predicted fastest on the plain matrices under its
        # prior row and measured slow: bro_ell must move below it, hyb must not move.
        entries = [coded(i) for i in range(7)]
        for i in range(4):
            r, obs = plain(i)
            obs["hyb"] = {"ms": 130e-6, "raw": {"compulsory": 70e-6}, "imbalance": 1.0}
            entries.append((r, obs))
        median = pd.fit(entries, min_matrices=5)
        self.assertNotIn(("hyb", "f64"), median)
        fixed = {("hyb", "f64"): (1.2, 0.0, 3, 0.1)}
        rows = pd.fit_picks(entries, median, fixed=fixed)
        self.assertNotIn(("hyb", "f64"), rows)
        full, _ = pd.with_prior(rows, fixed)
        self.assertEqual(full[("hyb", "f64")], fixed[("hyb", "f64")])
        self.assertEqual([f for f, _ in picks(entries, full)], ["bro_ell"] * 11)
        self.assertLess(rows[("bro_ell", "f64")][0] * 100, 1.2 * 70)

    def test_unfitted_rows_keep_the_median_fits_scale(self):
        # The prior's rows the suites did not fit are scaled by the median fit's ratio to the
        # prior (the scale they took part in the picks with), not by the moved factors'.
        prior = {("bro_ell", "f64"): (1.35 / 1.1, 0.0, 5, 0.2),
                 ("ell", "f64"): (1.2 / 1.1, 0.0, 5, 0.2), ("amb", "f64"): (2.0, 0.0, 5, 0.3)}
        median = pd.fitted_rows(self.entries, "compulsory", 4, prior, "median")
        moved = pd.fitted_rows(self.entries, "compulsory", 4, prior, "picks")
        self.assertAlmostEqual(median[("amb", "f64")][0], 2.2)
        self.assertEqual(moved[("amb", "f64")], median[("amb", "f64")])
        self.assertLess(moved[("bro_ell", "f64")][0], 0.96)

    def test_exponent_is_fitted_where_imbalance_decides(self):
        # csr with a skewed warp (imbalance 4) measures 3x its raw prediction, balanced 1x;
        # csr_stream is 1.3x everywhere. Few skewed matrices: the median fit's Theil-Sen slope
        # is 0 and csr is picked on the skewed ones; the pick fit raises the exponent.
        entries = []
        for i in range(8):
            entries.append(result(f"flat{i}", "f32", {"csr": (50e-6, 50e-6, 1.0 + 0.01 * i),
                                                      "csr_stream": (50e-6, 65e-6)}))
        for i in range(3):
            entries.append(result(f"skew{i}", "f32", {"csr": (40e-6, 120e-6, 4.0),
                                                      "csr_stream": (50e-6, 65e-6)}))
        median = pd.fit(entries, min_matrices=4)
        self.assertEqual(median[("csr", "f32")][1], 0.0)
        self.assertEqual([f for f, _ in picks(entries, median)][8:], ["csr"] * 3)
        rows = pd.fit_picks(entries, median)
        self.assertEqual([f for f, _ in picks(entries, rows)], ["csr"] * 8 + ["csr_stream"] * 3)
        self.assertGreater(rows[("csr", "f32")][1], 0.0)
        self.assertLessEqual(rows[("csr", "f32")][1], 1.0)

    def test_with_prior_scales_unfitted_rows(self):
        rows = {("csr", "f64"): (2.0, 0.3, 10, 0.1), ("ell", "f64"): (1.5, 0.0, 10, 0.1)}
        prior = {("csr", "f64"): (1.0, 0.2, 5, 0.2), ("ell", "f64"): (1.0, 0.0, 5, 0.2),
                 ("amb", "f64"): (1.2, 0.0, 5, 0.3)}
        full, scale = pd.with_prior(rows, prior)
        self.assertAlmostEqual(scale, 1.75)
        self.assertAlmostEqual(full[("amb", "f64")][0], 1.2 * 1.75)
        self.assertEqual(full[("csr", "f64")], rows[("csr", "f64")])
        self.assertEqual(pd.with_prior(rows, {}), (rows, 1.0))

    def test_refit_moves_only_the_named_formats_factor(self):
        # A prior whose rows differ from this data's median fit: a whole refit moves every row
        # (and scales amb's). With only={"bro_ell"}, ell, csr and amb stay the prior's exactly,
        # bro_ell keeps its exponent and x-sector price, and its factor moves from the prior's
        # 1.5 (ell picked on the plain matrices) far enough to win them.
        prior = {("bro_ell", "f64"): (1.5, 0.25, 5, 0.2, 3.0), ("ell", "f64"): (1.0, 0.0, 5, 0.2),
                 ("csr", "f64"): (1.4, 0.0, 5, 0.2), ("amb", "f64"): (2.0, 0.0, 5, 0.3)}
        whole = pd.fitted_rows(self.entries, "compulsory", 4, prior, "picks")
        self.assertNotEqual(whole[("ell", "f64")], prior[("ell", "f64")])
        self.assertNotEqual(whole[("amb", "f64")], prior[("amb", "f64")])
        self.assertEqual([f for f, _ in picks(self.entries, prior)][7:], ["ell"] * 4)
        for method in pd.FITS:
            rows = pd.fitted_rows(self.entries, "compulsory", 4, prior, method, only={"bro_ell"})
            for key in (("ell", "f64"), ("csr", "f64"), ("amb", "f64")):
                self.assertEqual(rows[key], prior[key])
            moved = rows[("bro_ell", "f64")]
            self.assertEqual((moved[1], pd.sector_bytes(moved), moved[2]), (0.25, 3.0, 11))
            self.assertNotEqual(moved[0], 1.5)
        got = picks(self.entries, rows)
        self.assertEqual([f for f, _ in got], ["bro_ell"] * 11)

    def test_unknown_fit_is_named(self):
        with self.assertRaisesRegex(ValueError, "unknown fit 'mean' \\(median, picks\\)"):
            pd.fitted_rows(self.entries, "compulsory", 4, {}, "mean")



class SupersedeTest(unittest.TestCase):
    def test_a_later_timing_of_a_format_replaces_the_earlier(self):
        # Two runs of the same matrix: csr_stream changed between them, ell did not run again.
        early = result("m", "f32", {"csr_stream": (50e-6, 70e-6), "ell": (60e-6, 66e-6),
                                    "cusparse": (55e-6, 65e-6)})
        later = result("m", "f32", {"csr_stream": (50e-6, 60e-6), "cusparse": (55e-6, 64e-6)})
        other = result("m", "f64", {"csr_stream": (80e-6, 90e-6)})
        entries = [early, later, other]
        self.assertEqual(pd.supersede(entries), 1)
        self.assertEqual(sorted(early[1]), ["cusparse", "ell"])  # its own cuSPARSE stays
        self.assertEqual(sorted(later[1]), ["csr_stream", "cusparse"])
        self.assertEqual(list(other[1]), ["csr_stream"])  # another precision is its own
        # The fit sees the later kernel only: 60 / 50.
        fitted = pd.fit(entries, min_matrices=1)
        self.assertAlmostEqual(fitted[("csr_stream", "f32")][0], 1.2, places=6)


class LabelMatchTest(unittest.TestCase):
    """A timing taken before a format's label gained a parameter matches the candidate with the
    value every earlier kernel ran, and no other; tokens match in any order."""

    def test_label_defaults(self):
        plan = {"calibration": {"read_bandwidth": 1e12},
                "candidates": [
                    {"format": "csr_stream", "label": "b=256 tile=1024 c16 m=1", "applicable": True,
                     "time_factor": 1.0, "seconds_by_model": {"compulsory": 1e-5}, "params": {}},
                    {"format": "csr_stream", "label": "b=512 tile=4096 c16 m=2", "applicable": True,
                     "time_factor": 1.0, "seconds_by_model": {"compulsory": 2e-5}, "params": {}},
                    {"format": "dia", "label": "S b=256 r=1 no-i", "applicable": True,
                     "time_factor": 1.0, "seconds_by_model": {"compulsory": 3e-5}, "params": {}}]}
        r = {"matrix": "m", "precision": "f64", "formats": [
            {"format": "csr_stream", "params": "b=256 tile=1024 c16", "ms": 0.01, "correct": True},
            {"format": "dia", "params": "S b=256", "ms": 0.03, "correct": True}]}
        profile = {"row_length": {"histogram": [{"lo": 4, "hi": 4, "count": 100}]}}
        obs = pd.observations(r, plan, profile, cusparse=False)
        self.assertEqual(obs["csr_stream"]["label"], "b=256 tile=1024 c16 m=1")
        self.assertAlmostEqual(obs["csr_stream"]["raw"]["compulsory"], 1e-5)
        self.assertEqual(obs["dia"]["label"], "S b=256 r=1 no-i")
        # A timing that names a value matches only that value: dia with r=2 has no candidate.
        r["formats"][1]["params"] = "S b=256 r=2"
        self.assertEqual(pd.observations(r, plan, profile, cusparse=False)["dia"]["missing"],
                         "S b=256 r=2")
        self.assertEqual(pd.label_tokens("csr_stream", "m=2 tile=4096 c16 b=512"),
                         pd.label_tokens("csr_stream", "b=512 tile=4096 c16 m=2"))


class CsrStreamImbalanceTest(unittest.TestCase):
    """planner_data's mirror of CsrStreamFormat::warp_imbalance, on the histogram
    tests/unit/test_power_law_plan.cpp checks the C++ with (the same hand-computed value)."""

    @staticmethod
    def profile(bins):
        return {"row_length": {"histogram": [{"lo": lo, "hi": hi, "count": n}
                                             for lo, hi, n in bins]}}

    def test_a_block_waits_for_its_longest_row(self):
        params = {"tile": 1024, "block_size": 256}
        tail = self.profile([(4, 4, 63000), (512, 512, 1000)])
        self.assertAlmostEqual(pd.csr_stream_imbalance(params, tail), 19.29, delta=0.1)
        # Every candidate reports the wait at 256 threads and tile 1024, the suite's shape.
        self.assertEqual(pd.warp_imbalance("csr_stream", {"tile": 2048, "block_size": 256}, tail),
                         pd.csr_stream_imbalance(params, tail))
        self.assertEqual(pd.csr_stream_imbalance(params, self.profile([(8, 8, 100000)])), 1.0)
        # Rows longer than the tile have blocks of their own.
        alone = self.profile([(8, 8, 100000), (4097, 8192, 10)])
        self.assertEqual(pd.csr_stream_imbalance(params, alone), 1.0)


class CusparseCandidateTest(unittest.TestCase):
    """cuSPARSE's ALG1 as a candidate: its raw prediction from the suite's CSR bytes, and the
    picks slower than the suite's best cuSPARSE."""

    def test_observation_and_below_cusparse(self):
        # 3 GB of CSR and 1.5e8 rows at 16 bytes each (2.4 GB) over 3 TB/s: 1.8 ms, and the launch.
        r = {"matrix": "m", "precision": "f64", "csr_bytes": 3.0e9, "nrows": 1.5e8,
             "best_cusparse_ms": 1.0, "cusparse": {"csr_alg1": {"ms": 1.1, "correct": True}}}
        plan = {"calibration": {"read_bandwidth": 3.0e12}}
        o = pd.cusparse_observation(r, plan)
        # The same constant as the compiler's.
        with open(os.path.join(pd.ROOT, "compiler", "heuristics.hpp")) as f:
            cxx = re.search(r"kCusparseRowBytes = ([0-9.]+);", f.read())
        self.assertEqual(pd.CUSPARSE_ROW_BYTES, float(cxx[1]))
        self.assertAlmostEqual(o["raw"]["compulsory"], 1.8e-3 + pd.LAUNCH_SECONDS)
        self.assertAlmostEqual(o["ms"], 1.1e-3)
        self.assertFalse(o["build_predicted"])
        plan["cusparse_seconds"] = 2e-3
        self.assertTrue(pd.cusparse_observation(r, plan)["build_predicted"])
        self.assertIsNone(pd.cusparse_observation({"cusparse": {}}, plan))
        obs = {"csr": {"ms": 1.25e-3}, "cusparse": o}
        entries = [(r, obs)]
        self.assertEqual(pd.below_cusparse(entries, {id(r): ("csr", 1.0)}, "f64"), [("m", 1.25)])
        self.assertEqual(pd.below_cusparse(entries, {id(r): ("csr", 1.0)}, "f32"), [])
        self.assertAlmostEqual(pd.speedup(entries, {id(r): ("csr", 1.0)}, "f64"), 0.8)


if __name__ == "__main__":
    unittest.main()
