#!/usr/bin/python3
"""Medians of repeated chorus-bench runs (tools/perf-report.sh): per-size
median CSVs, one plot per collective, and markdown tables on stdout.

Usage: perf_summary.py RAW_DIR OUT_DIR
RAW_DIR holds COLLECTIVE.BASELINE.RUN.csv files."""

import csv
import glob
import os
import statistics
import subprocess
import sys
from collections import defaultdict

BASELINES = ["ob1", "pml-ucx", "hugetlb"]
NUMERIC = ["chorus_avg_us", "chorus_min_us", "chorus_max_us", "algbw_gbs", "busbw_gbs", "mpi_avg_us",
           "mpi_busbw_gbs", "speedup"]
TABLE_SIZES = [4, 1024, 65536, 1 << 20, 16 << 20, 64 << 20]


def size_label(v):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if v >= scale and v % scale == 0:
            return f"{v // scale} {unit}"
    return f"{v} B"


def median_rows(paths):
    by_size = defaultdict(list)
    fields = None
    for p in paths:
        with open(p, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            fields = reader.fieldnames
            for row in reader:
                by_size[int(row["bytes"])].append(row)
    out = []
    for size in sorted(by_size):
        rows = by_size[size]
        m = dict(rows[0])
        for col in NUMERIC:
            vals = [float(r[col]) for r in rows if r.get(col) not in (None, "")]
            m[col] = f"{statistics.median(vals):.4g}" if vals else ""
            m[col + "_range"] = (min(vals), max(vals)) if vals else None
        m["validation"] = "Pass" if all(r["validation"] == "Pass" for r in rows) else "FAIL"
        m["runs"] = len(rows)
        out.append(m)
    return fields, out


def fmt(v):
    v = float(v)
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def main():
    raw, out_dir = sys.argv[1], sys.argv[2]
    groups = defaultdict(list)
    for p in glob.glob(os.path.join(raw, "*.csv")):
        coll, base, _run, _ext = os.path.basename(p).split(".")
        groups[(coll, base)].append(p)
    order = ["allreduce", "bcast", "reduce", "reduce_scatter", "allgather", "allgatherv", "alltoall", "alltoallv",
             "gather", "gatherv", "scatter", "scatterv", "barrier"]
    colls = sorted({c for c, _ in groups}, key=lambda c: order.index(c) if c in order else len(order))
    for coll in colls:
        os.makedirs(os.path.join(out_dir, coll), exist_ok=True)
        med = {}
        for base in BASELINES:
            if (coll, base) not in groups:
                continue
            fields, rows = median_rows(groups[(coll, base)])
            med[base] = {int(r["bytes"]): r for r in rows}
            path = os.path.join(out_dir, coll, base + ".csv")
            with open(path, "w", newline="", encoding="utf-8") as f:
                w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
                w.writeheader()
                w.writerows(rows)
        plots = [os.path.join(out_dir, coll, b + ".csv") for b in BASELINES if b in med]
        subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "..", "perf", "plot.py"),
                        "-o", os.path.join(out_dir, coll + ".png"),
                        "--title", f"{coll}, np=2, host memory: Chorus vs MPI (ob1, pml ucx, hugetlb malloc)"]
                       + plots, check=True)
        runs = min(r["runs"] for b in med.values() for r in b.values())
        print(f"\n#### {coll} (medians of {runs} runs; latency in us; ratio = MPI / Chorus)\n")
        head = "| size | Chorus | MPI ob1 | ratio | MPI pml ucx | ratio | Chorus, hugetlb | MPI ob1, hugetlb | ratio |"
        if coll == "allreduce":
            head += " Chorus busbw GB/s |"
        print(head)
        print("|" + "---|" * (head.count("|") - 1))
        for size in TABLE_SIZES:
            cells = [size_label(size)]
            o, u, h = (med.get(b, {}).get(size) for b in BASELINES)
            if not o:
                continue
            cells += [fmt(o["chorus_avg_us"]), fmt(o["mpi_avg_us"]),
                      f"{float(o['mpi_avg_us']) / float(o['chorus_avg_us']):.2f}"]
            cells += [fmt(u["mpi_avg_us"]), f"{float(u['mpi_avg_us']) / float(u['chorus_avg_us']):.2f}"] if u else ["-", "-"]
            cells += [fmt(h["chorus_avg_us"]), fmt(h["mpi_avg_us"]),
                      f"{float(h['mpi_avg_us']) / float(h['chorus_avg_us']):.2f}"] if h else ["-", "-", "-"]
            if coll == "allreduce":
                lo, hi = o["busbw_gbs_range"]
                cells.append(f"{float(o['busbw_gbs']):.2f} ({lo:.2f}-{hi:.2f})")
            print("| " + " | ".join(cells) + " |")
        bad = [f"{b} {size_label(s)}" for b, rows in med.items() for s, r in rows.items() if r["validation"] != "Pass"]
        if bad:
            print(f"\nValidation failed: {', '.join(bad)}")


if __name__ == "__main__":
    main()
