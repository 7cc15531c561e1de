// The reducers (kernels/common/reducers.h) and the reduction geometry and launch plan
// (kernels/common/reduce_geometry.h) that the CPU and CUDA kernels share, run on the
// host: combine is associative, the device's order (lanes, then the fixed tree) gives
// the sequential result (bit for bit where the arithmetic is exact), offsets agree with
// a plain walk, plans are sane for odd shapes, and the NaN and empty-input rules hold.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include <mixt/kernels/common/reduce_geometry.h>
#include <mixt/kernels/common/reducers.h>
#include <mixt/mixt.h>

using namespace mixt;
using namespace mixt::reducers;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInfD = std::numeric_limits<double>::infinity();

// Bitwise equality of doubles (NaN equals NaN of the same payload).
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

template <class R, class V>
typename R::acc_t sequential(const R& r, const std::vector<V>& x) {
  typename R::acc_t a = r.init();
  for (size_t k = 0; k < x.size(); ++k) r.accumulate(a, x[k], static_cast<int64_t>(k));
  return a;
}

// The device's result under plan `l` (reduce_in_device_order).
template <class R, class V>
typename R::acc_t device_order(const R& r, const std::vector<V>& x, const ReduceLaunch& l) {
  return reduce_in_device_order(r, static_cast<int64_t>(x.size()), l, [&](int64_t k) { return x[static_cast<size_t>(k)]; });
}
// ... with `group` threads and no chunks.
template <class R, class V>
typename R::acc_t device_order(const R& r, const std::vector<V>& x, int group) {
  return device_order(r, x, group_only_launch(group));
}
// ... with `group` threads and `splits` chunks (a second pass folds them in order).
ReduceLaunch chunked(int group, int64_t splits, int64_t n) {
  ReduceLaunch l = group_only_launch(group);
  l.chunk = (n + splits - 1) / splits;
  l.splits = l.chunk > 0 ? (n + l.chunk - 1) / l.chunk : 1;
  return l;
}

// Values that are exact float16 numbers in [-2, 2] (their double sums are exact for a few thousand terms).
std::vector<double> half_grid(std::mt19937& rng, int n) {
  std::uniform_int_distribution<int> d(-2048, 2048);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = d(rng) / 1024.0;
  return v;
}

std::vector<double> uniform(std::mt19937& rng, int n, double lo, double hi) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = static_cast<float>(d(rng));  // float32 data
  return v;
}

const int kGroups[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
const int kLengths[] = {0, 1, 2, 3, 7, 31, 32, 33, 255, 256, 257, 1000, 4099};

}  // namespace

TEST_CASE("combine is associative and init is its identity", "[reducers]") {
  std::mt19937 rng(11);
  // Partials from three consecutive ranges, combined both ways.
  auto check3 = [&](const auto& r, const auto& x, auto&& eq) {
    using acc_t = typename std::decay_t<decltype(r)>::acc_t;
    const size_t n = x.size(), i = n / 3, j = 2 * n / 3;
    acc_t a = r.init(), b = r.init(), c = r.init();
    for (size_t k = 0; k < n; ++k) r.accumulate(k < i ? a : k < j ? b : c, x[k], static_cast<int64_t>(k));
    acc_t left = a, bc = b, right = a;
    r.combine(left, b);
    r.combine(left, c);
    r.combine(bc, c);
    r.combine(right, bc);
    CHECK(eq(left, right));
    acc_t with_id = a, id_first = r.init();
    r.combine(with_id, r.init());
    r.combine(id_first, a);
    CHECK(eq(with_id, a));
    CHECK(eq(id_first, a));
  };
  auto eq = [](const auto& p, const auto& q) { return std::memcmp(&p, &q, sizeof p) == 0; };
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 3 + static_cast<int>(rng() % 300);
    const std::vector<double> h = half_grid(rng, n);
    std::vector<int64_t> ints(static_cast<size_t>(n));
    for (auto& v : ints) v = static_cast<int64_t>(rng()) * 977;  // wraps
    check3(Sum<double>{}, h, eq);
    check3(Sum<int64_t>{}, ints, eq);
    check3(Prod<int64_t>{}, ints, eq);
    check3(Extremum<double, true>{}, h, eq);
    check3(Extremum<double, false>{}, h, eq);
    check3(Logical<true>{}, h, eq);
    check3(Logical<false>{}, h, eq);
    // Ties are frequent on a coarse grid: the first position must win either way.
    std::vector<double> coarse(static_cast<size_t>(n));
    for (double& v : coarse) v = static_cast<double>(rng() % 5);
    auto vi_eq = [](const ValueIndex<double>& p, const ValueIndex<double>& q) {
      return p.i == q.i && (same_bits(p.v, q.v) || p.i < 0);
    };
    check3(Arg<double, true>{}, coarse, vi_eq);
    check3(Arg<double, false>{}, coarse, vi_eq);
    check3(Norm{NormKind::Inf, kInfD}, h, eq);
    check3(Norm{NormKind::One, 1.0}, h, eq);
    // Welford and logsumexp round differently in each grouping: close, not equal.
    auto w_eq = [](const WelfordAcc<double>& p, const WelfordAcc<double>& q) {
      return p.n == q.n && std::abs(p.mean - q.mean) <= 1e-12 * (1 + std::abs(p.mean)) &&
             std::abs(p.m2 - q.m2) <= 1e-12 * (1 + std::abs(p.m2));
    };
    check3(Welford<double>{}, uniform(rng, n, -3, 3), w_eq);
    auto l_eq = [](const LogSumExpAcc& p, const LogSumExpAcc& q) {
      return p.nan == q.nan && p.m == q.m && std::abs(p.s - q.s) <= 1e-12 * p.s;
    };
    check3(LogSumExp{}, uniform(rng, n, -30, 30), l_eq);
  }
}

