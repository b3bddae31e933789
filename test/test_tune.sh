#!/bin/sh
# Checks of chorus-tune (short runs; the rates it prints are not checked):
#   - at np=2 it writes the cost file with the pair's constants, and
#     --print then says each comes from the file, and a setting over it;
#   - --dry-run measures without writing;
#   - at np=1 it writes the one-process rates only;
#   - a place that cannot be written is an error (status 1); bad options 2.
#
# Usage: test_tune.sh MPIRUN CHORUS_TUNE   (TEST_MPI_ENV_FLAG: -x or -genv)
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 MPIRUN CHORUS_TUNE" >&2
    exit 99
fi
MPIRUN=$1 TUNE=$2
FLAG=${TEST_MPI_ENV_FLAG:--x}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
status=0
fail() { echo "FAIL: $*" >&2 && status=1; }
tune() {  # NP FILE ARGS...
    np=$1 file=$2
    shift 2
    "$MPIRUN" -np "$np" "$FLAG" CHORUS_COST_FILE="$file" "$TUNE" "$@"
}

tune 2 "$TMP/two/cost.conf" >"$TMP/out2" 2>&1 || fail "np=2: status $? ($(tail -3 "$TMP/out2"))"
cat "$TMP/out2"
for key in format host copy_gbs stream_gbs reduce_gbs slot_us; do
    grep -q "^$key = ." "$TMP/two/cost.conf" 2>/dev/null || fail "np=2: no $key in the file"
done
# The effective rates are measured and shown, not written.
for key in memory_gbs get_gbs get_us get_reduce_gbs; do
    grep -q "^$key = " "$TMP/two/cost.conf" 2>/dev/null && fail "np=2: $key written to the file"
    grep -q "^  $key .*(shown only: not written)$" "$TMP/out2" || fail "np=2: $key not shown as measured"
done
CHORUS_COST_FILE="$TMP/two/cost.conf" "$TUNE" --print >"$TMP/print" || fail "--print: status $?"
grep -q '^  copy_gbs .* file$' "$TMP/print" || fail "--print: copy_gbs not from the file: $(cat "$TMP/print")"
CHORUS_COST_FILE="$TMP/two/cost.conf" CHORUS_COST_SLOT_US=7 "$TUNE" --print >"$TMP/print" || fail "--print: status $?"
grep -q '^  slot_us  *7 .* CHORUS_COST_SLOT_US$' "$TMP/print" || fail "--print: the setting is not first: $(cat "$TMP/print")"

tune 2 "$TMP/dry.conf" --dry-run >"$TMP/dry" 2>&1 || fail "--dry-run: status $?"
[ -e "$TMP/dry.conf" ] && fail "--dry-run wrote the file"
grep -q '^  copy_gbs ' "$TMP/dry" || fail "--dry-run printed no rates"

tune 1 "$TMP/one.conf" >"$TMP/out1" 2>&1 || fail "np=1: status $? ($(tail -3 "$TMP/out1"))"
grep -q '^copy_gbs = ' "$TMP/one.conf" 2>/dev/null || fail "np=1: no copy_gbs"
grep -q '^slot_us = ' "$TMP/one.conf" 2>/dev/null && fail "np=1: a pair's constant written"

touch "$TMP/file"
tune 1 "$TMP/file/under.conf" >"$TMP/bad" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "an unwritable place: status $rc, not 1"
"$TUNE" --nothing >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || fail "a bad option: status $rc, not 2"

[ $status -eq 0 ] && echo "chorus-tune checks passed"
exit $status
