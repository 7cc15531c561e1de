// Tensor handles, storage sharing, the version counter, autograd slots,
// construction from host memory, printing, Device and Shape.
#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include <mixt/mixt.h>
#include <mixt/runtime/shape.h>

using namespace mixt;

TEST_CASE("construction from host data", "[tensor]") {
  Tensor t = from_vector(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(t.dtype() == kInt32);
  CHECK(t.sizes() == Shape{2, 3});
  CHECK(t.strides() == Shape{3, 1});
  CHECK(t.numel() == 6);
  CHECK(t.nbytes() == 24);
  CHECK(t.is_contiguous());
  CHECK(t.data_ptr<int32_t>()[4] == 5);
  CHECK_THROWS_AS(t.data_ptr<float>(), Error);
  CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % kCpuAlignment == 0);
  CHECK_THROWS_AS(from_vector(std::vector<float>{1, 2, 3}, {2, 2}), Error);
  CHECK(from_vector(std::vector<float>{}).sizes() == Shape{0});

  const float raw[4] = {1.5f, 2.5f, 3.5f, 4.5f};
  Tensor d = from_data(raw, {2, 2}, kFloat32);
  CHECK(d.to_vector<double>() == std::vector<double>{1.5, 2.5, 3.5, 4.5});
}

TEST_CASE("from_blob views caller memory and calls the deleter once", "[tensor]") {
  static int deleted = 0;
  float* buf = new float[6]{0, 1, 2, 3, 4, 5};
  {
    Tensor t = from_blob(buf, {3, 2}, {1, 3}, kFloat32, [](void*, void* p) {
      ++deleted;
      delete[] static_cast<float*>(p);
    });
    CHECK_FALSE(t.is_contiguous());
    CHECK(t.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
    Tensor view = t.select(0, 1);
    t = Tensor();
    CHECK(deleted == 0);  // the view keeps the storage alive
    CHECK(view.to_vector<float>() == std::vector<float>{1, 4});
  }
  CHECK(deleted == 1);
}

TEST_CASE("item, scalar tensors and wrapped scalars", "[tensor]") {
  Tensor s = scalar_tensor(3.25);
  CHECK(s.dim() == 0);
  CHECK(s.dtype() == kFloat32);
  CHECK(s.item<double>() == 3.25);
  CHECK(scalar_tensor(7).dtype() == kInt64);
  CHECK(scalar_tensor(true).dtype() == kBool);
  CHECK(scalar_tensor(2, {.dtype = kFloat16}).item<float>() == 2.f);
  CHECK_FALSE(s.impl()->wrapped_number);
  CHECK(wrapped_scalar(1.5).impl()->wrapped_number);
  CHECK_THROWS_AS(from_vector(std::vector<float>{1, 2}).item(), Error);
  CHECK(from_vector(std::vector<Half>{Half(1.5f)}).item<float>() == 1.5f);
}

TEST_CASE("item<T>() of a value outside an integer type raises instead of converting", "[tensor]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const auto overflow = [](const char* type) {
    return Catch::Contains(std::string("value cannot be converted to type ") + type + " without overflow");
  };
  CHECK_THROWS_WITH(scalar_tensor(nan).item<int64_t>(), overflow("int64"));
  CHECK_THROWS_WITH(scalar_tensor(inf).item<int32_t>(), overflow("int32"));
  CHECK_THROWS_WITH(scalar_tensor(-inf, {.dtype = kFloat64}).item<int64_t>(), overflow("int64"));
  CHECK_THROWS_WITH(scalar_tensor(3e9, {.dtype = kFloat64}).item<int32_t>(), overflow("int32"));
  CHECK_THROWS_WITH(scalar_tensor(int64_t{1} << 40).item<int32_t>(), overflow("int32"));
  CHECK_THROWS_WITH(scalar_tensor(-1).item<uint8_t>(), overflow("uint8"));
  CHECK_THROWS_WITH(scalar_tensor(9.3e18, {.dtype = kFloat64}).item<int64_t>(), overflow("int64"));
  CHECK_THROWS_WITH(Scalar(nan).to_int(), overflow("int64"));
  // In range: floats truncate toward zero; the extremes are exact.
  CHECK(scalar_tensor(-2.9).item<int32_t>() == -2);
  CHECK(scalar_tensor(2147483647.9, {.dtype = kFloat64}).item<int32_t>() == INT32_MAX);
  CHECK(scalar_tensor(-2147483648.9, {.dtype = kFloat64}).item<int32_t>() == INT32_MIN);
  CHECK(scalar_tensor(-9.2233720368547758e18, {.dtype = kFloat64}).item<int64_t>() == INT64_MIN);
  CHECK(scalar_tensor(255).item<uint8_t>() == 255);
  CHECK(scalar_tensor(nan).item<bool>());
  // Floating targets round as casts do: beyond float32's range is Inf.
  CHECK(scalar_tensor(1e300, {.dtype = kFloat64}).item<float>() == inf);
}

