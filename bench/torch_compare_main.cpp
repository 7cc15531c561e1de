// mixt-torch-compare: mixt's CPU kernels side by side with LibTorch's in one process,
// timed alternately (docs/benchmarks.md). The one file that includes LibTorch, and only
// its ATen layer (the C++ frontend's headers take three times as long to compile); the
// program is built only where LibTorch is found, so mixt never depends on it. Everything
// but LibTorch's side of each op is in torch_compare.cpp, tested without LibTorch.
#include <cstdio>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/api/include/torch/version.h>

#include "torch_compare.h"

namespace {

using mixt::bench::compare::Inputs;
using mixt::bench::compare::OpSpec;
using mixt::bench::compare::PeerSide;

// A LibTorch copy of mixt's contiguous CPU tensor `t` (float32 or bfloat16), in LibTorch's own memory.
at::Tensor to_torch(const mixt::Tensor& t) {
  const at::ScalarType dtype = t.dtype() == mixt::kBFloat16 ? at::kBFloat16 : at::kFloat;
  const std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  return at::from_blob(t.data_ptr(), sizes, at::TensorOptions().dtype(dtype)).clone();
}

std::vector<float> values_of(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kFloat).contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}

// LibTorch's side of `spec`, on its own copies of the inputs it reads.
PeerSide libtorch_side(const OpSpec& spec, const Inputs& in) {
  const std::string& id = spec.id;
  const int64_t n = in.n;
  std::function<at::Tensor()> f;
  if (id == "mm" || id == "mm_bf16") {
    const bool bf16 = id == "mm_bf16";
    const at::Tensor a = to_torch(bf16 ? in.a_bf16 : in.a), b = to_torch(bf16 ? in.b_bf16 : in.b);
    f = [a, b] { return at::mm(a, b); };
  } else if (id == "rms_norm") {
    return {.skipped = "LibTorch 1.13 has no rms_norm"};
  } else if (id == "softmax_bf16") {
    const at::Tensor x = to_torch(in.x_bf16);
    f = [x] { return at::softmax(x, 1); };
  } else if (id == "add_bf16") {
    const at::Tensor x = to_torch(in.x_bf16), y = to_torch(in.y_bf16);
    f = [x, y] { return at::add(x, y); };
  } else {
    const at::Tensor x = to_torch(in.x);
    if (id == "add") {
      const at::Tensor y = to_torch(in.y);
      f = [x, y] { return at::add(x, y); };
    } else if (id == "layer_norm") {
      const at::Tensor w = to_torch(in.weight), b = to_torch(in.bias);
      f = [x, w, b, n] { return at::layer_norm(x, {n}, w, b, 1e-5); };
    } else if (id == "cast_bf16") {
      const at::Tensor out = at::empty(x.sizes(), at::TensorOptions().dtype(at::kBFloat16));
      f = [x, out] { return out.copy_(x); };
    } else if (id == "exp") {
      f = [x] { return at::exp(x); };
    } else if (id == "sigmoid") {
      f = [x] { return at::sigmoid(x); };
    } else if (id == "tanh") {
      f = [x] { return at::tanh(x); };
    } else if (id == "silu") {
      f = [x] { return at::silu(x); };
    } else if (id == "gelu") {
      f = [x] { return at::gelu(x); };
    } else if (id == "gelu_tanh") {
      f = [x] { return at::gelu(x, "tanh"); };
    } else if (id == "pow") {
      f = [x] { return at::pow(x, 2.5); };
    } else if (id == "softmax") {
      f = [x] { return at::softmax(x, 1); };
    } else if (id == "log_softmax") {
      f = [x] { return at::log_softmax(x, 1); };
    } else if (id == "cross_entropy") {
      const std::vector<int64_t> tv = in.target.to_vector<int64_t>();
      const at::Tensor t = at::tensor(tv, at::TensorOptions().dtype(at::kLong));
      f = [x, t] { return at::cross_entropy_loss(x, t); };
    } else if (id == "sum") {
      f = [x] { return at::sum(x, {1}); };
    } else if (id == "sum_dim0") {
      f = [x] { return at::sum(x, {0}); };
    } else if (id == "mean") {
      f = [x] { return at::mean(x, {1}); };
    } else if (id == "amax") {
      f = [x] { return at::amax(x, {1}); };
    } else if (id == "var") {
      f = [x] { return at::var(x, at::IntArrayRef{1}, /*unbiased=*/true, /*keepdim=*/false); };
    } else {
      return {.skipped = "no LibTorch side for it in mixt-torch-compare"};
    }
  }
  return {.call = [f] { (void)f(); }, .values = [f] { return values_of(f()); }};
}

// "LibTorch: 2 intra-op threads, ATen parallel backend: OpenMP".
std::string libtorch_threads() {
  const std::string info = at::get_parallel_info();
  const size_t at_backend = info.find("ATen parallel backend");
  const std::string backend = at_backend == std::string::npos ? "" : info.substr(at_backend, info.find('\n', at_backend) - at_backend);
  return "LibTorch " + std::to_string(at::get_num_threads()) + " intra-op (" + backend + ")";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mixt::bench;
  const compare::Peer libtorch{.name = "LibTorch " TORCH_VERSION,
                               .set_threads = [](int threads) { at::set_num_threads(threads); },
                               .describe_threads = libtorch_threads,
                               .side = libtorch_side};
  return cli::run_program(compare::command("mixt-torch-compare", libtorch), argc, argv);
}
