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
import statistics
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

def csr_stream_imbalance(params, profile):
    """CsrStreamFormat::warp_imbalance: a row block's wait for its longest row in the reduction,
    (stream steps + E[longest row's steps]) / (stream steps + mean row's steps)."""
    tile = int(params.get("tile", 1024))
    block = int(params.get("block_size", 256))
    bins = [b for b in profile["row_length"]["histogram"] if b["lo"] <= tile]
    lens = [(0.5 * (b["lo"] + min(b["hi"], tile)), b["count"]) for b in bins]
    rows = sum(c for _, c in lens)
    nnz = sum(l * c for l, c in lens)
    if rows <= 0 or nnz <= 0:
        return 1.0
    mean = nnz / rows
    fill = max(0.5, 1.0 - mean / tile)
    per_block = int(min(max(math.floor(tile * fill / mean), 1.0), float(block)))
    lanes = 32
    while lanes > 1 and lanes * per_block > block:
        lanes >>= 1
    below = longest = mean_steps = 0.0
    for l, c in lens:
        s = max(1.0, math.ceil(l / lanes))
        f0, f1 = below / rows, (below + c) / rows
        longest += s * (f1 ** per_block - f0 ** per_block)
        mean_steps += s * c / rows
        below += c
    stream = tile / block
    return max(1.0, (stream + longest) / (stream + mean_steps))


def warp_imbalance(fmt, params, profile):
    """formats::Cost::warp_imbalance for a candidate, from the inspect JSON (as the C++ computes
    it: csr's CsrFormat::warp_imbalance, csr_stream's CsrStreamFormat::warp_imbalance; 1 for every
    other format)."""
    if fmt == "csr_stream":
        # At the reference shape every candidate's Cost reports (kImbalanceShape).
        return csr_stream_imbalance({"tile": 1024, "block_size": 256}, profile)
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


# The formats whose predicted time charges the x sectors their rows gather (formats::Cost::
# gathered_sectors), each sector at its calibration row's sector_bytes of reading: the count is
# the inspector's Profile::x_sectors. cuSPARSE's prediction (compiler::predict_cusparse) charges
# none: its ALG1 times on suite v13 fit better with such a term (log-spread 0.18 to 0.15 fp64,
# 0.30 to 0.25 fp32, H100 and H200), but with it priced the replayed picks were worse on both
# GPUs (bench/results/README.md, "csr_stream's gathered x sectors"); "cusparse" added here (its
# observation has the same "gather") prices it in a fit.
GATHERING = ("csr_stream", "csr_warp")


def sector_bytes(row):
    """A calibration row's bytes of reading per gathered x sector (0 for rows without one)."""
    return row[4] if row is not None and len(row) > 4 else 0.0


# Parameters that a format's label gained after suites were timed, each with the value every
# earlier kernel ran: csr_stream's rows a lane (m), dia's rows a thread (r) and its untested
# interior tiles (i, written "no-i" when off; dia's earlier kernel tested every row).
LABEL_DEFAULTS = {"csr_stream": ("m=1",), "dia": ("r=1", "no-i")}


def _label_key(token):
    """A label token's parameter: "m" of "m=2", "i" of "i" and of "no-i"."""
    name = token.split("=", 1)[0]
    return name[3:] if name.startswith("no-") else name


def label_tokens(fmt, label):
    """A label as the set of its tokens, with the parameters it does not name at LABEL_DEFAULTS
    (a timing from before the parameter existed ran that value)."""
    tokens = set(label.split())
    named = {_label_key(t) for t in tokens}
    tokens.update(t for t in LABEL_DEFAULTS.get(fmt, ()) if _label_key(t) not in named)
    return frozenset(tokens)


