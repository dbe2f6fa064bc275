#!/usr/bin/env python3
"""Fits the planner's time calibration of one GPU model from `spmvc bench --suite` results taken on
it and writes it as data the compiler embeds (compiler/calibration/<gpu>.inc), with its
provenance.

Every bandwidth-regime matrix of the suites is planned again with the built spmvc (CPU only;
scripts/model/planner_data.py caches the JSON), so the fit is against the cost model of this source
tree: each measured format is matched to the candidate with the parameters it ran, and its raw
prediction is the candidate's predicted time over the time factor the build applied. A pick of
the suite's planner whose format the suite did not time otherwise (v13 times no amb) counts as a
measurement of that format. Per (format, precision):

    time_factor = factor * warp_imbalance ^ exponent

warp_imbalance is formats::Cost::warp_imbalance (a warp's longest row over its average; 1 for
formats whose rows are balanced). A format whose prediction charges the x sectors its rows
gather (planner_data.GATHERING: csr_stream's and csr_warp's formats::Cost::gathered_sectors,
and cuSPARSE's prediction; the count is the inspector's Profile::x_sectors) adds them to its
raw time at sector_bytes of reading each, fitted with the median fit below: of 0 to 64 bytes in
steps of 0.25, the price that leaves the smallest spread of the log ratio; the pick fit keeps
it. Two fits (--fit):

median  with ratio = measured / raw predicted time, the exponent is the Theil-Sen slope of log
        ratio on log imbalance (median of pairwise slopes, kept in 0..1; 0 where the imbalance
        does not vary), the factor the median of ratio / imbalance^exponent: medians, so a matrix
        where a format's model is far off moves no other matrix's prediction.
picks   (the default) starts from the median fit and moves it to rank the formats right. What
        the planner does with the factors is choose a format per matrix, and a median per format
        ignores that: a format whose model over-predicts it exactly where it wins (bro_ell with
        plain values, measured at 0.7-0.8 of its raw prediction where its median is 1.3 on the
        H200) loses those matrices to a format predicted well. Per precision it minimises

            sum over results of log(measured time of the pick / fastest measured time)
            + strength * sum over fitted rows of ((log factor - log median factor)^2
                                                 + (exponent - median exponent)^2)

        by coordinate descent on each row's log factor (at most a factor 3 from the median's)
        and, where a format's imbalance varies, its exponent (0..1). The first term is flat
        between the points where a format becomes or stops being some result's fastest
        prediction, so each step tries one point per interval between them, the median's
        value clamped into it, kept --margin (log time) inside it so no pick rests on a tie;
        it stops when no step lowers the sum. The second term keeps what the picks do not
        decide (absolute predicted times, formats' places against the ones the suites did not
        time) near the median fit. The loss is the geometric mean of the picks over the
        oracle, the figure the suite reports; a pairwise ranking loss would also count orders
        among formats that are never picked. --strength 1 and --margin 0.02 sit in the middle
        of the range where the leave-one-out picks of the suite v13 runs are best (strength
        0.1 to 3); a larger strength gives the median fit back.

Formats the suites did not measure, or measured on fewer than --min-matrices matrices, keep
their rows of --prior (by default the file it replaces), their factors scaled by the median
ratio of the fitted factors to the prior's (a GPU whose fitted formats all run 25% slower than
its prior predicted runs the others so too; 1 when the prior is this GPU's own earlier fit);
they take part in the picks but are not moved.

--refit FORMATS moves those formats' factors alone and keeps every other row of the prior as it
stands, unscaled: after one format's kernel changed, its new timings (with --supersede) move its
factor (the median of measured over predicted time at the prior's exponent and x-sector price,
then the pick fit on the factor only), and the other rows stay where their own timings put them.
A format the prior has no row for (a new one) starts from its median fit, exponent and sector
price included. Otherwise the exponent and the sector price stay the prior's: they were fitted
over both precisions and every format's timings, and moving them on one format's new timings
traded wiki-Vote x16M fp32 (csr_stream 0.95x cuSPARSE) for the census graphs on the H200. A whole refit on the same data moves
every row with the picks, and can trade a format whose model errs badly on one matrix (csr on
MIT8_facebook100 x16M fp32 on the H200: predicted 37.5 us, measured 63.8) into that pick.

The header records each fit's picks scored leave-one-matrix-out on the same suites (for each
matrix the rows fitted on the others predict it; scripts/model/planner-eval.py --mode loo,
loo-picks prints them per matrix) beside the prior's picks: geometric mean of pick / oracle and
the picks within 5% of the oracle, per precision. With --replace if-better (the default) a
precision whose fit does not beat the prior there (a lower geometric mean and as many picks
within 5%) keeps the prior's rows as they are, and the suite runs they were fitted on are named.
A prior fitted on the same suites is scored in sample and is hard to beat: refit from the file
it replaced, or give --replace always.

Every suite file must come from that GPU (its "gpu" field is checked against the model's device
name), and predictions are made with `spmvc plan --gpu MODEL`, so at that model's read bandwidth.

Usage: scripts/model/calibrate.py --gpu H100|H200 [--fit picks|median] [--spmvc BIN]
       [--matrices DIR] [--prior FILE] [--out FILE] [--supersede] [--refit FORMATS]
       SUITE.json [SUITE.json ...]
"""
import argparse
import itertools
import os
import sys

