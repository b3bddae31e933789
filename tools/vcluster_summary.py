#!/usr/bin/env python3
"""Tables and a plot from tools/vcluster-report.sh's runs.

For each collective, a row per configuration (automatic, flat forced, each
two-level form forced, automatic beside Open MPI's han) and a column per
message size: Chorus's average latency in microseconds and, in brackets,
MPI / Chorus in the same run (above 1: Chorus is faster), each the median
over the runs (<collective>-<config>.<k>.txt).
Writes DIR/summary.md and DIR/vcluster-2x2.png.
"""
import os
import re
import statistics
import sys

COLLS = ["allreduce", "bcast", "reduce", "reduce_scatter", "allgather", "allgatherv", "alltoall", "alltoallv",
         "gather", "gatherv", "scatter", "scatterv", "barrier"]
SIZES = [64, 4096, 262144]


def label(n):
    return f"{n // 1024} KiB" if n >= 1024 else f"{n} B"


def parse(path):
    rows = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 2 or line.startswith("#"):
                continue
            try:
                if len(parts) >= 6:  # size, latency, algbw, busbw, mpi, ratio
                    rows[int(parts[0])] = (float(parts[1]), float(parts[4]))
                else:  # barrier: latency, mpi, ratio
                    rows[0] = (float(parts[0]), float(parts[1]))
            except ValueError:
                continue
    return rows


def runs(d, c, cfg):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if re.fullmatch(re.escape(f"{c}-{cfg}.") + r"\d+\.txt", f))


def medians(paths):
    """Per size: the median latency and the median ratio over the runs."""
    each = [parse(p) for p in paths]
    out = {}
    for s in set().union(*each) if each else []:
        got = [r[s] for r in each if s in r]
        out[s] = (statistics.median(us for us, _ in got), statistics.median(mpi / us for us, mpi in got))
    return out


def configs(d, c):
    names = sorted({m.group(1) for f in os.listdir(d) for m in [re.fullmatch(re.escape(c) + r"-(.+)\.\d+\.txt", f)] if m})
    order = ["auto"] + [n for n in names if n.startswith("flat_")] + [n for n in names if n.startswith("two_level")]
    return [n for n in order if n in names] + (["han"] if "han" in names else [])


def main(d):
    lines = []
    plot = {}
    for c in COLLS:
        cfgs = configs(d, c)
        if not cfgs:
            continue
        sizes = [0] if c == "barrier" else SIZES
        lines.append(f"| {c} | " + " | ".join("barrier" if s == 0 else label(s) for s in sizes) + " |")
        lines.append("|---|" + "---|" * len(sizes))
        for cfg in cfgs:
            rows = medians(runs(d, c, cfg))
            cells = []
            for s in sizes:
                if s in rows:
                    us, ratio = rows[s]
                    cells.append(f"{us:.1f} ({ratio:.2f})")
                    if cfg in ("auto", "han"):
                        plot.setdefault(c, {}).setdefault(cfg, {})[s] = ratio
                else:
                    cells.append("-")
            name = {"auto": "automatic", "han": "automatic, MPI with `han`"}.get(cfg, f"`{cfg.replace('flat_', '')}`")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write("\n".join(lines))
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    colls = [c for c in COLLS if c in plot]
    fig, ax = plt.subplots(figsize=(12, 4.5))
    width = 0.13
    series = [("auto", s) for s in SIZES] + [("han", s) for s in SIZES]
    for i, (cfg, s) in enumerate(series):
        xs, ys = [], []
        for k, c in enumerate(colls):
            key = 0 if c == "barrier" else s
            if c == "barrier" and s != SIZES[0]:
                continue
            v = plot[c].get(cfg, {}).get(key)
            if v is not None:
                xs.append(k + (i - len(series) / 2 + 0.5) * width)
                ys.append(v)
        name = ("Open MPI default" if cfg == "auto" else "Open MPI han") + (f", {label(s)}")
        ax.bar(xs, ys, width, label=name, color=plt.cm.Blues(0.4 + 0.2 * (i % 3)) if cfg == "auto"
               else plt.cm.Oranges(0.4 + 0.2 * (i % 3)))
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(colls)))
    ax.set_xticklabels(colls, rotation=30, ha="right")
    ax.set_ylabel("MPI time / Chorus time (same run)")
    ax.set_title("Chorus (automatic choice) against Open MPI, 2 hosts x 2 ranks, 10 Gbit/s links (virtual cluster)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "vcluster-2x2.png"), dpi=110)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/vcluster")
