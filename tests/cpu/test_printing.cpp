// Every public value type prints with operator<< and formats with fmt, both giving
// the same text, through <mixt/mixt.h> alone (what an application includes).
#include <string>

#include <catch2/catch.hpp>

#include <mixt/mixt.h>

using namespace mixt;

namespace {

using detail::streamed;  // the text of `os << value`

// `value` prints as `text` through both operator<< and fmt, and a width spec pads
// the whole text.
template <class T>
void check_prints(const T& value, const std::string& text) {
  INFO("expected: " << text);
  CHECK(streamed(value) == text);
  CHECK(fmt::format("{}", value) == text);
  CHECK(fmt::format("{:>30}", value) == std::string(30 - std::min<size_t>(30, text.size()), ' ') + text);
  CHECK(fmt::format("<{:*<3}>", value).rfind("<" + text, 0) == 0);
}

}  // namespace

TEST_CASE("runtime value types print and format alike") {
  check_prints(kBFloat16, "bfloat16");
  check_prints(kFloat8_e4m3fn, "float8_e4m3fn");
  check_prints(ScalarType::Undefined, "undefined");
  check_prints(DeviceType::CUDA, "cuda");
  check_prints(Device::cpu(), "cpu");
  check_prints(Device::cuda(3), "cuda:3");
  check_prints(Device::meta(), "meta");
  check_prints(Shape{2, 3, 4}, "[2, 3, 4]");
  check_prints(Shape{}, "[]");
  check_prints(Scalar(2.5), "2.5");
  check_prints(Scalar(int64_t{-7}), "-7");
  check_prints(Scalar(true), "true");
  check_prints(TensorOptions{}, "TensorOptions(dtype=default, device=default, requires_grad=false)");
  check_prints(TensorOptions{kFloat16, Device::cuda(1), true},
               "TensorOptions(dtype=float16, device=cuda:1, requires_grad=true)");
}

TEST_CASE("tensors format as they print") {
  const Tensor t = from_vector<float>({1.0f, 2.5f}, {2});
  CHECK(fmt::format("{}", t) == streamed(t));
  CHECK(fmt::format("{}", t).find("2.5") != std::string::npos);
  const Tensor m = empty({2, 3}, {.dtype = kBFloat16, .device = Device::meta()});
  CHECK(fmt::format("{}", m) == "tensor(..., dtype=bfloat16, device=meta, shape=[2, 3])");
}

TEST_CASE("software floats format with float specs") {
  CHECK(fmt::format("{}", Half(1.5f)) == "1.5");
  CHECK(fmt::format("{:.2f}", BFloat16(3.0f)) == "3.00");
  CHECK(fmt::format("{:8.1f}", Float8_e4m3fn(448.0f)) == "   448.0");
  CHECK(fmt::format("{}", Float8_e5m2(-0.5f)) == "-0.5");
  CHECK(streamed(Half(0.25f)) == "0.25");
}

TEST_CASE("dispatcher value types print and format alike") {
  check_prints(DispatchKey::AutocastCUDA, "AutocastCUDA");
  check_prints(DispatchKeySet(DispatchKey::CPU) | DispatchKeySet(DispatchKey::Autograd), "{CPU, Autograd}");
  check_prints(DispatchKeySet(), "{}");
  check_prints(OpId::matmul, "matmul");
  check_prints(Reduction::Mean, "mean");
  check_prints(Rounding::Floor, "floor");
  check_prints(GeluApprox::Tanh, "tanh");
}

TEST_CASE("autocast value types print and format alike") {
  check_prints(autocast::Policy::Fp32, "fp32");
  check_prints(autocast::Policy::LowerF32Out, "lower_f32_out");
  check_prints(autocast::Rule::Custom, "custom");
  check_prints(autocast::Rule::SensitiveParam, "sensitive-param");
}
