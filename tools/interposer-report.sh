#!/usr/bin/env bash
# Is an unmodified MPI program ever slower with libchorus_mpi.so preloaded?
# Runs perf/chorus-mpi-timing (a plain MPI program) on plain MPI and with the
# library preloaded into the ranks, interleaved REPEAT times so that noise
# spreads over both, and prints a markdown table per collective: the medians
# over the repeats of each run's per-size median, and their ratio plain /
# preloaded (>= 1: the preload is not slower). The last line lists every
# (collective, size) where the preload is slower, with the factor.
# Every run validates its results; a wrong result stops the report.
# With TIMING_ARGS="-n" the nonblocking calls are timed, and the tables add
# the overlap with computation, MPI's (plain) beside Chorus's (preloaded).
# With SAME_RUN=1 only preloaded runs are made, with chorus-mpi-timing -p:
# each times the MPI library's own entry points (PMPI_X) in blocks that
# alternate with the interposer's (MPI_X), so both meet the same conditions
# (placement, neighbours) and "plain" is that column (blocking calls only).
# Usage: tools/interposer-report.sh [BUILD_DIR]
#   NP=2 REPEAT=3 SAME_RUN=1 MPI_ARGS="--mca pml ucx --mca pml_ucx_tls any" TIMING_ARGS="-m 16M -c allreduce"
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/env.sh
build=${1:-build}
np=${NP:-2}
repeat=${REPEAT:-3}
timing=$build/perf/chorus-mpi-timing
lib=$build/lib/mpi/libchorus_mpi.so
for f in "$timing" "$lib"; do
  [ -e "$f" ] || { echo "interposer-report: $f is missing (meson compile -C $build)" >&2; exit 2; }
done
raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
export MALLOC_PERTURB_=0
# shellcheck disable=SC2086 # MPI_ARGS and TIMING_ARGS are lists of words
same=${SAME_RUN:-0}
for r in $(seq "$repeat"); do
  if [ "$same" = 0 ]; then
    echo "== run $r/$repeat: plain" >&2
    mpirun -np "$np" ${MPI_ARGS:-} "$timing" ${TIMING_ARGS:-} > "$raw/plain.$r.txt"
  fi
  echo "== run $r/$repeat: preloaded" >&2
  mpirun -np "$np" ${MPI_ARGS:-} -x "LD_PRELOAD=$(realpath "$lib")" "$timing" ${TIMING_ARGS:-} \
    $([ "$same" = 0 ] || echo -p) > "$raw/preloaded.$r.txt"
done
if [ "$same" = 0 ]; then
  echo "np=$np, MPI_ARGS='${MPI_ARGS:-}', TIMING_ARGS='${TIMING_ARGS:-}', $repeat runs each, interleaved"
else
  echo "np=$np, MPI_ARGS='${MPI_ARGS:-}', TIMING_ARGS='${TIMING_ARGS:-}', $repeat preloaded runs, PMPI_X (plain) and MPI_X (preloaded) in alternating blocks of each"
fi
/usr/bin/python3 tools/interposer_summary.py "$raw"
