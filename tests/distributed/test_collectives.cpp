// Every collective of the world group against its expected result, computed on
// each rank from every rank's (deterministic) input: several dtypes, sizes that
// the world size does not divide, non-contiguous tensors, and the errors of
// mismatched or misused calls. Run with mpirun at 2 and 4 ranks (and alone).
#include <catch2/catch.hpp>

#include <mixt/distributed/world.h>
#include <mixt/mixt.h>

using namespace mixt;
using dist::ReduceOp;

namespace {

// Rank r's input value at flat index i: small integers, exact in every dtype.
double input_value(int r, int64_t i, ScalarType dt) {
  if (dt == kBool) return static_cast<double>((r + i) % 3 == 0);
  if (dt == kUInt8) return static_cast<double>((r * 5 + i * 3) % 9);
  return static_cast<double>((r * 7 + i * 3) % 11 - 5);
}

Tensor rank_input(int r, int64_t n, ScalarType dt) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = input_value(r, i, dt);
  return from_vector(v, {n}).to(dt);
}

double reduce_all(int size, int64_t i, ScalarType dt, ReduceOp op) {
  double acc = input_value(0, i, dt);
  for (int r = 1; r < size; ++r) {
    const double x = input_value(r, i, dt);
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg: acc += x; break;
      case ReduceOp::Max: acc = std::max(acc, x); break;
      case ReduceOp::Min: acc = std::min(acc, x); break;
    }
  }
  if (dt == kBool) return op == ReduceOp::Min ? acc : static_cast<double>(acc != 0);
  return op == ReduceOp::Avg ? acc / size : acc;
}

Tensor expected(int size, int64_t begin, int64_t end, ScalarType dt, ReduceOp op) {
  std::vector<double> v;
  for (int64_t i = begin; i < end; ++i) v.push_back(reduce_all(size, i, dt, op));
  // Avg of a low-precision dtype is computed in float32 and rounded once.
  return from_vector(v, {end - begin}).to(dt == kFloat64 ? kFloat64 : kFloat32).to(dt);
}

void require_same(const Tensor& got, const Tensor& want) {
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.sizes() == want.sizes());
  const auto g = got.to(kFloat64).contiguous().to_vector<double>();
  const auto w = want.to(kFloat64).contiguous().to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i);
    REQUIRE(g[i] == w[i]);
  }
}

const std::vector<ScalarType> kAllDtypes = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32,
                                            kInt64,   kInt8,    kUInt8,   kBool};
const std::vector<int64_t> kSizes = {1, 7, 1000, 4097};

}  // namespace

TEST_CASE("all_reduce: sum, avg, max and min for every dtype and size") {
  auto pg = dist::world();
  for (ScalarType dt : kAllDtypes) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min}) {
      if (op == ReduceOp::Avg && !is_floating(dt)) continue;
      for (int64_t n : kSizes) {
        INFO(dtype_name(dt) << " " << dist::reduce_op_name(op) << " n=" << n);
        Tensor t = rank_input(pg->rank(), n, dt);
        pg->all_reduce(t, op);
        require_same(t, expected(pg->size(), 0, n, dt, op));
      }
    }
  }
}

TEST_CASE("all_reduce: avg of integers is refused on every rank before anything is sent") {
  auto pg = dist::world();
  Tensor t = rank_input(pg->rank(), 4, kInt32);
  REQUIRE_THROWS_WITH(pg->all_reduce(t, ReduceOp::Avg), Catch::Contains("avg of a int32 tensor"));
  pg->all_reduce(t, ReduceOp::Sum);  // the group is still usable
  require_same(t, expected(pg->size(), 0, 4, kInt32, ReduceOp::Sum));
}

TEST_CASE("all_reduce and broadcast on non-contiguous views write through the view") {
  auto pg = dist::world();
  Tensor base = zeros({6, 4});
  Tensor view = base.t();  // [4, 6], strides (1, 4)
  view.copy_(reshape(rank_input(pg->rank(), 24, kFloat32), {4, 6}));
  pg->all_reduce(view, ReduceOp::Sum);
  require_same(reshape(view.contiguous(), {24}), expected(pg->size(), 0, 24, kFloat32, ReduceOp::Sum));

  for (int root = 0; root < pg->size(); ++root) {
    Tensor b = reshape(rank_input(pg->rank(), 24, kBFloat16), {4, 6}).t();
    pg->broadcast(b, root);
    require_same(b.contiguous(), reshape(rank_input(root, 24, kBFloat16), {4, 6}).t().contiguous());
  }
}

