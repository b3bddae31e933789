#!/usr/bin/python3
"""The table of tools/perf-compare.sh: per collective and size, the median
Chorus latency of the old and the new build (us), NEW / OLD of the medians
and of the best runs, and each build's median MPI / Chorus ratio over its
runs. On a VM whose runs are now and then slower as a whole (MPI and Chorus
alike), the best runs and the MPI ratios are the steadier measures. Prints
to stderr a summary of all cells and those where NEW / OLD of the medians
is above 1.10 while the new build's MPI / Chorus ratio is 10% below the
old one's (slower by both measures).

Usage: compare_summary.py RAW_DIR   (COLLECTIVE.{old,new}.RUN.csv files)"""

import collections
import csv
import glob
import math
import os
import statistics
import sys


def main():
    raw = sys.argv[1]
    lat, ratio = collections.defaultdict(list), collections.defaultdict(list)
    runs = collections.defaultdict(list)  # (collective, side): each run's geometric mean over sizes
    order = []
    for path in sorted(glob.glob(os.path.join(raw, "*.csv"))):
        coll, side, _run, _ext = os.path.basename(path).split(".")
        logs = []
        with open(path, encoding="utf-8") as f:
            for row in csv.DictReader(f):
                if row["validation"] not in ("Pass", "-", ""):
                    sys.exit(f"compare_summary: {path}: {coll} {row['bytes']} B failed validation")
                key = (coll, int(row["bytes"]))
                if key not in order:
                    order.append(key)
                chorus, mpi = float(row["chorus_avg_us"]), float(row["mpi_avg_us"])
                lat[key + (side,)].append(chorus)
                ratio[key + (side,)].append(mpi / chorus)
                logs.append(math.log(chorus))
        if logs:
            runs[(coll, side)].append(math.exp(sum(logs) / len(logs)))
    print("| collective | size | old us | new us | new / old | best new / old | MPI / old | MPI / new |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    slower, medians, bests = [], [], []
    for coll, size in sorted(order):
        o, n = statistics.median(lat[(coll, size, "old")]), statistics.median(lat[(coll, size, "new")])
        best = min(lat[(coll, size, "new")]) / min(lat[(coll, size, "old")])
        medians.append(n / o)
        bests.append(best)
        mpi_old = statistics.median(ratio[(coll, size, "old")])
        mpi_new = statistics.median(ratio[(coll, size, "new")])
        if n / o > 1.10 and mpi_new < 0.9 * mpi_old:
            slower.append(f"{coll} {size} B ({n / o:.2f})")
        print(f"| {coll} | {size} | {o:.2f} | {n:.2f} | {n / o:.3f} | {best:.3f} | "
              f"{mpi_old:.2f} | {mpi_new:.2f} |")
    print(f"cells: {len(bests)}; new / old of the medians: median {statistics.median(medians):.3f}, "
          f"min {min(medians):.3f}, max {max(medians):.3f}; of the best runs: median {statistics.median(bests):.3f}; "
          f"slower by both measures: {len(slower)}: " + ", ".join(slower), file=sys.stderr)
    # A run's state (a VM now and then slower as a whole) moves every size of
    # that run alike: per collective, the median over runs of each run's
    # geometric mean latency over its sizes.
    print("\n| collective | runs | old us (geomean) | new us (geomean) | new / old |")
    print("|---|---:|---:|---:|---:|")
    whole = []
    for coll in sorted({c for c, _ in runs}):
        o, n = statistics.median(runs[(coll, "old")]), statistics.median(runs[(coll, "new")])
        whole.append(n / o)
        print(f"| {coll} | {len(runs[(coll, 'new')])} | {o:.3f} | {n:.3f} | {n / o:.3f} |")
    print(f"per collective, new / old of the runs' geometric means: median {statistics.median(whole):.3f}, "
          f"min {min(whole):.3f}, max {max(whole):.3f}", file=sys.stderr)


if __name__ == "__main__":
    main()
