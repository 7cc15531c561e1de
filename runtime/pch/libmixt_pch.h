// The precompiled header of libmixt's C++ sources (Note [Precompiled header] in
// docs/notes/build.md): the standard and mixt headers that most of them include, parsed
// once per build instead of once per file. Meson force-includes it into every C++ source of
// the library (`-Db_pch=false` turns that off, e.g. to check that each file includes what
// it uses). Only headers that every source may see first: nothing that depends on the
// CUDA compiler or the emulated device's macros, and not the op front ends
// (runtime/ops/ops.h): their mixt::log(const Tensor&) and the like would hide std's math
// functions from unqualified calls in the kernels. (No include guard: it is compiled as a
// file of its own, where #pragma once warns.)

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/tensor.h>
