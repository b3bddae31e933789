#!/usr/bin/env bash
# The performance tables of docs/performance.md, measured: every collective at np=2 on host
# memory against the MPI library, with three baselines, each run REPEAT times
# (interleaved, so that noise spreads over all of them):
#   ob1      Open MPI as installed (pml ob1: shared memory + CMA)
#   pml-ucx  --mca pml ucx --mca pml_ucx_tls any (Open MPI over UCX)
#   hugetlb  GLIBC_TUNABLES=glibc.malloc.hugetlb=1 for both MPI and Chorus
#            (malloc'd temporaries on huge pages: MPI allocates per call)
# Writes docs/perf/<collective>/<baseline>.csv (per-size medians, in
# chorus-bench's CSV format), docs/perf/<collective>.png, and prints the
# markdown tables docs/performance.md shows.
# With SMALL=1: every collective (unless COLLECTIVES) at 4 B-4 KiB (unless
# SIZES) against ob1 and pml-ucx only, printing the small-message
# table (tools/small_summary.py); docs/perf is left as it is.
# With LARGE=1: every collective but the barrier (unless COLLECTIVES) at
# 64 KiB-64 MiB (unless SIZES) against ob1, each run once with warm caches
# and once with --cold-cache, printing the table of both modes
# (tools/large_summary.py); docs/perf is left as it is. With MAPPED=1 too,
# the buffers are mapped memory registered as windows (chorus-bench
# --mapped: single-copy schedules, MPI on the same buffers), and the
# all-reduce's bus bandwidth is shown beside the copy ceiling of each run.
# Usage: tools/perf-report.sh [BUILD_DIR]
#   REPEAT=3 SIZES=4:64M COLLECTIVES="allreduce bcast reduce reduce_scatter allgather" SMALL=0 LARGE=0 MAPPED=0
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/env.sh
build=${1:-build}
repeat=${REPEAT:-3}
small=${SMALL:-0}
large=${LARGE:-0}
mapped=()
[ "${MAPPED:-0}" = 1 ] && mapped=(--mapped)
export MAPPED=${MAPPED:-0}
if [ "$large" = 1 ]; then
  sizes=${SIZES:-64K:64M}
  colls=${COLLECTIVES:-"allreduce bcast reduce reduce_scatter allgather allgatherv alltoall alltoallv gather gatherv scatter scatterv"}
elif [ "$small" = 1 ]; then
  sizes=${SIZES:-4:4K}
  colls=${COLLECTIVES:-"allreduce bcast reduce reduce_scatter allgather allgatherv alltoall alltoallv gather gatherv scatter scatterv barrier"}
else
  sizes=${SIZES:-4:64M}
  colls=${COLLECTIVES:-"allreduce bcast reduce reduce_scatter allgather"}
fi
raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
bench=("$build/perf/chorus-bench")
export MALLOC_PERTURB_=0
for c in $colls; do
  for r in $(seq "$repeat"); do
    echo "== $c run $r/$repeat" >&2
    if [ "$large" = 1 ]; then
      mpirun -np 2 "${bench[@]}" "$c" -c "${mapped[@]}" -m "$sizes" --csv "$raw/$c.warm.$r.csv" > /dev/null
      mpirun -np 2 "${bench[@]}" "$c" -c "${mapped[@]}" --cold-cache -m "$sizes" --csv "$raw/$c.cold.$r.csv" > /dev/null
      continue
    fi
    mpirun -np 2 "${bench[@]}" "$c" -c -m "$sizes" --csv "$raw/$c.ob1.$r.csv" > /dev/null
    mpirun -np 2 --mca pml ucx --mca pml_ucx_tls any "${bench[@]}" "$c" -c -m "$sizes" \
      --csv "$raw/$c.pml-ucx.$r.csv" > /dev/null
    [ "$small" = 1 ] && continue
    GLIBC_TUNABLES=glibc.malloc.hugetlb=1 mpirun -np 2 -x GLIBC_TUNABLES "${bench[@]}" "$c" -c -m "$sizes" \
      --csv "$raw/$c.hugetlb.$r.csv" > /dev/null
  done
done
if [ "$large" = 1 ]; then
  /usr/bin/python3 tools/large_summary.py "$raw"
elif [ "$small" = 1 ]; then
  /usr/bin/python3 tools/small_summary.py "$raw"
else
  /usr/bin/python3 tools/perf_summary.py "$raw" docs/perf
fi
