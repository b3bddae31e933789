#!/usr/bin/python3
"""The table of tools/perf-compare.sh: per collective and size, the median
Chorus latency of the old and the new build (us), NEW / OLD, and each
build's median MPI / Chorus ratio over its runs. Prints to stderr the cells
where NEW / OLD is above 1.05 and a summary of all cells.

Usage: compare_summary.py RAW_DIR   (COLLECTIVE.{old,new}.RUN.csv files)"""

import collections
import csv
import glob
import os
import statistics
import sys


def main():
    raw = sys.argv[1]
    lat, ratio = collections.defaultdict(list), collections.defaultdict(list)
    order = []
    for path in sorted(glob.glob(os.path.join(raw, "*.csv"))):
        coll, side, _run, _ext = os.path.basename(path).split(".")
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
    print("| collective | size | old us | new us | new / old | MPI / old | MPI / new |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    slower, ratios = [], []
    for coll, size in sorted(order):
        o, n = statistics.median(lat[(coll, size, "old")]), statistics.median(lat[(coll, size, "new")])
        r = n / o
        ratios.append(r)
        if r > 1.05:
            slower.append(f"{coll} {size} B ({r:.2f})")
        print(f"| {coll} | {size} | {o:.2f} | {n:.2f} | {r:.3f} | "
              f"{statistics.median(ratio[(coll, size, 'old')]):.2f} | {statistics.median(ratio[(coll, size, 'new')]):.2f} |")
    print(f"cells: {len(ratios)}; new / old median {statistics.median(ratios):.3f}, "
          f"min {min(ratios):.3f}, max {max(ratios):.3f}; above 1.05: {len(slower)}: " + ", ".join(slower),
          file=sys.stderr)


if __name__ == "__main__":
    main()
