#!/usr/bin/env bash
# Every test: installs missing packages, builds from scratch with warnings as
# errors (default configuration, and once more with -Dcuda=disabled), and runs
# the test suites. Usage: tools/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
source tools/env.sh
rm -rf build build-nocuda
meson setup build -Dwerror=true
meson compile -C build
meson test -C build --print-errorlogs
# The build without CUDA must compile and pass on its own.
meson setup build-nocuda -Dcuda=disabled -Dwerror=true
meson compile -C build-nocuda
meson test -C build-nocuda --print-errorlogs --suite unit --suite mpi
