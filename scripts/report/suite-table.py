#!/usr/bin/env python3
"""Prints a short table from a `spmvc bench --suite` JSON: per matrix and precision, the
planner's pick and each format's speed relative to the best cuSPARSE, then geometric means.
A pick the planner reordered is marked with a trailing +. Suites with classes (v13: R real
values, P pattern or few values, G power-law rows) end with the figures per class and
precision: geomean of each pick over the best cuSPARSE, the count of generated picks below 1.0x
(<1), the count of picks handed to cuSPARSE itself (cuS: the baseline's own kernel, its ratio
run-to-run noise around 1.0, counted and reported as cuSPARSE rather than as a loss), and the
share of matrices where the model pick is within 5% of the measured oracle. Break-even medians
are the suite's own (our one-time cost over the saving per multiply against the best cuSPARSE) and,
for the pick from device arrays, the count from which it is ahead of every cuSPARSE algorithm
with that algorithm's setup (descriptor, buffer, preprocessing) counted on its side."""
import json
import math
import sys


def best_cusparse_alg(r):
    """Which cuSPARSE algorithm set the bar: alg1, alg2 or sell."""
    timed = [(v["ms"], k) for k, v in r.get("cusparse", {}).items()
             if "ms" in v and v.get("correct", True)]
    return min(timed)[1].replace("csr_", "").replace("_alg1", "") if timed else "-"


def device_break_even(r, m, upload=0.0):
    """Multiplies from which the pick, its one-time cost included, is ahead of every cuSPARSE
    algorithm with that algorithm's own setup (descriptor, buffer and preprocessing,
    `prepare_s`) plus `upload` seconds: the largest break-even against any one of them; inf
    where one multiplies faster. From device arrays the arrays are on the GPU for both (upload
    0); from host CSR the pick's one-time cost holds its upload and `upload` is cuSPARSE's."""
    worst = 0.0
    for v in r.get("cusparse", {}).values():
        if "ms" not in v or not v.get("correct", True):
            continue
        saving = (v["ms"] - m["ms"]) * 1e-3
        if saving <= 0:
            return math.inf
        setup = upload + v.get("prepare_s", 0.0)
        worst = max(worst, max(0.0, m["one_time_cached_s"] - setup) / saving)
    return worst


# From host CSR through the GPU build (`planner_host_gpu`): cuSPARSE's upload as a caller makes it
# (a pageable copy), and as spmvc's staged upload makes it.
HOST_UPLOADS = (("cusparse_upload_s", "host CSR through the GPU build, each side its own upload"),
                ("cusparse_staged_upload_s",
                 "host CSR through the GPU build, cuSPARSE given the staged upload"))


def name(m):
    """A pick's format, + when the planner reordered the matrix for it."""
    f = m.get("format", "?")
    return f[:8] + "+" if m.get("reorder") else f[:9]