TEST_CASE("a collective that writes a tensor bumps its version, in place or through a staging copy") {
  // Caches keyed on versions (autocast's casts, the CPU's widened GEMM operands) must
  // not serve what a collective overwrote. Alone, a collective leaves its tensor as it is.
  auto pg = dist::world();
  if (pg->size() == 1) return;
  for (ScalarType dt : {kFloat32, kBFloat16}) {
    Tensor t = rank_input(pg->rank(), 10, dt);
    const uint32_t before = t.version();
    pg->all_reduce(t, ReduceOp::Sum);
    CHECK(t.version() > before);
    const uint32_t mid = t.version();
    pg->broadcast(t, 0);
    CHECK(t.version() > mid);
  }
  Tensor view = zeros({6, 4}).t();
  const uint32_t before = view.version();
  pg->all_reduce(view, ReduceOp::Sum);
  CHECK(view.version() > before);
}

TEST_CASE("an expanded view cannot receive a collective's result") {
  auto pg = dist::world();
  Tensor e = zeros({1}).expand({8});
  REQUIRE_THROWS_WITH(pg->all_reduce(e), Catch::Contains("share memory"));
}

TEST_CASE("all_gather stacks every rank's input in rank order") {
  auto pg = dist::world();
  for (ScalarType dt : {kFloat32, kFloat16, kInt64, kBool}) {
    Tensor in = reshape(rank_input(pg->rank(), 15, dt), {3, 5});
    Tensor out = pg->all_gather(in);
    REQUIRE(out.sizes() == Shape({pg->size(), 3, 5}));
    for (int r = 0; r < pg->size(); ++r) require_same(out.select(0, r), reshape(rank_input(r, 15, dt), {3, 5}));
  }
}

TEST_CASE("reduce_scatter: chunks split unevenly when the world size does not divide numel") {
  auto pg = dist::world();
  for (int64_t n : {int64_t{1}, int64_t{10}, int64_t{4097}}) {
    for (ScalarType dt : {kFloat32, kBFloat16, kInt32}) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
        INFO(dtype_name(dt) << " n=" << n);
        Tensor in = rank_input(pg->rank(), n, dt);
        Tensor out = pg->reduce_scatter(in, op);
        const dist::ChunkRange c = dist::chunk_range(n, pg->size(), pg->rank());
        require_same(out, expected(pg->size(), c.begin, c.end, dt, op));
      }
    }
  }
  Tensor in = rank_input(pg->rank(), 12, kFloat64);
  Tensor out = pg->reduce_scatter(in, ReduceOp::Avg);
  const dist::ChunkRange c = dist::chunk_range(12, pg->size(), pg->rank());
  require_same(out, expected(pg->size(), c.begin, c.end, kFloat64, ReduceOp::Avg));
}

TEST_CASE("chunk_range covers numel exactly once, larger chunks first") {
  for (int size : {1, 2, 3, 4, 7}) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{6}, int64_t{10}, int64_t{1001}}) {
      int64_t next = 0;
      for (int r = 0; r < size; ++r) {
        const dist::ChunkRange c = dist::chunk_range(n, size, r);
        REQUIRE(c.begin == next);
        REQUIRE(c.end - c.begin >= n / size);
        REQUIRE(c.end - c.begin <= n / size + 1);
        next = c.end;
      }
      REQUIRE(next == n);
    }
  }
  REQUIRE_THROWS(dist::chunk_range(4, 2, 2));
}

TEST_CASE("collectives whose calls differ across ranks raise on every rank, naming each rank's call") {
  auto pg = dist::world();
  if (pg->size() < 2) return;
  // Rank 0 has one more element.
  Tensor t = zeros({pg->rank() == 0 ? 5 : 4});
  try {
    pg->all_reduce(t);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string m = e.what();
    REQUIRE_THAT(m, Catch::Contains("rank 0: all_reduce(sum) float32 [5]"));
    REQUIRE_THAT(m, Catch::Contains("rank 1: all_reduce(sum) float32 [4]"));
  }
  // Different dtypes, then different collectives.
  Tensor d = zeros({3}, TensorOptions{.dtype = pg->rank() == 0 ? kFloat64 : kFloat32});
  REQUIRE_THROWS_WITH(pg->all_reduce(d), Catch::Contains("float64") && Catch::Contains("float32"));
  Tensor b = zeros({3});
  if (pg->rank() == 0) {
    REQUIRE_THROWS_WITH(pg->broadcast(b, 0), Catch::Contains("broadcast(root 0)") && Catch::Contains("all_reduce"));
  } else {
    REQUIRE_THROWS_WITH(pg->all_reduce(b), Catch::Contains("broadcast(root 0)") && Catch::Contains("all_reduce"));
  }
  // The group is still usable: every rank refused the same calls.
  Tensor ok = ones({2});
  pg->all_reduce(ok);
  REQUIRE(ok.to_vector<float>() == std::vector<float>{float(pg->size()), float(pg->size())});
}

