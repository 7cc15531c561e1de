// nn modules: structure (names, counts, recursion), to() in place, train/eval,
// state dicts and their errors, zero_grad, and the forward values of Linear,
// Embedding, the norms, MultiheadAttention and TransformerBlock against
// references computed here in double.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <mixt/mixt.h>
#include <mixt/runtime/nn/modules.h>

#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;
using Catch::Contains;

namespace {

using Mat = std::vector<std::vector<double>>;
using Vec = std::vector<double>;

// Sets every parameter of `m` to distinct deterministic values in [-scale, scale].
void set_params(nn::Module& m, double scale = 0.5) {
  autograd::NoGradGuard no_grad;
  int k = 0;
  for (auto& [name, p] : m.named_parameters()) {
    Vec v(static_cast<size_t>(p.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = scale * std::sin(0.7 * static_cast<double>(i) + 1.3 * k + 0.1);
    Tensor(p).copy_(from_vector(v, p.sizes()));
    ++k;
  }
}

// Deterministic input values of `shape` in float64.
Tensor input(const Shape& shape, double phase = 0.0) {
  Vec v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::cos(0.37 * static_cast<double>(i) + phase) * 1.5;
  return from_vector(v, shape);
}

// Rows of a 2-D tensor, or of the 2-D slice `b` of a 3-D tensor.
Mat rows(const Tensor& t, int64_t b = -1) {
  const Tensor m = b < 0 ? t : t.select(0, b);
  const Vec v = values(m);
  Mat out(static_cast<size_t>(m.size(0)));
  for (size_t i = 0; i < out.size(); ++i)
    out[i].assign(v.begin() + static_cast<int64_t>(i) * m.size(1), v.begin() + static_cast<int64_t>(i + 1) * m.size(1));
  return out;
}

// x W^T + b for x [n, k], W [m, k] (b may be empty).
Mat affine(const Mat& x, const Mat& w, const Vec& b = {}) {
  Mat out(x.size(), Vec(w.size(), 0.0));
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t j = 0; j < w.size(); ++j) {
      double s = b.empty() ? 0.0 : b[j];
      for (size_t c = 0; c < x[i].size(); ++c) s += x[i][c] * w[j][c];
      out[i][j] = s;
    }
  return out;
}

Mat add(const Mat& a, const Mat& b) {
  Mat out = a;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a[i].size(); ++j) out[i][j] += b[i][j];
  return out;
}

// Layer norm of each row (biased variance).
Mat layer_norm_ref(const Mat& x, const Vec& w, const Vec& b, double eps) {
  Mat out = x;
  for (Vec& r : out) {
    double mean = 0, var = 0;
    for (double v : r) mean += v / static_cast<double>(r.size());
    for (double v : r) var += (v - mean) * (v - mean) / static_cast<double>(r.size());
    for (size_t j = 0; j < r.size(); ++j) r[j] = (r[j] - mean) / std::sqrt(var + eps) * w[j] + b[j];
  }
  return out;
}

// The weights of a MultiheadAttention as plain matrices.
struct MhaWeights {
  Mat in_w, out_w;
  Vec in_b, out_b;
  int64_t heads;
};

MhaWeights weights_of(const nn::MultiheadAttention& m, int64_t heads) {
  return {rows(m.in_proj_weight()), rows(m.out_proj().weight()), values(m.in_proj_bias()), values(m.out_proj().bias()),
          heads};
}

Mat part(const Mat& w, size_t k, size_t e) { return Mat(w.begin() + k * e, w.begin() + (k + 1) * e); }
Vec part(const Vec& b, size_t k, size_t e) { return Vec(b.begin() + k * e, b.begin() + (k + 1) * e); }

// Multi-head attention of q [L, E] over k, v [S, E]; allowed(i, j) masks scores.
Mat mha_ref(const Mat& q_in, const Mat& k_in, const Mat& v_in, const MhaWeights& w,
            const std::function<bool(size_t, size_t)>& allowed) {
  const size_t e = q_in[0].size(), d = e / static_cast<size_t>(w.heads);
  const Mat q = affine(q_in, part(w.in_w, 0, e), part(w.in_b, 0, e));
  const Mat k = affine(k_in, part(w.in_w, 1, e), part(w.in_b, 1, e));
  const Mat v = affine(v_in, part(w.in_w, 2, e), part(w.in_b, 2, e));
  Mat heads(q.size(), Vec(e, 0.0));
  for (size_t h = 0; h < static_cast<size_t>(w.heads); ++h)
    for (size_t i = 0; i < q.size(); ++i) {
      Vec s(k.size(), -std::numeric_limits<double>::infinity());
      double mx = s[0];
      for (size_t j = 0; j < k.size(); ++j) {
        if (!allowed(i, j)) continue;
        s[j] = 0;
        for (size_t c = 0; c < d; ++c) s[j] += q[i][h * d + c] * k[j][h * d + c];
        s[j] /= std::sqrt(static_cast<double>(d));
        mx = std::max(mx, s[j]);
      }
      double z = 0;
      for (double& x : s) z += (x = std::exp(x - mx));
      for (size_t j = 0; j < k.size(); ++j)
        for (size_t c = 0; c < d; ++c) heads[i][h * d + c] += s[j] / z * v[j][h * d + c];
    }
  return affine(heads, w.out_w, w.out_b);
}

const auto kAll = [](size_t, size_t) { return true; };
const auto kCausal = [](size_t i, size_t j) { return j <= i; };

// Every element of `got` (a [rows...] tensor) matches `want` within `tol`.
void check_rows(const Tensor& got, const Mat& want, double tol, int64_t b = -1) {
  const Mat g = rows(got, b);
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i)
    for (size_t j = 0; j < g[i].size(); ++j) CHECK(g[i][j] == Approx(want[i][j]).margin(tol));
}

