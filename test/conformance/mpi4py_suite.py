#!/usr/bin/env python3
"""mpi4py's own test suite, on plain MPI and under the preload, compared.

Runs the collective, request and datatype modules of mpi4py's suite (its
source distribution's test/, made ready by tools/mpi4py-setup.sh) at each
rank count twice: on plain MPI, then with libchorus_mpi.so preloaded into
the ranks. Each rank writes its own log; a test passes when it passed on
every rank. Fails when a test that passed on plain MPI does not pass under
the preload, or a run hangs or dies. Prints both runs' counts.

Usage: mpi4py_suite.py --launcher MPIRUN --env-flag -x|-genv --preload LIB
                       --mpi openmpi|mpich --np 2 [--np 3] [-- extra launcher args]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

# The modules run: collectives (blocking, nonblocking, persistent,
# neighbourhood, on intercommunicators, of objects), requests (generalized
# ones too), datatypes, packing, ops, statuses, and point-to-point (whose
# requests share the wait and test families with the interposer's).
MODULES = [
    "test_cco_buf", "test_cco_vec", "test_cco_obj", "test_cco_nb_buf", "test_cco_nb_vec",
    "test_cco_pr_buf", "test_cco_pr_vec", "test_cco_ngh_buf", "test_cco_buf_inter", "test_cco_vec_inter",
    "test_cco_obj_inter", "test_request", "test_grequest", "test_datatype", "test_pack", "test_op",
    "test_p2p_buf", "test_status", "test_util_dtlib", "test_msgzero",
]
# Left out, one line each: why.
EXCLUDED = {
    "testDarray": "MPI_Type_create_darray alone, no collective or request: 24 s of a 40 s run on Open MPI 4.1",
}
VERDICT = re.compile(r"^(test\w+) \(([\w.]+)\)[^\n]*?(?:\n[^\n]*?)?\.\.\. "
                     r"(ok|FAIL|ERROR|skipped|expected failure|unexpected success)(?: '([^'\n]*)')?", re.M)
RUN_TIMEOUT = 600


def rank_of_env():
    for name in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"):
        if name in os.environ:
            return int(os.environ[name])
    return 0


def as_rank(logdir, testdir, modules):
    """On each rank: the suite, its output to this rank's own log."""
    fd = os.open(os.path.join(logdir, "rank%d.log" % rank_of_env()), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.chdir(testdir)
    args = [sys.executable, "main.py", "-v"]
    for name in EXCLUDED:
        args += ["-x", name]
    os.execv(sys.executable, args + modules)


def verdicts(logdir, np, reasons=None):
    """test id -> 'pass' | 'fail' | 'skip', over every rank's log; the
    reasons mpi4py gives for its skips counted into `reasons`."""
    per_rank = []
    for r in range(np):
        path = os.path.join(logdir, "rank%d.log" % r)
        text = open(path, errors="replace").read() if os.path.exists(path) else ""
        found = list(VERDICT.finditer(text))
        per_rank.append({m.group(2): m.group(3) for m in found})
        if r == 0 and reasons is not None:
            for m in found:
                if m.group(3) == "skipped":
                    reasons[m.group(4) or "(none given)"] = reasons.get(m.group(4) or "(none given)", 0) + 1
    result = {}
    for test in set().union(*per_rank):
        seen = [v.get(test) for v in per_rank]
        if all(s == "ok" for s in seen):
            result[test] = "pass"
        elif all(s in ("skipped", "expected failure") for s in seen):
            result[test] = "skip"
        else:
            result[test] = "fail"
    return result


def run(args, np, preload, reasons=None):
    logdir = tempfile.mkdtemp(prefix="mpi4py-np%d-" % np)
    cmd = [args.launcher, "-np", str(np)] + args.extra
    if preload:
        cmd += [args.env_flag, "LD_PRELOAD=" + args.preload, args.env_flag, "CHORUS_MPI_INTERCEPT=all"]
    cmd += [args.python, os.path.abspath(__file__), "--as-rank", logdir, args.testdir] + MODULES
    try:
        rc = subprocess.run(cmd, stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT).returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    return rc, verdicts(logdir, np, reasons), logdir


def count(v):
    return {k: sum(1 for x in v.values() if x == k) for k in ("pass", "fail", "skip")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--as-rank", nargs=2, metavar=("LOGDIR", "TESTDIR"))
    ap.add_argument("--launcher")
    ap.add_argument("--env-flag", default="-x")
    ap.add_argument("--preload")
    ap.add_argument("--mpi", default="openmpi")
    ap.add_argument("--np", type=int, action="append")
    ap.add_argument("rest", nargs="*")
    args = ap.parse_args()
    if args.as_rank:
        as_rank(args.as_rank[0], args.as_rank[1], args.rest)
        return 0
    args.extra = args.rest
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "chorus")
    home = os.path.join(cache, "mpi4py-%s-4.1.2" % args.mpi)
    args.python = os.path.join(home, "venv", "bin", "python")
    args.testdir = os.path.join(home, "test")
    if not os.path.exists(args.python) or not os.path.exists(os.path.join(args.testdir, "main.py")):
        print("SKIP: no mpi4py for %s under %s: run tools/mpi4py-setup.sh %s" % (args.mpi, home, args.mpi))
        return 77
    for name, why in EXCLUDED.items():
        print("excluded: %s: %s" % (name, why))
    bad = 0
    totals = {"pass": 0, "fail": 0}
    for np in args.np or [2]:
        reasons = {}
        rc_plain, plain, _ = run(args, np, False, reasons)
        rc_pre, pre, logdir = run(args, np, True)
        cp, cq = count(plain), count(pre)
        print("np=%d plain MPI: %d passed, %d failed, %d skipped (exit %s)" % (np, cp["pass"], cp["fail"], cp["skip"], rc_plain))
        print("np=%d preload:   %d passed, %d failed, %d skipped (exit %s)" % (np, cq["pass"], cq["fail"], cq["skip"], rc_pre))
        for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
            print("  skipped by mpi4py itself on plain MPI: %d: %s" % (n, why))
        lost = sorted(t for t, v in plain.items() if v == "pass" and pre.get(t) != "pass")
        for t in lost:
            print("  passes on plain MPI, not under the preload: %s (%s)" % (t, pre.get(t, "no verdict")))
        if lost or rc_pre not in (0, rc_plain) or not pre:
            print("  the preload's logs: %s" % logdir)
            bad += 1
        totals["pass"] += sum(1 for t, v in plain.items() if v == "pass" and pre.get(t) == "pass")
        totals["fail"] += len(lost)
    print("%d passed, %d failed" % (totals["pass"], totals["fail"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
