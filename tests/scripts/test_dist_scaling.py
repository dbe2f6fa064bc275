#!/usr/bin/env python3
"""scripts/model/dist-scaling.py on synthetic halo data whose law is known: ghosts per rank
6 * (rows per rank)^(2/3) and 2 * sqrt(P) neighbours, as a 3D mesh partition gives."""
import importlib.util
import math
import os
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "model", "dist-scaling.py")


def load_script():
    spec = importlib.util.spec_from_file_location("dist_scaling", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def synthetic(rows=1_000_000, nnz_per_row=27):
    runs = []
    for p in (2, 4, 8, 16, 32, 64):
        per_rank = rows // p
        ghosts = 6 * per_rank ** (2 / 3)
        runs.append({"partition": "metis", "ranks": p, "max_rows": per_rank,
                     "max_nnz": per_rank * nnz_per_row, "max_ghosts": ghosts,
                     "mean_ghosts": ghosts, "max_send": ghosts,
                     "max_neighbours": 2 * math.sqrt(p), "mean_neighbours": 2 * math.sqrt(p),
                     # 3 entries per ghost column
                     "ghost_nnz_share": 3 * ghosts * p / (rows * nnz_per_row)})
    return {"matrix": "mesh", "rows": rows, "nnz": rows * nnz_per_row, "runs": runs}


class DistScaling(unittest.TestCase):
    def setUp(self):
        self.m = load_script()
        self.fit = self.m.HaloFit(synthetic())

    def test_fit_recovers_the_law(self):
        self.assertAlmostEqual(self.fit.c, 6.0, places=6)
        self.assertAlmostEqual(self.fit.e, 2 / 3, places=9)
        self.assertAlmostEqual(self.fit.b, 0.5, places=9)
        self.assertAlmostEqual(self.fit.k, 3.0, places=9)

    def test_ghosts_never_exceed_the_other_ranks_rows(self):
        # 5 rows per rank would read 6 * 5^(2/3) = 17.5 ghosts by the law; only 5 exist.
        self.assertAlmostEqual(self.fit.ghosts(10.0, 2), 5.0)
        self.assertEqual(self.fit.neighbours(2), 1)

    def test_time_is_launch_plus_the_longer_path_plus_the_ghost_block(self):
        m = self.m.multiply_time(self.fit, 1e8, 64)
        self.assertAlmostEqual(m["total"], self.m.LAUNCH_S + max(m["t_local"], m["t_exchange"])
                               + m["t_ghost"], places=15)
        # The same halo costs more across nodes (InfiniBand) than within one (NVLink).
        within = self.m.multiply_time(self.fit, 1e8, 8)
        across = self.m.multiply_time(self.fit, 1e8 * 16 / 8, 16)  # same rows per GPU
        self.assertGreater(across["t_exchange"], within["t_exchange"])
        # Host staging only adds to the exchange.
        self.assertGreaterEqual(m["staged"], m["total"])


    def test_check_recovers_a_known_exchange_law(self):
        # Exchanges that take 25 us + bytes / 200 GB/s on two ranks: the fit gives both back,
        # and each run is set against the model's own time for its halo.
        runs = [{"name": f"g{g}", "ranks": 2, "transport": "nccl", "max_ghosts": g,
                 "neighbours": 1, "exchange_s": 25e-6 + 8 * g / 200e9}
                for g in (10_000, 100_000, 1_000_000)]
        runs.append({"name": "staged", "ranks": 2, "transport": "mpi", "max_ghosts": 10_000,
                     "neighbours": 1, "exchange_s": 1e-4})
        rows, fit = self.m.check(runs)
        self.assertAlmostEqual(fit[0], 25e-6, places=12)
        self.assertAlmostEqual(fit[1] / 200e9, 1.0, places=6)
        model = {r["name"]: t for r, t, _ in rows}
        self.assertAlmostEqual(model["g10000"], self.m.NVLINK_LATENCY_S + self.m.PER_MESSAGE_S
                               + 8 * 10_000 / self.m.NVLINK_BYTES_PER_S, places=15)
        # The host-staged path adds the two copies and their synchronisation.
        self.assertAlmostEqual(model["staged"] - model["g10000"],
                               2 * 8 * 10_000 / self.m.PCIE_BYTES_PER_S + self.m.HOST_STAGE_S,
                               places=15)
        # One halo size leaves nothing to fit.
        self.assertIsNone(self.m.check(runs[:1])[1])

if __name__ == "__main__":
    unittest.main()
