// copy_ on the CPU: broadcasting, conversion between every pair of dtypes, and
// overlap-safe copies within one storage; `to` and `clone` between CPU tensors; and the
// host copy helpers kernels call directly (kernels/common/host_copy.h).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/kernels/cpu/vec/convert.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cpu {
namespace {

// Bytes per thread below which a contiguous copy stays on one thread (a fork and join
// costs about what copying this much from cache does).
constexpr int64_t kCopyGrain = int64_t{256} << 10;

bool overlaps_differently(const Tensor& a, const Tensor& b) {
  return a.shares_storage(b) &&
         !(a.storage_offset() == b.storage_offset() && a.strides() == b.strides() && a.dtype() == b.dtype());
}

// `bytes` from `src` to `dst`: split over the threads when large and the ranges are
// disjoint (memory bandwidth needs both cores here: one thread copies at about half the
// rate), one memmove when they overlap (tensors over the same memory from separate
// blobs), nothing when they coincide.
void copy_bytes(char* dst, const char* src, int64_t bytes) {
  if (dst == src || bytes <= 0) return;
  const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  const auto n = static_cast<uintptr_t>(bytes);
  if (d < s + n && s < d + n) {  // as addresses: the two may come from unrelated allocations
    std::memmove(dst, src, static_cast<size_t>(bytes));
    return;
  }
  parallel_for(bytes, kCopyGrain,
               [&](int64_t b, int64_t e) { std::memcpy(dst + b, src + b, static_cast<size_t>(e - b)); });
}

void copy_kernel(OpCall& c, DispatchKeySet) {
  Tensor& dst = c.in[0];
  MIXT_CHECK_OP(dst.is_cpu() && c.in[1].is_cpu(), c, "the CPU copy handles CPU tensors only");
  host::copy_into(dst, c.in[1], c);
  c.out[0] = dst;
}

// `to` between CPU tensors (another device's key wins when either side is elsewhere).
void to_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& t = c.in[0];
  MIXT_CHECK_OP(t.is_cpu() && c.attrs.device.is_cpu(), c, "the CPU `to` handles CPU tensors only, not {} to {}",
                t.device(), c.attrs.device);
  const ScalarType dtype = c.attrs.dtype == ScalarType::Undefined ? t.dtype() : c.attrs.dtype;
  c.out[0] = dtype == t.dtype() && c.attrs.device == t.device() ? t : host::copied(t, dtype, c);
}

void clone_kernel(OpCall& c, DispatchKeySet) {
  MIXT_CHECK_OP(c.in[0].is_cpu(), c, "the CPU clone handles CPU tensors only");
  c.out[0] = host::copied(c.in[0], c.in[0].dtype(), c);
}

// Note [float16 widening]: float16 -> float32 is exact, so the F16C instruction
// (every x86-64 CPU since 2012) gives Half's software decoding, about ten times
// faster, for every code but the signalling NaNs, which F16C quiets and Half keeps
// as they are: a group of 8 that holds one is decoded in software. Picked at run time
// (the build targets baseline x86-64). The narrowing direction stays in software:
// F16C keeps NaN payloads where Half gives the canonical 0x7e00. Test: "float16 ->
// float32 of a tensor gives Half's bits for all 65536 codes".
#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) void widen_half_f16c(float* out, const Half* in, int64_t n) {
  const __m128i magnitude = _mm_set1_epi16(0x7fff), inf = _mm_set1_epi16(0x7c00), quiet = _mm_set1_epi16(0x0200);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m128i nan = _mm_cmpgt_epi16(_mm_and_si128(h, magnitude), inf);
    const __m128i signalling = _mm_andnot_si128(_mm_cmpeq_epi16(_mm_and_si128(h, quiet), quiet), nan);
    if (_mm_movemask_epi8(signalling) != 0) {
      for (int64_t j = i; j < i + 8; ++j) out[j] = static_cast<float>(in[j]);
      continue;
    }
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
}
const bool kHasF16c = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
#endif

// out[i] = float(in[i]) over a contiguous run.
void widen_half(float* out, const Half* in, int64_t n) {
#if defined(__x86_64__)
  if (kHasF16c) return widen_half_f16c(out, in, n);
#endif
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

}  // namespace

