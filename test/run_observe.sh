#!/usr/bin/env bash
# Runs test/observe in one mode under the MPI launcher and checks what the
# ranks printed (or, for traces, wrote). TEST_MPI_ENV_FLAG (-x, or hydra's
# -genv) passes variables to the ranks.
# Usage: run_observe.sh MPIRUN OBSERVE MODE SOURCE_ROOT
set -u
mpirun=$1 prog=$2 mode=$3 src=$4
x=${TEST_MPI_ENV_FLAG:--x}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out=$dir/out.log
fail() {
  echo "--- output"; cat "$out"; echo "run_observe $mode: $*"; exit 1
}
want() { grep -q -- "$1" "$out" || fail "no line matches: $1"; }
count() {
  local n; n=$(grep -c -- "$2" "$out")
  [ "$n" -eq "$1" ] || fail "$n lines match '$2', want $1"
}
run() {
  local np=$1; shift
  timeout 100 "$mpirun" -np "$np" "$@" "$prog" "$mode" >"$out" 2>&1 || fail "mpirun exit $?"
}
case $mode in
  sigusr1)
    run 2
    # Rank 1 dumps from inside the broadcast it waits in; rank 0 at its next call.
    want '^\[chorus record rank 1\] flight record of comm [0-9]* (2 ranks) (SIGUSR1)'
    want '^\[chorus record rank 1\]   bcast #3 1 x float64 root 0 (.*): step [0-9]* of [0-9]*, waits for rank 0'
    want '^\[chorus record rank 1\]   allreduce #0 4 x float32 sum (.*) "first phase": done'
    want '^\[chorus record rank 0\] flight record of comm [0-9]* (2 ranks) (SIGUSR1)'
    count 2 'flight record of'
    ;;
  hang)
    run 3 "$x" CHORUS_HANG_WARN_S=1
    count 1 'hang report:'
    want 'hang report: allreduce #1 on comm [0-9]* (3 ranks) "CG dot product": .*wait.* for rank 2; rank 2 does not answer'
    want '^\[chorus record rank 0\] flight record of .*(hang warning)'
    ;;
  disagree)
    run 2 "$x" CHORUS_HANG_WARN_S=1 "$x" CHORUS_TIMEOUT_MS=5000 "$x" CHORUS_SHM_EAGER=0 \
      "$x" CHORUS_ALGO=reduce=binomial,bcast=binomial
    count 1 'hang report:'
    want '^\[chorus warn rank 0\] hang report: ranks disagree: 0 is in reduce #0, 1 in bcast #0'
    want 'flight record of .*(timeout)'
    ;;
  stragglers)
    run 3 "$x" CHORUS_LOG=info
    want '^\[chorus info rank 0\] stragglers on comm [0-9]* (3 ranks) over the last 40 operations'
    # The late rank comes first (the last to arrive most often), late by
    # milliseconds (it sleeps 20 ms; the others are late by noise, which on
    # oversubscribed cores can reach a few milliseconds).
    grep -A1 'stragglers on comm' "$out" | tail -1 |
      grep -q 'rank 1: last to arrive [0-9]* times .*late by median [0-9.]* ms' ||
      fail "rank 1 is not named first as the straggler, late by milliseconds"
    want 'histogram of lateness'
    ;;
  trace)
    run 2 "$x" CHORUS_TRACE="$dir/trace"
    /usr/bin/python3 "$src/test/check_trace.py" "$dir/trace" 2 >>"$out" 2>&1 || fail "check_trace failed"
    "$src/tools/chorus-trace" "$dir/trace" -o "$dir/trace.png" --json "$dir/merged.json" >>"$out" 2>&1 ||
      fail "chorus-trace failed"
    head -c 8 "$dir/trace.png" | od -An -c | grep -q 'P   N   G' || fail "no PNG written"
    /usr/bin/python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['traceEvents']; \
assert {e['pid'] for e in t if e.get('cat')=='op'} == {0,1}" "$dir/merged.json" || fail "bad merged trace"
    ;;
  *) fail "unknown mode" ;;
esac
cat "$out"
echo "run_observe $mode: ok"
