// The attribute structs of the built-in ops (mixt::attrs::Slice, ...), generated
// from their declarations in op_table.def. See Note [Named attributes].
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

#include <mixt/dispatcher/attrs.h>

namespace mixt::attrs {
#define MIXT_ATTRS(Name, seq) MIXT_ATTRS_STRUCT(Name, seq)
#define MIXT_OP(name, min_in, max_in, n_out, flags, attr_struct, meta_rule)
#include <mixt/dispatcher/op_table.def>
#undef MIXT_OP
#undef MIXT_ATTRS
}  // namespace mixt::attrs
