#!/usr/bin/env bash
# Compiles a small application (tests/strict_app.cpp) against mixt's headers with
# -Wall -Wextra -Wpedantic -Werror and none of the project's own flags (which
# silence -Wunused-parameter): the public headers must not warn in an application.
# Usage: header_check.sh <program.cpp> <include dir> <compiler command...>
set -euo pipefail
src=$1
inc=$2
shift 2
obj=$(mktemp)
trap 'rm -f "$obj"' EXIT
for opt in -O0 -O2; do  # optimizing enables more diagnostics (maybe-uninitialized, array-bounds)
  "$@" -std=c++20 -Wall -Wextra -Wpedantic -Werror "$opt" -I"$inc" -c "$src" -o "$obj"
done
echo "$src compiles warning-free with -Wall -Wextra -Wpedantic -Werror against $inc"
