#!/usr/bin/env bash
# Every collective on a virtual cluster of 2 hosts x 2 ranks (tools/vcluster.sh,
# --rate 10gbit): Chorus's automatic choice, each two-level form forced, one
# flat form forced, each beside Open MPI's default collectives in the same
# run, and the automatic choice again beside Open MPI's hierarchical `han`
# (--mca coll_han_priority 100). Writes OUT/<collective>-<config>.txt (the
# chorus-bench output) and OUT/summary.md with OUT/vcluster-2x2.png
# (tools/vcluster_summary.py). Root only, Open MPI only.
#
#   tools/vcluster-report.sh [BUILD] [OUT]    (defaults: build, results/vcluster)
#   ITERS=N (default 200), SIZES=MIN:MAX (default 64:256K), REPEAT=N runs of
#   each (default 3; OUT/<collective>-<config>.<k>.txt, the summary takes
#   medians), COLLS="C1 C2 ..." (default: every collective)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build} out=${2:-results/vcluster}
iters=${ITERS:-200} sizes=${SIZES:-64:256K} repeat=${REPEAT:-3}
mkdir -p "$out"
# shellcheck source=/dev/null
source tools/env.sh
bench="$build/perf/chorus-bench"
[ -x "$bench" ] || { echo "no $bench: build first" >&2; exit 2; }

# collective: two-level forms; a flat form ("-": the collective has no
# two-level form, its automatic choice is flat).
declare -A two=(
  [allreduce]="two_level_rails two_level_leaders" [bcast]=two_level [reduce]=two_level
  [reduce_scatter]="two_level_rails two_level_leaders" [allgather]="two_level_rails two_level_leaders"
  [allgatherv]=two_level_leaders [alltoall]=two_level_leaders [gather]=two_level [scatter]=two_level [barrier]=two_level
  [alltoallv]=two_level_leaders [gatherv]=two_level [scatterv]=two_level
)
declare -A flat=(
  [allreduce]=ring [bcast]=binomial [reduce]=binomial [reduce_scatter]=ring [allgather]=ring
  [allgatherv]=ring [alltoall]=pairwise [gather]=linear [scatter]=linear [barrier]=dissemination
  [alltoallv]=pairwise [gatherv]=linear [scatterv]=linear
)
colls=(allreduce bcast reduce reduce_scatter allgather allgatherv alltoall alltoallv gather gatherv scatter scatterv
  barrier)
# COLLS="alltoallv gatherv": these collectives only.
if [ -n "${COLLS:-}" ]; then read -r -a colls <<<"$COLLS"; fi

run() {  # collective config mpirun-args [CHORUS_ALGO]
  local c=$1 cfg=$2 margs=$3 algo=${4:-} file="$out/$1-$2.$k.txt"
  local env_args="-x CHORUS_LOG=warn"
  [ -n "$algo" ] && env_args+=" -x CHORUS_ALGO=$c=$algo"
  tools/vcluster.sh -q --rate 10gbit --mpirun-args "$env_args $margs" 2 2 -- \
    "$bench" "$c" -m "$sizes" -i "$iters" -x 20 >"$file" 2>&1 || {
    tail -20 "$file"
    echo "FAIL: $c $cfg" >&2
    exit 1
  }
  echo "$c $cfg ($k)"
}

# Run after run, every configuration once, so that a slow spell of the
# machine falls on all of them alike.
for ((k = 1; k <= repeat; k++)); do
  for c in "${colls[@]}"; do
    run "$c" auto ""
    run "$c" han "--mca coll_han_priority 100"
    if [ -n "${flat[$c]:-}" ]; then run "$c" "flat_${flat[$c]}" "" "${flat[$c]}"; fi
    for t in ${two[$c]:-}; do run "$c" "$t" "" "$t"; done
  done
done
# The plot needs matplotlib (Debian: python3-matplotlib); a python3 first on
# PATH may lack it where Debian's has it.
py=python3
python3 -c "import matplotlib" 2>/dev/null || { [ -x /usr/bin/python3 ] && py=/usr/bin/python3; }
"$py" tools/vcluster_summary.py "$out"
