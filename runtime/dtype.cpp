// The promotion grid and result_type. See Note [Promotion grid] in docs/notes.
#include <mixt/runtime/check.h>
#include <mixt/runtime/dtype.h>

namespace mixt {
namespace {

constexpr ScalarType b1 = kBool, u1 = kUInt8, i1 = kInt8, i4 = kInt32, i8 = kInt64, f2 = kFloat16,
                     bf = kBFloat16, f4 = kFloat32, f8 = kFloat64, e4 = kFloat8_e4m3fn, e5 = kFloat8_e5m2,
                     ud = ScalarType::Undefined;

// Row: first operand, column: second, in the order of MIXT_FORALL_DTYPES.
// uint8 with int8 gives int32 (PyTorch gives int16, which mixt does not have).
// float8 mixes with nothing but itself (PyTorch refuses these promotions too).
constexpr ScalarType kGrid[kNumDtypes][kNumDtypes] = {
    //        b1  u1  i1  i4  i8  f2  bf  f4  f8  e4  e5
    /* b1 */ {b1, u1, i1, i4, i8, f2, bf, f4, f8, ud, ud},
    /* u1 */ {u1, u1, i4, i4, i8, f2, bf, f4, f8, ud, ud},
    /* i1 */ {i1, i4, i1, i4, i8, f2, bf, f4, f8, ud, ud},
    /* i4 */ {i4, i4, i4, i4, i8, f2, bf, f4, f8, ud, ud},
    /* i8 */ {i8, i8, i8, i8, i8, f2, bf, f4, f8, ud, ud},
    /* f2 */ {f2, f2, f2, f2, f2, f2, f4, f4, f8, ud, ud},
    /* bf */ {bf, bf, bf, bf, bf, f4, bf, f4, f8, ud, ud},
    /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f8, ud, ud},
    /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, ud, ud},
    /* e4 */ {ud, ud, ud, ud, ud, ud, ud, ud, ud, e4, ud},
    /* e5 */ {ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, e5},
};

ScalarType promote_skip_undefined(ScalarType a, ScalarType b) {
  if (a == ScalarType::Undefined) return b;
  if (b == ScalarType::Undefined) return a;
  return promote_types(a, b);
}

ScalarType combine_categories(ScalarType higher, ScalarType lower) {
  if (higher == ScalarType::Undefined) return lower;
  if (higher == lower) return higher;
  if (is_floating(higher)) return higher;
  if (higher == kBool || is_floating(lower)) return promote_skip_undefined(higher, lower);
  return higher;
}

}  // namespace

ScalarType promote_types_or_undefined(ScalarType a, ScalarType b) {
  if (a == ScalarType::Undefined || b == ScalarType::Undefined) return ScalarType::Undefined;
  return kGrid[static_cast<int>(a)][static_cast<int>(b)];
}

ScalarType promote_types(ScalarType a, ScalarType b) {
  const ScalarType r = promote_types_or_undefined(a, b);
  MIXT_CHECK(r != ScalarType::Undefined, "promote_types",
             "no promotion between {} and {} (float8 types only combine with themselves: cast explicitly)", a, b);
  return r;
}

bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating(from) && is_integral(to)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

void update_result_type(ResultTypeState& state, ScalarType dtype, OperandKind kind) {
  switch (kind) {
    case OperandKind::WrappedScalar:
      state.wrapped_result = promote_skip_undefined(state.wrapped_result, is_floating(dtype) ? kFloat32 : dtype);
      break;
    case OperandKind::ZeroDim: state.zero_dim_result = promote_skip_undefined(state.zero_dim_result, dtype); break;
    case OperandKind::Dim: state.dim_result = promote_skip_undefined(state.dim_result, dtype); break;
  }
}

ScalarType result_type(const ResultTypeState& s) {
  return combine_categories(s.dim_result, combine_categories(s.zero_dim_result, s.wrapped_result));
}

}  // namespace mixt
