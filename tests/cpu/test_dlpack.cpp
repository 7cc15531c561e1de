// DLPack exchange: exported fields for every dtype, zero-copy round trips,
// non-contiguous views, byte_offset, lifetimes (deleters run exactly once, after
// the last view), and the errors for what mixt cannot represent.
#include <catch2/catch.hpp>

#include <dlpack/dlpack.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

#include <mixt/mixt.h>
#include <mixt/runtime/io/dlpack.h>

#include "test_util.h"

using namespace mixt;
using namespace mixt::io;
using Catch::Contains;
using mixt::testing::error_of;
using mixt::testing::values;

namespace {

// DLPack (code, bits) of each dtype, as the DLPack spec lists them.
struct Expected {
  ScalarType dtype;
  uint8_t code, bits;
};
const Expected kExpected[] = {
    {kBool, 6, 8},     {kUInt8, 1, 8},     {kInt8, 0, 8},     {kInt32, 0, 32},   {kInt64, 0, 64},
    {kFloat16, 2, 16}, {kBFloat16, 4, 16}, {kFloat32, 2, 32}, {kFloat64, 2, 64},
};

// A DLManagedTensor made by hand over test-owned memory, counting its deleter calls.
struct Producer {
  alignas(64) float buffer[32];
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
  int deleted = 0;

  explicit Producer(std::vector<int64_t> sizes, std::vector<int64_t> element_strides = {}, uint64_t byte_offset = 0)
      : shape(std::move(sizes)), strides(std::move(element_strides)) {
    for (int i = 0; i < 32; ++i) buffer[i] = static_cast<float>(i);
    DLTensor& dl = managed.dl_tensor;
    dl.data = buffer;
    dl.device = {kDLCPU, 0};
    dl.ndim = static_cast<int>(shape.size());
    dl.dtype = {kDLFloat, 32, 1};
    dl.shape = shape.empty() ? nullptr : shape.data();
    dl.strides = strides.empty() ? nullptr : strides.data();
    dl.byte_offset = byte_offset;
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) { ++static_cast<Producer*>(self->manager_ctx)->deleted; };
  }
  Producer(const Producer&) = delete;
};

// Storage deleter of a test-owned blob: counts calls.
void count_free(void* ctx, void*) { ++*static_cast<int*>(ctx); }

Tensor sample(ScalarType dt) {
  return dt == kBool ? mixt::testing::bools({1, 0, 1, 1, 0, 1}, {2, 3})
                     : mixt::testing::make({0, 1, 2, 3, 4, 5}, dt, {2, 3});
}

}  // namespace

TEST_CASE("to_dlpack describes every supported dtype without copying", "[dlpack]") {
  for (const Expected& e : kExpected) {
    INFO(dtype_name(e.dtype));
    Tensor t = sample(e.dtype);
    const std::vector<double> want = values(t);
    DLManagedTensor* m = to_dlpack(t);
    const DLTensor& dl = m->dl_tensor;
    CHECK(dl.data == t.data_ptr());
    CHECK(dl.byte_offset == 0);
    CHECK(dl.device.device_type == kDLCPU);
    CHECK(dl.device.device_id == 0);
    CHECK(dl.ndim == 2);
    CHECK(std::vector<int64_t>(dl.shape, dl.shape + 2) == std::vector<int64_t>{2, 3});
    CHECK(std::vector<int64_t>(dl.strides, dl.strides + 2) == std::vector<int64_t>{3, 1});
    CHECK(dl.dtype.code == e.code);
    CHECK(dl.dtype.bits == e.bits);
    CHECK(dl.dtype.lanes == 1);

    Tensor u = from_dlpack(m);
    CHECK(u.dtype() == e.dtype);
    CHECK(u.sizes() == Shape{2, 3});
    CHECK(u.data_ptr() == t.data_ptr());
    CHECK(values(u) == want);
    u.zero_();  // the same memory: writes show through the original
    CHECK(values(t) == std::vector<double>(6, 0.0));
  }
}

TEST_CASE("dlpack round trips views, 0-dim and empty tensors", "[dlpack]") {
  Tensor base = mixt::testing::iota({3, 4});
  Tensor v = base.t().slice(0, 1, 4, 2);  // sizes [2, 3], strides [1, 4] -> [2, 4], offset 1
  REQUIRE_FALSE(v.is_contiguous());
  DLManagedTensor* m = to_dlpack(v);
  CHECK(m->dl_tensor.data == static_cast<void*>(base.data_ptr<float>() + 1));
  CHECK(std::vector<int64_t>(m->dl_tensor.strides, m->dl_tensor.strides + 2) == std::vector<int64_t>{2, 4});
  Tensor u = from_dlpack(m);
  CHECK(u.strides() == Shape{2, 4});
  CHECK(values(u) == std::vector<double>{1, 5, 9, 3, 7, 11});

  Tensor s = scalar_tensor(2.5, mixt::testing::of(kFloat64));
  DLManagedTensor* ms = to_dlpack(s);
  CHECK(ms->dl_tensor.ndim == 0);
  CHECK(from_dlpack(ms).item<double>() == 2.5);

  Tensor z = zeros({0, 5});
  Tensor zu = from_dlpack(to_dlpack(z));
  CHECK(zu.sizes() == Shape{0, 5});
  CHECK(zu.numel() == 0);
}