// The casts convert_run takes to kernels/cpu/vec/convert.h.
template <class To, class From>
inline constexpr bool kVectorCast =
    (std::is_same_v<To, float> && std::is_same_v<From, BFloat16>) ||
    (std::is_same_v<From, float> && (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>));

// Contiguous runs of the casts between float32 and float16 / bfloat16 in vector lanes,
// with the bits of the scalar conversions (Note [float16 widening]; the narrowing
// directions and bfloat16 widening through kernels/cpu/vec/convert.h, bit-identical on
// every instruction set). False for the other pairs, which take the scalar loop.
template <class To, class From>
bool convert_run(char* out, const char* in, int64_t n) {
  const size_t count = static_cast<size_t>(n);
  if constexpr (std::is_same_v<To, float> && std::is_same_v<From, Half>) {
    widen_half(reinterpret_cast<float*>(out), reinterpret_cast<const Half*>(in), n);
    return true;
  } else if constexpr (std::is_same_v<To, float> && std::is_same_v<From, BFloat16>) {
    vec::to_float(reinterpret_cast<const BFloat16*>(in), reinterpret_cast<float*>(out), count);
    return true;
  } else if constexpr (kVectorCast<To, From>) {
    vec::from_float(reinterpret_cast<const float*>(in), reinterpret_cast<To*>(out), count);
    return true;
  } else {
    return false;
  }
}

// Note [Transposing copies]: a copy whose source runs along dim 1 of the layout while
// the destination runs along dim 0 (x.t().contiguous(), a permute's copy) reads one cache
// line per element when it follows the destination. The two dims go in tiles of
// kTransposeTile squared instead, staged through a small buffer so that every line of
// either side is read or written once, whole: rows a power-of-two apart share an L1 set,
// and a tile read in place (its lines reused across the tile) was evicted before its
// reuse. [2048, 4096] float32 .t().contiguous(): 26 ms one element at a time, 9 ms in
// tiles read in place, about 3 ms staged (two threads).
constexpr int64_t kTransposeTile = 32;

// True when L (operand 0 the destination, 1 the source) is such a transposition, with both
// dims long enough for tiles to pay.
bool is_transposition(const StridedLayout& L, int64_t dst_element, int64_t src_element) {
  return L.ndim >= 2 && L.strides[0][0] == dst_element && L.strides[1][1] == src_element &&
         L.strides[1][0] != src_element && L.sizes[0] >= kTransposeTile / 2 && L.sizes[1] >= kTransposeTile / 2;
}

// The copy of Note [Transposing copies]: tiles of dims 0 and 1 for every index of the outer
// dims, spread over the threads.
template <class To, class From>
void copy_transposed(const StridedLayout& L, char* const* base) {
  const int64_t n0 = L.sizes[0], n1 = L.sizes[1];
  const int64_t tiles0 = (n0 + kTransposeTile - 1) / kTransposeTile, tiles1 = (n1 + kTransposeTile - 1) / kTransposeTile;
  int64_t outer = 1;
  for (int d = 2; d < L.ndim; ++d) outer *= L.sizes[d];
  const int64_t per_outer = tiles0 * tiles1;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (kTransposeTile * kTransposeTile));
  parallel_for(outer * per_outer, grain, [&](int64_t b, int64_t e) {
    To buf[kTransposeTile][kTransposeTile];
    for (int64_t task = b; task < e; ++task) {
      int64_t rest = task / per_outer;
      char* dst = base[0];
      const char* src = base[1];
      for (int d = 2; d < L.ndim; ++d) {
        const int64_t i = rest % L.sizes[d];
        rest /= L.sizes[d];
        dst += i * L.strides[0][d];
        src += i * L.strides[1][d];
      }
      const int64_t tile = task % per_outer;
      const int64_t i0 = (tile / tiles1) * kTransposeTile, j0 = (tile % tiles1) * kTransposeTile;
      const int64_t i1 = std::min(n0, i0 + kTransposeTile), j1 = std::min(n1, j0 + kTransposeTile);
      // Source rows in, converted, to a transposed tile in L1; then whole destination rows out.
      // Each line of either side is touched once, whatever the L1 set its stride maps to.
      for (int64_t i = i0; i < i1; ++i) {
        const From* in = reinterpret_cast<const From*>(src + i * L.strides[1][0]);  // unit stride along dim 1
        for (int64_t j = j0; j < j1; ++j) buf[j - j0][i - i0] = convert<To>(in[j]);
      }
      for (int64_t j = j0; j < j1; ++j) {
        To* out = reinterpret_cast<To*>(dst + j * L.strides[0][1]);
        for (int64_t i = i0; i < i1; ++i) out[i] = buf[j - j0][i - i0];
      }
    }
  });
}

}  // namespace mixt::cpu