TEST_CASE("views share storage and one version counter", "[tensor]") {
  Tensor t = from_vector(std::vector<float>{1, 2, 3, 4});
  Tensor v = t.narrow(0, 1, 2);
  CHECK(v.shares_storage(t));
  CHECK_FALSE(v.is_same(t));
  const uint32_t before = t.version();
  v.copy_(from_vector(std::vector<float>{9, 9}));
  CHECK(t.version() == v.version());
  CHECK(t.version() > before);
  CHECK(t.to_vector<float>() == std::vector<float>{1, 9, 9, 4});
  Tensor copy = t;  // a handle copy is the same tensor
  CHECK(copy.is_same(t));
  CHECK(t.use_count() == 2);
}

TEST_CASE("autograd slots", "[tensor]") {
  Tensor w = from_vector(std::vector<float>{1, 2});
  CHECK_FALSE(w.requires_grad());
  w.set_requires_grad(true);
  CHECK(w.requires_grad());
  CHECK_FALSE(w.grad().defined());
  w.set_grad(from_vector(std::vector<float>{0.5f, 0.5f}));
  CHECK(w.grad().to_vector<float>() == std::vector<float>{0.5f, 0.5f});
  CHECK_THROWS_AS(w.set_grad(from_vector(std::vector<float>{1, 2, 3})), Error);
  Tensor i = from_vector(std::vector<int64_t>{1});
  CHECK_THROWS_AS(i.set_requires_grad(true), Error);
}

TEST_CASE("printing", "[tensor]") {
  Tensor t = from_vector(std::vector<float>{1, 2.5f, 3, 4}, {2, 2});
  const std::string s = t.str();
  CHECK(s.find("[[1, 2.5],") != std::string::npos);
  CHECK(s.find("dtype=float32") != std::string::npos);
  CHECK(t.describe() == "float32[2, 2] cpu");
  CHECK(from_vector(std::vector<bool>{true, false}).str().find("[true, false]") != std::string::npos);
  CHECK(Tensor().str() == "tensor(undefined)");
}

TEST_CASE("Device and Shape", "[tensor]") {
  CHECK(Device("cpu") == Device::cpu());
  CHECK(Device("cuda:3") == Device::cuda(3));
  CHECK(Device("cuda").index() == 0);
  CHECK(Device::cuda(1).str() == "cuda:1");
  CHECK_THROWS_AS(Device("tpu"), Error);
  CHECK_THROWS_AS(Device("cuda:x"), Error);
  CHECK(Device::cuda(127).str() == "cuda:127");
  CHECK(Device("cuda:127") == Device::cuda(127));
  CHECK_THROWS_WITH(Device::cuda(-5), Catch::Contains("invalid CUDA device index -5"));
  CHECK_THROWS_WITH(Device::cuda(128), Catch::Contains("invalid CUDA device index 128"));
  CHECK_THROWS_WITH(Device::cuda(256 + 1), Catch::Contains("257"));  // not cuda:1
  CHECK_THROWS_WITH(Device(DeviceType::CUDA, -1), Catch::Contains("-1"));
  CHECK_THROWS_WITH(Device(DeviceType::CPU, 2), Catch::Contains("invalid CPU device index 2"));
  CHECK_THROWS_WITH(Device("cuda:128"), Catch::Contains("cannot parse"));
  CHECK_THROWS_AS(Device("cuda:-1"), Error);
  CHECK(Shape{2, 3, 4}.numel() == 24);
  CHECK(Shape{}.numel() == 1);
  CHECK_THROWS_AS((Shape{1, 1, 1, 1, 1, 1, 1, 1, 1}), Error);
  CHECK(broadcast_shapes({3, 1}, {4}, "t") == Shape{3, 4});
  CHECK_THROWS_WITH(broadcast_shapes({3, 2}, {4}, "myop"), Catch::Contains("myop") && Catch::Contains("[3, 2]"));
  CHECK(wrap_dim(-1, 3, "t") == 2);
  CHECK_THROWS_AS(wrap_dim(3, 3, "t"), Error);
  CHECK(contiguous_strides({2, 3, 4}) == Shape{12, 4, 1});
  CHECK(view_strides({2, 3}, {1, 2}, {6}) == std::nullopt);
  CHECK(*view_strides({2, 3}, {3, 1}, {3, 2}) == Shape{2, 1});
}

TEST_CASE("errors carry the op, the message and the inputs", "[tensor]") {
  Tensor a = from_vector(std::vector<float>{1, 2, 3}, {3});
  try {
    a.view({2, 2});
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.op() == "view");
    CHECK(e.context() == "float32[3] cpu");
    CHECK(std::string(e.what()).find("[2, 2]") != std::string::npos);
  }
}

TEST_CASE("CUDA discovery never fails", "[tensor]") {
  const bool available = cuda::is_available();
  CHECK(cuda::device_count() == (available ? cuda::device_count() : 0));
  if (!available) {
    CHECK_FALSE(cuda::unavailable_reason().empty());
    CHECK_THROWS_AS(zeros({2}, {.device = Device::cuda(0)}), Error);
    CHECK_THROWS_WITH(cuda::launch_empty_kernel(), Catch::Contains("cuda::launch_empty_kernel"));
  } else {
    cuda::launch_empty_kernel();  // queued on the current stream
    cuda::synchronize();
  }
}
