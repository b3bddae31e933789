#!/usr/bin/env bash
# The installed package as a user meets it: `meson install` into a staging
# directory, then the consumer program built through pkg-config (chorus.pc,
# its prefix moved there) and through CMake (find_package(chorus)),
# each run under the launcher at np=2.
# Usage: check_package.sh BUILD_DIR SOURCE_DIR LAUNCHER ENV_FLAG
set -euo pipefail
build=$1 src=$2 launcher=$3 env_flag=$4
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
meson install -C "$build" --no-rebuild --quiet --destdir "$stage" >/dev/null
prefix=$(meson introspect "$build" --buildoptions | python3 -c \
  "import json,sys; print(next(o['value'] for o in json.load(sys.stdin) if o['name'] == 'prefix'))")
libdir=$(meson introspect "$build" --buildoptions | python3 -c \
  "import json,sys; print(next(o['value'] for o in json.load(sys.stdin) if o['name'] == 'libdir'))")
root=$stage$prefix
export LD_LIBRARY_PATH=$root/$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

echo "pkg-config:"
# chorus.pc with its prefix moved to the staging directory (the MPI's own
# .pc, which it requires, stays where it is).
mkdir "$stage/pc"
sed "s|^prefix=.*|prefix=$root|" "$root/$libdir/pkgconfig/chorus.pc" >"$stage/pc/chorus.pc"
flags=$(PKG_CONFIG_PATH=$stage/pc pkg-config --cflags --libs chorus)
echo "  $flags"
cc -o "$stage/consumer-pc" "$src/test/package/consumer.c" $flags
"$launcher" -np 2 "$env_flag" "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" "$stage/consumer-pc"

echo "CMake:"
cmake -S "$src/test/package" -B "$stage/cmake" -DCMAKE_PREFIX_PATH="$root" >"$stage/cmake.log" 2>&1 ||
  { cat "$stage/cmake.log"; exit 1; }
cmake --build "$stage/cmake" >>"$stage/cmake.log" 2>&1 || { cat "$stage/cmake.log"; exit 1; }
"$launcher" -np 2 "$env_flag" "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" "$stage/cmake/consumer"
