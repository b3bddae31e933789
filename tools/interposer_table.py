#!/usr/bin/python3
"""The per-size table (docs/performance.md) of the preload against two MPI baselines, from
two outputs of tools/interposer-report.sh (SAME_RUN=1 runs; the first with
ob1, the second with pml ucx): each cell is the preloaded call's median us
(first run), then plain / preloaded in the first and in the second (below 1:
the preload is slower). Then every cell below 1, and how many.

Usage: interposer_table.py OB1_REPORT UCX_REPORT"""

import re
import sys

SIZES = ["0 B", "4 B", "8 B", "16 B", "32 B", "64 B", "128 B", "256 B", "512 B", "1 KiB", "2 KiB", "4 KiB",
         "8 KiB", "16 KiB", "32 KiB", "64 KiB"]


def parse(path):
    """{(collective, size): (plain us, preloaded us, ratio)} and the collectives in order."""
    rows, order, current = {}, [], None
    with open(path) as f:
        for line in f:
            m = re.match(r"#### (\w+) ", line)
            if m:
                current = m.group(1)
                order.append(current)
                continue
            m = re.match(r"\| ([\d]+ (?:B|KiB)) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|", line)
            if m and current:
                rows[(current, m.group(1))] = tuple(float(m.group(i)) for i in (2, 3, 4))
    return rows, order


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    first, order = parse(sys.argv[1])
    second, _ = parse(sys.argv[2])
    print("| size | " + " | ".join(order) + " |")
    print("|---" * (len(order) + 1) + "|")
    slower = []
    for size in SIZES:
        cells = []
        for c in order:
            a, b = first.get((c, size)), second.get((c, size))
            if not a or not b:
                cells.append("")
                continue
            cells.append(f"{a[1]:.2f} ({a[2]:.2f}/{b[2]:.2f})")
            slower += [f"{c} {size} {name} {r[2]:.2f}" for name, r in (("ob1", a), ("ucx", b)) if r[2] < 1]
        if any(cells):
            print(f"| {size} | " + " | ".join(cells) + " |")
    print(f"\n{len(slower)} below 1: " + "; ".join(slower))


if __name__ == "__main__":
    main()