import planner_data as pd


def kept_sources(text, precision):
    """The suite runs a calibration file's `precision` rows were fitted on: those its own note
    on kept rows names, else its "from:" lines."""
    for i, line in enumerate(text):
        if line.startswith(f"// {precision}: left out matrix by matrix"):
            return [s[len("//   "):] for s in itertools.takewhile(
                lambda s: s.startswith("//   "), text[i + 1:])]
    return [s[len("// from: "):] for s in text if s.startswith("// from: ")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True, help="calibrated model: H100 or H200")
    ap.add_argument("--out")
    ap.add_argument("--prior", help="calibration file whose rows are kept for formats not fitted")
    ap.add_argument("--min-matrices", type=int, default=4,
                    help="fit a row only from this many matrices; fewer keep the prior row")
    ap.add_argument("--fit", default="picks", choices=pd.FITS)
    ap.add_argument("--strength", type=float, default=pd.PICK_STRENGTH,
                    help="picks: the pull towards the median fit")
    ap.add_argument("--margin", type=float, default=pd.PICK_MARGIN,
                    help="picks: log-time distance kept from a turning point")
    ap.add_argument("--replace", default="if-better", choices=["if-better", "always"],
                    help="if-better: a precision keeps the prior's rows unless the fit's "
                    "leave-one-out picks beat the prior's (lower geomean, as many within 5%%)")
    ap.add_argument("--spmvc", default=pd.DEFAULT_SPMVC)
    ap.add_argument("--matrices", default=pd.DEFAULT_MATRICES)
    ap.add_argument("--cache", default=pd.DEFAULT_CACHE)
    ap.add_argument("--supersede", action="store_true",
                    help="a later suite file's timing of a format on a matrix and precision "
                    "replaces the earlier files' (a kernel changed between the runs)")
    ap.add_argument("--refit", metavar="FORMATS",
                    help="comma list: move only these formats' factors (their exponents and "
                    "sector prices, and every other row, stay the prior's, unscaled): after one "
                    "format's kernel changed")
    ap.add_argument("suites", nargs="+")
    a = ap.parse_args()
    out = a.out or os.path.join(pd.ROOT, "compiler", "calibration", f"{a.gpu.lower()}.inc")
    prior = a.prior or (out if os.path.exists(out) else None)
    prior_rows, prior_lines = pd.read_inc(prior) if prior else ({}, {})

    runner = pd.Runner(a.spmvc, a.matrices, a.cache, log=lambda s: print(s, file=sys.stderr),
                       gpu=a.gpu)
    entries, sources, gpus = [], [], set()
    for path in a.suites:
        doc, results = pd.bandwidth_results(path)
        gpus.add(doc["gpu"])
        if a.gpu not in doc["gpu"]:
            sys.exit(f"{path} was measured on {doc['gpu']}, not an {a.gpu}")
        sources.append(f"{os.path.relpath(path, pd.ROOT)} ({doc['suite']}, cuSPARSE "
                       f"{doc['cusparse']}): {len(results)} bandwidth-regime results")
        for r in results:
            entries.append((r, pd.observations(r, runner.plan(r), runner.profile(r),
                                               build_rows=prior_rows)))
    if a.supersede:
        superseded = pd.supersede(entries)
        if superseded:
            sources.append(f"superseded by a later file's timing: {superseded} format timings")
    model = "compulsory"
    only = set(a.refit.split(",")) if a.refit else None
    if only and not prior_rows:
        sys.exit("--refit keeps the other formats' rows of a prior: give --prior")
    kw = {"strength": a.strength, "margin": a.margin, "only": only}
    own = pd.fit(entries, model, a.min_matrices)
    if only:
        missing = only - {k[0] for k in own}
        if missing:
            sys.exit(f"--refit: {', '.join(sorted(missing))} timed on fewer than "
                     f"{a.min_matrices} matrices of these suites")
        own = {k: v for k, v in own.items() if k[0] in only}
        scale = 1.0
    else:
        _, scale = pd.with_prior(own, prior_rows)
    rows = pd.fitted_rows(entries, model, a.min_matrices, prior_rows, a.fit, **kw)

    def scored(picks):
        return "; ".join(f"{p} %.3fx, %d/%d within 5%%" % pd.score(entries, picks, p)
                         for p in ("f64", "f32"))

    prior_name = os.path.relpath(prior, pd.ROOT) if prior else "no prior"
    build = {id(r): pd.pick(r, obs, pd.predictor(prior_rows, model, r["precision"]))
             for r, obs in entries}
    loo = {m: pd.leave_one_out(entries, model, a.min_matrices, prior_rows, m, **kw)
           for m in pd.FITS}

    # A precision whose fit does not pick better than the prior, left out matrix by matrix, keeps
    # the prior's rows: a refit must earn its place.
    kept_precisions = []
    if prior_rows and a.replace == "if-better":
        for p in ("f64", "f32"):
            if pd.score(entries, loo[a.fit], p)[2] and not pd.beats(entries, loo[a.fit], build, p):
                kept_precisions.append(p)
                rows = {k: v for k, v in rows.items() if k[1] != p or k not in prior_rows}
                rows.update({k: v for k, v in prior_rows.items() if k[1] == p})

    lines = [
        f"// Planner time calibration for the {a.gpu}: time_factor = factor * warp_imbalance ^ "
        "exponent",
        "// (calibration.hpp), fitted to measured over predicted time on the bandwidth-regime",
        "// matrices of the suite runs below. Generated by scripts/model/calibrate.py; do not edit",
        "// by hand.",
        f"// GPU: {', '.join(sorted(gpus))}",
    ]
    lines += [f"// from: {s}" for s in sources]
    lines += [
        "// predicted: `spmvc plan` of this source tree, compulsory cost model, each format with the",
        "// parameters it was measured with, divided by the time factor the build applied, less",
        "// what the build charged for gathered x sectors (--prior's sector_bytes)",
        "// sector_bytes: of 0 to 64 in steps of 0.25, the price per gathered x sector (bytes of",
        "// reading; formats::Cost::gathered_sectors, Profile::x_sectors) that leaves the median",
        "// fit the smallest log-spread; 0 for formats that do not charge gathered sectors",
        "// median fit: factor = median of measured / predicted; exponent = Theil-Sen slope of the",
        "// log ratio on log warp_imbalance, in 0..1 (0 where a format's imbalance does not vary)",
    ]
    if a.fit == "picks":
        lines += [
            "// fit: picks (calibrate.py's docstring): the median fit moved to minimise the sum of",
            "// log(measured time of the pick / fastest measured) + "
            f"{a.strength:g} x sum of squared log moves",
            "// from the median fit (margin " + f"{a.margin:g}); log-spread against these factors",
        ]
    else:
        lines.append("// fit: median")
    lines += [
        "// picks, geomean pick / oracle and picks within 5% (leave-one-matrix-out for the fits):",
        f"//   {prior_name} before this fit: {scored(build)}",
        f"//   median fit: {scored(loo['median'])}",
        f"//   picks fit: {scored(loo['picks'])}",
    ]
    if kept_precisions:
        with open(prior) as f:
            prior_text = f.read().splitlines()
        for p in kept_precisions:
            lines.append(f"// {p}: left out matrix by matrix, the {a.fit} fit does not beat "
                         f"{prior_name} before this fit: its {p} rows are kept as they were, "
                         "fitted on")
            lines += [f"//   {s}" for s in kept_sources(prior_text, p)]
    lines.append("// {format, precision, factor, exponent, sector_bytes, matrices, log-spread (sd "
                 "of log residual)}")
    kept = sorted(k for k in set(prior_lines) - set(own) if k[1] not in kept_precisions)
    if kept and only:
        lines.append(f"// refit: {', '.join(sorted(only))} only; kept from the prior file as "
                     "they were:")
        lines.append("//   " + ", ".join(f"{f} {p}" for f, p in kept))
    elif kept:
        lines.append(f"// kept from the prior file (timed on fewer than {a.min_matrices} "
                     f"matrices here, or not at all), factors x {scale:.4f}, the median of fitted")
        lines.append("// over prior factors:")
        lines.append("//   " + ", ".join(f"{f} {p}" for f, p in kept))
    for key in sorted(rows):
        f, b, n, sd = rows[key][:4]
        sb = pd.sector_bytes(rows[key])
        lines.append(f'{{"{key[0]}", "{key[1]}", {f:.4f}, {b:.3f}, {sb:.2f}, {n}, {sd:.3f}}},')
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
