#!/bin/sh
# Checks of chorus-bench under the MPI launcher.
#
# Usage: test_bench.sh MPIRUN CHORUS_BENCH MODE
#   options  bad command lines exit 2 with a usage message; -h exits 0
#   fail     CHORUS_BENCH_CORRUPT=1 makes -c report Fail and exit 1
#   smoke    a short validated sweep passes; CSV header and JSON are well formed
set -u

if [ $# -ne 3 ]; then
    echo "usage: $0 MPIRUN CHORUS_BENCH options|fail|smoke" >&2
    exit 99
fi
MPIRUN=$1
BENCH=$2
MODE=$3
NP=${CHORUS_BENCH_TEST_NP:-2}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0

# MPI_EXTRA: more launcher arguments (unquoted, split on spaces).
# TEST_MPI_ENV_FLAG: how the launcher passes NAME=VALUE to the ranks (Open
# MPI's -x, MPICH hydra's -genv).
MPI_EXTRA=""
ENV_FLAG=${TEST_MPI_ENV_FLAG:--x}
run() {
    # shellcheck disable=SC2086
    "$MPIRUN" -np "$NP" $MPI_EXTRA "$BENCH" "$@" >"$TMP/out" 2>"$TMP/err"
}

fail() {
    echo "FAIL: $*"
    echo "--- stdout"; cat "$TMP/out"
    echo "--- stderr"; cat "$TMP/err"
    failures=$((failures + 1))
}

# expect_status STATUS PATTERN-IN-STDERR ARGS...
expect_status() {
    want=$1; pattern=$2; shift 2
    run "$@"
    got=$?
    if [ "$got" -ne "$want" ]; then
        fail "chorus-bench $* exited $got, expected $want"
    elif [ -n "$pattern" ] && ! grep -q -- "$pattern" "$TMP/err"; then
        fail "chorus-bench $*: no '$pattern' on stderr"
    else
        echo "ok: chorus-bench $* -> $got"
    fi
}

case "$MODE" in
options)
    expect_status 0 "" -h
    grep -q "^Usage:" "$TMP/out" || fail "-h printed no usage on stdout"
    [ "$(grep -c '^Usage:' "$TMP/out")" -eq 1 ] || fail "-h: usage printed more than once (only rank 0 prints)"
    expect_status 2 "Usage:"
    expect_status 2 "Usage:" allreduce -z
    expect_status 2 "Usage:" nosuchcollective
    expect_status 2 "Usage:" allreduce extra
    expect_status 2 "Usage:" allreduce -m 1:2:3
    expect_status 2 "Usage:" allreduce -m 4X
    expect_status 2 "Usage:" allreduce -m 64:4
    expect_status 2 "Usage:" allreduce -m 1:2
    expect_status 2 "Usage:" allreduce -i 0
    expect_status 2 "Usage:" allreduce -i
    expect_status 2 "Usage:" allreduce -x -1
    expect_status 2 "Usage:" allreduce -T float8
    expect_status 2 "Usage:" allreduce -o xor
    expect_status 2 "Usage:" allreduce -d tpu
    expect_status 2 "Usage:" allreduce -k "$NP"
    expect_status 2 "Usage:" gatherv -k "$NP"
    expect_status 2 "Usage:" alltoall -n extra
    grep -q "alltoallv" "$TMP/err" || fail "the usage does not list the collectives"
    # -d cuda: without a GPU (or without CUDA in the build) a clear message
    # from rank 0 and exit status 2; with one, a validated run.
    run allreduce -d cuda -c -m 4:64K -i 3 -x 1
    got=$?
    if [ "$got" -eq 2 ]; then
        if ! grep -q -- "-d cuda: no usable GPU" "$TMP/err"; then
            fail "-d cuda exited 2 without saying that no GPU is usable"
        elif [ "$(grep -c -- '-d cuda: no usable GPU' "$TMP/err")" -ne 1 ]; then
            fail "-d cuda: the message was printed more than once"
        elif grep -qiE "segmentation|core dumped|signal|MPI_ABORT" "$TMP/err"; then
            fail "-d cuda without a GPU crashed or aborted"
        else
            echo "ok: chorus-bench allreduce -d cuda without a GPU -> 2 ($(grep -- '-d cuda' "$TMP/err"))"
        fi
    elif [ "$got" -eq 0 ] && grep -q "Pass" "$TMP/out" && ! grep -q "Fail" "$TMP/out"; then
        echo "ok: chorus-bench allreduce -d cuda on a GPU -> validated run"
    else
        fail "chorus-bench allreduce -d cuda exited $got"
    fi
    expect_status 2 "too large" allreduce -m 4:100000G
    expect_status 2 "cannot write CSV" allreduce -m 4 --csv "$TMP/no/such/dir/x.csv"
    ;;
