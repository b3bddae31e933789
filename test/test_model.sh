#!/bin/sh
# Checks of chorus-model (no MPI):
#   - the selector's choices pass --check on a small two-level layout;
#   - the tables do not depend on how many threads compute them (-j);
#   - sizes at which a rank's buffer would pass 1 TiB are left out, and said so;
#   - --shm prices the shared-memory algorithms and takes the selector's
#     choices for ranks that share memory;
#   - --compare lists the choices a cost file changes, and only those;
#     --cost-file prices with the file's constants;
#   - bad command lines (and stale or missing cost files) exit 2.
#
# Usage: test_model.sh CHORUS_MODEL
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 CHORUS_MODEL" >&2
    exit 99
fi
MODEL=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

"$MODEL" --check -H 4x2 -m 8:2M >"$TMP/check" 2>&1 || fail "--check -H 4x2: status $? ($(tail -3 "$TMP/check"))"
grep -q "^# check: 0 of" "$TMP/check" || fail "--check printed no summary"

# The seconds each collective took are the only lines that may differ.
for args in "-c all -H 4x2 -m 8:2M" "-c allreduce -H 8x4 -m 8:8M" "-c bcast --layout 3,1,2 -m 8:1M" "-c all --shm -p 4 -m 8:1M"; do
    # shellcheck disable=SC2086
    "$MODEL" $args -j 1 | grep -v '^# [a-z_]*: [0-9.]* s$' >"$TMP/one" || fail "$args -j 1: status $?"
    # shellcheck disable=SC2086
    "$MODEL" $args -j 3 | grep -v '^# [a-z_]*: [0-9.]* s$' >"$TMP/three" || fail "$args -j 3: status $?"
    cmp -s "$TMP/one" "$TMP/three" || fail "$args: -j 1 and -j 3 differ: $(diff "$TMP/one" "$TMP/three" | head -4)"
    [ "$(grep -c '^ ' "$TMP/one")" -gt 3 ] || fail "$args: too few rows"
done

# 4096 ranks: 256 MiB a rank gathered is 1 TiB (kept), 1 GiB a rank 4 TiB (left out).
"$MODEL" -c gather -p 4096 -m 256M:1G >"$TMP/cap" 2>&1 || fail "gather -m 256M:1G: status $?"
grep -q '^ *256M ' "$TMP/cap" || fail "the 256M row (a 1 TiB root buffer) is missing"
grep -q '^ *1G ' "$TMP/cap" && fail "the 1G row (a 4 TiB root buffer) was modelled"
grep -q '1 larger sizes left out' "$TMP/cap" || fail "the row left out is not said: $(tail -3 "$TMP/cap")"
"$MODEL" -c allreduce -p 4 -m 1G:1G | grep -q '^ *1G ' || fail "an all-reduce of 1 GiB is no larger a buffer than 1 GiB"

# One host sharing memory: the flat all-reduce for 8 bytes, the broadcast's
# pipeline with one reader and the one-sided broadcast with more; without
# --shm none of them is priced.
"$MODEL" --shm -c allreduce -p 2,64 -m 8:8 >"$TMP/shm" || fail "--shm: status $?"
[ "$(grep -c '^ *8 .* shm_flat$' "$TMP/shm")" -eq 2 ] || fail "--shm: 8 bytes not flat at 2 and 64 ranks: $(cat "$TMP/shm")"
"$MODEL" --shm -c bcast -p 2,3 -m 1M:1M >"$TMP/shm" || fail "--shm bcast: status $?"
grep -q '^ *1M .* shm_pipeline$' "$TMP/shm" || fail "--shm: 1 MiB broadcast on 2 ranks not pipelined"
grep -q '^ *1M .* one_sided$' "$TMP/shm" || fail "--shm: 1 MiB broadcast on 3 ranks not one-sided"
"$MODEL" -c allreduce -p 2 -m 8:8 | grep -q 'shm_flat$' && fail "without --shm the flat all-reduce was chosen"

# --compare: a cost file that makes memory slow and the single-copy gets
# dear changes some choices; one that repeats the defaults none; a stale
# one is refused.
printf '# slow\nformat = 1\ncache_mib = 1\nmemory_gbs = 0.5\nget_us = 40\nslot_us = 2\n' >"$TMP/slow.conf"
"$MODEL" --shm -p 2,4 -m 8:16M --compare "$TMP/slow.conf" >"$TMP/cmp" || fail "--compare: status $?"
changed=$(sed -n 's/^# \([0-9]*\) of [0-9]* choices change$/\1/p' "$TMP/cmp")
[ -n "$changed" ] && [ "$changed" -gt 0 ] || fail "--compare: no choice changed: $(tail -3 "$TMP/cmp")"
[ "$(grep -c '^  ' "$TMP/cmp")" -eq "$changed" ] || fail "--compare: $changed changes said, other lines listed"
printf 'format = 1\ncache_mib = 32\ncopy_gbs = 8\n' >"$TMP/same.conf"
"$MODEL" --shm -p 2 -m 8:16M --compare "$TMP/same.conf" | grep -q '^# 0 of [1-9][0-9]* choices change$' ||
    fail "--compare: the defaults' own values changed a choice"
"$MODEL" --shm -p 2 -c bcast -m 8:1K --cost-file "$TMP/slow.conf" | grep -q 'single copy 9 GB/s (+40 us' ||
    fail "--cost-file: the file's get_us is not in the model"
printf 'format = 0\ncopy_gbs = 8\n' >"$TMP/stale.conf"

for bad in "-j 0" "-j" "-c nothing" "-H 0" "--shm -H 2" "--shm --layout 1,1" "--compare $TMP/stale.conf" \
    "--cost-file $TMP/none.conf"; do
    # shellcheck disable=SC2086
    "$MODEL" $bad >/dev/null 2>&1
    rc=$?
    [ $rc -eq 2 ] || fail "'$bad': status $rc, not 2"
done

[ $failures -eq 0 ] || exit 1
echo "chorus-model checks passed"
