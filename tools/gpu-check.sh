#!/usr/bin/env bash
# The GPU check of Chorus, as one script for a lent GPU machine (which reaches
# no registry: everything it needs travels in .gpu-carry/).
#
# Here, once (about 5 minutes; needs Debian's and PyPI's registries):
#   tools/gpu-check.sh --prepare
#     makes .gpu-carry/ (kept out of git by its own .gitignore):
#       bundle.tar.gz  Open MPI + UCX built with CUDA (shared/gpu-bundle)
#       catch2/        Catch2 v2 headers and a relocatable catch2.pc
#       pkgconf/       pkg-config, in case the machine has none
#       wheels/        meson and ninja, in case its python has none
# There (the device tool, from the repository root):
#   run(command: "tools/gpu-check.sh", carry: [".gpu-carry"], timeout_s: 540)
#     in this order, each step within what is left of the time budget:
#       1. builds Chorus with nvcc (only the targets it runs);
#       2. the gpu suite's quick tests at np=2: gpu_api, gpu_collectives_np2,
#          interposer_gpu_{pass,chorus}_np2;
#       3. chorus-bench allreduce -d cuda -c, 1 KiB .. 256 MiB, at np=2;
#       4. the rest of the gpu suite: np=4 (ranks sharing the GPU) and
#          gpu_reducer (the kernels against the host reducer, bit for bit);
#       5. the same benchmark at np=4, then the kernel's bandwidth, if time
#          is left;
#     and prints a table last, with whatever finished (a step that ran out
#     of time says so). Logs and CSV files go to $OUT when it is set.
# Anywhere, to try every step but the GPU programs (the tests are listed,
# the benchmark runs on host buffers for the table):
#   tools/gpu-check.sh --dry-run
# Options: --build-dir DIR (default /tmp/chorus-gpu-build), --archs '90'
#          (the H200's; the build's own default is '80 90'), --budget SECONDS
#          (default 480: the whole run, build included), --no-collectives
#          (skip the benchmarks).
# Exit status: 0 when every check that ran passed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CARRY=${GPU_CARRY:-$ROOT/.gpu-carry}
BUILD=/tmp/chorus-gpu-build
ARCHS='90'
BUDGET=480
MODE=run
COLLECTIVES=1
while (($#)); do
  case $1 in
    --prepare) MODE=prepare ;;
    --dry-run) MODE=dry ;;
    --build-dir) BUILD=$2; shift ;;
    --archs) ARCHS=$2; shift ;;
    --budget) BUDGET=$2; shift ;;
    --no-collectives) COLLECTIVES=0 ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
LOGDIR=${OUT:-/tmp/chorus-gpu-logs}
mkdir -p "$LOGDIR"
LOG=$LOGDIR/gpu-check.log
: >"$LOG"
say() { echo "[gpu-check] $*" | tee -a "$LOG"; }
# Runs a command with its output in the log; the last lines also on stdout.
logged() {
  say "\$ $*"
  "$@" >>"$LOG" 2>&1
  local rc=$?
  ((rc == 0)) || { say "exit status $rc; the log's end:"; tail -n 25 "$LOG"; }
  return $rc
}

