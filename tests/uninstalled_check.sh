#!/usr/bin/env bash
# Builds and runs programs against the build tree itself, uninstalled, through the
# pkg-config files Meson writes to <build>/meson-uninstalled: the link line of
# docs/getting-started.md with PKG_CONFIG_PATH at that folder.
# Usage: uninstalled_check.sh <build dir> <examples dir>
set -euo pipefail
build=$(cd "$1" && pwd)
examples=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export PKG_CONFIG_PATH="$build/meson-uninstalled"
# The libraries stay where the build put them: the link line's -L folders.
library_path() { pkg-config --libs-only-L "$1" | sed -E 's/^ *-L//; s/ +-L/:/g; s/ +$//'; }

c++ -std=c++20 "$examples/custom_op.cpp" -o "$out/custom_op" $(pkg-config --cflags --libs mixt)
LD_LIBRARY_PATH="$(library_path mixt)" "$out/custom_op" >/dev/null

c++ -std=c++20 "$examples/train_ddp.cpp" -o "$out/train_ddp" $(pkg-config --cflags --libs mixt-distributed)
LD_LIBRARY_PATH="$(library_path mixt-distributed)" "$out/train_ddp" --steps 1 >/dev/null
echo "programs build and run against the uninstalled tree $build"