TEST_CASE("from_dlpack honours byte_offset and strides", "[dlpack]") {
  Producer p({3}, {}, 8);
  CHECK(values(from_dlpack(&p.managed)) == std::vector<double>{2, 3, 4});
  Producer q({2, 2}, {1, 3}, 4 * 4);
  Tensor t = from_dlpack(&q.managed);
  CHECK(t.strides() == Shape{1, 3});
  CHECK(values(t) == std::vector<double>{4, 7, 5, 8});
  Producer r({});  // 0-dim, null shape
  CHECK(from_dlpack(&r.managed).item<double>() == 0.0);
  Producer e({2, 0});
  e.managed.dl_tensor.data = nullptr;  // no memory for no elements
  CHECK(from_dlpack(&e.managed).numel() == 0);
  Producer u({4});
  u.managed.dl_tensor.dtype = {kDLUInt, 8, 1};
  Tensor bytes = from_dlpack(&u.managed);
  CHECK(bytes.dtype() == kUInt8);
  CHECK(values(bytes) == std::vector<double>{0, 0, 0, 0});  // float 0.0f: four zero bytes
}

TEST_CASE("from_dlpack calls the producer's deleter once, after the last view", "[dlpack]") {
  Producer p({4, 2});
  {
    Tensor t = from_dlpack(&p.managed);
    Tensor row = t.select(0, 1);
    Tensor col = t.slice(1, 1, 2);
    t = Tensor();
    CHECK(p.deleted == 0);
    CHECK(values(row) == std::vector<double>{2, 3});
    row = Tensor();
    CHECK(p.deleted == 0);
    CHECK(values(col) == std::vector<double>{1, 3, 5, 7});
  }
  CHECK(p.deleted == 1);
}

TEST_CASE("to_dlpack keeps mixt's storage alive until its deleter runs", "[dlpack]") {
  alignas(64) float buf[4] = {1, 2, 3, 4};
  int freed = 0;
  Tensor t = from_blob(buf, {4}, {}, kFloat32, count_free, &freed);
  t.requires_grad_();
  DLManagedTensor* m = to_dlpack(t);
  t = Tensor();
  CHECK(freed == 0);
  CHECK(static_cast<float*>(m->dl_tensor.data)[3] == 4.0f);
  m->deleter(m);
  CHECK(freed == 1);

  // Through a full round trip: freed once, when the imported tensor's last view dies.
  t = from_blob(buf, {2, 2}, {}, kFloat32, count_free, &freed);
  Tensor back = from_dlpack(to_dlpack(t)).select(0, 1);
  t = Tensor();
  CHECK(freed == 1);
  CHECK(values(back) == std::vector<double>{3, 4});
  CHECK_FALSE(back.requires_grad());
  back = Tensor();
  CHECK(freed == 2);
}

TEST_CASE("dlpack errors name the op and leave ownership with the caller", "[dlpack]") {
  CHECK_THAT(error_of([] { to_dlpack(Tensor()); }), Contains("to_dlpack") && Contains("undefined"));
  for (ScalarType dt : {kFloat8_e4m3fn, kFloat8_e5m2})
    CHECK_THAT(error_of([&] { to_dlpack(zeros({2}, mixt::testing::of(dt))); }),
               Contains("to_dlpack") && Contains(std::string(dtype_name(dt))) && Contains("no DLPack 0.6 type code"));
  CHECK_THAT(error_of([] { from_dlpack(nullptr); }), Contains("from_dlpack") && Contains("null DLManagedTensor"));

  using Edit = std::function<void(Producer&)>;
  const std::vector<std::pair<Edit, std::string>> cases = {
      {[](Producer& p) { p.managed.dl_tensor.ndim = -1; }, "-1 dimensions"},
      {[](Producer& p) { p.managed.dl_tensor.ndim = 9; }, "9 dimensions"},
      {[](Producer& p) { p.managed.dl_tensor.shape = nullptr; }, "null shape for 2 dimensions"},
      {[](Producer& p) { p.managed.dl_tensor.dtype.lanes = 4; }, "lanes = 4"},
      {[](Producer& p) {
         p.managed.dl_tensor.dtype = {kDLComplex, 64, 1};
       },
       "code 5, 64 bits"},
      {[](Producer& p) {
         p.managed.dl_tensor.dtype = {kDLInt, 16, 1};
       },
       "code 0, 16 bits"},
      {[](Producer& p) {
         p.managed.dl_tensor.dtype = {kDLUInt, 32, 1};
       },
       "code 1, 32 bits"},
      {[](Producer& p) {
         p.managed.dl_tensor.dtype = {kDLFloat, 8, 1};
       },
       "code 2, 8 bits"},
      {[](Producer& p) {
         p.managed.dl_tensor.dtype = {kDLBfloat, 32, 1};
       },
       "code 4, 32 bits"},
      {[](Producer& p) {
         p.managed.dl_tensor.device = {kDLOpenCL, 0};
       },
       "unsupported DLPack device type 4"},
      {[](Producer& p) { p.shape[1] = -2; }, "negative sizes or strides"},
      {[](Producer& p) {
         p.strides = {-1, 1}, p.managed.dl_tensor.strides = p.strides.data();
       },
       "negative sizes"},
      {[](Producer& p) {
         p.shape = {1LL << 40, 1LL << 40}, p.managed.dl_tensor.shape = p.shape.data();
       },
       "overflow int64"},
      {[](Producer& p) {
         p.strides = {1LL << 62, 1LL << 62}, p.managed.dl_tensor.strides = p.strides.data();
       },
       "overflow int64"},
      {[](Producer& p) { p.managed.dl_tensor.data = nullptr; }, "null data for a float32 tensor of shape [2, 3]"},
      {[](Producer& p) { p.managed.dl_tensor.byte_offset = 2; }, "is not aligned for float32"},
  };
  for (const auto& [edit, message] : cases) {
    Producer p({2, 3});
    edit(p);
    INFO(message);
    CHECK_THAT(error_of([&] { from_dlpack(&p.managed); }), Contains("from_dlpack") && Contains(message));
    CHECK(p.deleted == 0);
  }
  if (!cuda::is_available()) {
    Producer p({2});
    p.managed.dl_tensor.device = {kDLCUDA, 0};
    CHECK_THAT(error_of([&] { from_dlpack(&p.managed); }), Contains("CUDA is unavailable"));
    CHECK(p.deleted == 0);
  }
}

