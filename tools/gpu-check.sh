#!/usr/bin/env bash
# The GPU check of Chorus, as one script for a lent GPU machine (which reaches
# no registry: everything it needs travels in .gpu-carry/).
#
# Here, once (about 5 minutes; needs Debian's and PyPI's registries):
#   tools/gpu-check.sh --prepare
#     makes .gpu-carry/ (kept out of git through .git/info/exclude):
#       bundle.tar.gz  Open MPI + UCX built with CUDA (shared/gpu-bundle)
#       catch2/        Catch2 v2 headers and a relocatable catch2.pc
#       pkgconf/       pkg-config, in case the machine has none
#       wheels/        meson and ninja, in case its python has none
# There (the device tool, from the repository root):
#   run(command: "tools/gpu-check.sh", carry: [".gpu-carry"], timeout_s: 540)
#     builds Chorus with nvcc (only the targets it runs), runs the `gpu` test
#     suite, times the float32 SUM kernel at 256 MiB against a device-to-device
#     copy, and prints a table last. Logs go to $OUT when it is set.
# Anywhere, to try every step but the GPU programs:
#   tools/gpu-check.sh --dry-run
# Options: --build-dir DIR (default /tmp/chorus-gpu-build), --archs '80 90',
#          --no-collectives (skip the collective benchmarks' hook).
# Exit status: 0 when every check that ran passed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CARRY=${GPU_CARRY:-$ROOT/.gpu-carry}
BUILD=/tmp/chorus-gpu-build
ARCHS='80 90'
MODE=run
COLLECTIVES=1
while (($#)); do
  case $1 in
    --prepare) MODE=prepare ;;
    --dry-run) MODE=dry ;;
    --build-dir) BUILD=$2; shift ;;
    --archs) ARCHS=$2; shift ;;
    --no-collectives) COLLECTIVES=0 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
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
  grep -qx '/.gpu-carry/' "$ROOT/.git/info/exclude" 2>/dev/null || echo '/.gpu-carry/' >>"$ROOT/.git/info/exclude"
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
# Build: only what runs here.
TARGETS=(test/gpu/test_gpu_api test/gpu/test_gpu_reducer perf/chorus-bench)
BUILD_OK=0
# A build folder from an earlier run is reused when this meson can read it.
if [ -f "$BUILD/build.ninja" ] && ! "${MESON[@]}" configure "$BUILD" -Dgpu_archs="$ARCHS" >>"$LOG" 2>&1; then
  say "the build folder $BUILD is not usable by this meson: starting afresh"
  rm -rf "$BUILD"
fi
if [ -f "$BUILD/build.ninja" ]; then
  BUILD_OK=1
else
  logged "${MESON[@]}" setup "$BUILD" "$ROOT" -Dcuda=enabled -Dtests=true -Dgpu_archs="$ARCHS" && BUILD_OK=1
fi
if ((BUILD_OK)) && ! ninja -C "$BUILD" -t targets all 2>/dev/null | grep -q '^test/gpu/test_gpu_reducer:'; then
  say "the build defines no test/gpu targets: test/meson.build needs subdir('gpu')"
  BUILD_OK=0
fi
if ((BUILD_OK)); then
  BUILD_OK=0
  logged ninja -C "$BUILD" "${TARGETS[@]}" && BUILD_OK=1
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
# The checks.
API_RESULT="not run"
REDUCER_RESULT="not run"
BENCH_LINES=""
COLL_RESULT="not run"
FAILED=0
if ((!BUILD_OK)); then
  FAILED=1
elif [ "$MODE" = dry ]; then
  logged "${MESON[@]}" test -C "$BUILD" --no-rebuild --list --suite gpu
  API_RESULT="dry run"
  REDUCER_RESULT="dry run"
  COLL_RESULT="dry run"
