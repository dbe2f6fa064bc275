"""Suite entries planned again on the CPU, cached: the inputs of scripts/model/planner-eval.py and
scripts/model/calibrate.py.

For every bandwidth-regime result of a `spmvc bench --suite` JSON this runs the built `spmvc plan
--json` (each candidate's predicted time and the time factor in it) and `spmvc inspect --json
--no-formats` (the Profile) on the matrix as the suite built it, and keeps both under a cache
folder. Plans are keyed by the spmvc binary's hash (a rebuilt model is planned again); profiles
only by the matrix.
"""
import hashlib
import json
import math
import os
import re
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # scripts/model/ -> the repository
DEFAULT_SPMVC = os.path.join(ROOT, "build", "host", "cli", "spmvc")
DEFAULT_MATRICES = os.environ.get("SPMVC_MATRIX_DIR",
                                  os.path.join(ROOT, "..", "shared", "matrices"))
DEFAULT_CACHE = os.path.join(ROOT, ".cache", "planner-eval")


def bandwidth_results(path, regime="bandwidth"):
    """The suite document and its results of `regime` (bandwidth: replicated to 16M+ nonzeros or
    generated at that scale; small: the public matrices as they are) that timed formats."""
    with open(path) as f:
        doc = json.load(f)
    return doc, [r for r in doc["results"] if r.get("regime") == regime and r.get("formats")]


def matrix_args(result, matrices):
    """Positional and replication arguments that rebuild the suite's matrix."""
    source = result["source"]
    if ":" in source:  # a generator spec, used as is
        return [source]
    args = [os.path.join(matrices, source + ".mtx.xz")]
    if result["matrix"].endswith(" x16M"):  # I_k (x) A with >= 16M nonzeros (cli/suite_command.cpp)
        args += ["--replicate-to", "16000000"]
        if "class" not in result:  # suite v1 (no classes): the replicas repeated A's values
            args += ["--repeat-values"]
    return args


