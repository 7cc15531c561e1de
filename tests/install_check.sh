#!/usr/bin/env bash
# Installs the build into a staging prefix and compiles + runs programs against it,
# as an embedding application would: with the documented pkg-config link line, and
# through the CMake package (tests/cmake_app). Checks that the include tree holds
# headers only and that they compile warning-free in a strict application.
# The example should use MIXT_CHECK_OP, whose fmt::format call in the application's
# own code needs fmt on the link line.
# Usage: install_check.sh <build dir> <example.cpp> <strict_app.cpp>
set -euo pipefail
build=$(cd "$1" && pwd)
example=$2
strict_app=$3
stage="$build/install-check"
rm -rf "$stage"
# (meson test builds first; the install itself builds nothing.)
meson install -C "$build" --no-rebuild --destdir "$stage" --quiet >/dev/null
pc=$(find "$stage" -name mixt.pc | head -n 1)
[ -n "$pc" ] || { echo "mixt.pc was not installed"; exit 1; }
for h in mixt/mixt.h mixt/runtime/tensor.h mixt/dispatcher/op_table.def mixt/kernels/common/elementwise.h; do
  found=$(find "$stage" -path "*/include/$h" | head -n 1)
  [ -n "$found" ] || { echo "header $h was not installed"; exit 1; }
done
# Headers only under include/mixt: .h files, and the op table (an X-macro file that
# dispatcher/op.h includes); no sources, build files or READMEs.
include_dir=$(find "$stage" -type d -path "*/include/mixt" | head -n 1)
[ -n "$include_dir" ] || { echo "no include/mixt was installed"; exit 1; }
others=$(find "$include_dir" ! -type d ! -name '*.h' ! -path '*/mixt/dispatcher/op_table.def')
[ -z "$others" ] || { echo "installed files that are not headers:"; echo "$others"; exit 1; }
# Every <mixt/...> include of an installed header is installed too.
missing=$(cd "$include_dir/.." && grep -rhoE '#include <mixt/[^>]+>' mixt | sort -u |
          sed -E 's/#include <(.*)>/\1/' | while read -r h; do [ -f "$h" ] || echo "$h"; done)
[ -z "$missing" ] || { echo "installed headers include headers that are not installed:"; echo "$missing"; exit 1; }
# Point the installed .pc file at the staging directory.
prefix=$(sed -n 's/^prefix=//p' "$pc")
sed -i "s|^prefix=.*|prefix=$stage$prefix|" "$pc"
export PKG_CONFIG_PATH="$(dirname "$pc")"
libdir=$(pkg-config --variable=libdir mixt)
# The link line of docs/getting-started.md, as it is written there.
c++ -std=c++20 "$example" -o "$stage/app" $(pkg-config --cflags --libs mixt)
LD_LIBRARY_PATH="$libdir" "$stage/app" >/dev/null
"$(dirname "$0")/header_check.sh" "$strict_app" "$(pkg-config --variable=includedir mixt)" c++ >/dev/null
# The distributed library, where it was built: its .pc file and a program against it.
dist_pc=$(find "$stage" -name mixt-distributed.pc | head -n 1)
if [ -n "$dist_pc" ]; then
  sed -i "s|^prefix=.*|prefix=$stage$prefix|" "$dist_pc"
  ddp_example="$(dirname "$example")/train_ddp.cpp"
  c++ -std=c++20 -O1 "$ddp_example" -o "$stage/ddp_app" $(pkg-config --cflags --libs mixt-distributed)
  LD_LIBRARY_PATH="$libdir" "$stage/ddp_app" --steps 1 >/dev/null
fi
# The CMake package: find_package(mixt) from the staged prefix, the examples linked
# to mixt::mixt and mixt::distributed. No C++ standard is set there: mixt::mixt's
# compile features must ask for C++20. (build.sh installs cmake.)
command -v cmake >/dev/null || { echo "cmake is missing: the CMake package cannot be checked"; exit 1; }
cmake_build="$stage/cmake-app"
cmake -S "$(dirname "$0")/cmake_app" -B "$cmake_build" -DCMAKE_PREFIX_PATH="$stage$prefix" \
      -DMIXT_REQUIRED_VERSION="$(pkg-config --modversion mixt)" >/dev/null
found=$(sed -n 's/^mixt_DIR:PATH=//p' "$cmake_build/CMakeCache.txt")
[[ "$found" == "$stage"/* ]] || { echo "find_package(mixt) found $found, not the staged package"; exit 1; }
cmake --build "$cmake_build" >/dev/null
"$cmake_build/custom_op" >/dev/null
"$cmake_build/train_ddp" --steps 1 >/dev/null
# The version file turns down a version this package is not.
if cmake -S "$(dirname "$0")/cmake_app" -B "$stage/cmake-app-v99" -DCMAKE_PREFIX_PATH="$stage$prefix" \
         -DMIXT_REQUIRED_VERSION=99.0 >/dev/null 2>&1; then
  echo "find_package(mixt 99.0) accepted mixt $(pkg-config --modversion mixt)"; exit 1
fi
echo "installed headers, libraries, pkg-config files and the CMake package work from $stage"
