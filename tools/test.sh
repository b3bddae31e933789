#!/usr/bin/env bash
# Every test: installs missing packages, then builds from scratch three ways,
# each with warnings as errors, and runs the test suites:
#   build/         default configuration (CUDA if nvcc is found): every suite
#   build-nocuda/  -Dcuda=disabled: unit and mpi suites
#   build-asan/    AddressSanitizer + UBSan: unit and loopback suites
#   build-tsan/    ThreadSanitizer: the thread tests (suite threads)
# Usage: tools/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
source tools/env.sh
rm -rf build build-nocuda build-asan build-tsan

meson setup build -Dwerror=true
meson compile -C build
meson test -C build --print-errorlogs

meson setup build-nocuda -Dcuda=disabled -Dwerror=true
meson compile -C build-nocuda
meson test -C build-nocuda --print-errorlogs --suite unit --suite mpi

meson setup build-asan -Dcuda=disabled -Dbuildtype=debugoptimized -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=true
meson compile -C build-asan
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
  meson test -C build-asan --print-errorlogs --suite unit --suite loopback --timeout-multiplier 4

# ThreadSanitizer: collectives from several threads at once, through the C
# API (loopback and mpirun) and under the preload. UCX's memory hooks are off
# (they patch mmap, which ThreadSanitizer intercepts); reports inside MPI and
# UCX, which are not instrumented, are suppressed (test/tsan.supp).
meson setup build-tsan -Dcuda=disabled -Dbuildtype=debugoptimized -Db_sanitize=thread -Db_lundef=false -Dwerror=true
meson compile -C build-tsan test/test_loopback test/test_mpi_dropin test/interposer/interposer_dropin \
  test/interposer/interposer_icalls lib/mpi/chorus_mpi
TSAN_OPTIONS="suppressions=$PWD/test/tsan.supp halt_on_error=1" UCX_MEM_EVENTS=no \
  meson test -C build-tsan --no-rebuild --print-errorlogs --suite threads --timeout-multiplier 2