TEST_CASE("the device order (lanes, then the fixed tree) equals the sequential fold", "[reducers]") {
  std::mt19937 rng(5);
  for (int n : kLengths) {
    for (int group : kGroups) {
      INFO("n " << n << " group " << group);
      // Exact arithmetic: bit for bit.
      const std::vector<double> h = half_grid(rng, n);
      CHECK(same_bits(device_order(Sum<double>{}, h, group), sequential(Sum<double>{}, h)));
      std::vector<int64_t> ints(static_cast<size_t>(n));
      for (auto& v : ints) v = static_cast<int64_t>(rng());
      CHECK(device_order(Sum<int64_t>{}, ints, group) == sequential(Sum<int64_t>{}, ints));
      CHECK(device_order(Prod<int64_t>{}, ints, group) == sequential(Prod<int64_t>{}, ints));
      CHECK(same_bits(device_order(Extremum<double, true>{}, h, group), sequential(Extremum<double, true>{}, h)));
      CHECK(same_bits(device_order(Extremum<double, false>{}, h, group), sequential(Extremum<double, false>{}, h)));
      CHECK(device_order(Logical<true>{}, h, group) == sequential(Logical<true>{}, h));
      CHECK(device_order(Logical<false>{}, h, group) == sequential(Logical<false>{}, h));
      CHECK(same_bits(device_order(Norm{NormKind::Inf, kInfD}, h, group), sequential(Norm{NormKind::Inf, kInfD}, h)));
      CHECK(same_bits(device_order(Norm{NormKind::One, 1.0}, h, group), sequential(Norm{NormKind::One, 1.0}, h)));
      std::vector<double> coarse(static_cast<size_t>(n));
      for (double& v : coarse) v = static_cast<double>(rng() % 4);
      for (bool max : {true, false}) {
        const auto d = max ? device_order(Arg<double, true>{}, coarse, group) : device_order(Arg<double, false>{}, coarse, group);
        const auto s = max ? sequential(Arg<double, true>{}, coarse) : sequential(Arg<double, false>{}, coarse);
        CHECK(d.i == s.i);
        if (n > 0) CHECK(d.v == s.v);
      }
      // float32 data: the double sums differ in their last bits at most, so the float32 results agree.
      const std::vector<double> f = uniform(rng, n, -3, 3);
      CHECK(static_cast<float>(device_order(Sum<double>{}, f, group)) == static_cast<float>(sequential(Sum<double>{}, f)));
      const Welford<double> w{1.0, false};
      const double wd = w.project(device_order(w, f, group)), ws = w.project(sequential(w, f));
      if (n > 1) CHECK(std::abs(wd - ws) <= 1e-13 * ws);
      const LogSumExp l;
      const double ld = l.project(device_order(l, f, group)), ls = l.project(sequential(l, f));
      CHECK((n == 0 ? ld == ls : std::abs(ld - ls) <= 1e-14 * (1 + std::abs(ls))));
    }
  }
}

