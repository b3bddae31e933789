#!/usr/bin/env python3
"""Plots the loss per step of data-parallel's CSV (step,ddp_loss,fsdp_loss).

    plot_loss.py LOSS.csv OUT.png

Without matplotlib it says so and exits 0: the plot is optional."""
import csv
import sys


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip())
        return 2
    src, out = sys.argv[1], sys.argv[2]
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"plot_loss.py: matplotlib is not installed ({sys.executable}): no plot")
        return 0
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    steps = [int(r["step"]) for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(steps, [float(r["ddp_loss"]) for r in rows], label="DDP (bucketed iallreduce)")
    ax.plot(steps, [float(r["fsdp_loss"]) for r in rows], "--", label="FSDP (allgather + reduce_scatter)")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (mean over ranks)")
    ax.set_yscale("log")
    ax.set_title("data-parallel: MLP on synthetic data")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"plot_loss.py: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
