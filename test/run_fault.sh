#!/usr/bin/env bash
# Runs test/fault_test under the MPI launcher so that the survivors of a dead
# or stopped rank keep running, and checks that each one reported the
# failure.  Usage: run_fault.sh MPIRUN FAULT_TEST kill|stop|exit NP [ARGS...]
# ARGS are the launcher's own options that keep the survivors running (Open
# MPI: --mca orte_enable_recovery 1 --mca orte_abort_on_non_zero_status 0;
# MPICH's hydra: -disable-auto-cleanup); TEST_MPI_ENV_FLAG (-x, or hydra's
# -genv) passes variables to the ranks. FAULT_EXTRA: more launcher options;
# FAULT_ARGS: more arguments of the program, after DIR.
set -u
mpirun=$1 prog=$2 mode=$3 np=$4
shift 4
env_flag=${TEST_MPI_ENV_FLAG:--x}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
start=$(date +%s.%N)
timeout 120 "$mpirun" -np "$np" "$@" \
  "$env_flag" CHORUS_TIMEOUT_MS=${FAULT_TIMEOUT_MS:-3000} ${FAULT_EXTRA:-} "$env_flag" CHORUS_LOG=error "$prog" "$mode" "$dir" ${FAULT_ARGS:-} >"$dir/out.log" 2>&1
status=$?
end=$(date +%s.%N)
survivors=$((np - 1))
# Open MPI's mpirun returns once every rank has ended; MPICH's hydra as soon
# as one rank dies, while the survivors run on (-disable-auto-cleanup): give
# them a while to write their verdicts.
verdicts() { cat "$dir"/rank-*.txt 2>/dev/null | grep -c '^\(ok\|FAIL\) '; }
for _ in $(seq 300); do
  [ "$(verdicts)" -ge "$survivors" ] && break
  sleep 0.1
done
cat "$dir"/rank-*.txt 2>/dev/null
oks=$(cat "$dir"/rank-*.txt 2>/dev/null | grep -c '^ok ')
printf 'mpirun exit %s after %.1f s; %s of %s survivors reported correctly\n' "$status" "$(echo "$end - $start" | bc)" "$oks" "$survivors"
if [ "$oks" -ne "$survivors" ]; then
  echo "--- mpirun output"; cat "$dir/out.log"
  exit 1
fi
