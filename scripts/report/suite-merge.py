#!/usr/bin/env python3
"""Joins suite documents of one run (scripts/gpu/suite-run's per-entry files, or parts) into one:
the first document's header, every document's results in order. The parts must come from one
suite version on one GPU.

Usage: scripts/report/suite-merge.py OUT.json PART.json [PART.json ...]
"""
import json
import sys


def main(out, parts):
    doc = None
    for path in parts:
        with open(path) as f:
            d = json.load(f)
        if doc is None:
            doc = d
            continue
        for key in ("suite", "gpu"):
            if d[key] != doc[key]:
                sys.exit(f"{path}: {key} {d[key]!r}, not {doc[key]!r} as in {parts[0]}")
        doc["results"].extend(d["results"])
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    print(f"{out}: {len(doc['results'])} results from {len(parts)} files")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
