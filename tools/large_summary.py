#!/usr/bin/python3
"""The table of large messages (docs/performance.md) in both benchmark modes, from
tools/perf-report.sh LARGE=1 runs: per collective and size, Chorus's median
latency with warm caches (us) and the medians over runs of MPI / Chorus
warm and cold, as "latency (warm/cold)"; then the all-reduce's bus
bandwidth in both modes (with chorus-bench --mapped runs, beside the copy
ceiling measured in the same runs, and their ratio). Prints to stderr, per
mode, every cell below the targets (1.3x; reduce-scatter 2x from 1 MiB;
with MAPPED=1 in the environment, 1.5x).

Usage: large_summary.py RAW_DIR   (COLLECTIVE.MODE.RUN.csv files, MODE warm or cold)"""

import collections
import csv
import glob
import os
import statistics
import sys

ORDER = ("allreduce bcast reduce reduce_scatter allgather allgatherv alltoall alltoallv gather gatherv "
         "scatter scatterv").split()


def human(size):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def main():
    raw = sys.argv[1]
    lat, ratio, busbw = collections.defaultdict(list), collections.defaultdict(list), collections.defaultdict(list)
    copy = collections.defaultdict(list)
    mapped = os.environ.get("MAPPED") == "1"
    sizes, colls = set(), set()
    for path in glob.glob(os.path.join(raw, "*.csv")):
        coll, mode, _run, _ext = os.path.basename(path).split(".")
        with open(path, encoding="utf-8") as f:
            for row in csv.DictReader(f):
                if row["validation"] not in ("Pass", "-", ""):
                    sys.exit(f"large_summary: {path}: {coll} {row['bytes']} B failed validation")
                size, chorus, mpi = int(row["bytes"]), float(row["chorus_avg_us"]), float(row["mpi_avg_us"])
                sizes.add(size)
                colls.add(coll)
                lat[(coll, size, mode)].append(chorus)
                ratio[(coll, size, mode)].append(mpi / chorus)
                busbw[(coll, size, mode)].append(float(row["busbw_gbs"]))
                if row.get("copy_gbs"):
                    copy[(coll, size, mode)].append(float(row["copy_gbs"]))
    colls = [c for c in ORDER if c in colls]
    print("| size | " + " | ".join(colls) + " |")
    print("|---" * (len(colls) + 1) + "|")
    below = collections.defaultdict(list)
    cells_total = 0
    for size in sorted(sizes):
        cells = [human(size)]
        for coll in colls:
            if (coll, size, "warm") not in lat:
                cells.append("")
                continue
            cells_total += 1
            w = statistics.median(ratio[(coll, size, "warm")])
            c = statistics.median(ratio[(coll, size, "cold")]) if (coll, size, "cold") in ratio else float("nan")
            cells.append(f"{statistics.median(lat[(coll, size, 'warm')]):.3g} ({w:.2f}/{c:.2f})")
            target = 1.5 if mapped else 2.0 if coll == "reduce_scatter" and size >= 1 << 20 else 1.3
            for mode, r in (("warm", w), ("cold", c)):
                if not r >= target:
                    below[mode].append(f"{coll} {human(size)} ({r:.2f})")
        print("| " + " | ".join(cells) + " |")
    if "allreduce" in colls:
        nan = [float("nan")]
        if copy:
            print("\n| all-reduce bus bandwidth, GB/s | warm | copy | ratio | cold | copy | ratio |")
            print("|---|---|---|---|---|---|---|")
        else:
            print("\n| all-reduce bus bandwidth, GB/s | warm | cold |\n|---|---|---|")
        for size in sorted(sizes):
            if (("allreduce", size, "warm") in busbw):
                cells = []
                for mode in ("warm", "cold"):
                    b = statistics.median(busbw.get(("allreduce", size, mode), nan))
                    cells.append(f"{b:.2f}")
                    if copy:
                        # Per run, bus bandwidth over the copy ceiling of the same run.
                        runs = zip(busbw.get(("allreduce", size, mode), []), copy.get(("allreduce", size, mode), []))
                        r = statistics.median([x / y for x, y in runs] or nan)
                        cells += [f"{statistics.median(copy.get(('allreduce', size, mode), nan)):.2f}", f"{r:.2f}"]
                print(f"| {human(size)} | " + " | ".join(cells) + " |")
    for mode in ("warm", "cold"):
        print(f"{mode}: below the target: {len(below[mode])} of {cells_total}: " + ", ".join(below[mode]),
              file=sys.stderr)


if __name__ == "__main__":
    main()
