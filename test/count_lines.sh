#!/bin/sh
# Run a command, print its output, and check that it succeeded and that
# exactly COUNT lines of its output (stdout and stderr) contain PATTERN.
# Usage: count_lines.sh COUNT PATTERN COMMAND ARGS...
want=$1 pattern=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"
n=$(grep -c -- "$pattern" "$out")
[ "$rc" -eq 0 ] || { echo "count_lines: the command failed ($rc)"; exit 1; }
[ "$n" -eq "$want" ] || { echo "count_lines: $n lines contain '$pattern', want $want"; exit 1; }
echo "count_lines: $n lines contain '$pattern', as wanted"