TEST_CASE("NaN rules: amax/amin/norm-inf propagate NaN, arg* pick the first NaN, logsumexp gives NaN", "[reducers]") {
  std::mt19937 rng(9);
  for (int n : {1, 5, 33, 300}) {
    for (int group : kGroups) {
      std::vector<double> x = half_grid(rng, n);
      const size_t at = rng() % static_cast<size_t>(n), later = std::min<size_t>(at + 1 + rng() % 7, static_cast<size_t>(n) - 1);
      x[at] = kNaN;
      x[later] = kNaN;
      CHECK(std::isnan(device_order(Extremum<double, true>{}, x, group)));
      CHECK(std::isnan(device_order(Extremum<double, false>{}, x, group)));
      CHECK(std::isnan(Norm{NormKind::Inf, kInfD}.project(device_order(Norm{NormKind::Inf, kInfD}, x, group))));
      CHECK(std::isnan(Norm{NormKind::Two, 2}.project(device_order(Norm{NormKind::Two, 2}, x, group))));
      CHECK(device_order(Arg<double, true>{}, x, group).i == static_cast<int64_t>(at));
      CHECK(device_order(Arg<double, false>{}, x, group).i == static_cast<int64_t>(at));
      CHECK(std::isnan(LogSumExp{}.project(device_order(LogSumExp{}, x, group))));
      CHECK(device_order(Logical<false>{}, std::vector<double>(static_cast<size_t>(n), 0.0), group) == false);
      std::vector<double> zeros_and_nan(static_cast<size_t>(n), 0.0);
      zeros_and_nan[at] = kNaN;
      CHECK(device_order(Logical<false>{}, zeros_and_nan, group) == true);  // NaN is non-zero
    }
  }
  // logsumexp of +inf is +inf; of -inf only, -inf.
  CHECK(LogSumExp{}.project(sequential(LogSumExp{}, std::vector<double>{1.0, kInfD, 2.0})) == kInfD);
  CHECK(LogSumExp{}.project(sequential(LogSumExp{}, std::vector<double>{-kInfD, -kInfD})) == -kInfD);
}

TEST_CASE("empty inputs: each reducer's init projects to the op's empty result", "[reducers]") {
  CHECK(Sum<double>{}.project(Sum<double>{}.init()) == 0.0);
  CHECK(Sum<int64_t>{}.project(Sum<int64_t>{}.init()) == 0);
  CHECK(Prod<double>{}.project(Prod<double>{}.init()) == 1.0);
  Mean mean;
  mean.n = 0;
  CHECK(std::isnan(mean.project(mean.init())));
  CHECK(std::isnan(Welford<double>{1.0, false}.project({})));
  CHECK(std::isnan(Welford<double>{0.0, true}.project({})));
  CHECK(Norm{NormKind::Two, 2}.project(Norm{NormKind::Two, 2}.init()) == 0.0);
  CHECK(Norm{NormKind::NegInf, -kInfD}.project(Norm{NormKind::NegInf, -kInfD}.init()) == kInfD);
  CHECK(LogSumExp{}.project(LogSumExp{}.init()) == -kInfD);
  CHECK(Logical<true>{}.init() == true);
  CHECK(Logical<false>{}.init() == false);
  CHECK(Arg<double, true>{}.init().i == -1);
  // A lane with no positions contributes init, which changes nothing.
  const std::vector<double> one{2.5};
  for (int group : kGroups) {
    CHECK(device_order(Arg<double, true>{}, one, group).i == 0);
    CHECK(device_order(Welford<double>{}, one, group).n == 1);
    CHECK(device_order(Sum<double>{}, one, group) == 2.5);
  }
  // var with n <= correction divides by zero: inf or NaN as the CPU gives.
  CHECK(std::isinf(Welford<double>{1.0, false}.project(WelfordAcc<double>{2.0, 1.0, 1})));
}