namespace mixt::host {

void copy_into(const Tensor& dst, const Tensor& src_in, const OpCall& c) {
  MIXT_CHECK_OP(dst.is_cpu() && src_in.is_cpu(), c, "a host copy takes CPU tensors, got {} and {}", dst.device(),
                src_in.device());
  MIXT_CHECK_OP(broadcast_shapes(src_in.sizes(), dst.sizes(), "copy_") == dst.sizes(), c,
                "source of shape {} cannot be broadcast to the destination's {}", src_in.sizes(), dst.sizes());
  check_writable(c, dst, "the destination");
  if (dst.numel() == 0) return;
  const Tensor src = cpu::overlaps_differently(dst, src_in) ? copied(src_in, src_in.dtype(), c) : src_in;
  if (src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous() && src.numel() == dst.numel()) {
    cpu::copy_bytes(static_cast<char*>(dst.data_ptr()), static_cast<const char*>(src.data_ptr()), dst.nbytes());
    return;
  }
  const OperandGeometry geom[2] = {{&dst.sizes(), &dst.strides(), dst.element_size()},
                                   {&src.sizes(), &src.strides(), src.element_size()}};
  const StridedLayout L = make_strided_layout(dst.sizes(), geom);
  char* base[2] = {static_cast<char*>(dst.data_ptr()), static_cast<char*>(src.data_ptr())};
  visit_dtype(dst.dtype(), "copy_", [&](auto to_tag) {
    using To = typename decltype(to_tag)::type;
    visit_dtype(src.dtype(), "copy_", [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      // A bad MIXT_CPU_ISA raises here, before the threads start (isa.h).
      if constexpr (cpu::kVectorCast<To, From>) (void)cpu::vec::active_isa();
      if (cpu::is_transposition(L, dst.element_size(), src.element_size())) return cpu::copy_transposed<To, From>(L, base);
      cpu::for_each(L, base, [](char** p, const int64_t* s, int64_t n) {
        char* out = p[0];
        const char* in = p[1];
        if (s[0] == sizeof(To) && s[1] == sizeof(From) && cpu::convert_run<To, From>(out, in, n)) return;
        if (s[0] == sizeof(To) && s[1] == sizeof(From)) {
          To* o = reinterpret_cast<To*>(out);
          const From* x = reinterpret_cast<const From*>(in);
          for (int64_t i = 0; i < n; ++i) o[i] = convert<To>(x[i]);
        } else {
          for (int64_t i = 0; i < n; ++i)
            *reinterpret_cast<To*>(out + i * s[0]) = convert<To>(*reinterpret_cast<const From*>(in + i * s[1]));
        }
      });
    });
  });
}

Tensor copied(const Tensor& t, ScalarType dtype, const OpCall& call) {
  Tensor out = make_empty(t.sizes(), dtype, t.device());
  copy_into(out, t, call);
  return out;
}

Tensor converted(const Tensor& t, ScalarType dtype, const OpCall& call) {
  return t.dtype() == dtype ? t : copied(t, dtype, call);
}

Tensor contiguous(const Tensor& t, const OpCall& call) { return t.is_contiguous() ? t : copied(t, t.dtype(), call); }

}  // namespace mixt::host

namespace mixt::cpu {

void register_copy_kernels() {
  register_kernel(OpId::copy_, DispatchKey::CPU, copy_kernel);
  // The CPU's own `to` and clone: the shared ones (kernels/common/movement.cpp) dispatch copy_.
  register_kernel(OpId::to, DispatchKey::CPU, to_kernel);
  register_kernel(OpId::clone, DispatchKey::CPU, clone_kernel);
}

}  // namespace mixt::cpu