def observations(result, plan, profile, cusparse=True, build_rows=None):
    """Per measured format of one suite result: the build's candidate with the measured
    parameters (label), its raw (uncalibrated) predicted seconds under both cost models, its warp
    imbalance, the measured seconds, and whether the build's best candidate of that format now
    has other parameters. A format of GATHERING also has "gather": seconds per byte charged per
    gathered sector (x sectors / read bandwidth); its raw seconds leave out what the build
    charged for them (build_rows: the calibration rows the build was made from, its sector_bytes
    times gather), so that a fit can price them anew."""
    sectors = float(profile.get("x_sectors", 0) or 0)
    bandwidth = plan["calibration"]["read_bandwidth"]
    build_rows = build_rows or {}
    # A format the GPU's calibration has no row for is left out of the planning but keeps its
    # prediction (compiler/planner/planner.cpp, unpriced_gathers): the fit of its first row.
    cands = [c for c in plan["candidates"]
             if c["applicable"] or (c.get("reason", "").startswith("no calibration of")
                                    and "seconds_by_model" in c)]
    by_label = {(c["format"], label_tokens(c["format"], c["label"])): c for c in cands}
    top = {}
    for c in cands:
        top.setdefault(c["format"], c)
    out = {}
    timed = [m for m in result["formats"] if "ms" in m and m.get("correct")]
    # A pick whose format the suite did not time (v13 times no amb or bro_coo) is a measurement of
    # that format all the same: without it the evaluation would never see the build pick it.
    named = {m["format"] for m in result["formats"]}
    for key in ("planner", "planner_measure"):
        p = result.get(key)
        # A pick handed to cuSPARSE ("cusparse") is cusparse_observation's, at ALG1's time.
        if (p and "ms" in p and p.get("correct") and p["format"] not in named
                and p["format"] != "cusparse" and p.get("reorder", "none") == "none"):
            named.add(p["format"])
            timed.append(p)
    for m in timed:
        c = by_label.get((m["format"], label_tokens(m["format"], m["params"])))
        if c is None:
            out[m["format"]] = {"ms": m["ms"] * 1e-3, "missing": m["params"]}
            continue
        tf = c["time_factor"]
        gather = sectors / bandwidth if m["format"] in GATHERING else 0.0
        charged = sector_bytes(build_rows.get((m["format"], result["precision"]))) * gather
        out[m["format"]] = {
            "ms": m["ms"] * 1e-3,
            "label": c["label"],
            "raw": {k: v / tf - charged for k, v in c["seconds_by_model"].items()},
            "gather": gather,
            "predicted": c["seconds_by_model"],
            "time_factor": tf,
            "imbalance": warp_imbalance(m["format"], c["params"], profile),
            "top_label": top[m["format"]]["label"],
        }
    if cusparse:
        cusp = cusparse_observation(result, plan, sectors if "cusparse" in GATHERING else 0.0,
                                    sector_bytes(build_rows.get(("cusparse", result["precision"]))))
        if cusp is not None:
            out["cusparse"] = cusp
    return out


def supersede(entries):
    """Drops, in place, each format's observation of a (matrix, precision) that a later entry
    observes again (cuSPARSE's stays with its own result): the later run timed a changed kernel.
    Returns how many were dropped."""
    last = {}
    for i, (r, obs) in enumerate(entries):
        for fmt in obs:
            if fmt != "cusparse":
                last[(r["matrix"], r["precision"], fmt)] = i
    dropped = 0
    for i, (r, obs) in enumerate(entries):
        for fmt in [f for f in obs if f != "cusparse"]:
            if last[(r["matrix"], r["precision"], fmt)] != i:
                del obs[fmt]
                dropped += 1
    return dropped


# compiler/heuristics.hpp's kLaunchSeconds: the floor under every predicted time.
LAUNCH_SECONDS = 4.0e-6
CUSPARSE_ROW_BYTES = 16.0  # heuristics::kCusparseRowBytes


def cusparse_observation(result, plan, sectors=0.0, build_sector_bytes=0.0):
    """cuSPARSE's CSR SpMV (ALG1 with preprocessing, the faster of its CSR algorithms on every
    suite v13 matrix, and what a plan with engine cusparse runs) as one more measured "format":
    its raw prediction is compiler::predict_cusparse's without the factor, the plain CSR bytes
    (the suite's csr_bytes: offsets, columns, values, x and y) and CUSPARSE_ROW_BYTES a row at
    the plan's read bandwidth plus the launch; "gather" its x sectors (0: not charged) over that
    bandwidth; its prediction the build's (the plan's cusparse_seconds, which charged
    build_sector_bytes per sector), where the build made one. None where the suite did not time
    it."""
    alg1 = result.get("cusparse", {}).get("csr_alg1", {})
    if "ms" not in alg1 or not alg1.get("correct", True) or not result.get("csr_bytes"):
        return None
    bandwidth = plan["calibration"]["read_bandwidth"]
    raw = LAUNCH_SECONDS + (result["csr_bytes"] + CUSPARSE_ROW_BYTES * result["nrows"]) / bandwidth
    gather = sectors / bandwidth
    charged = raw + build_sector_bytes * gather
    predicted = plan.get("cusparse_seconds", charged)
    return {"ms": alg1["ms"] * 1e-3, "label": "alg1", "raw": {"compulsory": raw, "traffic": raw},
            "gather": gather, "predicted": {"compulsory": predicted, "traffic": predicted},
            "time_factor": predicted / charged, "imbalance": 1.0, "top_label": "alg1",
            "build_predicted": "cusparse_seconds" in plan}