TEST_CASE("from_dlpack refuses geometry whose arithmetic overflows", "[dlpack]") {
  using Edit = std::function<void(Producer&)>;
  const int64_t p62 = int64_t{1} << 62, max = INT64_MAX;
  const uint64_t umax = UINT64_MAX;
  const std::vector<std::pair<Edit, std::string>> cases = {
      // The element count or the furthest element past int64.
      {[&](Producer& p) { p.shape = {4, p62}; }, "shape [4, 4611686018427387904]"},
      {[&](Producer& p) { p.shape = {0, p62, 4}; }, "shape [0, 4611686018427387904, 4]"},
      {[&](Producer& p) { p.shape = {2, 2}, p.strides = {max, 1}; }, "reach past 2^63 - 1 elements"},
      // Elements that fit, bytes that do not: 2^62 float32 elements are 2^64 bytes.
      {[&](Producer& p) { p.shape = {p62}; }, "elements of 4 bytes overflow"},
      {[&](Producer& p) { p.shape = {3}, p.strides = {p62 - 1}; }, "elements of 4 bytes overflow"},
      // byte_offset or the bytes of the view past the end of the address space.
      {[&](Producer& p) { p.managed.dl_tensor.byte_offset = umax - 3; }, "past the end of the address space"},
      {[&](Producer& p) { p.managed.dl_tensor.byte_offset = umax - 63; }, "past the end of the address space"},
      {[&](Producer& p) {
         p.managed.dl_tensor.data = reinterpret_cast<void*>(uintptr_t{UINTPTR_MAX} & ~uintptr_t{15});
       },
       "past the end of the address space"},
  };
  for (const auto& [edit, message] : cases) {
    Producer p({2, 3});
    edit(p);
    p.managed.dl_tensor.ndim = static_cast<int>(p.shape.size());
    p.managed.dl_tensor.shape = p.shape.data();
    p.managed.dl_tensor.strides = p.strides.empty() ? nullptr : p.strides.data();
    INFO(message);
    CHECK_THAT(error_of([&] { from_dlpack(&p.managed); }), Contains("from_dlpack") && Contains(message));
    CHECK(p.deleted == 0);
  }
}

TEST_CASE("from_dlpack imports or refuses every size and stride at the integer boundaries", "[dlpack]") {
  // Each 2-D geometry built from these values either imports as a view whose bytes
  // fit in int64, or raises mixt::Error from from_dlpack; nothing else.
  const int64_t p31 = int64_t{1} << 31, p32 = int64_t{1} << 32, p62 = int64_t{1} << 62;
  const std::vector<int64_t> values = {0,       1,   2,       3,       p31 - 1,   p31,      p31 + 1,   p32 - 1, p32,
                                       p32 + 1, p62 - 1, p62, p62 + 1, INT64_MAX - 1, INT64_MAX, -1,  INT64_MIN};
  int imported = 0, refused = 0;
  for (int64_t s0 : values)
    for (int64_t s1 : values)
      for (int64_t stride : values) {
        Producer p({s0, s1}, {stride, 1});
        INFO("sizes [" << s0 << ", " << s1 << "], strides [" << stride << ", 1]");
        try {
          Tensor t = from_dlpack(&p.managed);
          ++imported;
          CHECK(t.sizes() == Shape{s0, s1});
          CHECK_NOTHROW(t.nbytes());
        } catch (const Error& e) {
          ++refused;
          CHECK_THAT(std::string(e.what()), Contains("from_dlpack"));
          CHECK(p.deleted == 0);
        }
      }
  CHECK(imported > 0);
  CHECK(refused > 0);
}
