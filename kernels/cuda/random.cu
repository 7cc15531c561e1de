// Device kernels of uniform_, normal_ and random_: thread j of the grid-stride loop draws
// Philox block offset + j and writes elements [j * P, j * P + lanes) with the CPU's
// transforms, so uniform_ and random_ equal the CPU's bits. normal_ computes Box-Muller in
// double on both backends; the device's log, sin and cos are within 1-2 ulp of the host's
// (not always the same rounding), so a float64 normal_ may differ from the CPU in the last
// bits and a narrower one in rare double-rounding cases.
#include <type_traits>

#include <mixt/kernels/common/random_transforms.h>
#include <mixt/kernels/cuda/loops.cuh>
#include <mixt/kernels/cuda/random_launch.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {
namespace {

template <class T, RandomKind kind>
__global__ void random_kernel(RandomArgs a) {
  constexpr int P = rng::per_block<T>();
  const int64_t blocks = static_cast<int64_t>(rng::blocks_needed(a.n, P));
  T* out = static_cast<T*>(a.out);
  for (int64_t j = grid_start(); j < blocks; j += grid_step()) {
    const philox::Block blk = philox::generate(a.seed, a.offset + static_cast<uint64_t>(j));
    const int lanes = rng::block_lanes(j, a.n, P);
    if constexpr (kind == RandomKind::Uniform) rng::uniform_block(blk, out + j * P, lanes, a.a, a.b);
    else if constexpr (kind == RandomKind::Normal) rng::normal_block(blk, out + j * P, lanes, a.a, a.b);
    else rng::random_block(blk, out + j * P, lanes, a.low, a.range);
  }
}

template <RandomKind kind, uint32_t Dtypes>
cudaError_t launch_kind(const RandomArgs& a, cudaStream_t stream, const char* op) {
  return visit_dtype<Dtypes>(a.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto blocks = static_cast<int64_t>(rng::blocks_needed(a.n, rng::per_block<T>()));
    launch_kernel(random_kernel<T, kind>, {grid_for(blocks), kBlockThreads, 0, stream}, a);
    return cudaGetLastError();
  });
}

}  // namespace

cudaError_t launch_random(const RandomArgs& a, cudaStream_t stream) {
  if (a.n == 0) return cudaSuccess;
  switch (a.kind) {
    case RandomKind::Uniform: return launch_kind<RandomKind::Uniform, dtypes::kFloating>(a, stream, "uniform_");
    case RandomKind::Normal: return launch_kind<RandomKind::Normal, dtypes::kFloating>(a, stream, "normal_");
    case RandomKind::Integers: return launch_kind<RandomKind::Integers, dtypes::kAll>(a, stream, "random_");
  }
  return cudaErrorInvalidValue;
}

}  // namespace mixt::cuda
