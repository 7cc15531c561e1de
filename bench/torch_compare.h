// mixt-torch-compare's logic without LibTorch: the ops it compares, what each must move,
// the alternating timer, the agreement check, the table and the JSON. The program
// (torch_compare_main.cpp, built only where LibTorch is found) supplies the peer's side of
// each op; the tests supply a peer made of mixt ops. See docs/benchmarks.md.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <mixt/mixt.h>

#include "bench_cli.h"
#include "bench_json.h"

namespace mixt::bench::compare {

// The problem every op runs on, created once by mixt and shared with the peer (which
// copies what it needs): [n, n] inputs, [mm_n, mm_n] GEMM operands.
struct Inputs {
  int64_t n = 0, mm_n = 0;
  Tensor x = {}, y = {};   // float32 [n, n], standard normal
  Tensor x_bf16 = {}, y_bf16 = {};  // x and y rounded to bfloat16
  Tensor weight = {}, bias = {};  // float32 [n]: layer_norm's affine parameters
  Tensor target = {};      // int64 [n]: a class in [0, n) per row of x (cross_entropy)
  Tensor cast_out = {};    // bfloat16 [n, n]: the preallocated output of the cast (both sides copy_ into theirs)
  Tensor a = {}, b = {};   // float32 [mm_n, mm_n]
  Tensor a_bf16 = {}, b_bf16 = {};  // a and b rounded to bfloat16
};
Inputs make_inputs(int64_t n, int64_t mm_n);

// What one call must do: the bytes it reads and writes once (memory-bound ops) or its
// floating-point operations (GEMMs, where bytes is 0).
struct Work {
  double bytes = 0, flops = 0;
};

// Results agree when |mixt - peer| <= atol + rtol |peer| everywhere (NaN only against NaN).
struct Tolerance {
  double atol = 0, rtol = 0;
};

// One compared op: its --only name, its table label, its work on the inputs, the
// tolerance its two results must meet, and mixt's side (returning the output).
struct OpSpec {
  std::string id;     // "softmax_bf16"
  std::string label;  // "softmax bf16 dim 1"
  Work (*work)(const Inputs&);
  Tolerance tolerance;
  std::function<Tensor(Inputs&)> mixt;
};
// Every op the program compares, in table order.
const std::vector<OpSpec>& op_specs();
// Their ids (the choices of --only).
std::vector<std::string> op_ids();

// The peer's side of one op: a call (its output discarded) and its output as float32
// values in row-major order. `skipped` non-empty: the peer has no such op (why).
struct PeerSide {
  std::function<void()> call = {};
  std::function<std::vector<float>()> values = {};
  std::string skipped = {};
};

// The library mixt is compared with.
struct Peer {
  std::string name;                                  // "LibTorch 1.13.0"
  std::function<void(int)> set_threads;              // its intra-op threads
  std::function<std::string()> describe_threads;     // one line: how many it uses, through which runtime
  std::function<PeerSide(const OpSpec&, const Inputs&)> side;  // the peer's side of an op
};

// Best and median seconds per call.
struct Times {
  double best = 0, median = 0;
};
// Times `a` and `b` alternately (a, b, a, b, ...) for `rounds` rounds after one warm-up
// call each, so both see the same machine state; each sample is one call.
std::pair<Times, Times> time_alternately(const std::function<void()>& a, const std::function<void()>& b, int rounds);
// The copy rate in bytes per second (read + written), from the best of `rounds` memcpys
// of `bytes` split over the OpenMP threads.
double copy_rate(int64_t bytes, int rounds);

struct Agreement {
  double max_abs = 0, max_rel = 0;  // over all elements; rel = |a - b| / |b| where b != 0
  int64_t mismatched = 0;           // elements outside the tolerance (or a size mismatch: all)
  bool agree() const { return mismatched == 0; }
};
// Compares mixt's values `a` with the peer's `b`.
Agreement agreement(std::span<const float> a, std::span<const float> b, Tolerance tolerance);
// mixt's output as float32 values in row-major order.
std::vector<float> values_of(const Tensor& t);

// A call's rate as a share of the copy rate: (bytes / seconds) / copy_rate; 0 for GEMMs.
double copy_share(const Work& work, double seconds, double copy_bytes_per_second);

// One measured row (or a skipped op: `skipped` says why).
struct Row {
  std::string id = {}, label = {};
  Work work = {};
  Times mixt = {}, peer = {};
  Agreement agreement = {};
  Tolerance tolerance = {};
  std::string skipped = {};
};
// The table: op, mixt and peer best / median ms, mixt / peer (best), each side's rate
// (share of the copy rate, or GFLOP/s for GEMMs), whether the results agree; then a NOTE
// per skipped op or disagreement.
std::string format_table(std::span<const Row> rows, const std::string& peer_name, double copy_bytes_per_second);
// The rows as JSON objects.
Json rows_json(std::span<const Row> rows, double copy_bytes_per_second);

// Measures the ops of --only (all by default) against `peer` and prints the table.
int run(const cli::Args& args, const Peer& peer);
// The declaration of the standalone program `program` against `peer`.
cli::Command command(std::string program, Peer peer);

}  // namespace mixt::bench::compare
