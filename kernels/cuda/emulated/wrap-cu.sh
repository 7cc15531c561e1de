#!/bin/sh
# wrap-cu.sh IN.cu OUT.cpp: the C++ translation unit an emulated build compiles for a
# .cu file: the device emulation header first, then the .cu file itself (by absolute
# path, so its own relative includes still resolve).
set -eu
{
  echo '#include <mixt/kernels/cuda/emulated/device_runtime.h>'
  echo "#include \"$(realpath "$1")\""
} > "$2"