// A module with a nested Sequential, an integer buffer and a non-persistent one.
struct Net : nn::Module {
  Net() {
    fc = register_module("fc", nn::Linear(3, 4));
    layers = register_module("layers", nn::Sequential(nn::Linear(4, 4), nn::ReLU(), nn::Linear(4, 2)));
    register_buffer("count", zeros({1}, of(kInt64)));
    register_buffer("scratch", zeros({2}), /*persistent=*/false);
  }
  Tensor forward(const Tensor& x) override { return layers->forward(fc->forward(x)); }
  std::string name() const override { return "Net"; }
  std::shared_ptr<nn::Linear> fc;
  std::shared_ptr<nn::Sequential> layers;
};

std::vector<std::string> names_of(const nn::Module::NamedTensors& named) {
  std::vector<std::string> out;
  for (const auto& [n, t] : named) out.push_back(n);
  return out;
}

}  // namespace

TEST_CASE("module structure: dotted names, counts, recursion, printing", "[modules]") {
  Net net;
  const std::vector<std::string> params = {"fc.weight",     "fc.bias",         "layers.0.weight",
                                           "layers.0.bias", "layers.2.weight", "layers.2.bias"};
  CHECK(names_of(net.named_parameters()) == params);
  CHECK(net.parameters().size() == 6);
  CHECK(net.parameters(/*recurse=*/false).empty());
  CHECK(net.fc->parameters(false).size() == 2);
  CHECK(net.num_parameters() == 3 * 4 + 4 + 4 * 4 + 4 + 4 * 2 + 2);
  for (const Tensor& p : net.parameters()) CHECK((p.requires_grad() && p.is_leaf()));
  CHECK(net.parameters()[0].is_same(net.fc->weight()));
  CHECK(names_of(net.named_buffers()) == std::vector<std::string>{"count", "scratch"});
  CHECK(net.buffers(false).size() == 2);
  REQUIRE(net.children().size() == 2);
  CHECK(net.named_children()[1].first == "layers");
  CHECK(net.children()[1].get() == net.layers.get());
  CHECK(net.layers->size() == 3);
  CHECK((*net.layers)[1]->name() == "ReLU");
  CHECK(net.layers->at<nn::Linear>(2).weight().sizes() == Shape{2, 4});
  CHECK_THROWS_WITH(net.layers->at<nn::Linear>(1), Contains("ReLU"));
  CHECK_THROWS_WITH((*net.layers)[3], Contains("out of range"));
  CHECK(net.forward(input({5, 3}).to(kFloat32)).sizes() == Shape{5, 2});
  CHECK(net.str() ==
        "Net(\n"
        "  (fc): Linear(in_features=3, out_features=4, bias=true)\n"
        "  (layers): Sequential(\n"
        "    (0): Linear(in_features=4, out_features=4, bias=true)\n"
        "    (1): ReLU()\n"
        "    (2): Linear(in_features=4, out_features=2, bias=true)\n"
        "  )\n"
        ")");

  // A shared (tied) parameter is listed once, but saved under both names.
  nn::Sequential tied;
  auto a = std::make_shared<nn::Linear>(2, 2, false);
  tied.push_back(a);
  tied.push_back(a);
  CHECK(tied.parameters().size() == 1);
  CHECK(tied.state_dict().tensors.size() == 2);
}

