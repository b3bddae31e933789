#!/usr/bin/env bash
# Runs test/fault_test under mpirun so that the survivors of a dead or
# stopped rank keep running (orte_enable_recovery) and checks that each one
# reported the failure.  Usage: run_fault.sh MPIRUN FAULT_TEST kill|stop NP
set -u
mpirun=$1 prog=$2 mode=$3 np=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
start=$(date +%s.%N)
timeout 120 "$mpirun" -np "$np" --mca orte_enable_recovery 1 --mca orte_abort_on_non_zero_status 0 \
  -x CHORUS_TIMEOUT_MS=${FAULT_TIMEOUT_MS:-3000} ${FAULT_EXTRA:-} -x CHORUS_LOG=error "$prog" "$mode" "$dir" >"$dir/out.log" 2>&1
status=$?
end=$(date +%s.%N)
cat "$dir"/rank-*.txt 2>/dev/null
survivors=$((np - 1))
oks=$(cat "$dir"/rank-*.txt 2>/dev/null | grep -c '^ok ')
printf 'mpirun exit %s after %.1f s; %s of %s survivors reported correctly\n' "$status" "$(echo "$end - $start" | bc)" "$oks" "$survivors"
if [ "$oks" -ne "$survivors" ]; then
  echo "--- mpirun output"; cat "$dir/out.log"
  exit 1
fi
