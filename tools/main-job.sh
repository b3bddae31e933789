#!/usr/bin/env bash
# The main job: install what is missing, build, and run the all-reduce
# benchmark at np=2 on host memory beside MPI_Allreduce; writes
# results/allreduce-np2.{csv,json,png} and prints the table.
# Usage: tools/main-job.sh [extra chorus-bench options]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
source tools/env.sh
if [ ! -f build/build.ninja ]; then meson setup build; fi
meson compile -C build >/dev/null
mkdir -p results
mpirun -np 2 build/perf/chorus-bench allreduce -c -m 4:64M \
  --csv results/allreduce-np2.csv --json results/allreduce-np2.json "$@"
/usr/bin/python3 perf/plot.py -o results/allreduce-np2.png results/allreduce-np2.csv
echo "plot: results/allreduce-np2.png"