TEST_CASE("registration errors name the module and the member", "[modules]") {
  Net net;
  CHECK_THROWS_WITH(net.register_parameter("fc", zeros({1})), Contains("already has a member named 'fc'"));
  CHECK_THROWS_WITH(net.register_buffer("count", zeros({1})), Contains("'count'"));
  CHECK_THROWS_WITH(net.register_parameter("a.b", zeros({1})), Contains("invalid name 'a.b'"));
  CHECK_THROWS_WITH(net.register_parameter("", zeros({1})), Contains("invalid name"));
  CHECK_THROWS_WITH(net.register_parameter("i", zeros({1}, of(kInt32))),
                    Contains("floating point") && Contains("int32"));
  CHECK_THROWS_WITH(net.register_parameter("u", Tensor()), Contains("undefined"));
  CHECK_THROWS_WITH(net.register_module("m", std::shared_ptr<nn::Linear>()), Contains("null"));
  CHECK_THROWS_AS(net.forward(Tensor()), Error);
  nn::Module plain;
  CHECK_THROWS_WITH(plain.forward(zeros({1})), Contains("does not define forward"));
  // A non-leaf becomes a leaf parameter (detached).
  Tensor src = zeros({2}).set_requires_grad(true);
  Tensor p = plain.register_parameter("p", mul(src, 2.0));
  CHECK((p.is_leaf() && p.requires_grad()));
  CHECK(plain.register_parameter("q", src).is_same(src));
}

TEST_CASE("to() converts in place, keeping every handle's identity", "[modules]") {
  Net net;
  const Tensor w = net.fc->weight();
  const Vec before = values(w);
  net.fc->weight().sum().backward();
  REQUIRE(w.grad().defined());
  net.to(kFloat64);
  CHECK(w.dtype() == kFloat64);
  CHECK(net.parameters()[0].is_same(w));
  CHECK(values(w) == before);  // float32 values are exact in float64
  CHECK(w.grad().dtype() == kFloat64);
  CHECK(values(w.grad()) == Vec(12, 1.0));
  for (const Tensor& p : net.parameters()) CHECK((p.dtype() == kFloat64 && p.requires_grad()));
  CHECK(net.named_buffers()[0].second.dtype() == kInt64);  // integer buffers keep their dtype
  CHECK(net.named_buffers()[1].second.dtype() == kFloat64);
  CHECK(net.forward(input({2, 3})).dtype() == kFloat64);
  net.to(Device::cpu(), kBFloat16);
  CHECK(w.dtype() == kBFloat16);
  net.to(Device::cpu());
  CHECK(w.dtype() == kBFloat16);
  CHECK_THROWS_WITH(net.to(kInt32), Contains("floating") && Contains("int32"));
  CHECK(w.dtype() == kBFloat16);
}

TEST_CASE("train() and eval() set the mode recursively; Dropout follows it", "[modules]") {
  nn::Sequential model(nn::Linear(4, 4), nn::Sequential(nn::Dropout(0.5), nn::ReLU()));
  CHECK(model.is_training());
  model.eval();
  for (const auto& c : model.children()) CHECK_FALSE(c->is_training());
  CHECK_FALSE(model.at<nn::Sequential>(1)[0]->is_training());
  nn::Dropout drop(0.5);
  drop.eval();
  const Tensor x = input({64}).to(kFloat32);
  CHECK(values(drop.forward(x)) == values(x));
  model.train();
  CHECK(model.at<nn::Sequential>(1)[0]->is_training());
  drop.train();
  const Vec y = values(drop.forward(x)), xv = values(x);
  int zeros_seen = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    CHECK((y[i] == 0.0 || y[i] == Approx(2.0 * xv[i])));
    zeros_seen += y[i] == 0.0;
  }
  CHECK((zeros_seen > 8 && zeros_seen < 56));
  CHECK_THROWS_WITH(nn::Dropout(1.5), Contains("[0, 1]"));
}

