#!/usr/bin/env bash
# The README's performance section, measured: every collective at np=2 on host
# memory against the MPI library, with three baselines, each run REPEAT times
# (interleaved, so that noise spreads over all of them):
#   ob1      Open MPI as installed (pml ob1: shared memory + CMA)
#   pml-ucx  --mca pml ucx --mca pml_ucx_tls any (Open MPI over UCX)
#   hugetlb  GLIBC_TUNABLES=glibc.malloc.hugetlb=1 for both MPI and Chorus
#            (malloc'd temporaries on huge pages: MPI allocates per call)
# Writes docs/perf/<collective>/<baseline>.csv (per-size medians, in
# chorus-bench's CSV format), docs/perf/<collective>.png, and prints the
# markdown tables the README shows.
# Usage: tools/perf-report.sh [BUILD_DIR]
#   REPEAT=3 SIZES=4:64M COLLECTIVES="allreduce bcast reduce reduce_scatter allgather"
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/env.sh
build=${1:-build}
repeat=${REPEAT:-3}
sizes=${SIZES:-4:64M}
colls=${COLLECTIVES:-"allreduce bcast reduce reduce_scatter allgather"}
raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
bench=("$build/perf/chorus-bench")
export MALLOC_PERTURB_=0
for c in $colls; do
  for r in $(seq "$repeat"); do
    echo "== $c run $r/$repeat" >&2
    mpirun -np 2 "${bench[@]}" "$c" -c -m "$sizes" --csv "$raw/$c.ob1.$r.csv" > /dev/null
    mpirun -np 2 --mca pml ucx --mca pml_ucx_tls any "${bench[@]}" "$c" -c -m "$sizes" \
      --csv "$raw/$c.pml-ucx.$r.csv" > /dev/null
    GLIBC_TUNABLES=glibc.malloc.hugetlb=1 mpirun -np 2 -x GLIBC_TUNABLES "${bench[@]}" "$c" -c -m "$sizes" \
      --csv "$raw/$c.hugetlb.$r.csv" > /dev/null
  done
done
/usr/bin/python3 tools/perf_summary.py "$raw" docs/perf
