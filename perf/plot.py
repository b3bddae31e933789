#!/usr/bin/python3
"""Plot chorus-bench CSV results: latency and bus bandwidth against message size.

Usage: plot.py -o out.png a.csv [b.csv ...]

Each CSV file (written by `chorus-bench --csv FILE`) gives a Chorus line and,
when it has MPI columns, an MPI line, in both panels.
"""

import argparse
import csv
import os
import socket
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

COLUMNS = ["collective", "ranks", "bytes", "datatype", "chorus_avg_us", "chorus_min_us",
           "chorus_max_us", "algbw_gbs", "busbw_gbs", "mpi_avg_us", "mpi_busbw_gbs",
           "speedup", "validation"]


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith(("model name", "cpu model", "hardware")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: not a chorus-bench CSV (missing columns: {', '.join(missing)})")
        rows = list(reader)
    if not rows:
        raise ValueError(f"{path}: no result rows")
    return rows


def series(rows, ycol):
    """(bytes, value) pairs with a positive value; empty cells are skipped."""
    xs, ys = [], []
    for r in rows:
        try:
            x, y = int(r["bytes"]), float(r[ycol])
        except (ValueError, TypeError):
            continue
        if x > 0 and y > 0:
            xs.append(x)
            ys.append(y)
    return xs, ys


def size_label(v, _pos=None):
    v = int(round(v))
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if v >= scale and v % scale == 0:
            return f"{v // scale} {unit}"
    return f"{v} B"


def describe(values):
    values = sorted(set(values), key=lambda v: (len(v), v))
    return ", ".join(values)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Plot chorus-bench CSV results as a PNG.")
    ap.add_argument("-o", "--output", required=True, help="PNG file to write")
    ap.add_argument("--title", help="replace the generated title")
    ap.add_argument("csv", nargs="+", help="CSV files written by chorus-bench --csv")
    args = ap.parse_args(argv)

    data = []
    try:
        for path in args.csv:
            data.append((path, read_csv(path)))
    except (OSError, ValueError) as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 2

    fig, (ax_lat, ax_bw) = plt.subplots(1, 2, figsize=(13, 5.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colls, ranks = [], []
    for k, (path, rows) in enumerate(data):
        first = rows[0]
        colls.append(first["collective"])
        ranks.append(first["ranks"])
        tag = f"{first['collective']} np={first['ranks']} {first['datatype']}"
        if len(data) > 1:
            tag += f" [{os.path.basename(path)}]"
        color = colors[k % len(colors)]
        for ycol, ax in (("chorus_avg_us", ax_lat), ("busbw_gbs", ax_bw)):
            xs, ys = series(rows, ycol)
            if xs:
                ax.plot(xs, ys, "o-", color=color, ms=3, label=f"Chorus {tag}")
        for ycol, ax in (("mpi_avg_us", ax_lat), ("mpi_busbw_gbs", ax_bw)):
            xs, ys = series(rows, ycol)
            if xs:
                ax.plot(xs, ys, "s--", color=color, ms=3, alpha=0.8, label=f"MPI {tag}")

    for ax, ylabel, name in ((ax_lat, "Average latency (us)", "Latency"),
                             (ax_bw, "Bus bandwidth (GB/s)", "Bus bandwidth")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(size_label))
        ax.tick_params(axis="x", labelrotation=45)
        ax.set_xlabel("Message size")
        ax.set_ylabel(ylabel)
        ax.set_title(name)
        ax.grid(True, which="major", alpha=0.4)
        ax.grid(True, which="minor", alpha=0.15)
        if ax.lines:
            ax.legend(fontsize=8)

    title = args.title or (f"Chorus vs MPI: {describe(colls)}, {describe(ranks)} ranks\n"
                           f"{socket.gethostname()}, {cpu_model()}")
    fig.suptitle(title)
    fig.tight_layout()
    try:
        fig.savefig(args.output, dpi=110)
    except OSError as e:
        print(f"plot.py: cannot write {args.output}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
