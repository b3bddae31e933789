#!/usr/bin/env python3
"""The per-call cost of a 4-byte all-reduce through the Python package
against the C API, at np=2.

The C side is chorus-bench (allreduce -m 4:4, float32: out of place, in
place, nonblocking); the Python side is this script's worker, the same
calls on 1-element float32 NumPy arrays. The two alternate, run after run,
and the medians of the runs are printed side by side, with MPI_Allreduce
(from the same chorus-bench runs) for scale.

Usage (with the package installed in the Python that runs it):
    python perf/python_overhead.py [--runs 5] [--iters 20000] [--bench build/perf/chorus-bench]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NP = 2


def worker(iters: int) -> None:
    """Under mpirun: time each Python form, per call, averaged over ranks."""
    import numpy as np

    import chorus

    comm = chorus.Communicator()
    x = np.ones(1, dtype=np.float32)
    y = np.empty(1, dtype=np.float32)
    forms = {
        "allreduce(x, y)": lambda: comm.allreduce(x, y),
        "allreduce(x) in place": lambda: comm.allreduce(x),
        "iallreduce(x, y).wait()": lambda: comm.iallreduce(x, y).wait(),
        "comm.rank (a bare call)": lambda: comm.rank,
    }
    result = {}
    for name, fn in forms.items():
        call = fn.__call__
        for _ in range(iters // 10):  # warm-up
            call()
        comm.barrier()
        t0 = time.perf_counter_ns()
        for _ in range(iters):
            call()
        per_call = np.array([(time.perf_counter_ns() - t0) / iters / 1000.0])
        comm.allreduce(per_call, op="avg")
        result[name] = float(per_call[0])
    comm.close()
    if comm.rank == 0:
        print("RESULT " + json.dumps(result), flush=True)


def mpirun(args: list[str]) -> str:
    env = dict(os.environ)
    if os.geteuid() == 0:  # Open MPI refuses root without these
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out = subprocess.run(["mpirun", "-np", str(NP), *args], env=env, check=True, capture_output=True, text=True)
    return out.stdout


def python_run(iters: int) -> dict[str, float]:
    out = mpirun([sys.executable, os.path.abspath(__file__), "--worker", "--iters", str(iters)])
    line = next(l for l in out.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def c_run(bench: str, extra: list[str]) -> tuple[float, float]:
    """chorus-bench's Chorus and MPI averages (us) for one 4-byte row."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "row.json")
        mpirun([bench, "allreduce", "-m", "4:4", "-T", "float32", "--json", path, *extra])
        with open(path) as f:
            row = json.load(f)["rows"][0]
    return row["chorus_avg_us"], row["mpi_avg_us"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="alternating runs of each side (default 5)")
    ap.add_argument("--iters", type=int, default=20000, help="timed Python calls per form and run")
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "perf", "chorus-bench"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.iters)
        return
    if not os.access(args.bench, os.X_OK):
        sys.exit(f"python_overhead: no chorus-bench at {args.bench} (build the project, or pass --bench)")

    # Each Python form and the chorus-bench options of its C twin.
    pairs = [
        ("allreduce(x, y)", []),
        ("allreduce(x) in place", ["-l"]),
        ("iallreduce(x, y).wait()", ["-n"]),
    ]
    py_runs: list[dict[str, float]] = []
    c_runs: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in pairs}
    for _ in range(args.runs):
        py_runs.append(python_run(args.iters))
        for name, extra in pairs:
            c_runs[name].append(c_run(args.bench, extra))

    def med(values):
        return statistics.median(values)

    import chorus

    print(f"# 4-byte float32 all-reduce, np={NP}, chorus {chorus.__version__}: per-call latency in us,")
    print(f"# medians of {args.runs} alternating runs (Python: {args.iters} calls per form and run)")
    print(f"{'form':<26}{'C API':>9}{'Python':>9}{'Python-C':>10}{'MPI':>9}")
    for name, _ in pairs:
        c = med([r[0] for r in c_runs[name]])
        mpi = med([r[1] for r in c_runs[name]])
        p = med([r[name] for r in py_runs])
        print(f"{name:<26}{c:>9.2f}{p:>9.2f}{p - c:>10.2f}{mpi:>9.2f}")
    floor = med([r["comm.rank (a bare call)"] for r in py_runs])
    print(f"{'comm.rank (a bare call)':<26}{'':>9}{floor:>9.3f}")


if __name__ == "__main__":
    main()