namespace {

// The reduced offsets of every output, walking the input naively (row-major over the
// kept dims; reduced positions in any order, so each list is sorted).
std::vector<std::vector<int64_t>> naive_groups(const Shape& sizes, const Shape& strides, int64_t es, uint32_t mask) {
  const int nd = sizes.size();
  std::map<std::vector<int64_t>, std::vector<int64_t>> by_out;
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  for (int64_t n = 0; n < sizes.numel(); ++n) {
    std::vector<int64_t> kept;
    int64_t off = 0;
    for (int d = 0; d < nd; ++d) {
      off += idx[static_cast<size_t>(d)] * strides[d] * es;
      if (!(mask & (1u << d))) kept.push_back(idx[static_cast<size_t>(d)]);
    }
    by_out[kept].push_back(off);
    for (int d = nd - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < sizes[d]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
  std::vector<std::vector<int64_t>> r;
  for (auto& [k, v] : by_out) {  // std::map orders the kept indices row-major
    std::sort(v.begin(), v.end());
    r.push_back(v);
  }
  return r;
}

}  // namespace

TEST_CASE("reduce geometry: kept_offset + reduced_offset visit what a plain walk visits", "[reducers]") {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 400; ++trial) {
    const int nd = 1 + static_cast<int>(rng() % 5);
    Shape sizes;
    for (int d = 0; d < nd; ++d) sizes.push_back(1 + static_cast<int64_t>(rng() % 5));
    // A permuted, possibly stepped layout.
    std::vector<int> perm(static_cast<size_t>(nd));
    for (int d = 0; d < nd; ++d) perm[static_cast<size_t>(d)] = d;
    std::shuffle(perm.begin(), perm.end(), rng);
    Shape strides = Shape::filled(nd, 0);
    int64_t s = 1 + static_cast<int64_t>(rng() % 2);
    for (int k = nd - 1; k >= 0; --k) {
      strides[perm[static_cast<size_t>(k)]] = s;
      s *= sizes[perm[static_cast<size_t>(k)]] * (rng() % 4 == 0 ? 2 : 1);
    }
    uint32_t mask = static_cast<uint32_t>(rng()) & ((1u << nd) - 1);
    if (mask == 0) mask = 1u << (rng() % static_cast<unsigned>(nd));
    const int64_t es = int64_t{1} << (rng() % 4);
    const ReduceGeometry g = make_reduce_geometry(nd, sizes.data(), strides.data(), es, mask);
    const auto want = naive_groups(sizes, strides, es, mask);
    INFO("trial " << trial << " sizes " << sizes.str() << " strides " << strides.str() << " mask " << mask);
    REQUIRE(g.out_numel == static_cast<int64_t>(want.size()));
    for (int64_t o = 0; o < g.out_numel; ++o) {
      std::vector<int64_t> got;
      for (int64_t k = 0; k < g.red_numel; ++k) got.push_back(kept_offset(g, o) + reduced_offset(g, k));
      std::sort(got.begin(), got.end());
      REQUIRE(got == want[static_cast<size_t>(o)]);
    }
  }
}

TEST_CASE("one reduced dim: reduced positions follow the logical order (the index of argmax)", "[reducers]") {
  const Shape sizes{3, 4, 5}, strides{1, 3, 12};  // dims stored in reverse
  for (int d = 0; d < 3; ++d) {
    const ReduceGeometry g = make_reduce_geometry(3, sizes.data(), strides.data(), 4, 1u << d);
    REQUIRE(g.nred == 1);
    for (int64_t k = 0; k < sizes[d]; ++k) CHECK(reduced_offset(g, k) == k * strides[d] * 4);
  }
}

TEST_CASE("chunked plans: the second pass in chunk order gives the sequential result", "[reducers]") {
  std::mt19937 rng(17);
  for (int64_t n : {1, 2, 100, 1000, 4097}) {
    for (int group : {1, 32, 256}) {
      for (int64_t splits : {1, 2, 3, 7, 64}) {
        const ReduceLaunch l = chunked(group, splits, n);
        INFO("n " << n << " group " << group << " splits " << l.splits << " chunk " << l.chunk);
        const std::vector<double> h = half_grid(rng, static_cast<int>(n));
        CHECK(same_bits(device_order(Sum<double>{}, h, l), sequential(Sum<double>{}, h)));
        CHECK(same_bits(device_order(Extremum<double, false>{}, h, l), sequential(Extremum<double, false>{}, h)));
        std::vector<double> coarse(static_cast<size_t>(n));
        for (double& v : coarse) v = static_cast<double>(rng() % 3);
        CHECK(device_order(Arg<double, true>{}, coarse, l).i == sequential(Arg<double, true>{}, coarse).i);
        CHECK(device_order(Arg<double, false>{}, coarse, l).i == sequential(Arg<double, false>{}, coarse).i);
        const std::vector<double> f = uniform(rng, static_cast<int>(n), -3, 3);
        const Welford<double> w{0.0, false};
        const double wd = w.project(device_order(w, f, l)), ws = w.project(sequential(w, f));
        CHECK(std::abs(wd - ws) <= 1e-13 * (ws + 1e-300));
      }
    }
  }
}

TEST_CASE("launch plans for odd shapes", "[reducers]") {
  auto geom = [](Shape sizes, Shape strides, uint32_t mask) {
    return make_reduce_geometry(sizes.size(), sizes.data(), strides.data(), 4, mask);
  };
  auto sane = [](const ReduceGeometry& g, const ReduceLaunch& l) {
    INFO("out " << g.out_numel << " red " << g.red_numel << " group " << l.group << " splits " << l.splits);
    CHECK(l.group >= 1);
    CHECK(l.group <= l.block);
    CHECK((l.group & (l.group - 1)) == 0);
    CHECK(l.block % l.group == 0);
    CHECK(l.outputs_per_block * l.group == l.block);
    CHECK(l.blocks >= 1);
    CHECK(l.blocks <= static_cast<unsigned>(kMaxBlocks));
    // The grid-stride rounds cover every output.
    const int64_t per_round = int64_t{l.blocks} * l.outputs_per_block;
    CHECK((per_round >= g.out_numel || l.blocks == static_cast<unsigned>(kMaxBlocks)));
    // Chunks tile the reduced range, none empty; the workspace offsets fit.
    CHECK(l.splits >= 1);
    CHECK(l.splits <= kReduceMaxSplits);
    if (l.splits == 1) {
      CHECK(l.chunk == g.red_numel);
    } else {
      CHECK(l.chunk * l.splits >= g.red_numel);
      CHECK((l.splits - 1) * l.chunk < g.red_numel);
      CHECK(l.chunk >= l.group * kReduceMinPerThread);
    }
  };
  // Rows reduced along the dense dim: a group per output, up to a block.
  for (int64_t n : {1, 2, 3, 5, 31, 33, 255, 257, 100000}) {
    const ReduceGeometry g = geom({7, n}, {n, 1}, 2u);
    const ReduceLaunch l = make_reduce_launch(g);
    sane(g, l);
    CHECK(l.group == (n <= 1 ? 1 : std::min<int64_t>(256, int64_t{1} << static_cast<int>(std::ceil(std::log2(n))))));
    CHECK((l.splits > 1) == (n == 100000));  // 7 long rows: chunks give more blocks
  }
  // Columns (the kept dim is the dense one): one thread per output when there are many.
  const ReduceGeometry many_cols = geom({1000, 300000}, {300000, 1}, 1u);
  CHECK(kept_is_inner(many_cols));
  CHECK(make_reduce_launch(many_cols).group == 1);
  sane(many_cols, make_reduce_launch(many_cols));
  // ... and lanes share an output when there are few.
  const ReduceGeometry few_cols = geom({1000, 3}, {3, 1}, 1u);
  CHECK(make_reduce_launch(few_cols).group == 256);
  sane(few_cols, make_reduce_launch(few_cols));
  // Everything reduced, nothing kept; one long reduction; many outputs of one element; none.
  const ReduceGeometry all = geom({3, 5, 7}, {35, 7, 1}, 7u);
  CHECK(all.out_numel == 1);
  CHECK(all.nred == 1);  // contiguous dims merge
  CHECK(make_reduce_launch(all).group == 128);
  CHECK(make_reduce_launch(all).splits == 1);
  sane(all, make_reduce_launch(all));
  const ReduceGeometry longest = geom({int64_t{1} << 24}, {1}, 1u);
  CHECK(make_reduce_launch(longest).splits == 1024);
  sane(longest, make_reduce_launch(longest));
  const ReduceGeometry odd = geom({3, 1000003}, {1, 3}, 2u);  // a transposed view, reduced along the strided dim
  sane(odd, make_reduce_launch(odd));
  const ReduceGeometry huge = geom({int64_t{1} << 30, 1}, {1, 1}, 2u);
  CHECK(make_reduce_launch(huge).group == 1);
  sane(huge, make_reduce_launch(huge));
  ReduceGeometry empty;
  empty.out_numel = 4;
  empty.red_numel = 0;
  CHECK(make_reduce_launch(empty).group == 1);
  sane(empty, make_reduce_launch(empty));
  // Random shapes: every output's device-order result equals the sequential one (exact data).
  std::mt19937 rng(29);
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t a = 1 + static_cast<int64_t>(rng() % 40), b = 1 + static_cast<int64_t>(rng() % 3000);
    const bool inner = rng() % 2 == 0;
    const ReduceGeometry g = inner ? geom({a, b}, {b, 1}, 2u) : geom({b, a}, {a, 1}, 1u);
    const ReduceLaunch l = make_reduce_launch(g);
    sane(g, l);
    std::vector<int64_t> x(static_cast<size_t>(b));
    for (auto& v : x) v = static_cast<int64_t>(rng() % 7) - 3;
    CHECK(device_order(Sum<int64_t>{}, x, l) == sequential(Sum<int64_t>{}, x));
    CHECK(device_order(Arg<int64_t, true>{}, x, l).i == sequential(Arg<int64_t, true>{}, x).i);
  }
  // Row kernels: at least a warp, a power of two, at most a block; the cache limit.
  CHECK(row_block_threads(1) == 32);
  CHECK(row_block_threads(33) == 64);
  CHECK(row_block_threads(1 << 20) == kBlockThreads);
  CHECK(row_cache_fits(kRowCacheBytes / 8, 8));
  CHECK_FALSE(row_cache_fits(kRowCacheBytes / 8 + 1, 8));
  CHECK(row_shared_bytes(256, 10, 4) == 256 * kRowPartialBytes + 40);
  CHECK(row_shared_bytes(256, 1 << 20, 4) == 256 * kRowPartialBytes);
  CHECK(row_shared_bytes(256, kRowCacheBytes / 8, 8) <= 48 * 1024);  // the default shared-memory limit
  // reduce_kernel's partials (block * sizeof(acc_t) bytes of shared memory, and the chunk workspace).
  CHECK(sizeof(WelfordAcc<double>) <= kReduceMaxAccBytes);
  CHECK(sizeof(LogSumExpAcc) <= kReduceMaxAccBytes);
  CHECK(sizeof(ValueIndex<double>) <= kReduceMaxAccBytes);
}

