"""scripts/model/spmm-engine-eval.py on hand-made measure-mode SpMM records: the rule replayed as
choose_spmm_engine decides, the notes parsed, and a fit that finds the thresholds which pick the
faster engine on every entry."""
import os
import runpy

from script_support import json_file, run

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
script = os.path.join(root, "scripts", "model", "spmm-engine-eval.py")
ev = runpy.run_path(script)


def record(name, prec, gen_ms, cus_ms, mean, skew, spread, scatter, engine="spmvc"):
    rows = (f"{mean:.1f} nonzeros a row, longest {skew:.0f}x the mean, spread {spread:.2f}, "
            f"x sectors per nonzero {scatter:.2f}")
    alg = "cusparseSpMM_CSR_ALG2" if prec == "f64" else "cusparseSpMM_CSR_ALG3"
    note = (f"own encoding: spmm_x (measured {gen_ms:.4f} ms generated, {cus_ms + 9:.4f} ms {alg}; "
            f"the model's pick: generated unit ({rows}))")
    best = min(cus_ms, 1.1 * cus_ms)
    return {"matrix": name, "class": "R", "precision": prec, "operation": "spmm", "k": 32,
            "layout": "row", "note": note, "engine": engine,
            "spmvc_ms": gen_ms if engine == "spmvc" else cus_ms, "cusparse_best_ms": best,
            # The bench's own time of the operator's algorithm is the one the replay takes.
            "results": [{"name": "cusparse spmm_csr_alg" + alg[-1], "ms": cus_ms}]}


recs = [
    # fp32 skewed rows where cuSPARSE is faster, even rows where the generated unit is.
    record("skewed", "f32", 1.2, 1.0, 25.0, 235, 8.0, 0.5, engine="cusparse"),
    record("short", "f32", 0.5, 1.0, 5.0, 2, 0.2, 0.4),
    # fp64 hub rows: cuSPARSE.
    record("hub", "f64", 6.0, 2.0, 16.0, 5000, 3.0, 0.9, engine="cusparse"),
    # fp64 regular rows, and the skewed ones: generated.
    record("regular", "f64", 1.0, 1.5, 27.0, 1, 0.0, 0.3),
    record("skewed", "f64", 0.5, 0.9, 25.0, 235, 8.0, 0.5),
]
doc = {"suite": "t", "results": recs}
with json_file(doc) as path:
    parsed = ev["records"](path)
    assert [r["matrix"] for r in parsed] == ["skewed", "short", "hub", "regular", "skewed"], parsed
    long = parsed[0]
    # cuSPARSE's time from the bench's record (1.0), not the note's (10.0); the generated unit's
    # from the note where cuSPARSE ran.
    assert long["gen"] == 1.2 and long["cus"] == 1.0 and long["skew"] == 235.0, long
    t = dict(ev["DEFAULTS"])
    # The defaults: fp32 rows skewed 100x or more go to cuSPARSE, hub rows too, fp64 below the
    # hub ratio not.
    assert [ev["picks_cusparse"](r, t) for r in parsed] == [True, False, True, False, False]
    # Every pick the faster one: each speed-up is best / min.
    s = ev["speedups"](parsed, t)
    assert all(abs(x - r["best"] / min(r["gen"], r["cus"])) < 1e-12 for x, r in zip(s, parsed))
    # With fp32's skew threshold switched off, "skewed" fp32 runs the slower generated unit.
    off = dict(t, f32_skew=float("inf"))
    assert ev["speedups"](parsed, off)[0] < s[0]
    # The fit recovers thresholds that pick the faster engine everywhere.
    fitted = ev["fit"](parsed)
    assert all(ev["picks_cusparse"](r, fitted) == (r["cus"] < r["gen"]) for r in parsed), fitted
    out = run(script, path)
    assert "the model picks the slower engine on 0 of 5" in out, out
print("spmm-engine-eval: ok")
