#!/bin/sh
# Run an MPI program with CHORUS_LOG=info and check that rank 0 printed the
# interposer's statistics at MPI_Finalize, with calls intercepted for each
# function named after the program.
# Usage: check_stats.sh MPIRUN NP LIBRARY PROGRAM FUNCTION...
mpirun=$1 np=$2 lib=$3 prog=$4
shift 4
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# TEST_MPI_ENV_FLAG: how the launcher passes NAME=VALUE to the ranks only
# (Open MPI's -x, MPICH hydra's -genv).
flag=${TEST_MPI_ENV_FLAG:--x}
"$mpirun" -np "$np" "$flag" "LD_PRELOAD=$lib" "$flag" CHORUS_LOG=info "$prog" >"$out" 2>&1
rc=$?
cat "$out"
[ "$rc" -eq 0 ] || { echo "check_stats: $prog failed ($rc)"; exit 1; }
grep -q '^\[chorus info rank 0\] MPI interposer statistics' "$out" || { echo "check_stats: no statistics"; exit 1; }
for fn in "$@"; do
    line=$(grep "^\[chorus info rank 0\]   $fn: " "$out")
    n=$(echo "$line" | sed -n 's/.*: \([0-9]*\) intercepted.*/\1/p')
    if [ -z "$n" ] || [ "$n" -eq 0 ]; then
        echo "check_stats: $fn has no intercepted calls in the statistics: '$line'"
        exit 1
    fi
done
echo "check_stats: statistics present, $* intercepted"
