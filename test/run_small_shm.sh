#!/bin/sh
# Runs an MPI program with a /dev/shm too small for Chorus's shared-memory
# segments (a tmpfs of 64 KiB in a mount namespace of its own): creation must
# not die with SIGBUS at the first touch of a segment but say why and carry
# every message over UCX instead. The MPI's and UCX's own shared memory go to
# /tmp meanwhile (the launcher's options that say so come first in ARGS).
# Needs root; skips (77) where a mount namespace cannot be made.
# Usage: run_small_shm.sh MPIRUN ARGS...   (run as MPIRUN -np 2 ARGS...)
mpirun=$1
shift
if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2>/dev/null; then
    echo "skipped: needs root and mount namespaces"
    exit 77
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
unshare -m sh -c '
    mount -t tmpfs -o size=64k tmpfs /dev/shm || exit 77
    exec "$@"' sh "$mpirun" -np 2 "$@" >"$out" 2>&1
rc=$?
cat "$out"
[ "$rc" -eq 77 ] && exit 77
[ "$rc" -eq 0 ] || { echo "run_small_shm: the program failed ($rc)"; exit 1; }
grep -q "shared memory for small messages unavailable (reserving" "$out" ||
    { echo "run_small_shm: no word about the segment that could not be reserved"; exit 1; }
echo "run_small_shm: the program ran, and said why shared memory was not used"