fail)
    CHORUS_BENCH_CORRUPT=1
    export CHORUS_BENCH_CORRUPT
    MPI_EXTRA="$ENV_FLAG CHORUS_BENCH_CORRUPT=1"
    # The checker is rank 0, or the root where only the root has output.
    for args in "allreduce" "gatherv -k $((NP - 1))" "alltoall -n" "barrier"; do
        # shellcheck disable=SC2086
        run $args -c -m 4:4K -i 5 -x 1
        got=$?
        [ "$got" -eq 1 ] || fail "corrupted $args run exited $got, expected 1"
        grep -q "Fail" "$TMP/out" || fail "corrupted $args run printed no Fail row"
        if grep -q "Pass" "$TMP/out"; then fail "corrupted $args run printed a Pass row"; fi
    done
    [ "$failures" -eq 0 ] && echo "ok: corrupted runs -> Fail, exit 1"
    ;;
smoke)
    run allreduce -c -f -m 4:256K -i 20 -x 2 --csv "$TMP/r.csv" --json "$TMP/r.json"
    got=$?
    [ "$got" -eq 0 ] || fail "validated run exited $got"
    grep -q "^# OSU MPI-Chorus Allreduce Latency Test" "$TMP/out" || fail "no OSU header line"
    if grep -q "Fail" "$TMP/out"; then fail "a row failed validation"; fi
    rows=$(grep -c "Pass" "$TMP/out")
    [ "$rows" -eq 17 ] || fail "expected 17 Pass rows (4 B .. 256 KiB), got $rows"
    header="collective,ranks,bytes,datatype,chorus_avg_us,chorus_min_us,chorus_max_us,algbw_gbs,busbw_gbs,mpi_avg_us,mpi_busbw_gbs,speedup,validation"
    [ "$(head -n 1 "$TMP/r.csv")" = "$header" ] || fail "CSV header is $(head -n 1 "$TMP/r.csv")"
    [ "$(wc -l <"$TMP/r.csv")" -eq 18 ] || fail "CSV does not have 17 rows"
    if command -v python3 >/dev/null 2>&1; then
        python3 -m json.tool "$TMP/r.json" >/dev/null || fail "JSON does not parse"
    fi
    # Every data-movement collective, in and out of place, blocking and not.
    for coll in allgatherv alltoall alltoallv gather gatherv scatter scatterv; do
        for mode in "" "-l" "-n" "-n -l"; do
            # shellcheck disable=SC2086
            run "$coll" $mode -c -m 4:4K -i 5 -x 1
            got=$?
            rows=$(grep -c "Pass" "$TMP/out")
            if [ "$got" -ne 0 ] || [ "$rows" -ne 11 ] || grep -q "Fail" "$TMP/out"; then
                fail "chorus-bench $coll $mode: exit $got, $rows Pass rows (want 0 and 11)"
            fi
        done
    done
    run barrier -c -i 20 -x 2
    [ $? -eq 0 ] && [ "$(grep -c Pass "$TMP/out")" -eq 1 ] || fail "barrier -c: want one Pass row"
    # The nonblocking mode's overlap columns.
    run alltoallv -n -c -m 4:1K -i 10 -x 1 --csv "$TMP/n.csv" --json "$TMP/n.json"
    [ $? -eq 0 ] || fail "nonblocking run failed"
    grep -q "^# OSU MPI-Chorus Non-blocking Alltoallv Latency Test" "$TMP/out" || fail "no nonblocking header"
    grep -q "Overlap(%)" "$TMP/out" || fail "no Overlap(%) column"
    [ "$(head -n 1 "$TMP/n.csv")" = "$header,overall_us,compute_us,overlap_pct,mpi_overlap_pct" ] ||
        fail "nonblocking CSV header is $(head -n 1 "$TMP/n.csv")"
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rows"]; assert r and all(0 <= x["overlap_pct"] <= 100 for x in r)' "$TMP/n.json" ||
            fail "nonblocking JSON has no overlap between 0 and 100"
    fi
    [ "$failures" -eq 0 ] && echo "ok: validated sweep, CSV and JSON; every data-movement collective; overlap columns"
    ;;
*)
    echo "unknown mode '$MODE'" >&2
    exit 99
    ;;
esac

[ "$failures" -eq 0 ]
