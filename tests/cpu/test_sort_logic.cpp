// The order of the CUDA sorting kernels run on the host (kernels/common/sort_keys.h):
// the keys of Note [Sort keys] order every dtype's values as the CPU kernels compare them
// (NaN largest, -0.0 equal to +0.0), and the bitonic network of Note [Bitonic lines],
// stepped exactly as the kernels launch it, is a stable sort in both directions.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <mixt/kernels/common/sort_keys.h>
#include <mixt/mixt.h>

using namespace mixt;

namespace {

// The CPU kernels' comparison (kernels/cpu/sort.cpp), written again: a before b.
bool cpu_before(double a, double b) { return !std::isnan(a) && (std::isnan(b) || a < b); }

// What the kernels compute for one line of keys: its pairs padded and run through every
// (k, j) step, each step's pairs in any order (here: reversed, to show order does not matter).
std::vector<int64_t> network_order(const std::vector<uint64_t>& line_keys) {
  const int64_t len = static_cast<int64_t>(line_keys.size()), padded = sort_keys::padded_length(len);
  std::vector<uint64_t> keys(static_cast<size_t>(padded), sort_keys::kPadKey);
  std::vector<int64_t> pos(static_cast<size_t>(padded), padded);
  for (int64_t j = 0; j < len; ++j) keys[j] = line_keys[j], pos[j] = j;
  for (int64_t k = 2; k <= padded; k <<= 1)
    for (int64_t j = k / 2; j >= 1; j >>= 1)
      for (int64_t p = padded / 2 - 1; p >= 0; --p) {
        int64_t lo, hi;
        sort_keys::bitonic_pair(p, j, &lo, &hi);
        REQUIRE(lo < hi);
        REQUIRE(hi < padded);
        sort_keys::bitonic_compare_swap(keys.data(), pos.data(), lo, hi, k);
      }
  for (int64_t j = len; j < padded; ++j) REQUIRE(pos[j] == padded);  // the padding stays behind
  pos.resize(static_cast<size_t>(len));
  return pos;
}

template <class T>
std::vector<int64_t> stable_order(const std::vector<T>& v, bool descending) {
  std::vector<int64_t> order(v.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
    const double a = static_cast<double>(v[x]), b = static_cast<double>(v[y]);
    return descending ? cpu_before(b, a) : cpu_before(a, b);
  });
  return order;
}

template <class T>
std::vector<uint64_t> keys_of(const std::vector<T>& v, bool descending) {
  std::vector<uint64_t> k;
  for (const T& x : v) k.push_back(sort_keys::order_key(x, descending));
  return k;
}

}  // namespace

TEST_CASE("sort keys order values as the CPU compares them", "[device][sort]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> v = {-inf, -1e308, -3.5, -1, -5e-324, -0.0, 0.0, 5e-324, 1, 2.5, 1e308, inf, nan, -nan};
  for (size_t a = 0; a < v.size(); ++a)
    for (size_t b = 0; b < v.size(); ++b) {
      INFO(v[a] << " vs " << v[b]);
      const uint64_t ka = sort_keys::ascending_key(v[a]), kb = sort_keys::ascending_key(v[b]);
      CHECK((ka < kb) == cpu_before(v[a], v[b]));
      CHECK((ka == kb) == (!cpu_before(v[a], v[b]) && !cpu_before(v[b], v[a])));
      CHECK((sort_keys::order_key(v[a], true) < sort_keys::order_key(v[b], true)) == cpu_before(v[b], v[a]));
    }
  CHECK(sort_keys::is_nan_key(sort_keys::ascending_key(-nan)));
  CHECK(sort_keys::ascending_key(float{-0.0f}) == sort_keys::ascending_key(0.0));
  CHECK(sort_keys::ascending_key(Half(-2.0f)) == sort_keys::ascending_key(-2.0));
  CHECK(sort_keys::ascending_key(BFloat16(3.0f)) < sort_keys::ascending_key(Float8_e4m3fn(3.5f)));
  // Integers by their int64 value, across the whole range.
  const std::vector<int64_t> ints = {INT64_MIN, -5, -1, 0, 1, 7, INT64_MAX};
  for (size_t a = 0; a + 1 < ints.size(); ++a)
    CHECK(sort_keys::ascending_key(ints[a]) < sort_keys::ascending_key(ints[a + 1]));
  CHECK(sort_keys::ascending_key(uint8_t{200}) > sort_keys::ascending_key(int8_t{-100}));
  CHECK(sort_keys::ascending_key(true) > sort_keys::ascending_key(false));
}

TEST_CASE("the bitonic network is a stable sort in both directions, any length", "[device][sort]") {
  std::mt19937 rng(20261202);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t len : {1, 2, 3, 5, 8, 13, 64, 100, 129, 1000}) {
    std::vector<double> v(static_cast<size_t>(len));
    for (double& x : v) {
      const uint32_t r = rng() % 12;
      x = r == 0 ? nan : r == 1 ? -0.0 : static_cast<double>(static_cast<int>(rng() % 7) - 3);  // ties
    }
    for (bool descending : {false, true}) {
      INFO("len " << len << (descending ? " descending" : ""));
      CHECK(network_order(keys_of(v, descending)) == stable_order(v, descending));
    }
    std::vector<int32_t> w(static_cast<size_t>(len));
    for (int32_t& x : w) x = static_cast<int32_t>(rng() % 5) - 2;
    CHECK(network_order(keys_of(w, true)) == stable_order(w, true));
  }
}

TEST_CASE("padded lengths and pair positions cover each step once", "[device][sort]") {
  CHECK(sort_keys::padded_length(1) == 1);
  CHECK(sort_keys::padded_length(5) == 8);
  CHECK(sort_keys::padded_length(64) == 64);
  CHECK(sort_keys::padded_length(65) == 128);
  for (int64_t padded : {2, 8, 64})
    for (int64_t j = padded / 2; j >= 1; j >>= 1) {
      std::vector<int> seen(static_cast<size_t>(padded), 0);
      for (int64_t p = 0; p < padded / 2; ++p) {
        int64_t lo, hi;
        sort_keys::bitonic_pair(p, j, &lo, &hi);
        CHECK(hi - lo == j);
        CHECK((lo & j) == 0);
        ++seen[lo], ++seen[hi];
      }
      CHECK(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
    }
}
