#!/usr/bin/env bash
# Installs the build into a staging prefix and compiles + runs a program against
# it through pkg-config, as an embedding application would.
# Usage: install_check.sh <build dir> <example.cpp>
set -euo pipefail
build=$(cd "$1" && pwd)
example=$2
stage="$build/install-check"
rm -rf "$stage"
meson install -C "$build" --destdir "$stage" --quiet >/dev/null
pc=$(find "$stage" -name mixt.pc | head -n 1)
[ -n "$pc" ] || { echo "mixt.pc was not installed"; exit 1; }
for h in mixt/mixt.h mixt/runtime/tensor.h mixt/dispatcher/op_table.def mixt/kernels/common/elementwise.h; do
  found=$(find "$stage" -path "*/include/$h" | head -n 1)
  [ -n "$found" ] || { echo "header $h was not installed"; exit 1; }
done
# Point the installed .pc file at the staging directory.
prefix=$(sed -n 's/^prefix=//p' "$pc")
sed -i "s|^prefix=.*|prefix=$stage$prefix|" "$pc"
export PKG_CONFIG_PATH="$(dirname "$pc")"
flags=$(pkg-config --cflags --libs mixt)
libdir=$(pkg-config --variable=libdir mixt)
c++ -std=c++20 -O1 "$example" -o "$stage/app" $flags
LD_LIBRARY_PATH="$libdir" "$stage/app" >/dev/null
echo "installed headers, library and mixt.pc work from $stage"