TEST_CASE("send and recv around a ring; a receiver expecting another shape is told both") {
  auto pg = dist::world();
  if (pg->size() < 2) {
    Tensor t = zeros({2});
    REQUIRE_THROWS_WITH(pg->send(t, 0), Catch::Contains("no peer") || Catch::Contains("itself"));
    return;
  }
  const int next = (pg->rank() + 1) % pg->size(), prev = (pg->rank() + pg->size() - 1) % pg->size();
  Tensor out = rank_input(pg->rank(), 33, kFloat16);
  Tensor in = zeros({33}, TensorOptions{.dtype = kFloat16});
  auto s = pg->send_async(out, next, 3);
  auto r = pg->recv_async(in, prev, 3);
  r->wait();
  s->wait();
  require_same(in, rank_input(prev, 33, kFloat16));

  // The receiver expects [34] float16, the sender sends [33] float16 (and vice versa for a larger one).
  Tensor wrong = zeros({pg->rank() % 2 == 0 ? 34 : 32}, TensorOptions{.dtype = kFloat16});
  auto s2 = pg->send_async(out, next, 4);
  REQUIRE_THROWS_WITH(pg->recv(wrong, prev, 4), Catch::Contains("sent float16 [33]") &&
                                                    Catch::Contains("receives into float16 [3"));
  s2->wait();
  // The mismatched message was drained: the next exchange is intact.
  auto s3 = pg->send_async(out, next, 5);
  pg->recv(in, prev, 5);
  s3->wait();
  require_same(in, rank_input(prev, 33, kFloat16));

  REQUIRE_THROWS_WITH(pg->send(out, pg->rank()), Catch::Contains("itself"));
  REQUIRE_THROWS_WITH(pg->send(out, pg->size()), Catch::Contains("outside the group"));
  REQUIRE_THROWS_WITH(pg->send(out, next, -1), Catch::Contains("tag -1"));
}

TEST_CASE("asynchronous collectives complete in any wait order; is_completed does not block") {
  auto pg = dist::world();
  std::vector<Tensor> ts;
  std::vector<dist::WorkPtr> works;
  for (int k = 0; k < 6; ++k) {
    ts.push_back(full({64}, Scalar(double(k + pg->rank()))));
    works.push_back(pg->all_reduce_async(ts.back(), ReduceOp::Sum));
  }
  for (int k = 5; k >= 0; --k) works[static_cast<size_t>(k)]->wait();
  const double rank_sum = pg->size() * (pg->size() - 1) / 2.0;
  for (int k = 0; k < 6; ++k) {
    REQUIRE(works[static_cast<size_t>(k)]->is_completed());
    REQUIRE(ts[static_cast<size_t>(k)].to_vector<float>()[63] == float(k * pg->size() + rank_sum));
  }
  pg->barrier();
}

TEST_CASE("bad calls raise before anything is sent") {
  auto pg = dist::world();
  Tensor t = zeros({4});
  REQUIRE_THROWS_WITH(pg->broadcast(t, pg->size()), Catch::Contains("root rank"));
  REQUIRE_THROWS_WITH(pg->broadcast(t, -1), Catch::Contains("root rank -1"));
  Tensor small = zeros({3});
  REQUIRE_THROWS_WITH(pg->all_gather_async(small, t), Catch::Contains("cannot hold"));
  Tensor undefined;
  REQUIRE_THROWS_WITH(pg->all_reduce(undefined), Catch::Contains("undefined"));
  Tensor m = empty({4}, TensorOptions{.device = Device::meta()});
  REQUIRE_THROWS_WITH(pg->all_reduce(m), Catch::Contains("moves cpu tensors"));
}

TEST_CASE("a destroyed group refuses every call, naming its state") {
  auto g = dist::make_local_group();
  g->destroy();
  g->destroy();  // idempotent
  Tensor t = zeros({2});
  REQUIRE(g->is_destroyed());
  REQUIRE_THROWS_WITH(g->all_reduce(t), Catch::Contains("destroyed process group"));
  REQUIRE_THROWS_WITH(g->barrier(), Catch::Contains("destroyed process group"));
  // The world is unaffected.
  dist::world()->barrier();
}
