#!/usr/bin/env bash
# The library's layers include only what is below them (docs/architecture.md):
#   core -> coll -> exec -> (net, reduce, cuda), and everything -> base;
#   lib/coll sees the schedule IR and datatype facts only;
#   lib/mpi (libchorus_mpi.so) and lib/fortran see chorus.h only;
#   perf/ sees chorus.h, its own headers, and the library's inside only
#   through perf/internal.h.
# Prints every include that breaks a rule; exits 1 if there is any.
set -euo pipefail
cd "$(dirname "$0")/../lib"
allowed() {  # folder -> extended regex of the quoted includes it may use
  case "$1" in
    base) echo '^(chorus\.h|base/)' ;;
    reduce) echo '^(chorus\.h|base/|reduce/)' ;;
    cuda) echo '^(chorus\.h|base/|cuda/|reduce/(half|ops)\.h)' ;;
    net) echo '^(chorus\.h|base/|net/)' ;;
    exec) echo '^(chorus\.h|base/|exec/|net/transport\.h|reduce/|cuda/cuda_runtime_api\.h)' ;;
    coll) echo '^(chorus\.h|base/|coll/|exec/schedule\.h|reduce/datatype\.h)' ;;
    core) echo '^(chorus\.h|base/|core/|coll/|exec/|net/|reduce/datatype\.h|cuda/cuda_runtime_api\.h)' ;;
    mpi) echo '^(chorus\.h|interposer\.h|intercept\.h|requests\.h|blocks\.h|fortran\.h|small_vector\.h|tuning\.h)' ;;
    fortran) echo '^chorus\.h' ;;
    *) echo '^$' ;;
  esac
}
bad=0
for dir in */; do
  dir=${dir%/}
  rule=$(allowed "$dir")
  while IFS=: read -r file line text; do
    inc=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$text")
    if ! grep -Eq "$rule" <<<"$inc"; then
      echo "lib/$file:$line: $dir may not include \"$inc\""
      bad=1
    fi
  done < <(grep -rn --include='*.h' --include='*.cc' --include='*.cu' '#include "' "$dir" || true)
done
cd ../perf
while IFS=: read -r file line text; do
  inc=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$text")
  if [ "$file" != internal.h ] && [ ! -f "$inc" ] && [ "$inc" != chorus.h ]; then
    echo "perf/$file:$line: perf/ may not include \"$inc\" (the library's inside: through internal.h)"
    bad=1
  fi
done < <(grep -n '#include "' -- *.h *.cc *.c || true)
exit $bad
