#!/usr/bin/env python3
"""Each kernel's median GPU time and warp instructions from scripts/gpu/build-kernels' ncu files
(ncu --csv --page raw, a label line first), one block per file, longest kernels first."""
import csv
import statistics
import sys
from collections import defaultdict


def short_name(name):
    # "void spmvc::device_csr::row_stats_kernel<...>(...)" -> "row_stats_kernel"
    return name.split("(")[0].replace("void ", "").split("<")[0].split("::")[-1]


def main(paths):
    for path in paths:
        with open(path) as f:
            label = f.readline().strip()
            recs = list(csv.reader(f))
        if not recs:
            print(f"{label}: no ncu output")
            continue
        head = recs[0]
        name_at = head.index("Kernel Name")
        t_at = head.index("gpu__time_duration.sum")
        i_at = head.index("smsp__inst_executed.sum")
        kernels = defaultdict(list)
        for rec in recs[1:]:
            try:
                t = float(rec[t_at].replace(",", ""))
                i = float(rec[i_at].replace(",", ""))
            except (ValueError, IndexError):
                continue  # the units row
            kernels[short_name(rec[name_at])].append((t, i))
        med = {k: (statistics.median(t for t, _ in v), statistics.median(i for _, i in v), len(v))
               for k, v in kernels.items()}
        total = sum(t for t, _, _ in med.values())
        print(f"{label}: {len(med)} kernels, sum of medians {total / 1e3:.1f} us")
        for k, (t, i, n) in sorted(med.items(), key=lambda kv: -kv[1][0]):
            print(f"  {k:34s} {t / 1e3:8.1f} us {i / 1e6:7.2f}M warp inst ({n} launches)")


if __name__ == "__main__":
    main(sys.argv[1:])
