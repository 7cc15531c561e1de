// The character-level transformer language model of the training demos
// (train_charlm, and train_ddp under DistributedDataParallel): the model, the
// text it learns, random batches of windows, the held-out loss and sampling.
#pragma once

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <mixt/mixt.h>

namespace charlm {

using namespace mixt;
namespace F = mixt::nn::functional;

inline constexpr const char* kDefaultText = "/usr/share/common-licenses/GPL-3";

// The model's size, the batch shape, and the device the batches go to (the model's).
struct ModelSize {
  int64_t context = 64, batch = 16, dim = 128, heads = 4, layers = 2;
  Device device = Device::cpu();
};

// The model: token and position embeddings, pre-norm transformer blocks, a head.
class CharLM : public nn::Module {
 public:
  CharLM(int64_t vocab, const ModelSize& c) : context_(c.context) {
    tok_ = register_module("tok", std::make_shared<nn::Embedding>(vocab, c.dim));
    pos_ = register_module("pos", std::make_shared<nn::Embedding>(c.context, c.dim));
    for (int64_t i = 0; i < c.layers; ++i) {
      auto block = std::make_shared<nn::TransformerBlock>(c.dim, c.heads, /*mlp_ratio=*/4.0, /*dropout=*/0.1);
      blocks_.push_back(register_module("block" + std::to_string(i), block));
    }
    norm_ = register_module("norm", std::make_shared<nn::LayerNorm>(Shape{c.dim}));
    head_ = register_module("head", std::make_shared<nn::Linear>(c.dim, vocab));
  }

  // ids [B, T] (int64) -> logits [B, T, vocab]
  Tensor forward(const Tensor& ids) override {
    const int64_t t = ids.size(1);
    Tensor x = add(tok_->forward(ids), pos_->forward(arange(t, {.dtype = kInt64, .device = ids.device()})));
    for (auto& b : blocks_) x = b->forward(x);
    return head_->forward(norm_->forward(x));
  }

 private:
  int64_t context_;
  std::shared_ptr<nn::Embedding> tok_, pos_;
  std::vector<std::shared_ptr<nn::TransformerBlock>> blocks_;
  std::shared_ptr<nn::LayerNorm> norm_;
  std::shared_ptr<nn::Linear> head_;
};

struct Corpus {
  std::vector<int64_t> ids;
  size_t train_end = 0;  // ids[0, train_end) train, the rest is held out
  std::vector<char> chars;  // id -> char
  double unigram_entropy = 0;  // nats
};

inline Corpus load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("charlm", "cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  if (text.size() < 1000) throw Error("charlm", path + " is too short to train on");
  int map[256];
  std::fill(std::begin(map), std::end(map), -1);
  Corpus c;
  std::vector<double> counts;
  for (unsigned char ch : text) {
    if (map[ch] < 0) {
      map[ch] = static_cast<int>(c.chars.size());
      c.chars.push_back(static_cast<char>(ch));
      counts.push_back(0);
    }
    c.ids.push_back(map[ch]);
    counts[static_cast<size_t>(map[ch])] += 1;
  }
  c.train_end = c.ids.size() * 9 / 10;
  for (double n : counts) {
    const double p = n / static_cast<double>(text.size());
    c.unigram_entropy -= p * std::log(p);
  }
  return c;
}

// A batch of random windows of the training text (or of the held-out text):
// inputs [B, T] and next-character targets [B, T].
inline std::pair<Tensor, Tensor> batch(const Corpus& c, const ModelSize& cfg, std::mt19937_64& rng,
                                       bool held_out = false) {
  const size_t lo = held_out ? c.train_end : 0, hi = held_out ? c.ids.size() : c.train_end;
  std::uniform_int_distribution<size_t> start(lo, hi - static_cast<size_t>(cfg.context) - 2);
  std::vector<int64_t> x, y;
  for (int64_t b = 0; b < cfg.batch; ++b) {
    const size_t s = start(rng);
    x.insert(x.end(), c.ids.begin() + static_cast<long>(s), c.ids.begin() + static_cast<long>(s) + cfg.context);
    y.insert(y.end(), c.ids.begin() + static_cast<long>(s) + 1, c.ids.begin() + static_cast<long>(s) + cfg.context + 1);
  }
  return {from_vector(x, {cfg.batch, cfg.context}).to(cfg.device), from_vector(y, {cfg.batch, cfg.context}).to(cfg.device)};
}

// Loss on windows of the held-out text (no graph).
inline double evaluate(CharLM& model, const Corpus& c, const ModelSize& cfg) {
  autograd::NoGradGuard no_grad;
  model.eval();
  std::mt19937_64 rng(1234);
  double total = 0;
  const int n = 4;
  for (int i = 0; i < n; ++i) {
    auto [x, y] = batch(c, cfg, rng, /*held_out=*/true);
    Tensor logits = model.forward(x);
    total += F::cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1})).item<double>();
  }
  model.train();
  return total / n;
}

inline std::string sample(CharLM& model, const Corpus& c, const ModelSize& cfg, const std::string& prompt,
                          int length) {
  autograd::NoGradGuard no_grad;
  model.eval();
  std::vector<int64_t> ids;
  for (char ch : prompt)
    for (size_t i = 0; i < c.chars.size(); ++i)
      if (c.chars[i] == ch) ids.push_back(static_cast<int64_t>(i));
  std::string out = prompt;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int step = 0; step < length; ++step) {
    const size_t from = ids.size() > static_cast<size_t>(cfg.context) ? ids.size() - cfg.context : 0;
    std::vector<int64_t> window(ids.begin() + static_cast<long>(from), ids.end());
    Tensor logits = model.forward(from_vector(window, {1, static_cast<int64_t>(window.size())}).to(cfg.device));
    Tensor last = logits.select(1, -1).select(0, 0);
    const std::vector<double> p = F::softmax(div(last, 0.8), 0).to_vector<double>();  // temperature 0.8
    double r = u(rng), acc = 0;
    size_t pick = p.size() - 1;
    for (size_t i = 0; i < p.size(); ++i)
      if ((acc += p[i]) >= r) {
        pick = i;
        break;
      }
    ids.push_back(static_cast<int64_t>(pick));
    out += c.chars[pick];
  }
  model.train();
  return out;
}

}  // namespace charlm