TEST_CASE("state_dict round trip and every load error", "[modules]") {
  Net a, b;
  set_params(a);
  {
    autograd::NoGradGuard no_grad;
    a.named_buffers()[0].second.fill_(7);
  }
  const io::StateDict sd = a.state_dict();
  const std::vector<std::string> keys = {"count",         "fc.weight",       "fc.bias",      "layers.0.weight",
                                         "layers.0.bias", "layers.2.weight", "layers.2.bias"};
  std::vector<std::string> got;
  for (const auto& [k, t] : sd.tensors) got.push_back(k);
  CHECK(got == keys);  // own buffers first, then children; the non-persistent buffer is left out
  CHECK_FALSE(sd.find("fc.weight")->requires_grad());
  CHECK(sd.find("fc.weight")->shares_storage(a.fc->weight()));

  const Tensor bw = b.fc->weight();
  b.load_state_dict(sd);
  CHECK(bw.is_same(b.fc->weight()));
  for (size_t i = 0; i < a.parameters().size(); ++i) CHECK(values(a.parameters()[i]) == values(b.parameters()[i]));
  CHECK(values(b.named_buffers()[0].second) == Vec{7});

  Net c;
  const Vec c_before = values(c.fc->weight());
  io::StateDict missing = sd;
  missing.tensors.erase(missing.tensors.begin() + 1);
  CHECK_THROWS_WITH(c.load_state_dict(missing), Contains("missing key 'fc.weight'") && Contains("[4, 3]"));
  io::StateDict extra = sd;
  extra.set("fc.extra", zeros({2}));
  CHECK_THROWS_WITH(c.load_state_dict(extra), Contains("unexpected key 'fc.extra'"));
  io::StateDict shape = sd;
  shape.set("fc.bias", zeros({5}));
  CHECK_THROWS_WITH(c.load_state_dict(shape), Contains("'fc.bias'") && Contains("[5]") && Contains("[4]"));
  CHECK_THROWS_WITH(c.load_state_dict(shape, /*strict=*/false), Contains("'fc.bias'"));
  io::StateDict dtype = sd;
  dtype.set("fc.bias", zeros({4}, of(kFloat64)));
  CHECK_THROWS_WITH(c.load_state_dict(dtype), Contains("'fc.bias'") && Contains("float64"));
  CHECK(values(c.fc->weight()) == c_before);  // a failed load changes nothing

  // Non-strict: missing and unexpected keys are ignored, the rest is loaded.
  c.load_state_dict(extra, false);
  c.load_state_dict(missing, false);
  CHECK(values(c.layers->at<nn::Linear>(0).weight()) == values(a.layers->at<nn::Linear>(0).weight()));
}

TEST_CASE("a state dict naming a key twice is refused, strict or not", "[modules]") {
  Net a, c;
  set_params(a);
  io::StateDict sd = a.state_dict();
  sd.tensors.emplace_back("fc.bias", full({4}, 9.0));  // a second, different 'fc.bias'
  const Vec before = values(c.fc->bias());
  for (bool strict : {true, false}) {
    INFO("strict " << strict);
    CHECK_THROWS_WITH(c.load_state_dict(sd, strict), Contains("duplicate key 'fc.bias'"));
    CHECK(values(c.fc->bias()) == before);
  }
}

TEST_CASE("zero_grad clears or zeroes every gradient", "[modules]") {
  Net net;
  net.forward(input({2, 3}).to(kFloat32)).sum().backward();
  for (const Tensor& p : net.parameters()) REQUIRE(p.grad().defined());
  net.zero_grad(/*set_to_none=*/false);
  for (const Tensor& p : net.parameters()) {
    REQUIRE(p.grad().defined());
    CHECK(sum(abs(p.grad())).item<double>() == 0.0);
  }
  net.zero_grad();
  for (const Tensor& p : net.parameters()) CHECK_FALSE(p.grad().defined());
}

TEST_CASE("Linear: init bounds and forward values", "[modules]") {
  nn::Linear big(400, 50);
  const double bound = 1.0 / 20.0;
  const Vec w = values(big.weight());
  double mean = 0, sq = 0, largest = 0;
  for (double v : w) {
    largest = std::max(largest, std::abs(v));
    mean += v / static_cast<double>(w.size());
    sq += v * v / static_cast<double>(w.size());
  }
  CHECK(largest <= bound);
  CHECK(largest > 0.95 * bound);
  CHECK(std::abs(mean) < 0.003);
  CHECK(sq == Approx(bound * bound / 3).epsilon(0.05));  // variance of U(-b, b)
  const Vec b = values(big.bias());
  CHECK(std::all_of(b.begin(), b.end(), [&](double v) { return std::abs(v) <= bound; }));
  CHECK(std::any_of(b.begin(), b.end(), [&](double v) { return std::abs(v) > bound / 2; }));

  for (bool bias : {true, false}) {
    nn::Linear lin(3, 2, bias);
    CHECK(lin.parameters().size() == (bias ? 2u : 1u));
    set_params(lin);
    lin.to(kFloat64);
    const Tensor x = input({4, 3});
    const Mat want = affine(rows(x), rows(lin.weight()), bias ? values(lin.bias()) : Vec{});
    check_rows(lin.forward(x), want, 1e-12);
  }
  nn::Linear lin(3, 2);
  CHECK_THROWS_AS(lin.forward(zeros({4, 5})), Error);
  CHECK_THROWS_WITH(nn::Linear(-1, 2), Contains("negative"));
}

