// Tensor's op methods: one-line forwards to the free functions in runtime/ops/ops.h.
#include <mixt/runtime/autograd/autograd.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {

Tensor Tensor::to(ScalarType dtype) const { return mixt::to(*this, dtype); }
Tensor Tensor::to(Device device) const { return mixt::to(*this, device); }
Tensor Tensor::to(Device device, ScalarType dtype) const { return mixt::to(*this, device, dtype); }
Tensor Tensor::contiguous() const { return mixt::contiguous(*this); }
Tensor Tensor::clone() const { return mixt::clone(*this); }
Tensor& Tensor::copy_(const Tensor& src) { return mixt::copy_(*this, src); }
Tensor& Tensor::fill_(const Scalar& value) { return mixt::fill_(*this, value); }
Tensor& Tensor::zero_() { return mixt::zero_(*this); }

Tensor Tensor::view(const Shape& shape) const { return mixt::view(*this, shape); }
Tensor Tensor::view(ScalarType dtype) const { return mixt::view(*this, dtype); }
Tensor Tensor::reshape(const Shape& shape) const { return mixt::reshape(*this, shape); }
Tensor Tensor::permute(const Shape& dims) const { return mixt::permute(*this, dims); }
Tensor Tensor::transpose(int64_t d0, int64_t d1) const { return mixt::transpose(*this, d0, d1); }
Tensor Tensor::t() const { return dim() < 2 ? *this : mixt::transpose(*this, 0, 1); }
Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  return mixt::slice(*this, d, start, end, step);
}
Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const { return mixt::narrow(*this, d, start, length); }
Tensor Tensor::select(int64_t d, int64_t index) const { return mixt::select(*this, d, index); }
Tensor Tensor::expand(const Shape& shape) const { return mixt::expand(*this, shape); }
Tensor Tensor::squeeze() const { return mixt::squeeze(*this); }
Tensor Tensor::squeeze(int64_t d) const { return mixt::squeeze(*this, Shape{d}); }
Tensor Tensor::unsqueeze(int64_t d) const { return mixt::unsqueeze(*this, d); }
Tensor Tensor::flatten(int64_t start, int64_t end) const { return mixt::flatten(*this, start, end); }

Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return mixt::add(*this, o, alpha); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return mixt::sub(*this, o, alpha); }
Tensor Tensor::mul(const Tensor& o) const { return mixt::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return mixt::div(*this, o); }
Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) { return mixt::add_(*this, o, alpha); }
Tensor& Tensor::add_(const Scalar& o) { return mixt::add_(*this, o); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) { return mixt::sub_(*this, o, alpha); }
Tensor& Tensor::mul_(const Tensor& o) { return mixt::mul_(*this, o); }
Tensor& Tensor::mul_(const Scalar& o) { return mixt::mul_(*this, o); }
Tensor& Tensor::div_(const Tensor& o) { return mixt::div_(*this, o); }
Tensor& Tensor::div_(const Scalar& o) { return mixt::div_(*this, o); }
Tensor Tensor::matmul(const Tensor& o) const { return mixt::matmul(*this, o); }
Tensor Tensor::sum() const { return mixt::sum(*this); }
Tensor Tensor::sum(const Shape& dims, bool keepdim) const { return mixt::sum(*this, dims, keepdim); }
Tensor Tensor::mean() const { return mixt::mean(*this); }
Tensor Tensor::mean(const Shape& dims, bool keepdim) const { return mixt::mean(*this, dims, keepdim); }
Tensor Tensor::abs() const { return mixt::abs(*this); }
Tensor Tensor::exp() const { return mixt::exp(*this); }
Tensor Tensor::log() const { return mixt::log(*this); }
Tensor Tensor::sqrt() const { return mixt::sqrt(*this); }
Tensor Tensor::neg() const { return mixt::neg(*this); }
Tensor Tensor::relu() const { return mixt::relu(*this); }
bool Tensor::equal(const Tensor& other) const { return mixt::equal(*this, other); }

void Tensor::backward(const Tensor& grad, bool retain_graph) const {
  autograd::backward({*this}, grad.defined() ? std::vector<Tensor>{grad} : std::vector<Tensor>{}, retain_graph);
}
Tensor Tensor::detach() const { return autograd::detach(*this); }

}  // namespace mixt
