// uniform_, normal_ and random_ on CUDA: the checks and the generator reservation of the
// CPU kernels (same number of blocks, so the generator advances alike), the values drawn on
// the device (kernels/cuda/random.cu). Non-contiguous tensors are generated into a dense
// temporary and copied.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/random_checks.h>
#include <mixt/kernels/common/random_transforms.h>
#include <mixt/kernels/cuda/factory.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/random_launch.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/generator.h>

namespace mixt::cuda {
namespace {

// The tensor an in-place random op writes (out[0], or in[0] when no output was given).
Tensor target(OpCall& c) {
  Tensor self = c.out[0].defined() ? c.out[0] : c.in[0];
  MIXT_CHECK_OP(self.is_cuda(), c, "the CUDA kernel got a tensor on {}", self.device());
  return self;
}

// Reserves the call's blocks and fills `self` (args carries the kind and its parameters).
void generate(OpCall& c, const Tensor& self, RandomArgs a) {
  c.out[0] = self;
  const int64_t n = self.numel();
  if (n == 0) return;
  check_writable(c, self, "the tensor");
  const int per_block = element_size(self.dtype()) == 8 ? 2 : 4;  // rng::per_block<T>()
  Generator& gen = c.attrs.generator ? *c.attrs.generator : default_generator();
  const Generator::Reservation r = gen.reserve(rng::blocks_needed(n, per_block));
  const Tensor dst = self.is_contiguous() ? self : make_empty(self.sizes(), self.dtype(), self.device());
  a.out = dst.data_ptr();
  a.n = n;
  a.seed = r.seed;
  a.offset = r.offset;
  a.dtype = self.dtype();
  const char* op = op_name(c.op).data();
  DeviceGuard guard(self.device().index(), op);
  const cudaStream_t stream = current_native_stream(self.device().index());
  check(launch_random(a, stream), op);
  if (!dst.is_same(self)) move_elements(self, dst, stream, op);
}

void uniform_kernel(OpCall& c, DispatchKeySet) {
  const Tensor self = target(c);
  const double low = c.attrs.get<attrs::Uniform>().low, high = c.attrs.get<attrs::Uniform>().high;
  check_uniform(c, self, low, high);
  RandomArgs a;
  a.kind = RandomKind::Uniform;
  a.a = low, a.b = high;
  generate(c, self, a);
}

void normal_kernel(OpCall& c, DispatchKeySet) {
  const Tensor self = target(c);
  const double mean = c.attrs.get<attrs::Normal>().mean, sd = c.attrs.get<attrs::Normal>().std;
  check_normal(c, self, mean, sd);
  RandomArgs a;
  a.kind = RandomKind::Normal;
  a.a = mean, a.b = sd;
  generate(c, self, a);
}

void random_kernel(OpCall& c, DispatchKeySet) {
  const Tensor self = target(c);
  const int64_t low = c.attrs.get<attrs::RandomInts>().low, high = c.attrs.get<attrs::RandomInts>().high;
  check_random_range(c, low, high, self.dtype());
  RandomArgs a;
  a.kind = RandomKind::Integers;
  a.low = low;
  a.range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  generate(c, self, a);
}

}  // namespace

void register_random_kernels() {
  register_kernel(OpId::uniform_, DispatchKey::CUDA, uniform_kernel);
  register_kernel(OpId::normal_, DispatchKey::CUDA, normal_kernel);
  register_kernel(OpId::random_, DispatchKey::CUDA, random_kernel);
}

}  // namespace mixt::cuda
