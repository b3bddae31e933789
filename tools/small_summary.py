#!/usr/bin/python3
"""The small-message table of docs/performance.md, from tools/perf-report.sh SMALL=1 runs:
per collective and size, Chorus's median latency (us, over the ob1 runs)
and the medians over runs of MPI / Chorus for the ob1 and the pml-ucx
baselines, as "latency (ob1/ucx)". Prints to stderr every cell where the
faster baseline is less than 1.3x slower than Chorus.

Usage: small_summary.py RAW_DIR   (COLLECTIVE.BASELINE.RUN.csv files)"""

import collections
import csv
import glob
import os
import statistics
import sys

ORDER = ("allreduce bcast reduce reduce_scatter allgather allgatherv alltoall alltoallv gather gatherv "
         "scatter scatterv barrier").split()


def main():
    raw = sys.argv[1]
    lat, ratio = collections.defaultdict(list), collections.defaultdict(list)
    sizes, colls = set(), set()
    for path in glob.glob(os.path.join(raw, "*.csv")):
        coll, base, _run, _ext = os.path.basename(path).split(".")
        with open(path, encoding="utf-8") as f:
            for row in csv.DictReader(f):
                if row["validation"] not in ("Pass", "-", ""):
                    sys.exit(f"small_summary: {path}: {coll} {row['bytes']} B failed validation")
                size, chorus, mpi = int(row["bytes"]), float(row["chorus_avg_us"]), float(row["mpi_avg_us"])
                sizes.add(size)
                colls.add(coll)
                if base == "ob1":
                    lat[(coll, size)].append(chorus)
                ratio[(coll, size, base)].append(mpi / chorus)
    colls = [c for c in ORDER if c in colls]
    print("| size | " + " | ".join(colls) + " |")
    print("|---" * (len(colls) + 1) + "|")
    below = []
    for size in sorted(sizes):
        cells = [f"{size} B"]
        for coll in colls:
            if (coll, size) not in lat:
                cells.append("")
                continue
            o = statistics.median(ratio[(coll, size, "ob1")])
            u = statistics.median(ratio[(coll, size, "pml-ucx")])
            cells.append(f"{statistics.median(lat[(coll, size)]):.2f} ({o:.2f}/{u:.2f})")
            if min(o, u) < 1.3:
                below.append(f"{coll} {size} B ({min(o, u):.2f})")
        print("| " + " | ".join(cells) + " |")
    print(f"below 1.3x the faster MPI: {len(below)} of {sum(1 for k in lat)}: " + ", ".join(below), file=sys.stderr)


if __name__ == "__main__":
    main()
