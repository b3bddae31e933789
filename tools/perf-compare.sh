#!/usr/bin/env bash
# Two builds of Chorus side by side: every collective at np=2 on host memory,
# run by each build's chorus-bench in turn (interleaved per collective and
# repeat, so that noise spreads over both), with Open MPI (pml ob1) timed in
# the same runs. Prints, per collective and size, each build's median latency
# and the ratio NEW / OLD (above 1: NEW is slower), and the MPI / Chorus ratio
# of each. For a change that must leave speed as it is (a refactoring), or
# one that should improve it.
# Usage: tools/perf-compare.sh OLD_BUILD_DIR NEW_BUILD_DIR
#   REPEAT=5 SIZES=4:4K COLLECTIVES="allreduce bcast ..." COLD=0 (1: --cold-cache)
#   ITERS=20000 (timed iterations per size; 0: chorus-bench's default. A run of
#   1000 small calls lasts a millisecond, too short to leave the noise behind)
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/env.sh
old=${1:?usage: perf-compare.sh OLD_BUILD_DIR NEW_BUILD_DIR}
new=${2:?usage: perf-compare.sh OLD_BUILD_DIR NEW_BUILD_DIR}
repeat=${REPEAT:-5}
sizes=${SIZES:-4:4K}
colls=${COLLECTIVES:-"allreduce bcast reduce reduce_scatter allgather allgatherv alltoall alltoallv gather gatherv scatter scatterv barrier"}
cold=()
iters=${ITERS:-20000}
[ "$iters" != 0 ] && cold+=(-i "$iters")
[ "${COLD:-0}" = 1 ] && cold=(--cold-cache)
raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
export MALLOC_PERTURB_=0
for c in $colls; do
  for r in $(seq "$repeat"); do
    echo "== $c run $r/$repeat" >&2
    for side in old new; do
      dir=$old
      [ "$side" = new ] && dir=$new
      mpirun -np 2 "$dir/perf/chorus-bench" "$c" -c "${cold[@]}" -m "$sizes" --csv "$raw/$c.$side.$r.csv" > /dev/null
    done
  done
done
/usr/bin/python3 tools/compare_summary.py "$raw"