def _binary_hash(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


class Runner:
    """Runs spmvc plan / inspect for suite results, caching their JSON."""

    def __init__(self, spmvc=DEFAULT_SPMVC, matrices=DEFAULT_MATRICES, cache=DEFAULT_CACHE,
                 log=None, gpu=None):
        self.spmvc, self.matrices, self.cache, self.log = spmvc, matrices, cache, log
        self.gpu = gpu  # plan with this GPU model's calibration (spmvc plan --gpu)
        self.binary = _binary_hash(spmvc)

    def _cached(self, kind, key, cmd):
        name = hashlib.sha256(json.dumps([kind, key]).encode()).hexdigest()[:20]
        path = os.path.join(self.cache, kind, name + ".json")
        if os.path.exists(path):
            with open(path) as f:
                return json.load(f)
        if self.log:
            self.log(f"{kind}: {' '.join(cmd[1:])}")
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        doc = json.loads(out)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w") as f:
            json.dump(doc, f)
        os.replace(path + ".tmp", path)
        return doc

    def plan(self, result):
        args = matrix_args(result, self.matrices)
        cmd = [self.spmvc, "plan", *args, "--precision", result["precision"], "--json", "-q"]
        if self.gpu:
            cmd += ["--gpu", self.gpu]
        return self._cached("plan", [self.binary, cmd[2:]], cmd)

    def profile(self, result):
        args = matrix_args(result, self.matrices)
        cmd = [self.spmvc, "inspect", *args, "--no-formats", "--json", "-q"]
        return self._cached("inspect", [result["source"], args[1:]], cmd)


# ---------------------------------------------------------------------------------------------
# Observations and the calibration fit (shared by calibrate.py and planner-eval.py).

def warp_imbalance(fmt, params, profile):
    """formats::Cost::warp_imbalance for a candidate, from the inspect JSON (as the C++ computes
    it: csr's CsrFormat::warp_imbalance; 1 for every other format)."""
    if fmt != "csr":
        return 1.0
    t = max(1, int(params.get("threads_per_row", 1)))
    group = max(1, 32 // t)
    bins = profile["row_length"]["histogram"]
    rows = sum(b["count"] for b in bins)
    if rows <= 0 or group == 1:
        return 1.0
    steps = [(max(1.0, math.ceil(0.5 * (b["lo"] + b["hi"]) / t)), b["count"]) for b in bins]
    mean = sum(s * c for s, c in steps) / rows
    below = longest = 0.0
    for s, c in steps:
        longest += s * (((below + c) / rows) ** group - (below / rows) ** group)
        below += c
    return max(1.0, longest / mean)


def observations(result, plan, profile):
    """Per measured format of one suite result: the build's candidate with the measured
    parameters (label), its raw (uncalibrated) predicted seconds under both cost models, its warp
    imbalance, the measured seconds, and whether the build's best candidate of that format now
    has other parameters."""
    cands = [c for c in plan["candidates"] if c["applicable"]]
    by_label = {(c["format"], c["label"]): c for c in cands}
    top = {}
    for c in cands:
        top.setdefault(c["format"], c)
    out = {}
    for m in result["formats"]:
        if "ms" not in m or not m.get("correct"):
            continue
        c = by_label.get((m["format"], m["params"]))
        if c is None:
            out[m["format"]] = {"ms": m["ms"] * 1e-3, "missing": m["params"]}
            continue
        tf = c["time_factor"]
        out[m["format"]] = {
            "ms": m["ms"] * 1e-3,
            "label": m["params"],
            "raw": {k: v / tf for k, v in c["seconds_by_model"].items()},
            "predicted": c["seconds_by_model"],
            "time_factor": tf,
            "imbalance": warp_imbalance(m["format"], c["params"], profile),
            "top_label": top[m["format"]]["label"],
        }
    return out


def median(v):
    s = sorted(v)
    n = len(s)
    return 0.5 * (s[n // 2] + s[(n - 1) // 2])


def fit_rows(points, min_spread=0.05, max_exponent=1.0):
    """One calibration row from (warp_imbalance, measured / raw predicted) points: log factor
    a and exponent b of factor = e^a * imbalance^b. b is the Theil-Sen slope of log ratio on log
    imbalance (median of the pairwise slopes, kept in [0, max_exponent]) where the imbalance
    varies by more than min_spread in log; 0 otherwise. a is the median of the log ratios less
    b * log imbalance. Medians: a format whose model breaks down on one matrix (a serial floor
    far off) does not move the factor of the others. Returns (factor, exponent, log-spread)."""
    xs = [math.log(max(1.0, p[0])) for p in points]
    ys = [math.log(p[1]) for p in points]
    b = 0.0
    if len(points) >= 8 and max(xs) - min(xs) > min_spread:
        slopes = [(ys[j] - ys[i]) / (xs[j] - xs[i]) for i in range(len(xs))
                  for j in range(i + 1, len(xs)) if abs(xs[j] - xs[i]) > 1e-9]
        b = min(max(median(slopes), 0.0), max_exponent)
    a = median([y - b * x for x, y in zip(xs, ys)])
    res = [y - a - b * x for x, y in zip(xs, ys)]
    mean = sum(res) / len(res)
    spread = math.sqrt(sum((r - mean) ** 2 for r in res) / len(res)) if len(res) > 1 else 0.0
    return math.exp(a), b, spread


def fit(entries, model="compulsory", min_matrices=4):
    """Calibration rows {(format, precision): (factor, exponent, matrices, log-spread)} from
    entries [(result, observations)], fitted against the raw `model` predictions."""
    points = {}
    for r, obs in entries:
        for fmt, o in obs.items():
            if "raw" in o and o["raw"][model] > 0:
                points.setdefault((fmt, r["precision"]), []).append(
                    (o["imbalance"], o["ms"] / o["raw"][model]))
    rows = {}
    for key, pts in points.items():
        if len(pts) >= min_matrices:
            f, b, sd = fit_rows(pts)
            rows[key] = (f, b, len(pts), sd)
    return rows


def calibrated(rows, fmt, precision, imbalance):
    """time_factor() of compiler/calibration.cpp for fitted rows; None where no row."""
    row = rows.get((fmt, precision))
    if row is None:
        return None
    return row[0] * max(1.0, imbalance) ** row[1]


def read_inc(path):
    """Rows of a calibration .inc: {(format, precision): (factor, exponent, matrices, spread)}
    and each row's line as written."""
    rows, lines = {}, {}
    with open(path) as f:
        for line in f:
            m = re.match(r'\{"(\w+)", "(\w+)", ([0-9.eE+-]+), ([0-9.eE+-]+), (\d+), ([0-9.]+)\}',
                         line)
            if m:
                key = (m[1], m[2])
                rows[key] = (float(m[3]), float(m[4]), int(m[5]), float(m[6]))
                lines[key] = line.rstrip("\n")
    return rows, lines