TEST_CASE("Embedding: N(0, 1) init, zero padding row, lookup", "[modules]") {
  nn::Embedding big(500, 20, /*padding_idx=*/3);
  const Vec w = values(big.weight());
  double mean = 0, sq = 0;
  for (double v : w) mean += v / static_cast<double>(w.size()), sq += v * v / static_cast<double>(w.size());
  CHECK(std::abs(mean) < 0.05);
  CHECK(sq == Approx(1.0).epsilon(0.08));
  CHECK(values(big.weight().select(0, 3)) == Vec(20, 0.0));

  nn::Embedding emb(5, 3);
  const Mat table = rows(emb.weight());
  const Tensor idx = from_vector(std::vector<int64_t>{4, 0, 4, 2}, {2, 2});
  const Tensor y = emb.forward(idx);
  CHECK(y.sizes() == Shape{2, 2, 3});
  const Vec yv = values(y);
  const int64_t picked[] = {4, 0, 4, 2};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) CHECK(yv[static_cast<size_t>(i * 3 + j)] == table[picked[i]][j]);
  CHECK_THROWS_AS(emb.forward(from_vector(std::vector<int64_t>{5})), Error);
  CHECK_THROWS_WITH(nn::Embedding(5, 3, 5), Contains("padding_idx 5"));
  CHECK_THROWS_WITH(nn::Embedding(5, 3, -6), Contains("padding_idx -6"));
  // A negative padding_idx counts from the end (PyTorch's rule): its row starts at zero.
  nn::Embedding padded(5, 3, -1);
  CHECK(values(padded.weight().select(0, 4)) == Vec{0, 0, 0});
  CHECK_THAT(padded.str(), Contains("padding_idx=4"));
}

TEST_CASE("LayerNorm and RMSNorm against double references", "[modules]") {
  nn::LayerNorm ln(4, 1e-5);
  CHECK(values(ln.weight()) == Vec(4, 1.0));
  CHECK(values(ln.bias()) == Vec(4, 0.0));
  set_params(ln);
  ln.to(kFloat64);
  const Tensor x = input({3, 4});
  check_rows(ln.forward(x), layer_norm_ref(rows(x), values(ln.weight()), values(ln.bias()), 1e-5), 1e-10);
  nn::LayerNorm plain(Shape{4}, 1e-5, /*elementwise_affine=*/false);
  CHECK(plain.parameters().empty());
  check_rows(plain.forward(x), layer_norm_ref(rows(x), Vec(4, 1.0), Vec(4, 0.0), 1e-5), 1e-10);
  CHECK_THROWS_AS(ln.forward(input({3, 5})), Error);

  nn::RMSNorm rms(4, 1e-6);
  set_params(rms);
  rms.to(kFloat64);
  const Vec w = values(rms.weight());
  Mat want = rows(x);
  for (Vec& r : want) {
    double ms = 0;
    for (double v : r) ms += v * v / 4;
    for (size_t j = 0; j < 4; ++j) r[j] = r[j] / std::sqrt(ms + 1e-6) * w[j];
  }
  check_rows(rms.forward(x), want, 1e-10);
}