TEST_CASE("the CPU ops give the device order's results where the arithmetic is exact", "[reducers]") {
  std::mt19937 rng(21);
  for (int64_t n : {1, 7, 64, 300, 1025}) {
    const std::vector<double> h = half_grid(rng, static_cast<int>(3 * n));
    Tensor t = from_vector(h, {3, n}).to(kFloat16);
    const std::vector<double> cpu = sum(t, {1}).to(kFloat64).to_vector<double>();
    const std::vector<double> cpu_max = amax(t, {1}).to(kFloat64).to_vector<double>();
    const std::vector<int64_t> cpu_arg = argmax(t, 1).to_vector<int64_t>();
    const ReduceLaunch group = make_reduce_launch(make_reduce_geometry(2, t.sizes().data(), t.strides().data(), 2, 2u));
    for (int64_t r = 0; r < 3; ++r) {
      const std::vector<double> row(h.begin() + r * n, h.begin() + (r + 1) * n);
      CHECK(static_cast<double>(Half(static_cast<float>(device_order(Sum<double>{}, row, group)))) == cpu[static_cast<size_t>(r)]);
      CHECK(device_order(Extremum<double, true>{}, row, group) == cpu_max[static_cast<size_t>(r)]);
      CHECK(device_order(Arg<double, true>{}, row, group).i == cpu_arg[static_cast<size_t>(r)]);
    }
  }
}

