#!/usr/bin/env bash
# Makes (or reuses) what the conformance suite needs for one MPI: a venv
# with mpi4py built against that MPI from PyPI's source distribution (and
# the wheel it was installed from), and that distribution's test suite
# unpacked beside it. Prints the directory. Both are cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/chorus/mpi4py-<mpi>-<version>/ and reused
# when present (building mpi4py takes a few minutes on two cores).
# Usage: tools/mpi4py-setup.sh openmpi|mpich
set -euo pipefail
mpi=${1:?usage: tools/mpi4py-setup.sh openmpi|mpich}
version=4.1.2
case "$mpi" in
  openmpi) mpicc=mpicc ;;
  mpich) mpicc=mpicc.mpich ;;
  *) echo "unknown MPI: $mpi" >&2; exit 2 ;;
esac
dir=${XDG_CACHE_HOME:-$HOME/.cache}/chorus/mpi4py-$mpi-$version
if [ -x "$dir/venv/bin/python" ] && [ -f "$dir/test/main.py" ] &&
   "$dir/venv/bin/python" -c "import mpi4py; assert mpi4py.__version__ == '$version'" 2>/dev/null; then
  echo "$dir"
  exit 0
fi
rm -rf "$dir"
mkdir -p "$dir"
python3 -m venv "$dir/venv"
pip=("$dir/venv/bin/pip" -q --disable-pip-version-check)
# The source distribution alone (its build dependencies come as wheels).
"${pip[@]}" download --no-deps --no-binary mpi4py "mpi4py==$version" -d "$dir/sdist" >&2
sdist=$(ls "$dir"/sdist/mpi4py-"$version".tar.gz)
tar -xzf "$sdist" -C "$dir" "mpi4py-$version/test"
mv "$dir/mpi4py-$version/test" "$dir/test"
rmdir "$dir/mpi4py-$version"
# The wheel is kept beside the venv (wheel/), for other venvs of the same
# Python to install without building again (tools/test-python.sh). Without
# numpy: the suite's buffer tests run on Python's array module.
# -O1 without debug information: the C file Cython generates for it takes
# several minutes at the default -O3 -g, and the suite checks results, not speed.
CFLAGS="-O1 -g0" MPICC=$mpicc "${pip[@]}" wheel --no-deps -w "$dir/wheel" "$sdist" >&2
"${pip[@]}" install "$dir"/wheel/mpi4py-"$version"-*.whl >&2
echo "$dir"