TEST_CASE("activation modules apply their op", "[modules]") {
  const Tensor x = input({6});
  const Vec xv = values(x);
  auto each = [&](nn::Module&& m, const std::function<double(double)>& f) {
    const Vec y = values(m.forward(x));
    for (size_t i = 0; i < y.size(); ++i) CHECK(y[i] == Approx(f(xv[i])).margin(1e-12));
  };
  each(nn::ReLU(), [](double v) { return v > 0 ? v : 0.0; });
  each(nn::Tanh(), [](double v) { return std::tanh(v); });
  each(nn::Sigmoid(), [](double v) { return 1 / (1 + std::exp(-v)); });
  each(nn::SiLU(), [](double v) { return v / (1 + std::exp(-v)); });
  each(nn::GELU(), [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
  each(nn::GELU("tanh"),
       [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); });
  CHECK_THROWS_WITH(nn::GELU("fast"), Contains("'fast'"));
  CHECK(nn::GELU("tanh").str() == "GELU(approximate=tanh)");
  each(nn::Hardtanh(-0.5, 0.25), [](double v) { return std::min(std::max(v, -0.5), 0.25); });
  each(nn::Hardswish(), [](double v) { return v * std::min(std::max(v + 3, 0.0), 6.0) / 6; });
  each(nn::Hardsigmoid(), [](double v) { return std::min(std::max(v + 3, 0.0), 6.0) / 6; });
  each(nn::LeakyReLU(0.5), [](double v) { return v > 0 ? v : 0.5 * v; });
  each(nn::ELU(2.0), [](double v) { return v > 0 ? v : 2 * std::expm1(v); });
  each(nn::SELU(), [](double v) { return 1.0507009873554805 * (v > 0 ? v : 1.6732632423543772 * std::expm1(v)); });
  each(nn::Mish(), [](double v) { return v * std::tanh(std::log1p(std::exp(v))); });
  CHECK(nn::LeakyReLU(0.5).str() == "LeakyReLU(negative_slope=0.5)");
  CHECK_THROWS_WITH(nn::Hardtanh(1, -1), Contains("max_val"));
}

TEST_CASE("PReLU learns one slope or one per channel, starting at init", "[modules]") {
  nn::PReLU shared;
  CHECK(shared.num_parameters() == 1);
  CHECK(values(shared.weight()) == Vec{0.25});
  nn::PReLU per_channel(3, 0.5);
  const Tensor x = input({2, 3, 2}).to(kFloat32);
  const Vec xv = values(x), y = values(per_channel.forward(x));
  for (size_t i = 0; i < y.size(); ++i) CHECK(y[i] == (xv[i] > 0 ? xv[i] : static_cast<double>(static_cast<float>(0.5 * xv[i]))));
  CHECK(per_channel.str() == "PReLU(num_parameters=3)");
  CHECK_THROWS_WITH(per_channel.forward(input({2, 4}).to(kFloat32)), Contains("channels"));
  // The weight learns: its gradient is sum of x over the elements where x <= 0, per channel.
  per_channel.forward(x).sum().backward();
  const Tensor g = per_channel.weight().grad();
  Vec want(3, 0.0);
  for (size_t i = 0; i < xv.size(); ++i)
    if (xv[i] <= 0) want[(i / 2) % 3] += xv[i];
  const Vec gv = values(g);
  for (size_t c = 0; c < 3; ++c) CHECK(gv[c] == Approx(want[c]).margin(1e-6));
}

TEST_CASE("Sequential chains its modules; takes values or shared_ptrs", "[modules]") {
  auto first = std::make_shared<nn::Linear>(3, 5);
  nn::Sequential model(first, nn::Tanh(), nn::Linear(5, 2));
  model.push_back(nn::Sigmoid());
  CHECK(model.size() == 4);
  CHECK(model[0].get() == first.get());
  set_params(model);
  model.to(kFloat64);
  const Tensor x = input({2, 3});
  Mat h = affine(rows(x), rows(first->weight()), values(first->bias()));
  for (Vec& r : h)
    for (double& v : r) v = std::tanh(v);
  const auto& last = model.at<nn::Linear>(2);
  Mat want = affine(h, rows(last.weight()), values(last.bias()));
  for (Vec& r : want)
    for (double& v : r) v = 1 / (1 + std::exp(-v));
  check_rows(model.forward(x), want, 1e-12);
  nn::Sequential moved(std::move(model));
  CHECK(moved.size() == 4);
  CHECK(moved[0].get() == first.get());
}

TEST_CASE("MultiheadAttention against projections and attention composed by hand", "[modules]") {
  const int64_t e = 8, heads = 2;
  nn::MultiheadAttention mha(e, heads);
  CHECK(names_of(mha.named_parameters()) ==
        std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"});
  CHECK(mha.in_proj_weight().sizes() == Shape{3 * e, e});
  CHECK(values(mha.in_proj_bias()) == Vec(3 * e, 0.0));
  CHECK(values(mha.out_proj().bias()) == Vec(e, 0.0));
  for (double v : values(mha.in_proj_weight())) CHECK(std::abs(v) <= std::sqrt(6.0 / (4 * e)));
  set_params(mha, 0.4);
  mha.to(kFloat64);
  const MhaWeights w = weights_of(mha, heads);

  const Tensor x = input({2, 3, e}), kv = input({2, 5, e}, 0.5);
  SECTION("self-attention, plain and causal") {
    const Tensor y = mha.forward(x), yc = mha.forward(x, x, x, Tensor(), /*is_causal=*/true);
    CHECK(y.sizes() == Shape{2, 3, e});
    for (int64_t b = 0; b < 2; ++b) {
      check_rows(y, mha_ref(rows(x, b), rows(x, b), rows(x, b), w, kAll), 1e-10, b);
      check_rows(yc, mha_ref(rows(x, b), rows(x, b), rows(x, b), w, kCausal), 1e-10, b);
    }
  }
  SECTION("cross-attention with a boolean mask (true = attend)") {
    std::vector<uint8_t> m(3 * 5);
    for (size_t i = 0; i < m.size(); ++i) m[i] = (i % 3 != 1) ? 1 : 0;
    const Tensor mask = bools(m, {3, 5});
    const Tensor y = mha.forward(x, kv, kv, mask);
    CHECK(y.sizes() == Shape{2, 3, e});
    auto allowed = [&](size_t i, size_t j) { return m[i * 5 + j] != 0; };
    for (int64_t b = 0; b < 2; ++b) check_rows(y, mha_ref(rows(x, b), rows(kv, b), rows(kv, b), w, allowed), 1e-10, b);
  }
  SECTION("errors") {
    CHECK_THROWS_WITH(nn::MultiheadAttention(6, 4), Contains("multiple of num_heads"));
    CHECK_THROWS_WITH(mha.forward(input({3, e})), Contains("[batch, length, 8]") && Contains("[3, 8]"));
    CHECK_THROWS_WITH(mha.forward(x, input({3, 5, e}), input({3, 5, e})), Contains("mismatch"));
    CHECK_THROWS_WITH(mha.forward(x, kv, input({2, 4, e})), Contains("mismatch"));
  }
}

TEST_CASE("TransformerBlock: pre-norm residual attention and GELU MLP", "[modules]") {
  const int64_t e = 8;
  nn::TransformerBlock block(e, 2, /*mlp_ratio=*/2.0);
  CHECK(names_of(block.named_parameters()) ==
        std::vector<std::string>{"ln1.weight", "ln1.bias", "attn.in_proj_weight", "attn.in_proj_bias",
                                 "attn.out_proj.weight", "attn.out_proj.bias", "ln2.weight", "ln2.bias", "mlp.0.weight",
                                 "mlp.0.bias", "mlp.2.weight", "mlp.2.bias"});
  CHECK(block.mlp().at<nn::Linear>(0).weight().sizes() == Shape{16, e});
  set_params(block, 0.3);
  block.to(kFloat64);
  const Tensor x = input({2, 4, e});
  const Tensor y = block.forward(x);
  CHECK(y.sizes() == Shape{2, 4, e});
  const MhaWeights w = weights_of(block.attn(), 2);
  const auto& fc1 = block.mlp().at<nn::Linear>(0);
  const auto& fc2 = block.mlp().at<nn::Linear>(2);
  for (int64_t b = 0; b < 2; ++b) {
    const Mat xb = rows(x, b);
    const Mat a = layer_norm_ref(xb, values(block.ln1().weight()), values(block.ln1().bias()), 1e-5);
    const Mat h = add(xb, mha_ref(a, a, a, w, kCausal));
    Mat hidden = affine(layer_norm_ref(h, values(block.ln2().weight()), values(block.ln2().bias()), 1e-5),
                        rows(fc1.weight()), values(fc1.bias()));
    for (Vec& r : hidden)
      for (double& v : r) v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    check_rows(y, add(h, affine(hidden, rows(fc2.weight()), values(fc2.bias()))), 1e-10, b);
  }
  // Every parameter receives a gradient.
  block.forward(x).sum().backward();
  for (const auto& [name, p] : block.named_parameters()) {
    INFO(name);
    CHECK(p.grad().defined());
  }
  CHECK_THROWS_WITH(nn::TransformerBlock(8, 2, 0.0), Contains("mlp_ratio"));
}

TEST_CASE("recurrent cells and LSTM/GRU: names, PyTorch's init, the time loop, layouts", "[modules][rnn]") {
  namespace F = nn::functional;
  manual_seed(7);
  nn::LSTM lstm(3, 4, 2, true, /*batch_first=*/true);
  std::vector<std::string> names;
  for (auto& [name, p] : lstm.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l1",
                                          "weight_hh_l1", "bias_ih_l1", "bias_hh_l1"});
  CHECK(lstm.layers()[1].w_ih.sizes() == Shape{16, 4});
  for (auto& [name, p] : lstm.named_parameters()) {
    INFO(name);
    CHECK(amax(abs(p)).item<double>() <= 0.5);  // U(-1/sqrt(4), 1/sqrt(4))
    CHECK(amax(abs(p)).item<double>() > 0.3);
  }
  // [B=2, T=3, I=3] with batch_first: the same as the cells stepped by hand, layer by layer.
  const Tensor x = randn({2, 3, 3});
  const Tensor h0 = randn({2, 2, 4}), c0 = randn({2, 2, 4});
  const nn::RecurrentOutput out = lstm.forward(x, {h0, c0});
  CHECK(out.output.sizes() == Shape{2, 3, 4});
  CHECK(out.h.sizes() == Shape{2, 2, 4});
  std::vector<Tensor> seq;
  for (int64_t t = 0; t < 3; ++t) seq.push_back(x.select(1, t));
  for (int l = 0; l < 2; ++l) {
    const nn::RecurrentWeights& w = lstm.layers()[static_cast<size_t>(l)];
    F::LstmState s{h0.select(0, l), c0.select(0, l)};
    for (auto& step : seq) step = (s = F::lstm_cell(step, s, w.w_ih, w.w_hh, w.b_ih, w.b_hh)).h;
    CHECK(equal(out.h.select(0, l), s.h));
    CHECK(equal(out.c.select(0, l), s.c));
  }
  for (int64_t t = 0; t < 3; ++t) CHECK(equal(out.output.select(1, t), seq[static_cast<size_t>(t)]));
  // Unbatched [T, I]: one sample of the batched run.
  const nn::RecurrentOutput one = lstm.forward(x.select(0, 1), {h0.select(1, 1), c0.select(1, 1)});
  CHECK(one.output.sizes() == Shape{3, 4});
  CHECK(one.h.sizes() == Shape{2, 4});
  CHECK(max(abs(sub(one.output, out.output.select(0, 1)))).item<double>() < 1e-6);
  // Gradients reach every parameter through the time loop.
  sum(out.output).backward();
  for (auto& [name, p] : lstm.named_parameters()) {
    INFO(name);
    CHECK(p.grad().defined());
  }

  nn::GRU gru(3, 2);  // time-major, zero initial state
  const Tensor xs = randn({4, 1, 3});
  const nn::RecurrentOutput g = gru.forward(xs, Tensor());
  Tensor h = zeros({1, 2});
  const nn::RecurrentWeights& gw = gru.layers()[0];
  for (int64_t t = 0; t < 4; ++t) h = F::gru_cell(xs.select(0, t), h, gw.w_ih, gw.w_hh, gw.b_ih, gw.b_hh);
  CHECK(equal(g.h.select(0, 0), h));
  CHECK_FALSE(g.c.defined());

  nn::RNNCell cell(3, 2, false, "relu");
  CHECK(cell.parameters().size() == 2);
  CHECK(amin(cell.forward(randn({5, 3}))).item<double>() >= 0.0);
  nn::GRUCell gcell(3, 2);
  CHECK(gcell.forward(randn({3})).sizes() == Shape{2});
  nn::LSTMCell lcell(3, 2);
  CHECK(lcell.forward(randn({4, 3})).sizes() == Shape{4, 2});
  CHECK_THAT(error_of([&] { lstm.forward(randn({2, 3, 5}), {}); }), Contains("input_size"));
  CHECK_THAT(error_of([&] { lstm.forward(x, {randn({1, 2, 4}), c0}); }), Contains("initial state"));
  CHECK_THAT(error_of([&] { nn::RNNCell(3, 2, true, "sigmoid"); }), Contains("nonlinearity"));
  CHECK_THAT(error_of([&] { F::lstm_cell(randn({2, 3}), {}, randn({8, 3}), randn({8, 3})); }), Contains("lstm_cell"));
  CHECK_THAT(error_of([&] { F::gru_cell(randn({2, 3}), randn({2, 2}), randn({9, 3}), randn({9, 3})); }),
             Contains("hidden state"));
}