namespace {

// Distance in float32 ulps (same sign, finite).
int64_t ulps(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::abs(static_cast<int64_t>(ia) - static_cast<int64_t>(ib));
}

}  // namespace

TEST_CASE("the softmax row kernel's steps, in the device order, give the CPU's softmax", "[reducers]") {
  // softmax.cu (rows along the innermost dim): the maximum and the double sum of exp(x - m)
  // are folded by a block of row_block_threads(n) threads (lanes, then the tree), float exp
  // is the double exp rounded; then the CPU's formulas. softmax within 2 ulps of the CPU
  // (the exp and, through the sum's last bits, 1 / sum may each round to a neighbour);
  // log_softmax within an ulp (log(sum) may).
  std::mt19937 rng(41);
  for (int64_t n : {1, 5, 32, 33, 300, 5000}) {
    const std::vector<double> v = uniform(rng, static_cast<int>(n), -8, 8);
    const Tensor t = from_vector(v, {1, n}).to(kFloat32);
    const std::vector<float> cpu = nn::functional::softmax(t, 1).to_vector<float>();
    const std::vector<float> cpu_log = nn::functional::log_softmax(t, 1).to_vector<float>();
    const ReduceLaunch block = group_only_launch(row_block_threads(n));
    std::vector<float> x(v.begin(), v.end());
    const float m = device_order(Extremum<float, true>{}, x, block);
    std::vector<double> terms;
    for (float xi : x) terms.push_back(static_cast<float>(std::exp(static_cast<double>(xi - m))));
    const double s = device_order(Sum<double>{}, terms, block);
    const float inv = static_cast<float>(1.0 / s), log_s = static_cast<float>(std::log(s));
    for (int64_t j = 0; j < n; ++j) {
      const float xj = x[static_cast<size_t>(j)];
      const float y = static_cast<float>(std::exp(static_cast<double>(xj - m))) * inv;
      INFO("n " << n << " j " << j);
      CHECK(ulps(y, cpu[static_cast<size_t>(j)]) <= 2);
      CHECK(ulps(xj - m - log_s, cpu_log[static_cast<size_t>(j)]) <= 1);
    }
  }
}