def charged(o, model, row):
    """An observation's raw seconds under `model` with its gathered sectors charged at the
    calibration row's sector_bytes: what the time factor multiplies."""
    return o["raw"][model] + sector_bytes(row) * o.get("gather", 0.0)


def median(v):
    s = sorted(v)
    n = len(s)
    return 0.5 * (s[n // 2] + s[(n - 1) // 2])


def spread(v):
    """The standard deviation (population) of v; 0 for fewer than two values."""
    if len(v) < 2:
        return 0.0
    mean = sum(v) / len(v)
    return math.sqrt(sum((x - mean) ** 2 for x in v) / len(v))


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
    return math.exp(a), b, spread([y - a - b * x for x, y in zip(xs, ys)])


# The bytes of reading per gathered sector a fit tries (SECTOR_STEP apart, up to SECTOR_MAX): a
# 32-byte sector costs between nothing and a few sectors' worth of streaming.
SECTOR_STEP = 0.25
SECTOR_MAX = 64.0


def fit(entries, model="compulsory", min_matrices=4):
    """Calibration rows {(format, precision): (factor, exponent, matrices, log-spread,
    sector_bytes)} from entries [(result, observations)], fitted against the raw `model`
    predictions. A format whose observations gather x sectors (GATHERING) also gets its
    sector_bytes, one price for both precisions (what a gathered sector costs is the GPU's):
    of 0 to SECTOR_MAX bytes in SECTOR_STEP, the price whose fit_rows() per precision leave the
    smallest log-spread over both together (each row's factor and exponent are that fit's); 0
    for the other formats."""
    points = {}
    for r, obs in entries:
        for fmt, o in obs.items():
            if "raw" in o and o["raw"][model] > 0:
                points.setdefault((fmt, r["precision"]), []).append(
                    (o["imbalance"], o["ms"], o["raw"][model], o.get("gather", 0.0)))
    points = {k: v for k, v in points.items() if len(v) >= min_matrices}

    def rows_at(keys, sb):
        out = {}
        for key in keys:
            pts = points[key]
            f, b, sd = fit_rows([(i, ms / (raw + sb * g)) for i, ms, raw, g in pts])
            out[key] = (f, b, len(pts), sd, sb)
        return out

    rows = {}
    for fmt in sorted({k[0] for k in points}):
        keys = sorted(k for k in points if k[0] == fmt)
        prices = [0.0]
        if any(g > 0 for k in keys for _, _, _, g in points[k]):
            prices = [SECTOR_STEP * i for i in range(int(SECTOR_MAX / SECTOR_STEP) + 1)]
        best, best_var = None, None
        for sb in prices:
            trial = rows_at(keys, sb)
            var = sum(v[2] * v[3] ** 2 for v in trial.values())
            if best is None or var < best_var - 1e-12:
                best, best_var = trial, var
        rows.update(best)
    return rows


def with_prior(rows, prior):
    """rows completed by the prior's rows of the keys they lack, the prior factors scaled by the
    median ratio of fitted to prior factor over the keys both have (1 where none): a format not
    fitted here keeps its place relative to the others. Returns (rows, scale)."""
    ratios = [rows[k][0] / prior[k][0] for k in rows if k in prior]
    scale = statistics.median(ratios) if ratios else 1.0
    out = dict(rows)
    for k, row in prior.items():
        if k not in out:
            out[k] = (row[0] * scale,) + tuple(row[1:])
    return out, scale


# The pick fit's defaults (scripts/model/calibrate.py's docstring says how they were chosen).
PICK_STRENGTH = 1.0  # weight of sum (log factor - log median factor)^2 against sum log(pick/oracle)
PICK_MARGIN = 0.02   # log distance kept from a pick's turning point where the prior allows it
PICK_SPAN = math.log(3.0)  # a factor moves at most this far (log) from its median fit


def _pick_cases(entries, model, precision, rows):
    """Per result of `precision`: [(format, log raw seconds, log imbalance, log(ms / oracle))],
    the raw seconds with gathered sectors charged at rows' sector_bytes (fixed in the pick fit)."""
    cases = []
    for r, obs in entries:
        if r["precision"] != precision:
            continue
        oracle = r["oracle"]["ms"] * 1e-3
        c = [(fmt, math.log(charged(o, model, rows.get((fmt, precision)))),
              math.log(max(1.0, o["imbalance"])), math.log(o["ms"] / oracle))
             for fmt, o in obs.items() if "raw" in o and o["raw"][model] > 0]
        if len(c) > 1:
            cases.append(c)
    return cases


def _pick_loss(cases, params):
    """Sum over cases of log(measured / oracle) of the format predicted fastest under params
    {format: (log factor, exponent)}; formats without params are not candidates."""
    total = 0.0
    for c in cases:
        best = None
        for fmt, lr, li, loss in c:
            p = params.get(fmt)
            if p is not None:
                t = lr + p[0] + p[1] * li
                if best is None or t < best[0]:
                    best = (t, loss)
        if best is not None:
            total += best[1]
    return total


def fit_picks(entries, rows, model="compulsory", fixed=None, strength=PICK_STRENGTH,
              margin=PICK_MARGIN, span=PICK_SPAN, factors_only=False):
    """The median fit's rows moved to rank the formats right: per precision, minimises

        J = sum over results of log(measured time of the pick / oracle time)
            + strength * sum over fitted rows of ((log factor - log median factor)^2
                                                 + (exponent - median exponent)^2)

    by coordinate descent over each row's log factor (within span of the median's) and, for a
    format whose warp imbalance varies over the results, its exponent (in 0..1). The first term
    is flat between the turning points where a format becomes or stops being some result's
    fastest prediction, so each coordinate's exact minimum is found by trying one point per
    interval between turning points: the median's value clamped into the interval, kept margin
    (in log time) inside it so a pick does not rest on a tie. fixed: rows that take part in the
    picks but are not moved (formats timed too seldom to fit). factors_only: the exponents stay
    as in rows. Each row's sector_bytes stays the median fit's. Returns rows in fit()'s form, the
    log-spread recomputed against the moved factors."""
    fixed = fixed or {}
    out = dict(rows)
    for prec in sorted({k[1] for k in rows}):
        cases = _pick_cases(entries, model, prec, {**fixed, **rows})
        start = {k[0]: (math.log(v[0]), v[1]) for k, v in rows.items() if k[1] == prec}
        params = {k[0]: (math.log(v[0]), v[1]) for k, v in fixed.items()
                  if k[1] == prec and k[0] not in start}
        params.update(start)
        coords = [(f, 0) for f in sorted(start)]
        for f in sorted(start):
            lis = [li for c in cases for fmt, _, li, _ in c if fmt == f]
            if not factors_only and lis and max(lis) - min(lis) > 0.05:
                coords.append((f, 1))

        def objective(p):
            reg = sum((p[f][0] - start[f][0]) ** 2 + (p[f][1] - start[f][1]) ** 2 for f in start)
            return _pick_loss(cases, p) + strength * reg

        best_j = objective(params)
        for _ in range(50):
            improved = False
            for f, j in coords:
                x0 = start[f][j]
                lo, hi = (x0 - span, x0 + span) if j == 0 else (0.0, 1.0)
                # Turning points: where f's prediction meets the best other format's.
                turns = []
                for c in cases:
                    others = [lr + params[g][0] + params[g][1] * li
                              for g, lr, li, _ in c if g != f and g in params]
                    for g, lr, li, _ in c:
                        if g != f or not others:
                            continue
                        z = 1.0 if j == 0 else li
                        if z <= 0:
                            continue
                        rest = lr + (params[f][1] * li if j == 0 else params[f][0])
                        x = (min(others) - rest) / z
                        if lo < x < hi:
                            turns.append((x, margin / z))
                turns.sort()
                edges = [(lo, 0.0)] + turns + [(hi, 0.0)]
                trial = []
                for (a, ma), (b, mb) in zip(edges, edges[1:]):
                    if b - a <= 1e-12:
                        continue
                    left, right = a + ma, b - mb
                    trial.append(min(max(x0, left), right) if left <= right else 0.5 * (a + b))
                for x in trial:
                    p = dict(params)
                    p[f] = (x, p[f][1]) if j == 0 else (p[f][0], x)
                    v = objective(p)
                    if v < best_j - 1e-12:
                        best_j, params, improved = v, p, True
            if not improved:
                break
        for f in start:
            key = (f, prec)
            n = rows[key][2]
            res = [math.log(o["ms"] / charged(o, model, rows[key])) - params[f][0] -
                   params[f][1] * math.log(max(1.0, o["imbalance"]))
                   for r, obs in entries if r["precision"] == prec
                   for g, o in obs.items() if g == f and "raw" in o and o["raw"][model] > 0]
            out[key] = (math.exp(params[f][0]), params[f][1], n, spread(res),
                        sector_bytes(rows[key]))
    return out


def calibrated(rows, fmt, precision, imbalance):
    """time_factor() of compiler/calibration.cpp for fitted rows; None where no row."""
    row = rows.get((fmt, precision))
    if row is None:
        return None
    return row[0] * max(1.0, imbalance) ** row[1]


# ---------------------------------------------------------------------------------------------
# Scoring a calibration by its picks (planner-eval.py, and calibrate.py's provenance lines).

def pick(result, obs, predict):
    """(format, measured / oracle) of the measured format predict() puts fastest; (None, None)
    where it predicts none. predict(format, observation) -> seconds or None."""
    best = None
    for fmt, o in obs.items():
        if "raw" not in o:
            continue
        t = predict(fmt, o)
        if t is not None and (best is None or t < best[0]):
            best = (t, fmt)
    if best is None:
        return None, None
    return best[1], obs[best[1]]["ms"] / (result["oracle"]["ms"] * 1e-3)


def predictor(rows, model, precision):
    """predict() for pick(): the raw `model` prediction, gathered sectors charged at the rows'
    sector_bytes, times the rows' time factor."""
    def predict(fmt, o):
        f = calibrated(rows, fmt, precision, o["imbalance"])
        return None if f is None else charged(o, model, rows.get((fmt, precision))) * f
    return predict


FITS = ("median", "picks")


def _median_factor(entries, model, key, row, min_matrices):
    """`row` with its factor the median of measured over charged raw time x imbalance^exponent
    on entries' observations of key (its exponent and sector_bytes kept), the matrices counted
    and the log-spread recomputed; None where fewer than min_matrices observe it."""
    fmt, prec = key
    logs = [math.log(o["ms"] / charged(o, model, row)) - row[1] * math.log(max(1.0, o["imbalance"]))
            for r, obs in entries if r["precision"] == prec
            for g, o in obs.items() if g == fmt and "raw" in o and o["raw"][model] > 0]
    if len(logs) < min_matrices:
        return None
    return (math.exp(median(logs)), row[1], len(logs), spread(logs), sector_bytes(row))


def fitted_rows(entries, model, min_matrices, prior, method, strength=PICK_STRENGTH,
                margin=PICK_MARGIN, only=None):
    """The rows calibrate.py writes from entries: fit() (method median) or fit() then
    fit_picks() (method picks), completed by the prior's rows (with_prior). only: the formats
    refitted: their factors alone, from the prior's rows (_median_factor, then moved by the pick
    fit), their exponents and x-sector prices the prior's (a format without a prior row: its
    median fit's); every other row is the prior's as it stands, unscaled (a refit after one format's kernel changed leaves the others where their own
    timings put them)."""
    if only is not None:
        start = {}
        for key, row in prior.items():
            if key[0] in only:
                moved = _median_factor(entries, model, key, row, min_matrices)
                if moved is not None:
                    start[key] = moved
        # A refitted format the prior has no row for (a new format) starts from its own median
        # fit: factor, exponent and x-sector price.
        for key, row in fit(entries, model, min_matrices).items():
            if key[0] in only and key not in prior:
                start[key] = row
        rows = {**prior, **start}
        if method == "picks":
            rows.update(fit_picks(entries, start, model, fixed=rows, strength=strength,
                                  margin=margin, factors_only=True))
        elif method != "median":
            raise ValueError(f"unknown fit '{method}' ({', '.join(FITS)})")
        return rows
    own = fit(entries, model, min_matrices)
    rows, _ = with_prior(own, prior)
    if method == "picks":
        # The rows not fitted here keep the scale of the median fit, the one they took part in
        # the picks with.
        rows.update(fit_picks(entries, own, model, fixed=rows, strength=strength, margin=margin))
    elif method != "median":
        raise ValueError(f"unknown fit '{method}' ({', '.join(FITS)})")
    return rows


def leave_one_out(entries, model, min_matrices, prior, method, **kw):
    """{id(result): pick()} where each matrix (both precisions) is predicted by the rows fitted
    on the other matrices; a format needs one matrix fewer than min_matrices."""
    picks = {}
    for name in sorted({r["matrix"] for r, _ in entries}):
        train = [e for e in entries if e[0]["matrix"] != name]
        rows = fitted_rows(train, model, max(1, min_matrices - 1), prior, method, **kw)
        for r, obs in entries:
            if r["matrix"] == name:
                picks[id(r)] = pick(r, obs, predictor(rows, model, r["precision"]))
    return picks


def score(entries, picks, precision, tolerance=0.05):
    """(geometric mean of pick / oracle, picks within tolerance of the oracle, results) over
    the results of `precision` that picks scores."""
    ratios = [picks[id(r)][1] for r, _ in entries
              if r["precision"] == precision and picks[id(r)][1] is not None]
    if not ratios:
        return math.nan, 0, 0
    gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    return gm, sum(1 for x in ratios if x <= 1 + tolerance), len(ratios)


def speedup(entries, picks, precision, cls=None):
    """Geometric mean over the results of `precision` (and of suite class `cls`, R, P or G,
    where given) of the suite's best cuSPARSE time over the pick's measured time (the suite's
    speedup of the planner's pick)."""
    logs = [math.log(r["best_cusparse_ms"] * 1e-3 / obs[picks[id(r)][0]]["ms"])
            for r, obs in entries
            if r["precision"] == precision and picks[id(r)][0] is not None
            and r.get("best_cusparse_ms") and (cls is None or r.get("class") == cls)]
    return math.exp(sum(logs) / len(logs)) if logs else math.nan


def below_cusparse(entries, picks, precision):
    """The results of `precision` whose pick measured slower than the suite's best cuSPARSE
    (best_cusparse_ms: the fastest of its CSR and SELL SpMVs): [(matrix, pick / cuSPARSE time)]."""
    out = []
    for r, obs in entries:
        fmt, _ = picks[id(r)]
        if r["precision"] != precision or fmt is None or not r.get("best_cusparse_ms"):
            continue
        ratio = obs[fmt]["ms"] / (r["best_cusparse_ms"] * 1e-3)
        if ratio > 1.0:
            out.append((r["matrix"], ratio))
    return out


def beats(entries, picks, other, precision, tolerance=0.05):
    """Whether picks score better than other on `precision`'s results: a lower geometric mean
    of pick / oracle and no fewer picks within tolerance."""
    gm, ok, n = score(entries, picks, precision, tolerance)
    gm0, ok0, _ = score(entries, other, precision, tolerance)
    return n > 0 and gm < gm0 and ok >= ok0


def read_inc(path):
    """Rows of a calibration .inc: {(format, precision): (factor, exponent, matrices, spread,
    sector_bytes)} and each row's line as written (a file from before the sector_bytes column
    reads 0 for it)."""
    rows, lines = {}, {}
    with open(path) as f:
        for line in f:
            m = re.match(r'\{"(\w+)", "(\w+)", ([0-9.eE+-]+), ([0-9.eE+-]+), '
                         r'(?:([0-9.eE+-]+), )?(\d+), ([0-9.]+)\}', line)
            if m:
                key = (m[1], m[2])
                rows[key] = (float(m[3]), float(m[4]), int(m[6]), float(m[7]),
                             float(m[5]) if m[5] is not None else 0.0)
                lines[key] = line.rstrip("\n")
    return rows, lines


# ---------------------------------------------------------------------------------------------
# The model's error per format and class (scripts/model/model-error.py).

def model_errors(entries, model="compulsory", key="predicted", relative=False):
    """{(format, class, precision): (results, geometric mean of measured / predicted, log-spread)}
    from entries [(result, observations)], with class "all" for every class together. key:
    "predicted" (the build's calibrated time) or "raw" (the cost model before calibration). A
    geometric mean below 1 is a format the model over-predicts there (it runs faster than
    predicted); the spread is the standard deviation of log(measured / predicted) within the
    group, what a factor per format and precision cannot remove. relative: each ratio over the
    geometric mean ratio of the other formats timed on the same result (a format the model errs
    on as it errs on the others there ranks right against them: 1); a result with no other
    format is left out."""
    logs = {}
    for r, obs in entries:
        ratios = {fmt: math.log(o["ms"] / o[key][model]) for fmt, o in obs.items()
                  if key in o and o[key][model] > 0}
        for fmt, v in ratios.items():
            if relative:
                others = [w for g, w in ratios.items() if g != fmt]
                if not others:
                    continue
                v -= sum(others) / len(others)
            for cls in (r.get("class", "?"), "all"):
                logs.setdefault((fmt, cls, r["precision"]), []).append(v)
    out = {}
    for k, v in logs.items():
        out[k] = (len(v), math.exp(sum(v) / len(v)), spread(v))
    return out
