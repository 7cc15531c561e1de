#!/usr/bin/env bash
# kernels/cuda/nvcc-with-depfile.sh against a stand-in nvcc that records its arguments:
# a compile gets `-MD -MF OBJ.d` added, anything else passes through unchanged, and
# --native-file writes a meson machine file naming the script (or nothing without nvcc).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
wrapper="$here/../kernels/cuda/nvcc-with-depfile.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$tmp/nvcc" <<'FAKE'
#!/usr/bin/env bash
printf '%s\n' "$@" > "$(dirname "$0")/args"
FAKE
chmod +x "$tmp/nvcc"
export MIXT_REAL_NVCC="$tmp/nvcc" MIXT_NO_CCACHE=1

"$wrapper" -O3 -c a.cu -o obj/a.cu.o
[ "$(tr '\n' ' ' < "$tmp/args")" = "-O3 -c a.cu -o obj/a.cu.o -MD -MF obj/a.cu.o.d " ] ||
  fail "a compile: $(tr '\n' ' ' < "$tmp/args")"

"$wrapper" -o prog a.o -lcudart
[ "$(tr '\n' ' ' < "$tmp/args")" = "-o prog a.o -lcudart " ] || fail "a link: $(tr '\n' ' ' < "$tmp/args")"

"$wrapper" --version
[ "$(cat "$tmp/args")" = "--version" ] || fail "the version probe: $(cat "$tmp/args")"

opt="$("$wrapper" --native-file "$tmp/build")"
[ "$opt" = "--native-file $tmp/build/nvcc-native.ini" ] || fail "the option printed: $opt"
grep -qx "cuda = '$(cd "$here/../kernels/cuda" && pwd)/nvcc-with-depfile.sh'" "$tmp/build/nvcc-native.ini" ||
  fail "the machine file: $(cat "$tmp/build/nvcc-native.ini")"

# Without any nvcc: no option, no file (a CPU-only build).
if [ ! -x /usr/local/cuda/bin/nvcc ]; then
  opt="$(PATH=/usr/bin:/bin MIXT_REAL_NVCC= "$wrapper" --native-file "$tmp/none")"
  [ -z "$opt" ] && [ ! -e "$tmp/none/nvcc-native.ini" ] || fail "without nvcc: '$opt'"
fi
echo "nvcc-with-depfile.sh: all checks passed"