def main(path):
    with open(path) as f:
        doc = json.load(f)
    if "operation" in doc:  # `bench --suite --k K` or `--transpose`: records of another shape
        import runpy
        runpy.run_path(__file__.replace("suite-table.py", "operation-table.py"))["main"](path)
        return
    print(f"{doc['suite']} on {doc['gpu']} ({doc['arch']}), cuSPARSE {doc['cusparse']}, "
          f"read bandwidth {doc['read_bandwidth'] / 1e9:.0f} GB/s")
    rows = [r for r in doc["results"] if "precision" in r]
    formats = []
    for r in rows:
        for m in r.get("formats", []):
            if m["format"] not in formats:
                formats.append(m["format"])
    head = (f"{'matrix':<24} {'c'} {'prec':<4} {'cuSP us':>8} {'alg':<5} {'pick':<9} {'x':>6} {'gap%':>5} "
            f"{'measured':<9} {'x':>6} {'gap%':>5} {'device x':>8} {'dev b-e':>7}")
    print(head + "".join(f" {f[:8]:>8}" for f in formats))
    logs = {}
    even = {}
    for r in rows:
        p = r["planner"]
        x = p.get("speedup_vs_best_cusparse")
        line = (f"{r['matrix'][:24]:<24} {r.get('class', '-')} {r['precision']:<4} "
                f"{r['best_cusparse_ms'] * 1e3:>8.1f} "
                f"{best_cusparse_alg(r):<5} {name(p):<9} {x if x else 0:>6.2f} "
                f"{r.get('planner_gap_pct', float('nan')):>5.1f}")
        pm = r.get("planner_measure") or {}
        xm = pm.get("speedup_vs_best_cusparse")
        line += (f" {name(pm) if pm else '-':<9} {xm if xm else 0:>6.2f} "
                 f"{r.get('planner_measure_gap_pct', float('nan')):>5.1f}")
        if xm and pm.get("correct"):
            logs.setdefault((r["regime"], r["precision"] + " measure"), []).append(math.log(xm))
        pd = r.get("planner_device") or {}
        xd = pd.get("speedup_vs_best_cusparse")
        bed = pd.get("break_even_multiplies")
        line += f" {xd if xd else 0:>8.2f} {(f'{bed:.0f}' if bed is not None else 'never'):>7}"
        if xd and pd.get("correct"):
            logs.setdefault((r["regime"], r["precision"] + " device"), []).append(math.log(xd))
        for mode, m in (("model", p), ("measure", pm), ("device", pd)):
            if "ms" in m and m.get("correct"):
                be = m.get("break_even_multiplies")
                even.setdefault((r["regime"], r["precision"], mode), []).append(
                    math.inf if be is None else be)
        if "ms" in pd and pd.get("correct"):
            even.setdefault((r["regime"], r["precision"], "device, each cuSPARSE algorithm's setup on its side"),
                            []).append(device_break_even(r, pd))
        ph = r.get("planner_host_gpu") or {}
        if "ms" in ph and ph.get("correct"):
            logs.setdefault((r["regime"], r["precision"] + " host CSR, GPU build"), []).append(
                math.log(ph["speedup_vs_best_cusparse"]))
            for key, label in HOST_UPLOADS:
                if key in r:
                    even.setdefault((r["regime"], r["precision"], label), []).append(
                        device_break_even(r, ph, r[key]))
        by = {m["format"]: m for m in r.get("formats", [])}
        for f in formats:
            m = by.get(f, {})
            if "ms" in m:
                bad = "" if m.get("correct") else "!"
                line += f" {r['best_cusparse_ms'] / m['ms']:>7.2f}{bad or ' '}"
            else:
                line += f" {'-':>8}"
        print(line)
        if x and p.get("correct"):
            logs.setdefault((r["regime"], r["precision"]), []).append(math.log(x))
    for (regime, prec), v in sorted(logs.items()):
        print(f"geomean planner vs best cuSPARSE, {regime} {prec}: "
              f"{math.exp(sum(v) / len(v)):.3f}x over {len(v)} matrices, min {math.exp(min(v)):.3f}x")
    for (regime, prec, mode), v in sorted(even.items()):
        v.sort()
        med = v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])
        never = sum(1 for b in v if math.isinf(b))
        print(f"median break-even ({mode}), {regime} {prec}: {med:.0f} multiplies over {len(v)} "
              f"matrices ({never} never repay: not faster than cuSPARSE)")
    if any("class" in r for r in rows):
        print_classes(rows)


def print_classes(rows):
    """Per class (and all) and precision: each pick's geomean over the best cuSPARSE, how many
    generated picks are below 1.0x, how many picks are cuSPARSE's own, and the model pick's share
    within 5% of the oracle."""
    print(f"\n{'class':<5} {'prec':<4} {'n':>3} {'model':>7} {'<1':>3} {'cuS':>3} {'measure':>8} "
          f"{'<1':>3} {'cuS':>3} {'device':>7} {'<1':>3} {'cuS':>3} {'oracle':>7} "
          f"{'model within 5% of oracle':>26}")
    groups = {}
    for r in rows:
        if "class" not in r:
            continue
        for c in (r["class"], "all"):
            groups.setdefault((c, r["precision"]), []).append(r)
    order = {"R": 0, "P": 1, "G": 2, "all": 3}
    for (c, prec), rs in sorted(groups.items(), key=lambda kv: (kv[0][1], order[kv[0][0]])):
        line = f"{c:<5} {prec:<4} {len(rs):>3}"
        for key, width in (("planner", 7), ("planner_measure", 8), ("planner_device", 7)):
            picks = [r[key] for r in rs
                     if r.get(key, {}).get("correct") and r[key].get("speedup_vs_best_cusparse")]
            xs = [p["speedup_vs_best_cusparse"] for p in picks]
            if xs:
                g = math.exp(sum(math.log(x) for x in xs) / len(xs))
                handed = sum(1 for p in picks if p.get("format") == "cusparse")
                below = sum(1 for p in picks
                            if p["speedup_vs_best_cusparse"] < 1.0 and p.get("format") != "cusparse")
                line += f" {g:>{width}.3f} {below:>3} {handed:>3}"
            else:
                line += f" {'-':>{width}} {'-':>3} {'-':>3}"
        xo = [r["best_cusparse_ms"] / r["oracle"]["ms"] for r in rs
              if r.get("oracle", {}).get("ms") and math.isfinite(r["oracle"]["ms"])]
        line += f" {math.exp(sum(math.log(x) for x in xo) / len(xo)):>7.3f}" if xo else f" {'-':>7}"
        gaps = [r["planner_gap_pct"] for r in rs if "planner_gap_pct" in r]
        if gaps:
            within = sum(1 for g in gaps if g <= 5.0)
            line += f" {within:>10}/{len(gaps):<3} ({100 * within / len(gaps):.0f}%)"
        print(line)


if __name__ == "__main__":
    main(sys.argv[1])