TEST_CASE("the norm row kernel's steps, in the device order, give the CPU's layer_norm and rms_norm", "[reducers]") {
  // norm.cu: a block of row_block_threads(cols) threads folds the double sums (the mean,
  // then the centred squares) in the device order, then the CPU's formulas in double and
  // one rounding: the CPU's float32 results, or a neighbour when the sums' last bits move it.
  std::mt19937 rng(43);
  for (int64_t cols : {1, 3, 64, 100, 3000}) {
    const std::vector<double> v = uniform(rng, static_cast<int>(2 * cols), -2, 3);
    const std::vector<double> w = uniform(rng, static_cast<int>(cols), 0.5, 1.5), b = uniform(rng, static_cast<int>(cols), -1, 1);
    const Tensor x = from_vector(v, {2, cols}).to(kFloat32);
    const Tensor wt = from_vector(w, {cols}).to(kFloat32), bt = from_vector(b, {cols}).to(kFloat32);
    const std::vector<float> ln = nn::functional::layer_norm(x, {cols}, wt, bt, 1e-3).to_vector<float>();
    const std::vector<float> rms = nn::functional::rms_norm(x, {cols}, wt, 1e-4).to_vector<float>();
    const ReduceLaunch block = group_only_launch(row_block_threads(cols));
    const double n = static_cast<double>(cols);
    for (int64_t r = 0; r < 2; ++r) {
      const std::vector<double> row(v.begin() + r * cols, v.begin() + (r + 1) * cols);
      const double m = device_order(Sum<double>{}, row, block) / n;
      std::vector<double> centred, squares;
      for (double xi : row) centred.push_back((xi - m) * (xi - m)), squares.push_back(xi * xi);
      const double rs = 1.0 / std::sqrt(device_order(Sum<double>{}, centred, block) / n + 1e-3);
      const double rs_rms = 1.0 / std::sqrt(device_order(Sum<double>{}, squares, block) / n + 1e-4);
      for (int64_t j = 0; j < cols; ++j) {
        const size_t k = static_cast<size_t>(r * cols + j), jj = static_cast<size_t>(j);
        const double wj = static_cast<float>(w[jj]), bj = static_cast<float>(b[jj]);
        INFO("cols " << cols << " row " << r << " j " << j);
        CHECK(ulps(static_cast<float>((row[jj] - m) * rs * wj + bj), ln[k]) <= 1);
        CHECK(ulps(static_cast<float>(row[jj] * rs_rms * wj), rms[k]) <= 1);
      }
    }
  }
}
