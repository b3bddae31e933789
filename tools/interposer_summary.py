#!/usr/bin/python3
"""Tables of tools/interposer-report.sh: per collective and size, the median
over runs of chorus-mpi-timing's median_us, plain and preloaded, and the
ratio plain / preloaded; for nonblocking runs (-n) also the median overlap
with computation, plain (MPI's) and preloaded (Chorus's).

Usage: interposer_summary.py RAW_DIR
RAW_DIR holds plain.RUN.txt and preloaded.RUN.txt (chorus-mpi-timing output);
without plain runs, the preloaded runs' pmpi_us column (chorus-mpi-timing -p:
the MPI library's own entry points, timed in the same runs) is "plain"."""

import glob
import os
import statistics
import sys
from collections import defaultdict

MODES = ["plain", "preloaded"]


def size_label(v):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if v >= scale and v % scale == 0:
            return f"{v // scale} {unit}"
    return f"{v} B"


def fmt(v):
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def read_runs(raw):
    """times[(collective, bytes)][mode] = [median_us of each run], in file order;
    overlap[...] likewise for overlap_pct when the runs have it."""
    times = defaultdict(lambda: defaultdict(list))
    overlap = defaultdict(lambda: defaultdict(list))
    order = []
    same_run = not glob.glob(os.path.join(raw, "plain.*.txt"))
    for mode in MODES:
        paths = glob.glob(os.path.join(raw, ("preloaded" if same_run else mode) + ".*.txt"))
        if not paths:
            sys.exit(f"interposer_summary: no {mode} runs in {raw}")
        for path in paths:
            with open(path, encoding="utf-8") as f:
                lines = [l.split() for l in f if l.strip() and not l.startswith("#")]
            header = lines[0]
            for cols in lines[1:]:
                row = dict(zip(header, cols))
                if row["check"] != "Pass":
                    sys.exit(f"interposer_summary: {path}: {row['collective']} {row['bytes']} B failed validation")
                key = (row["collective"], int(row["bytes"]))
                if key not in order:
                    order.append(key)
                if same_run and mode == "plain":
                    if "pmpi_us" not in row:
                        sys.exit(f"interposer_summary: {path} has no pmpi_us column (chorus-mpi-timing -p)")
                    times[key][mode].append(float(row["pmpi_us"]))
                    continue
                times[key][mode].append(float(row["median_us"]))
                if "overlap_pct" in row:
                    overlap[key][mode].append(float(row["overlap_pct"]))
    return order, times, overlap


def main():
    order, times, overlap = read_runs(sys.argv[1])
    nb = bool(overlap)
    slower = []
    current = None
    for coll, size in order:
        if coll != current:
            current = coll
            print(f"\n#### {coll} (medians of runs; us per call; ratio = plain / preloaded)\n")
            if nb:
                print("| size | plain MPI us | preloaded us | ratio | MPI overlap % | Chorus overlap % |")
                print("|---:|---:|---:|---:|---:|---:|")
            else:
                print("| size | plain MPI us | preloaded us | ratio |")
                print("|---:|---:|---:|---:|")
        t = times[(coll, size)]
        if any(not t[m] for m in MODES):
            print(f"| {size_label(size)} | missing in some runs | | |")
            continue
        plain, pre = statistics.median(t["plain"]), statistics.median(t["preloaded"])
        ratio = plain / pre if pre > 0 else float("inf")
        row = f"| {size_label(size)} | {fmt(plain)} | {fmt(pre)} | {ratio:.2f} |"
        if nb:
            o = overlap[(coll, size)]
            row += "".join(f" {statistics.median(o[m]):.0f} |" if o[m] else " |" for m in MODES)
        print(row)
        if ratio < 1:
            slower.append(f"{coll} {size_label(size)} (x{pre / plain:.2f})")
    print()
    print("Preloaded slower (ratio < 1): " + (", ".join(slower) if slower else "none"))


if __name__ == "__main__":
    main()