else
  export MALLOC_PERTURB_=0
  if logged "${MESON[@]}" test -C "$BUILD" --no-rebuild --suite gpu --print-errorlogs --timeout-multiplier 2; then
    API_RESULT=ok
  else
    API_RESULT=FAILED
    FAILED=1
  fi
  # The suite's log holds test_gpu_reducer's RESULT lines; a SKIP means no GPU.
  cp "$BUILD/meson-logs/testlog.txt" "$LOGDIR/testlog.txt" 2>/dev/null
  REDUCER_RESULT=$(grep -E '^(RESULT|SKIP)' "$BUILD/meson-logs/testlog.txt" 2>/dev/null || echo "no RESULT lines")
  grep -q '^SKIP' <<<"$REDUCER_RESULT" && FAILED=1
  BENCH_LINES=$("$BUILD/test/gpu/test_gpu_reducer" --bench 2>&1 | tee -a "$LOG" | grep -E '^(BENCH|SKIP|FAILED)' || true)
fi

# ---------------------------------------------------------------------------
# Hook: collective benchmarks on device buffers, np=2 and np=4 sharing the
# GPU. They run once chorus-bench accepts `-d cuda` (the executor's device
# path); until then this reports them as pending.
collectives() {
  local bench=$BUILD/perf/chorus-bench
  local mpirun_args=(--oversubscribe --bind-to none -x UCX_MEMTYPE_CACHE=n -x CHORUS_LOG=warn)
  local probe
  probe=$(mpirun -np 1 "${mpirun_args[@]}" "$bench" allreduce -d cuda -m 4:4 -i 1 --no-mpi 2>&1)
  local rc=$?
  echo "$probe" >>"$LOG"
  if ((rc != 0)); then
    if grep -q 'not supported' <<<"$probe"; then
      COLL_RESULT="pending: chorus-bench -d cuda is not supported yet"
    else
      COLL_RESULT="FAILED: the np=1 probe run failed (exit status $rc, see the log)"
      FAILED=1
    fi
    return 0
  fi
  COLL_RESULT=""
  for np in 2 4; do
    local csv=$LOGDIR/allreduce-cuda-np$np.csv
    if logged mpirun -np "$np" "${mpirun_args[@]}" "$bench" allreduce -d cuda -c -m 4:256M --no-mpi --csv "$csv"; then
      COLL_RESULT+="np=$np ok ($(basename "$csv")); "
    else
      COLL_RESULT+="np=$np FAILED; "
      FAILED=1
    fi
  done
}
if ((BUILD_OK)) && [ "$MODE" = run ] && ((COLLECTIVES)); then collectives; fi

# ---------------------------------------------------------------------------
# The table, last.
{
  echo
  echo "================ Chorus GPU check ($MODE) ================"
  printf '%-12s %s\n' device "${GPU_NAME:-none visible}"
  printf '%-12s %s\n' toolchain "nvcc ${NVCC_VER:-?}, c++ ${CXX_VER:-?}, gpu_archs '$ARCHS'"
  printf '%-12s %s\n' build "$( ((BUILD_OK)) && echo "ok in ${BUILD_S}s" || echo FAILED) ${ELFS:+($ELFS)}"
  printf '%-12s %s\n' "gpu suite" "$API_RESULT"
  echo "kernels vs host_reduce (bitwise):"
  while read -r tag dt res rest; do
    [ "$tag" = RESULT ] && printf '  %-10s %-5s %s\n' "$dt" "$res" "$rest"
    [ "$tag" = SKIP: ] && echo "  skipped: $dt $res $rest"
  done <<<"$REDUCER_RESULT"
  [ "$REDUCER_RESULT" = "not run" ] || [ "$REDUCER_RESULT" = "dry run" ] && echo "  $REDUCER_RESULT"
  echo "bandwidth (float32, 256 MiB, bytes read + written):"
  if [ -n "$BENCH_LINES" ]; then sed -e 's/^BENCH //' -e 's/^/  /' <<<"$BENCH_LINES"; else echo "  not run"; fi
  printf '%-12s %s\n' collectives "$COLL_RESULT"
  printf '%-12s %s\n' logs "$LOGDIR"
  echo "result: $( ((FAILED)) && echo FAILED || echo ok)"
} | tee -a "$LOG"
exit $FAILED