# ---------------------------------------------------------------------------
# --prepare: here, with the registries.
prepare() {
  set -e
  mkdir -p "$CARRY"/{catch2/include,catch2/pkgconfig,pkgconf,wheels}
  # The folder ignores itself: no edit of .git/info/exclude, which a
  # worktree does not have (its .git is a file).
  [ -f "$CARRY/.gitignore" ] || echo '*' >"$CARRY/.gitignore"
  if [ ! -s "$CARRY/bundle.tar.gz" ]; then
    local tmp=/tmp/chorus-gpu-bundle
    rm -rf "$tmp"
    bash "$ROOT/../shared/gpu-bundle/build-bundle.sh" "$tmp"
    tar czf "$CARRY/bundle.tar.gz" -C "$tmp" .
  fi
  [ -f /usr/include/catch2/catch.hpp ] || "$ROOT/tools/deps.sh"
  cp -a /usr/include/catch2 "$CARRY/catch2/include/"
  # shellcheck disable=SC2016  # pkg-config variables, written as they are
  printf '%s\n' 'prefix=${pcfiledir}/..' 'includedir=${prefix}/include' '' 'Name: Catch2' \
    'Description: Catch2 v2, header-only (carried)' "Version: $(pkg-config --modversion catch2)" \
    'Cflags: -I${includedir}' >"$CARRY/catch2/pkgconfig/catch2.pc"
  cp -L /usr/bin/pkgconf "$CARRY/pkgconf/pkgconf"
  cp -L "$(ldd /usr/bin/pkgconf | awk '/libpkgconf/{print $3}')" "$CARRY/pkgconf/"
  rm -f "$CARRY"/wheels/*.whl
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 -d "$CARRY/wheels" 'meson==1.5.2' 'ninja==1.11.1.1'
  say "ready: $CARRY ($(du -sh "$CARRY" | cut -f1)); carry it as \".gpu-carry\""
}

if [ "$MODE" = prepare ]; then prepare; exit; fi

# ---------------------------------------------------------------------------
# The environment: carried pieces only where the machine lacks its own.
T0=$SECONDS
[ -d /usr/local/cuda/bin ] && export PATH=$PATH:/usr/local/cuda/bin
if [ -s "$CARRY/bundle.tar.gz" ]; then
  BUNDLE=/tmp/chorus-gpu-bundle
  if [ ! -f "$BUNDLE/env.sh" ]; then mkdir -p "$BUNDLE" && tar xzf "$CARRY/bundle.tar.gz" -C "$BUNDLE"; fi
  # shellcheck disable=SC1091
  source "$BUNDLE/env.sh"
  say "MPI and UCX from the carried bundle"
else
  say "no carried bundle: using the machine's MPI and UCX"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
[ -d "$CARRY/catch2/pkgconfig" ] && export PKG_CONFIG_PATH=$CARRY/catch2/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
TOOLS=/tmp/chorus-gpu-tools
mkdir -p "$TOOLS"
works() { "$@" --version >/dev/null 2>&1; }
if ! works pkg-config && [ -x "$CARRY/pkgconf/pkgconf" ]; then
  # shellcheck disable=SC2016  # expanded by the wrapper, not here
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' \
    "$CARRY/pkgconf" "$CARRY/pkgconf/pkgconf" >"$TOOLS/pkg-config"
  chmod +x "$TOOLS/pkg-config"
  export PATH=$TOOLS:$PATH
  say "pkg-config: carried pkgconf"
fi
if works meson; then
  MESON=(meson)
elif works python3 -m mesonbuild.mesonmain; then
  MESON=(python3 -m mesonbuild.mesonmain)
elif ls "$CARRY"/wheels/meson-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$TOOLS/site" "$CARRY"/wheels/*.whl >>"$LOG" 2>&1
  export PYTHONPATH=$TOOLS/site${PYTHONPATH:+:$PYTHONPATH} PATH=$TOOLS/site/bin:$PATH
  MESON=(python3 -m mesonbuild.mesonmain)
  say "meson and ninja: carried wheels"
else
  say "FATAL: no meson (neither installed nor carried: run --prepare here)"; exit 1
fi
if ! works ninja && works python3 -m ninja; then
  printf '#!/bin/sh\nexec python3 -m ninja "$@"\n' >"$TOOLS/ninja" && chmod +x "$TOOLS/ninja" && export PATH=$TOOLS:$PATH
fi

GPU_NAME=$( (nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1) 2>/dev/null || true)
NVCC_VER=$( (nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') 2>/dev/null || true)
CXX_VER=$( (c++ -dumpfullversion) 2>/dev/null || true)
say "GPU: ${GPU_NAME:-none visible}; nvcc ${NVCC_VER:-missing}; c++ ${CXX_VER:-missing}; meson $("${MESON[@]}" --version)"

# ---------------------------------------------------------------------------
# Time: the steps run in order of importance. Each may take up to its own
# cap (so that a hang cannot eat the later steps), and never more than what
# is left of the budget less a reserve (for the table).
left() { echo $((BUDGET - (SECONDS - T0))); }
# within CAP RESERVE CMD...: CMD with a timeout of min(CAP, left - RESERVE);
# 124 when it ran out of time, 125 (CMD not run) when under 10 s were left.
within() {
  local cap=$1 reserve=$2; shift 2
  local t=$(($(left) - reserve))
  ((t > cap)) && t=$cap
  if ((t < 10)); then say "no time left for: $*"; return 125; fi
  timeout -k 5 "$t" "$@"
}
# A Chorus operation stuck on a peer fails after this long instead of 5 min.
export CHORUS_TIMEOUT_MS=${CHORUS_TIMEOUT_MS:-60000}

# ---------------------------------------------------------------------------
# Build: only what runs here.
TARGETS=(test/gpu/test_gpu_api test/gpu/test_gpu_reducer test/gpu/test_gpu_collectives
         test/interposer/interposer_gpu_calls lib/mpi/libchorus_mpi.so perf/chorus-bench)
BUILD_OK=0
# A build folder from an earlier run is reused when it is of this checkout
# and this meson can read it.
if [ -f "$BUILD/meson-info/meson-info.json" ] &&
   ! grep -q "\"source\": \"$ROOT\"" "$BUILD/meson-info/meson-info.json"; then
  say "the build folder $BUILD belongs to another checkout: starting afresh"
  rm -rf "$BUILD"
fi
if [ -f "$BUILD/build.ninja" ] && ! "${MESON[@]}" configure "$BUILD" -Dgpu_archs="$ARCHS" >>"$LOG" 2>&1; then
  say "the build folder $BUILD is not usable by this meson: starting afresh"
  rm -rf "$BUILD"
fi
if [ -f "$BUILD/build.ninja" ]; then
  BUILD_OK=1
else
  logged "${MESON[@]}" setup "$BUILD" "$ROOT" -Dcuda=enabled -Dtests=true -Dgpu_archs="$ARCHS" && BUILD_OK=1
fi
# (grep reads to the end: with pipefail, grep -q quitting early fails ninja.)
if ((BUILD_OK)) && ! ninja -C "$BUILD" -t targets all 2>/dev/null | grep '^test/gpu/test_gpu_collectives:' >/dev/null; then
  say "the build defines no test/gpu/test_gpu_collectives target: test/meson.build needs subdir('gpu')"
  BUILD_OK=0
fi
if ((BUILD_OK)); then
  BUILD_OK=0
  logged within 300 60 ninja -C "$BUILD" "${TARGETS[@]}" && BUILD_OK=1
fi
BUILD_S=$((SECONDS - T0))
ELFS=""
if ((BUILD_OK)) && command -v cuobjdump >/dev/null; then
  ARCHIVE=$BUILD/lib/cuda/libchorus_cuda.a
  ELFS=$(cuobjdump --list-elf "$ARCHIVE" 2>/dev/null | grep -o 'sm_[0-9a-z]*' | sort -u | tr '\n' ' ')
  PTX=$(cuobjdump --list-ptx "$ARCHIVE" 2>/dev/null | grep -o 'sm_[0-9a-z]*' | sort -u | tr '\n' ' ')
  ELFS="machine code: ${ELFS:-none} PTX: ${PTX:-none}"
fi

# ---------------------------------------------------------------------------
# The checks. TESTS collects "name status seconds" per gpu test.
TESTS=$LOGDIR/gpu-tests.txt
: >"$TESTS"
REDUCER_RESULT="not run"
BENCH_LINES=""
FAILED=0
declare -A BENCH_RESULT=([2]="not run" [4]="not run")
((BUILD_OK)) || FAILED=1
export MALLOC_PERTURB_=0

# run_tests CAP NAME...: the named tests of the gpu suite.
run_tests() {
  local cap=$1; shift
  local out=$LOGDIR/meson-test-$1.txt
  say "\$ meson test --suite gpu $*"
  # Meson's own timeouts (a fifth of the suite's: 180 s for the collectives)
  # end a hung test and its ranks; the outer one is a backstop.
  within "$cap" 15 "${MESON[@]}" test -C "$BUILD" --no-rebuild --suite gpu --print-errorlogs \
    --timeout-multiplier 0.2 "$@" >"$out" 2>&1
  local rc=$?
  cat "$out" >>"$LOG"
  # Meson's two styles: "1/4 chorus:gpu / gpu_api OK 0.4s" (up to 1.x) and
  # "1/4 unit+gpu - chorus:gpu_api OK 0.4s" (newer).
  grep -E '^ *[0-9]+/[0-9]+ ' "$out" |
    sed -E -e 's/^ *[0-9]+\/[0-9]+ +//' -e 's/^chorus:[^ ]+ \/ //' -e 's/^[^ ]+ - chorus://' |
    awk '{printf "%-28s %-8s %s\n", $1, $2, $3}' >>"$TESTS"
  [ -f "$BUILD/meson-logs/testlog.txt" ] && cat "$BUILD/meson-logs/testlog.txt" >>"$LOGDIR/testlog.txt"
  if ((rc == 124 || rc == 137)); then
    printf '%-28s %s\n' "(time)" "ran out of time in: $*" >>"$TESTS"
  elif ((rc == 125)); then
    printf '%-28s %s\n' "(time)" "not run, no time left: $*" >>"$TESTS"
  fi
  grep -qE ' (FAIL|TIMEOUT|ERROR) ' "$out" && FAILED=1
  # Where nvidia-smi sees a GPU, a skipped test means the tests could not use it.
  [ -n "$GPU_NAME" ] && grep -qE ' SKIP ' "$out" && FAILED=1
  ((rc == 0)) || FAILED=1
  return $rc
}

# bench NP CAP: chorus-bench allreduce -d cuda at NP ranks sharing the
# GPU, validated, 1 KiB .. 256 MiB. Small sizes get more iterations than
# large ones (the host-staged MPI takes seconds at 256 MiB). The CSV is
# written row by row, so a run cut short still gives its rows.
bench() {
  local np=$1 cap=$2 rc=0 t0=$SECONDS
  local csv=$LOGDIR/allreduce-cuda-np$np.csv
  local args=(--oversubscribe --bind-to none -x UCX_MEMTYPE_CACHE=n -x CHORUS_LOG=warn -x CHORUS_TIMEOUT_MS)
  rm -f "$csv" "$csv.large"
  if [ "$MODE" = dry ]; then
    # No GPU programs: the table is exercised on host buffers.
    logged within "$cap" 15 mpirun -np "$np" "${args[@]}" "$BUILD/perf/chorus-bench" allreduce -c -m 1K:64K \
      -i 20 -x 2 --csv "$csv" || rc=$?
  else
    logged within "$cap" 15 mpirun -np "$np" "${args[@]}" "$BUILD/perf/chorus-bench" allreduce -d cuda -c \
      -m 1K:1M -i 100 -x 10 --csv "$csv" || rc=$?
    if ((rc == 0)); then
      logged within $((cap - (SECONDS - t0))) 15 mpirun -np "$np" "${args[@]}" "$BUILD/perf/chorus-bench" \
        allreduce -d cuda -c -m 2M:256M -i 5 -x 1 --csv "$csv.large" || rc=$?
      [ -s "$csv.large" ] && tail -n +2 "$csv.large" >>"$csv"
      rm -f "$csv.large"
    fi
  fi
  local rows
  rows=$( [ -s "$csv" ] && tail -n +2 "$csv" | wc -l || echo 0)
  case $rc in
    0) BENCH_RESULT[$np]="ok, $rows sizes" ;;
    124|137) BENCH_RESULT[$np]="ran out of time after $rows sizes"; FAILED=1 ;;
    125) BENCH_RESULT[$np]="skipped: no time left" ;;
    *) BENCH_RESULT[$np]="FAILED (exit status $rc) after $rows sizes"
       grep -q -- '-d cuda: no usable GPU' "$LOG" && BENCH_RESULT[$np]+=": no usable GPU"
       FAILED=1 ;;
  esac
  grep -q ',Fail' "$csv" 2>/dev/null && { BENCH_RESULT[$np]+=", a size failed validation"; FAILED=1; }
  return 0
}

# table NP: the benchmark's CSV as size, Chorus busbw, D2D ceiling, MPI
# (host-staged) busbw, Chorus/MPI.
table() {
  local np=$1 csv=$LOGDIR/allreduce-cuda-np$1.csv
  local what="-d cuda"
  [ "$MODE" = dry ] && what="on host buffers (dry run)"
  echo "allreduce $what, float32 sum, np=$np: ${BENCH_RESULT[$np]}"
  [ -s "$csv" ] || return 0
  awk -F, '
    NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    NR == 2 { printf "  %10s %14s %14s %18s %11s %6s\n", "size", "Chorus busbw", "D2D ceiling", "MPI staged busbw", "Chorus/MPI", "check" }
    {
      b = $col["bytes"]; unit = "B"
      if (b >= 1048576) { b /= 1048576; unit = "MiB" } else if (b >= 1024) { b /= 1024; unit = "KiB" }
      d2d = ("d2d_copy_gbs" in col) ? sprintf("%.1f GB/s", $col["d2d_copy_gbs"]) : "-"
      mpi = $col["mpi_busbw_gbs"] == "" ? "-" : sprintf("%.2f GB/s", $col["mpi_busbw_gbs"])
      ratio = $col["speedup"] == "" ? "-" : sprintf("%.2f", $col["speedup"])
      printf "  %6g %-3s %9.2f GB/s %14s %18s %11s %6s\n", b, unit, $col["busbw_gbs"], d2d, mpi, ratio, $col["validation"]
    }' "$csv"
}

if ((BUILD_OK)); then
  if [ "$MODE" = dry ]; then
    logged "${MESON[@]}" test -C "$BUILD" --no-rebuild --list --suite gpu
    "${MESON[@]}" test -C "$BUILD" --no-rebuild --list --suite gpu 2>/dev/null | sed -E 's/^chorus:[^ ]+ \/ //' |
      awk '{printf "%-28s %-8s\n", $1, "listed"}' >>"$TESTS"
    REDUCER_RESULT="dry run"
    ((COLLECTIVES)) && bench 2 60
  else
    run_tests 150 gpu_api gpu_collectives_np2 interposer_gpu_pass_np2 interposer_gpu_chorus_np2
    ((COLLECTIVES)) && bench 2 120
    run_tests 200 gpu_collectives_np4 interposer_gpu_pass_np4 interposer_gpu_chorus_np4
    run_tests 120 gpu_collectives_staged_np2
    run_tests 150 gpu_reducer
    # test_gpu_reducer's RESULT lines; a SKIP means no GPU.
    # (The other tests' skips name their rank; gpu_reducer's do not.)
    REDUCER_RESULT=$(grep -E '^(RESULT |SKIP: no usable GPU)' "$LOGDIR/testlog.txt" 2>/dev/null | awk '!seen[$0]++')
    [ -n "$REDUCER_RESULT" ] || REDUCER_RESULT="no RESULT lines"
    grep -q '^SKIP' <<<"$REDUCER_RESULT" && FAILED=1
    ((COLLECTIVES)) && bench 4 120
    if (($(left) > 30)); then
      BENCH_LINES=$(within 30 10 "$BUILD/test/gpu/test_gpu_reducer" --bench 2>&1 | tee -a "$LOG" |
        grep -E '^(BENCH|SKIP|FAILED)' || true)
    fi
  fi
fi

# ---------------------------------------------------------------------------
# The table, last.
{
  echo
  echo "================ Chorus GPU check ($MODE, $((SECONDS - T0)) s of $BUDGET) ================"
  printf '%-12s %s\n' device "${GPU_NAME:-none visible}"
  printf '%-12s %s\n' toolchain "nvcc ${NVCC_VER:-?}, c++ ${CXX_VER:-?}, gpu_archs '$ARCHS'"
  printf '%-12s %s\n' build "$( ((BUILD_OK)) && echo "ok in ${BUILD_S}s" || echo FAILED) ${ELFS:+($ELFS)}"
  echo "gpu suite:"
  if [ -s "$TESTS" ]; then sed 's/^/  /' "$TESTS"; else echo "  not run"; fi
  echo "kernels vs host_reduce (bitwise):"
  while read -r tag dt res rest; do
    [ "$tag" = RESULT ] && printf '  %-10s %-5s %s\n' "$dt" "$res" "$rest"
    [ "$tag" = SKIP: ] && echo "  skipped: $dt $res $rest"
  done <<<"$REDUCER_RESULT"
  [ "$REDUCER_RESULT" = "not run" ] || [ "$REDUCER_RESULT" = "dry run" ] && echo "  $REDUCER_RESULT"
  echo "kernel bandwidth (float32, 256 MiB, bytes read + written):"
  if [ -n "$BENCH_LINES" ]; then sed -e 's/^BENCH //' -e 's/^/  /' <<<"$BENCH_LINES"; else echo "  not run"; fi
  if ((COLLECTIVES)); then table 2; table 4; fi
  printf '%-12s %s\n' logs "$LOGDIR"
  echo "result: $( ((FAILED)) && echo FAILED || echo ok)"
} | tee -a "$LOG"
exit $FAILED
